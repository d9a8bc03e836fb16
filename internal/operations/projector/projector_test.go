package projector_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/inbox/inboxtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var v1 = operationstest.Target(1)

type bundle struct {
	pool  *pgxpool.Pool
	p     *projector.Projector
	reads *operationstest.BillingReads
}

func setup(t *testing.T, cfg ...projector.Config) *bundle {
	t.Helper()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: []migrate.Line{outboxschema.Line(), operationsschema.Line()}, MaxConns: 8}).Core()
	c := projector.Config{Inbox: inbox.Config{LockTimeout: time.Second}}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	reads := operationstest.Found()
	c = reads.Wire(c)
	p, err := projector.New(pool, c)
	require.NoError(t, err)
	return &bundle{pool: pool, p: p, reads: reads}
}

func (b *bundle) deliver(t *testing.T, e *envelope.Envelope) (transport.Result, error) {
	t.Helper()
	return b.p.Consume(t.Context(), operationstest.DeliveryV1(e))
}

func (b *bundle) ack(t *testing.T, e *envelope.Envelope) transport.Result {
	t.Helper()
	res, err := b.deliver(t, e)
	require.NoError(t, err, "%s %s", e.EventType, e.EventID)
	return res
}

func (b *bundle) state(t *testing.T) string {
	t.Helper()
	s, err := operationstest.State(t.Context(), b.pool, v1)
	require.NoError(t, err)
	return s
}

func (b *bundle) count(t *testing.T, table string) int {
	t.Helper()
	n, err := operationstest.Count(t.Context(), b.pool, table, v1)
	require.NoError(t, err)
	return n
}

func requireCode(t *testing.T, err error, retryable bool, code string) {
	t.Helper()
	require.Error(t, err)
	r, c := transport.RetryableAndCode(err)
	require.Equal(t, code, c, "error: %v", err)
	require.Equal(t, retryable, r, "retryable? error: %v", err)
}

// TestConformance runs the consumer conformance suite against the
// Operations projector (CON-1..CON-3, OB-DELIVER-6, OPS-2).
func TestConformance(t *testing.T) {
	t.Parallel()
	inboxtest.Run(t, func(t *testing.T) inboxtest.Subject { return subject(setup(t)) })
}

// subject is the conformance Subject of a projector bundle.
func subject(b *bundle) inboxtest.Subject {
	return inboxtest.Subject{
		Consume: b.p.Consume,
		Member: func(eventType, schemaVersion string) route.Member {
			return operationstest.Member(eventType, schemaVersion, 1)
		},
		Chains: [][]*envelope.Envelope{operationstest.Sample(1).Events(), operationstest.Sample(2).Events()},
		State: func(ctx context.Context) (string, error) {
			return operationstest.State(ctx, b.pool, v1)
		},
		Block: func(t *testing.T) func() {
			// A held lock: every projector transaction must lock or
			// create its aggregate; EXCLUSIVE still allows plain reads.
			tx, err := b.pool.Begin(t.Context())
			require.NoError(t, err)
			_, err = tx.Exec(t.Context(), "LOCK TABLE operations.projection_aggregates IN EXCLUSIVE MODE")
			require.NoError(t, err)
			return func() { require.NoError(t, tx.Rollback(t.Context())) }
		},
	}
}
