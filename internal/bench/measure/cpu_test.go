package measure

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// TestMarkWaitsForTheSamplingGoroutine: a burn-down's Mark samples on
// Drive's goroutine while the sampling goroutine may be reading a sample on
// the same session. pgx runs one statement at a time on a *pgx.Conn: a
// second query while the first one's rows are open fails with "conn busy"
// and, worse, takes over the connection's result reader, so the first
// sample's rows end early, the connection stays locked for good and the
// sample's statement is marked for deallocation. The next statement on it
// (settledStats after the run) then failed the whole run with "failed to
// deallocate cached statement(s): conn busy". Mark must wait until the
// sample in flight has finished, and the session must stay usable.
func TestMarkWaitsForTheSamplingGoroutine(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, srv.URL)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(context.WithoutCancel(ctx))) }()
	var database string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&database))

	s := newCPUSampler(conn, []string{database}, nil)
	rowsOpen := make(chan struct{})    // the first sample's rows are open
	release := make(chan struct{})     // the first sample may read on
	markWaiting := make(chan struct{}) // Mark found the session in use
	var samples atomic.Int32
	s.hooks.rowsOpen = func() {
		if samples.Add(1) == 1 {
			close(rowsOpen)
			<-release
		}
	}
	s.hooks.sessionBusy = func() { close(markWaiting) }

	// The sampling goroutine's sample, stopped with its rows open.
	sampled := make(chan struct{})
	go func() { defer close(sampled); s.sample(ctx, true) }()
	<-rowsOpen

	// Mark, from another goroutine, while that sample reads.
	marked := make(chan struct{})
	go func() { defer close(marked); s.Mark(ctx) }()
	select {
	case <-markWaiting: // it waits for the session (the fix)
	case <-marked: // it ran a statement on the busy session (the bug)
	}
	close(release)
	<-sampled
	<-marked

	// The session is still usable: what settledStats runs after the window.
	require.NoError(t, waitBackendsGone(ctx, conn, []string{"owbench_no_such_database"}, nil, 0))
	var one int
	require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))

	require.EqualValues(t, 2, samples.Load(), "both samples read their rows")
	s.mu.Lock()
	seen := len(s.backends)
	s.mu.Unlock()
	require.Positive(t, seen, "the samples saw this test's own backend")
}
