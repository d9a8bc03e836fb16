package billing_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/inbox/inboxtest"
)

// coordinatorStateSQL fingerprints what the coordinator durably decided:
// receipts, closure watermarks and the fences' states (generation numbers
// and revisions count how the state was reached; with one closure per run
// they do not depend on the order across runs).
const coordinatorStateSQL = `
SELECT concat_ws(E'\n',
 (SELECT string_agg(event_id::text || '|' || event_envelope_sha256, ',' ORDER BY event_id) FROM billing.coordinator_receipts),
 (SELECT string_agg(concat_ws('|', billing_finalization_fence_id, closure_event_id, run_execution_finalization_ref,
     attempt_set_manifest_ref, attempt_count, work_generation), ';' ORDER BY billing_finalization_fence_id) FROM billing.closure_watermarks),
 (SELECT string_agg(concat_ws('|', billing_finalization_fence_id, coordination_state, finalization_fence_revision,
     active_work_generation, closure_watermark_state), ';' ORDER BY billing_finalization_fence_id) FROM billing.billing_finalization_fences))`

// TestConformance runs the shared consumer conformance suite against the
// coordinator (CON-1..CON-3, OB-DELIVER-6, reordering; BFC: receipts of
// execution.run-finalization.closed@1 are insert-or-compare by event).
func TestConformance(t *testing.T) {
	t.Parallel()
	inboxtest.Run(t, coordinatorSubject)
}

// TestConformanceBatch runs the conformance suite through the batch entry
// point and the batch cases (CON-1, CON-2, OB-DELIVER-6): ConsumeBatch
// answers as Consume does, although serve does not wire it for the
// coordinator. Its lock timeout leaves room for deliveries that wait for
// several others' transactions on one receipt key (300ms does not on a
// loaded machine).
func TestConformanceBatch(t *testing.T) {
	t.Parallel()
	inboxtest.RunBatch(t, func(t *testing.T) inboxtest.Subject {
		s, b := coordinatorSubjectOf(t)
		c, err := billing.NewCoordinator(b.pool, billing.CoordinatorConfig{Inbox: inbox.Config{LockTimeout: 5 * time.Second}})
		require.NoError(t, err)
		s.ConsumeBatch = c.ConsumeBatch
		return s
	})
}

// coordinatorSubject builds a conformance Subject over a fresh database.
func coordinatorSubject(t *testing.T) inboxtest.Subject {
	s, _ := coordinatorSubjectOf(t)
	return s
}

func coordinatorSubjectOf(t *testing.T) (inboxtest.Subject, *bundle) {
	b := setup(t)
	r1, r2 := newRun(1), newRun(2)
	admit(t, b.admin, r1)
	admit(t, b.admin, r2)
	return inboxtest.Subject{
		Consume:      b.c.Consume,
		ConsumeBatch: b.c.ConsumeBatch,
		Member:       member,
		Chains:       [][]*envelope.Envelope{{r1.closure("")}, {r2.closure("")}},
		State: func(ctx context.Context) (string, error) {
			var s string
			err := b.admin.QueryRow(ctx, coordinatorStateSQL).Scan(&s)
			return s, err
		},
		// A held lock on the fences: the coordinator's lock wait times out (retryable).
		Block: func(t *testing.T) func() {
			tx, err := b.admin.Begin(t.Context())
			require.NoError(t, err)
			_, err = tx.Exec(t.Context(), "SELECT 1 FROM billing.billing_finalization_fences FOR UPDATE")
			require.NoError(t, err)
			return func() { require.NoError(t, tx.Rollback(context.Background())) }
		},
	}, b
}

