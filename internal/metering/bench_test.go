package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/metering"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// BenchmarkConsume measures the input processor's throughput on one
// session: per iteration one attempt's eligibility, usage and cost events
// (three inbox transactions, each an advance with a new Work generation
// where the lane calls for one). Owner reads are the in-memory fake, so the
// figure is the consumer's own database work.
func BenchmarkConsume(b *testing.B) {
	pool := dbtest.New(b, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering},
		Lines: []migrate.Line{outboxschema.Line(), meteringschema.Line()}, MaxConns: 4}).Metering()
	o := newOwners()
	c, err := metering.New(pool, metering.Config{Inbox: inbox.Config{LockTimeout: time.Second}, Reads: o})
	require.NoError(b, err)
	events := make([][]*envelope.Envelope, b.N)
	for i := range b.N {
		a := newAttempt(100000 + i)
		events[i] = []*envelope.Envelope{
			a.eligibility(o, contract.DispositionDispatched),
			a.availability(o, usage, "tokens.output", 1, contract.AvailabilityAvailable, ""),
			a.availability(o, cost, "cost.usd", 1, contract.AvailabilityAvailable, ""),
		}
	}
	b.ResetTimer()
	for i := range b.N {
		for _, e := range events[i] {
			if _, err := c.Consume(context.Background(), delivery(e)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(3*b.N)/b.Elapsed().Seconds(), "events/s")
}
