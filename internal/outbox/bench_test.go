package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

// BenchmarkAppend measures append throughput on real PostgreSQL, reported
// as events/s: one event per business transaction, 100 events per
// transaction, and — as the baseline in the same run — a plain single-row
// INSERT of the same canonical envelope into an unconstrained table, one
// per transaction. Run with:
//
//	go test -run '^$' -bench BenchmarkAppend -benchtime 2000x ./internal/outbox/
func BenchmarkAppend(b *testing.B) {
	ctx := b.Context()
	bundle := setup(b)
	pool := bundle.pool
	_, err := pool.Exec(ctx, "CREATE TABLE outbox.bench_plain (event_id uuid PRIMARY KEY, event_envelope text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())")
	require.NoError(b, err)
	proto := freshSample(envelope.RunCreatedV2)
	built, err := envelope.Build(proto)
	require.NoError(b, err)
	canonical, err := built.Canonical()
	require.NoError(b, err)

	report := func(b *testing.B, events int, start time.Time) {
		b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
	}

	b.Run("plain_insert_single", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "INSERT INTO outbox.bench_plain (event_id, event_envelope) VALUES ($1, $2)", outbox.NewEventID(), string(canonical))
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		report(b, b.N, start)
	})
	b.Run("append_single", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			ev := proto
			ev.EventID = ""
			err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
				_, err := release.AppendTx(ctx, tx, ev)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		report(b, b.N, start)
	})
	b.Run("append_batch100", func(b *testing.B) {
		b.ReportAllocs()
		evs := make([]envelope.Envelope, 100)
		start := time.Now()
		for i := 0; i < b.N; i++ {
			for j := range evs {
				evs[j] = proto
				evs[j].EventID = ""
			}
			err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
				_, err := release.AppendTx(ctx, tx, evs...)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		report(b, b.N*100, start)
	})
}