// BFC-1: the closure event schedules a new Work generation in one inbox
// transaction: closure watermark with the receipt's quadruple, a new
// content-addressed trigger snapshot, the admission generation superseded,
// the fence pending on generation 2; the receipt is work_scheduled and binds
// exactly that generation.
func TestBFC1ClosureSchedulesNewGeneration(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	opened := admit(t, b.admin, r)
	require.Equal(t, billing.WorkWaiting, opened.WorkState)

	res, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)
	rc, err := receipt.DecodeBillingFinalizationCoordinatorConsumerReceipt(res.ReceiptBody)
	require.NoError(t, err)
	require.NoError(t, rc.VerifyDigest())
	require.Equal(t, receipt.CoordinatorWorkScheduled, rc.Outcome.State)
	require.EqualValues(t, 2, rc.Outcome.Work.WorkGeneration)
	require.EqualValues(t, 2, rc.Outcome.FinalizationFenceRevision)
	require.Equal(t, r.reservationID, rc.Source.Closure.BillingReservationID)

	f := b.fence(t, r.fenceID)
	require.Equal(t, billing.FencePendingEvaluation, f.State)
	require.EqualValues(t, 2, *f.Active)
	require.Equal(t, "applied", f.Closure)
	state, _ := b.workState(t, r.fenceID, 1)
	require.Equal(t, billing.WorkSuperseded, state)
	state, _ = b.workState(t, r.fenceID, 2)
	require.Equal(t, billing.WorkPending, state)

	var receiptRef, workRef, snapshotBody string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT c.coordinator_receipt_ref, w.work_ref, s.snapshot_body
		FROM billing.closure_watermarks c
		JOIN billing.billing_finalization_works w ON w.billing_finalization_fence_id = c.billing_finalization_fence_id AND w.work_generation = 2
		JOIN billing.billing_finalization_trigger_snapshots s ON s.trigger_snapshot_ref = w.trigger_snapshot_ref
		WHERE c.billing_finalization_fence_id = $1`, r.fenceID).Scan(&receiptRef, &workRef, &snapshotBody))
	require.Equal(t, rc.Receipt.Ref, receiptRef)
	require.Equal(t, rc.Outcome.Work.Work.Ref, workRef)
	require.Contains(t, snapshotBody, `"closureEventId":"`+r.closure("").EventID+`"`)

	// A redelivery returns the first receipt byte for byte, nothing new.
	again, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)
	require.Equal(t, res.ReceiptBody, again.ReceiptBody)
	require.Equal(t, f, b.fence(t, r.fenceID))
}

// BFC-2 (EX-2 on the consumer side): a second, different closure event for
// the same run is non_retryable and writes nothing; so is a closure that
// does not match the admitted reservation.
func TestBFC2SecondOrMismatchedClosureRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	admit(t, b.admin, r)
	_, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)
	before := b.fence(t, r.fenceID)
	_, err = b.deliver(t, r.closure("-second"))
	requireCode(t, err, false, billing.CodeClosureConflict)
	require.Equal(t, before, b.fence(t, r.fenceID))

	other := newRun(2)
	admit(t, b.admin, other)
	wrong := other
	wrong.accountID = r.accountID
	_, err = b.deliver(t, wrong.closure(""))
	requireCode(t, err, false, billing.CodeClosureIdentity)
	f := b.fence(t, other.fenceID)
	require.Equal(t, "none", f.Closure)
	require.EqualValues(t, 1, f.Revision)
	var n int
	require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT count(*) FROM billing.coordinator_receipts").Scan(&n))
	require.Equal(t, 1, n)
}

// BFC-3: a closure event before its fence exists is retryable and writes
// nothing (no receipt); once the reservation is admitted it applies.
func TestBFC3ClosureBeforeFenceIsRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	_, err := b.deliver(t, r.closure(""))
	requireCode(t, err, true, billing.CodeFenceNotBindable)
	var n int
	require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT count(*) FROM billing.coordinator_receipts").Scan(&n))
	require.Zero(t, n)
	admit(t, b.admin, r)
	_, err = b.deliver(t, r.closure(""))
	require.NoError(t, err)
}

// BFC-4 Work-before-closure: the admission generation run before the
// closure is applied can only end blocked with closure_event_not_applied
// (no Execution read happens: the function takes no owner read at all);
// any other evaluation is refused. The closure then schedules generation 2
// from awaiting_finalization.
func TestBFC4WorkBeforeClosure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	opened := admit(t, b.admin, r)

	_, err := tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, billing.Evaluation{FenceID: r.fenceID, WorkGeneration: 1, OperationID: opened.OperationID,
			Outcome: billing.EvaluationBlocked, ReasonCode: "settlement_input_pending", ReasonDetail: "x"})
	})
	require.ErrorIs(t, err, billing.ErrClosureNotApplied)
	_, err = tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.CommitResult, error) {
		d := b.decision(t, r, "release_all", "0", "2500")
		if err := billingtest.StoreDecisionTx(ctx, tx, d); err != nil {
			return billing.CommitResult{}, err
		}
		return billing.CommitFinalizationTx(ctx, tx, d, billing.CommitOpts{})
	})
	require.ErrorIs(t, err, billing.ErrStaleWork, "the waiting admission Work can never commit")

	ev, err := tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.FinishBeforeClosureTx(ctx, tx, r.fenceID, 1, opened.OperationID)
	})
	require.NoError(t, err)
	require.False(t, ev.Replayed)
	f := b.fence(t, r.fenceID)
	require.Equal(t, billing.FenceAwaitingFinalization, f.State)
	require.Equal(t, "blocked:closure_event_not_applied", *f.Waiting)
	require.Nil(t, f.Active)
	state, _ := b.workState(t, r.fenceID, 1)
	require.Equal(t, billing.WorkEvaluated, state)

	_, err = b.deliver(t, r.closure(""))
	require.NoError(t, err)
	f = b.fence(t, r.fenceID)
	require.Equal(t, billing.FencePendingEvaluation, f.State)
	require.EqualValues(t, 2, *f.Active)
	require.Nil(t, f.Waiting)
}

// BFC-5: a pair the coordinator does not consume is non_retryable, and a
// resolution event whose payload does not decode too; nothing is written.
func TestBFC5OnlyClosureDecoded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	admit(t, b.admin, r)
	e := r.closure("")
	d := delivery(e)
	d.EventType, d.Member.EventType = envelope.MeteringSettlementInputCurrentChangedV1, envelope.MeteringSettlementInputCurrentChangedV1
	_, err := b.c.Consume(t.Context(), d)
	require.Error(t, err)
	retryable, _ := inboxRetryable(err)
	require.False(t, retryable, "error: %v", err)
	require.EqualValues(t, 1, b.fence(t, r.fenceID).Revision)

	// The resolution pair is consumed (issue 31): a payload that does not
	// decode is the event's fault and writes nothing.
	_, err = b.c.ApplyTx(t.Context(), nil, &inbox.Event{Envelope: &envelope.Envelope{EventType: receipt.EventFinalizationReconciliationResolutionApplied, EventSchemaVersion: "1"}})
	require.Error(t, err)
	retryable, _ = inboxRetryable(err)
	require.False(t, retryable, "error: %v", err)
}
