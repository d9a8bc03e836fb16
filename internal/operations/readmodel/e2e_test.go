package readmodel_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
)

// waitFor polls cond (a SQL state check) every interval until it holds or
// the deadline passes.
func waitFor(t *testing.T, timeout, interval time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached within %s; last state: %s", timeout, last)
		}
		time.Sleep(interval)
	}
}

// End to end (EX-1 → OB-CLAIM/OB-DELIVER → OPS-1..OPS-4): 1,000 admissions
// run while concurrent dispatchers (each wired through an in-process
// transport to its own projector instance) deliver to the Operations
// projector. Every delivery ends acknowledged, every published_at is set,
// no quarantine, at most one finish per attempt start, and the read model
// is proved complete_for_supported_scope and verified_current.
func TestE2EAdmissionDispatchersProjector1000Runs(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	t.Parallel()
	const (
		runs        = 1000
		dispatchers = 3
		admitters   = 16
	)
	b, ctx := setup(t, 64), context.Background()
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	runErrs := make(chan error, dispatchers)
	for i := range dispatchers {
		p, err := projector.New(b.pool, projector.Config{BillingReads: operationstest.Found(), WorkerVersion: "e2e"})
		require.NoError(t, err)
		tr := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: p.Consume})
		d, err := dispatcher.New(b.pool, tr, dispatcher.Config{
			WorkerID:     fmt.Sprintf("e2e-dispatcher-%d", i),
			Destinations: []route.Destination{route.CoreOperations},
			BatchSize:    25, Concurrency: 8, LeaseDuration: 30 * time.Second,
			BackoffBase: 10 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
			PollInterval: 50 * time.Millisecond, DrainTimeout: 10 * time.Second,
		}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(t, err)
		wg.Add(1)
		go func() { defer wg.Done(); runErrs <- d.Run(runCtx) }()
	}
	stopped := false
	stopDispatchers := func() {
		if !stopped {
			stopped = true
			stop()
			wg.Wait()
		}
	}
	t.Cleanup(stopDispatchers)

	start := time.Now()
	jobs := make(chan int)
	admitErrs := make(chan error, runs)
	var aw sync.WaitGroup
	for range admitters {
		aw.Add(1)
		go func() {
			defer aw.Done()
			for range jobs {
				_, err := b.adm.Admit(ctx, admitRequest())
				admitErrs <- err
			}
		}()
	}
	for i := range runs {
		jobs <- i
	}
	close(jobs)
	aw.Wait()
	close(admitErrs)
	for err := range admitErrs {
		require.NoError(t, err)
	}
	admitted := time.Since(start)

	waitFor(t, 3*time.Minute, 50*time.Millisecond, func() (bool, string) {
		type ackCounts struct {
			Total int64 `db:"total"`
			Acked int64 `db:"acked"`
		}
		c, err := operationstest.QueryOne(ctx, b.pool, pgx.RowToStructByName[ackCounts],
			`SELECT count(*) AS total, count(*) FILTER (WHERE status = 'acknowledged') AS acked FROM outbox.outbox_deliveries`, nil)
		if err != nil {
			return false, err.Error()
		}
		return c.Total == 2*runs && c.Acked == c.Total, fmt.Sprintf("%d/%d acknowledged", c.Acked, c.Total)
	})
	delivered := time.Since(start)
	stopDispatchers()
	close(runErrs)
	for err := range runErrs {
		require.NoError(t, err)
	}

	type endState struct {
		Events      int `db:"events"`
		Published   int `db:"published"`
		Quarantined int `db:"quarantined"`
		Starts      int `db:"starts"`
		Finishes    int `db:"finishes"`
		MultiFinish int `db:"multi_finish"`
		Owners      int `db:"owners"`
	}
	end, err := operationstest.QueryOne(ctx, b.pool, pgx.RowToStructByName[endState], `SELECT
		(SELECT count(*) FROM outbox.outbox_events) AS events,
		(SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL) AS published,
		(SELECT count(*) FROM outbox.outbox_quarantine) AS quarantined,
		(SELECT count(*) FROM outbox.outbox_delivery_attempt_starts) AS starts,
		(SELECT count(*) FROM outbox.outbox_delivery_attempt_finishes WHERE outcome = 'acknowledged') AS finishes,
		(SELECT count(*) FROM (SELECT attempt_id FROM outbox.outbox_delivery_attempt_finishes GROUP BY attempt_id HAVING count(*) > 1) x) AS multi_finish,
		(SELECT count(DISTINCT lease_owner) FROM outbox.outbox_deliveries) AS owners`, nil)
	require.NoError(t, err)
	events, published, quarantined, starts := end.Events, end.Published, end.Quarantined, end.Starts
	finishes, multiFinish, owners := end.Finishes, end.MultiFinish, end.Owners
	require.Equal(t, 2*runs, events)
	require.Equal(t, 2*runs, published, "every published_at set")
	require.Zero(t, quarantined)
	require.Equal(t, 2*runs, finishes, "one acknowledged finish per delivery")
	require.Zero(t, multiFinish)
	require.GreaterOrEqual(t, starts, 2*runs)
	require.GreaterOrEqual(t, owners, 2, "more than one dispatcher delivered")

	type summaryCounts struct {
		Summaries int `db:"summaries"`
		Reserved  int `db:"reserved"`
	}
	sc, err := operationstest.QueryOne(ctx, b.pool, pgx.RowToStructByName[summaryCounts], `SELECT count(*) AS summaries,
		count(*) FILTER (WHERE reservation_state = 'reserved') AS reserved FROM operations.operation_summaries`, nil)
	require.NoError(t, err)
	require.Equal(t, runs, sc.Summaries)
	require.Equal(t, runs, sc.Reserved)

	proof, err := b.rm.ProveCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, readmodel.CompleteForSupportedScope, proof.ProjectionCompleteness, "reasons %v, inputs %+v", proof.Reasons, proof.Inputs)
	c := b.completeness(t)
	require.Equal(t, readmodel.Verified, c.VerificationState)
	require.Equal(t, readmodel.VerifiedCurrent, c.SnapshotCurrency)
	require.Equal(t, readmodel.CompleteForSupportedScope, c.ProjectionCompleteness)
	t.Logf("e2e: %d runs (%d events) admitted by %d workers in %s; all acknowledged by %d dispatchers after %s (%d attempts, %d distinct lease owners)",
		runs, 2*runs, admitters, admitted.Round(time.Millisecond), dispatchers, delivered.Round(time.Millisecond), starts, owners)

	// Spot check: an admitted operation is fully readable.
	runID, err := operationstest.QueryOne(ctx, b.pool, pgx.RowTo[string], "SELECT run_id::text FROM admission.runs LIMIT 1", nil)
	require.NoError(t, err)
	res, err := admission.Lookup(ctx, b.pool, runID)
	require.NoError(t, err)
	s, err := b.rm.Operation(ctx, runID, readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, res.Manifest, s.RunAdmissionManifest)
	require.Equal(t, res.WalletReservedEventID, s.Reservation.EventID)
}
