package metering_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/metering"
)

// countEnsures counts the FenceEnsure inserts a pool's sessions send.
type countEnsures struct{ n atomic.Int64 }

func (c *countEnsures) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "name: FenceEnsure") {
		c.n.Add(1)
	}
	return ctx
}

func (c *countEnsures) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Issue 35 item 2: the input fence is inserted only on an attempt's first
// input, never again on the ten or so later transactions of the attempt;
// eight sessions taking a new attempt's fence at once all get it, one at a
// time (the lock), and exactly one row exists.
func TestIssue35InputFenceInsertsOnlyOnFirstUse(t *testing.T) {
	ctx := context.Background()
	b := setup(t)
	cfg := b.pool.Config().Copy()
	ensures := &countEnsures{}
	cfg.ConnConfig.Tracer = ensures
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	attempt := uuid.NewString()
	const sessions = 8
	var inside, most atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	start := make(chan struct{})
	for range sessions {
		wg.Go(func() {
			<-start
			errs <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if err := metering.LockFence(ctx, tx, attempt); err != nil {
					return err
				}
				now := inside.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				// Hold the lock over a round trip, so that another session
				// inside at the same time would be seen.
				_, err := tx.Exec(ctx, "SELECT pg_sleep(0.01)")
				inside.Add(-1)
				return err
			})
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, most.Load(), "the fence lock admits one session at a time")
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM metering.input_fences WHERE execution_attempt_id = $1`, attempt).Scan(&rows))
	require.Equal(t, 1, rows)
	first := ensures.n.Load()
	require.GreaterOrEqual(t, first, int64(1))
	require.LessOrEqual(t, first, int64(sessions), "only sessions that found no fence insert")

	for range 5 {
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return metering.LockFence(ctx, tx, attempt) }))
	}
	require.Equal(t, first, ensures.n.Load(), "an existing fence is locked without the insert")
}
