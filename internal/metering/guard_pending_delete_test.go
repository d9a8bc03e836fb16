package metering_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/metering"
)

// TestGuardClausesME012PendingDeleteWithFinish (ME012.pending-delete-unfinished;
// docs/metering.md "Finality guards" ME012, migration 00015: a queue row is
// deleted only with its finish). As oceanway_metering, the role that holds
// DELETE on metering.pending_works for the worker's dequeue:
//   - the queue row of a claimed, unfinished Work: its DELETE is refused
//     with ME012 (before 00015 it committed and the Work was lost: never
//     claimed again, never finished);
//   - a DELETE of every queue row (an unclaimed Work of another attempt
//     too): refused with ME012, nothing leaves the queue;
//   - the real worker, as the same role, processes the claimed attempt: its
//     finish and its dequeue commit in one transaction, the queue row is
//     gone and the finish is stored (the finish path passes the guard).
func TestGuardClausesME012PendingDeleteWithFinish(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	a := newAttempt(3751)
	dispatched(t, b, a)
	att, err := metering.ClaimLane(t.Context(), role, receipt.LaneEligibility, time.Hour)
	require.NoError(t, err)
	ref := att.Head.Work.Ref
	other := newAttempt(3752)
	b.ack(t, other.eligibility(b.owners, contract.DispositionNotDispatched)) // an unclaimed Work
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works WHERE work_ref = $1 AND lease_until > now()`, ref),
		"the Work is claimed")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes`), "no Work is finished")

	const fragment = "deleted without its finish"
	err = commitAs(t, role, execStep(t, `DELETE FROM metering.pending_works WHERE work_ref = $1`, ref))
	requireRefused(t, err, metering.SQLStatePendingWorkUnfinished, fragment, "ME012.pending-delete-unfinished: the claimed Work")
	err = commitAs(t, role, execStep(t, `DELETE FROM metering.pending_works`))
	requireRefused(t, err, metering.SQLStatePendingWorkUnfinished, fragment, "ME012.pending-delete-unfinished: every queue row")
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`), "nothing left the queue")

	// The worker's finish path, as the role: finish, then dequeue.
	p, err := metering.NewProcessor(role, metering.ProcessorConfig{Reads: b.owners})
	require.NoError(t, err)
	out, err := p.Process(t.Context(), att)
	require.NoError(t, err)
	require.NotNil(t, out.Finished, "the Work is finished")
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes WHERE work_ref = $1`, ref))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.pending_works WHERE work_ref = $1`, ref), "the finish dequeued it")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`), "the unclaimed Work stays queued")
}
