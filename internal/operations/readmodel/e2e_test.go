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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/outbox/transport"
)

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
	b, ctx := setup(t, 64), t.Context()
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

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		type ackCounts struct {
			Total int `db:"total"`
			Acked int `db:"acked"`
		}
		n, err := operationstest.QueryOne(ctx, b.pool, pgx.RowToStructByName[ackCounts],
			`SELECT count(*) AS total, count(*) FILTER (WHERE status = 'acknowledged') AS acked FROM outbox.outbox_deliveries`, nil)
		require.NoError(c, err)
		require.Equal(c, 2*runs, n.Total, "deliveries")
		require.Equal(c, n.Total, n.Acked, "acknowledged deliveries")
	}, 3*time.Minute, 50*time.Millisecond, "every delivery acknowledged")
	delivered := time.Since(start)
	stopDispatchers()
	close(runErrs)
	for err := range runErrs {
		require.NoError(t, err)
	}

	// Drained: every delivery acknowledged with exactly one acknowledged
	// finish, every published_at set, no quarantine, at most one finish per
	// attempt start (package invariant).
	report := outboxtest.RequireDrained(t, b.pool)
	require.EqualValues(t, 2*runs, report.Events)
	require.EqualValues(t, 2*runs, report.Deliveries, "one core_operations delivery per event")
	type attemptCounts struct {
		Starts int `db:"starts"`
		Owners int `db:"owners"`
	}
	ac, err := operationstest.QueryOne(ctx, b.pool, pgx.RowToStructByName[attemptCounts], `SELECT
		(SELECT count(*) FROM outbox.outbox_delivery_attempt_starts) AS starts,
		(SELECT count(DISTINCT lease_owner) FROM outbox.outbox_deliveries) AS owners`, nil)
	require.NoError(t, err)
	starts, owners := ac.Starts, ac.Owners
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
