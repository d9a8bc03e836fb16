package bench_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/bench"
	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// TestRunTiny runs the whole bench at a tiny size — both transaction sizes
// and a held-xmin run at tx size 100 — and checks the result's invariants.
func TestRunTiny(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const events = 50
	prefix := dbtest.NewPrefix(t)
	report, err := bench.Run(ctx, bench.Config{
		ServerURL: srv.URL, ServerSource: string(srv.Source), Prefix: prefix,
		Events: events, TxSizes: []int{1, 100}, Producers: 2, Concurrency: 4, Batch: 10,
		PollInterval: 50 * time.Millisecond, HeldXmin: time.Minute, HeldXminTxSizes: []int{100},
	})
	require.NoError(t, err)
	require.Len(t, report.Runs, 3, "tx 1, tx 100, tx 100 held")
	require.NotEmpty(t, report.Server.Version)
	for _, r := range report.Runs {
		require.Equal(t, bench.System, r.System)
		require.Equal(t, events, r.Messages)
		require.Equal(t, events, r.Latency.Count, "every delivery acknowledged and timed")
		require.True(t, r.Finite(), "numbers finite: %+v", r)
		require.Positive(t, r.ProducedPerSec)
		require.Positive(t, r.ConsumedPerSec)
		require.GreaterOrEqual(t, r.Latency.P99, r.Latency.P50)
		// Per delivery: event insert + publish, delivery insert + claim + ack,
		// attempt start, attempt finish, the consumer's receipt.
		require.InDelta(t, 8.0, r.Rows.PerMessage, 0.5, "rows per delivery: %+v", r.Rows.Tables)
		require.Positive(t, r.CPU.ProcessSeconds)
		require.Equal(t, "outbox.outbox_deliveries", r.QueueTable)
		require.Positive(t, r.QueueDeadTuples, "claims and acks leave dead delivery versions")
		if r.Variant == "held-xmin" {
			require.NotNil(t, r.HeldXmin)
			require.Positive(t, r.HeldXmin.HeldSeconds)
			require.Equal(t, r.QueueDeadTuples, r.QueueDeadAfterVacuum, "the held snapshot keeps every dead delivery version")
		} else {
			// (Autovacuum may have cleaned up first: then there is nothing left either.)
			require.True(t, r.QueueDeadTuples == 0 || r.QueueDeadAfterVacuum < r.QueueDeadTuples,
				"without the snapshot VACUUM removes dead delivery versions: %d before, %d after", r.QueueDeadTuples, r.QueueDeadAfterVacuum)
		}
	}
	require.Equal(t, 100, report.Runs[1].TxSize)
	require.Equal(t, "held-xmin", report.Runs[2].Variant)
	require.Equal(t, 100, report.Runs[2].TxSize)

	// Every database of the run was dropped.
	conn, err := pgx.Connect(ctx, srv.URL)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }() // Terminate only: the server ends the session either way
	rows, err := conn.Query(ctx, `SELECT count(*) FROM pg_catalog.pg_database WHERE starts_with(datname, @prefix)`,
		pgx.NamedArgs{"prefix": prefix + "_"})
	require.NoError(t, err)
	left, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Zero(t, left)

	var out bytes.Buffer
	require.NoError(t, measure.WriteTable(&out, report.Runs, measure.TableOpts{Ours: bench.System, Limit: &measure.Limit{SingleRowCommitsSec: 1000, BatchedRowsSec: 10000, BatchRows: 100}}))
	require.Contains(t, out.String(), "oceanway [held-xmin]")
	require.Contains(t, out.String(), "1.00×")
	require.Contains(t, out.String(), "limit: batched INSERT rows (100/tx)")
}

// TestMeasureLimit measures the physical limit for a moment.
func TestMeasureLimit(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	l, err := measure.MeasureLimit(t.Context(), measure.Env{ServerURL: srv.URL}, measure.LimitParams{
		Database: dbtest.NewPrefix(t) + "_limit", Concurrency: 2, Duration: 200 * time.Millisecond, PayloadBytes: 64, BatchRows: 10,
	})
	require.NoError(t, err)
	require.Positive(t, l.SingleRowCommitsSec)
	require.Greater(t, l.BatchedRowsSec, 0.0)
	require.Positive(t, l.SingleRowCommitP99Ms)
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond
	}
	s := measure.Summarize(ds)
	require.Equal(t, measure.Summary{Count: 100, P50: 50, P90: 90, P99: 99, Max: 100}, s)
	require.Equal(t, measure.Summary{}, measure.Summarize(nil))
}

func TestRecorder(t *testing.T) {
	t.Parallel()
	rec := measure.NewRecorder(2)
	at := time.Now()
	rec.Committed([]string{"a", "b"}, at)
	rec.Consumed("a", at.Add(time.Second))
	rec.Consumed("a", at.Add(2*time.Second))
	rec.Consumed("b", at.Add(-time.Second)) // consumed before the commit stamp
	lat, missing := rec.Latencies()
	require.Zero(t, missing)
	require.ElementsMatch(t, []time.Duration{time.Second, 0}, lat)
	require.Equal(t, 1, rec.Duplicates())
}

// TestRunRateLimited checks the producer rate limit (issue 17, item 5):
// the producers follow an open-loop schedule, so production cannot end
// before the last transaction's due time, and the report names the limit.
func TestRunRateLimited(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const events, txSize, rate = 60, 5, 200.0
	report, err := bench.Run(ctx, bench.Config{
		ServerURL: srv.URL, ServerSource: string(srv.Source), Prefix: dbtest.NewPrefix(t),
		Events: events, TxSizes: []int{txSize}, Producers: 2, Concurrency: 4, Batch: 10,
		PollInterval: 50 * time.Millisecond, Rate: rate,
	})
	require.NoError(t, err)
	require.Len(t, report.Runs, 1)
	r := report.Runs[0]
	require.Equal(t, events, r.Latency.Count, "every delivery acknowledged and timed")
	require.InDelta(t, rate, r.RateLimit, 0)
	require.Contains(t, r.Settings, "rate=200/s")
	// The last transaction (index events/txSize-1) is due (events-txSize)/rate after the start.
	require.GreaterOrEqual(t, r.ProduceSeconds, float64(events-txSize)/rate)

	var out bytes.Buffer
	require.NoError(t, measure.WriteTable(&out, report.Runs, measure.TableOpts{Ours: bench.System}))
	require.Contains(t, out.String(), "oceanway [rate 200/s]")
}

// TestRunRejectsNegativeRate: a negative rate is a configuration error.
func TestRunRejectsNegativeRate(t *testing.T) {
	t.Parallel()
	_, err := bench.Run(t.Context(), bench.Config{ServerURL: "postgres://unused", Rate: -1})
	require.ErrorIs(t, err, bench.ErrInvalidConfig)
}
