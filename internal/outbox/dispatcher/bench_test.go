package dispatcher_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

// BenchmarkDispatch reports acknowledged deliveries per second through one
// dispatcher with an in-process no-op consumer, per claim batch size.
//
//	go test ./internal/outbox/dispatcher -run '^$' -bench Dispatch -benchtime 3x
func BenchmarkDispatch(b *testing.B) {
	events := 2000
	if testing.Short() {
		events = 200
	}
	for _, batch := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			bundle := dbtest.New(b, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 12})
			pool := bundle.Core()
			ctx := b.Context()
			if _, err := release.Bootstrap(ctx, pool, release.BootstrapParams{ProjectionName: projectionName, ProjectionVersion: 1}); err != nil {
				b.Fatal(err)
			}
			tr := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: outboxtest.Ack})
			b.ReportAllocs()
			b.ResetTimer()
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				appendBench(b, pool, events)
				d, err := dispatcher.New(pool, tr, dispatcher.Config{BatchSize: batch, Concurrency: 16, PollInterval: 5 * time.Millisecond},
					dispatcher.NewMetrics(prometheus.NewRegistry()), quietLog())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				stop := run(b, d)
				require.EventuallyWithT(b, func(c *assert.CollectT) {
					require.Zero(c, countOpen(ctx, c, pool))
				}, 5*time.Minute, 2*time.Millisecond, "deliveries still open")
				elapsed += time.Since(start)
				b.StopTimer()
				if err := stop(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(events*b.N)/elapsed.Seconds(), "deliveries/s")
		})
	}
}

func appendBench(b *testing.B, pool *pgxpool.Pool, n int) {
	b.Helper()
	fx := &bundle{producer: pool}
	for done := 0; done < n; done += 100 {
		fx.appendRuns(b, min(100, n-done))
	}
}

func countOpen(ctx context.Context, t tb, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_deliveries WHERE status IN ('pending','leased')`).Scan(&n))
	return n
}

// BenchmarkRetry reports retryable outcomes recorded per second for a claim
// of 64 deliveries that all failed, one fenced statement per retry against
// one outbox.retry_delivery_batch call for all (issue 17, item 2).
//
//	go test ./internal/outbox/dispatcher -run '^$' -bench Retry -benchtime 20x
func BenchmarkRetry(b *testing.B) {
	const n = 64
	for _, batched := range []bool{false, true} {
		b.Run(fmt.Sprintf("batched=%t", batched), func(b *testing.B) {
			bundle := dbtest.New(b, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 4})
			pool := bundle.Core()
			ctx := b.Context()
			if _, err := release.Bootstrap(ctx, pool, release.BootstrapParams{ProjectionName: projectionName, ProjectionVersion: 1}); err != nil {
				b.Fatal(err)
			}
			store := dispatcher.NewStore(pool, 5*time.Second)
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				appendBench(b, pool, n)
				claims, err := store.Claim(ctx, dispatcher.ClaimParams{Owner: "bench", Limit: n, Lease: time.Minute})
				if err != nil || len(claims) != n {
					b.Fatalf("claimed %d of %d: %v", len(claims), n, err)
				}
				rs := make([]dispatcher.RetryRequest, n)
				for j, c := range claims {
					rs[j] = dispatcher.RetryRequest{Fence: c.Fence, Backoff: time.Hour, Code: "owner_unavailable"}
				}
				b.StartTimer()
				start := time.Now()
				if batched {
					for j, err := range store.RetryBatch(ctx, rs) {
						if err != nil {
							b.Fatalf("retry %d: %v", j, err)
						}
					}
				} else {
					for j, r := range rs {
						if err := store.Retry(ctx, r.Fence, r.Backoff, r.Code); err != nil {
							b.Fatalf("retry %d: %v", j, err)
						}
					}
				}
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "retries/s")
		})
	}
}
