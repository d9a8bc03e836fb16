package catchup_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/inbox/inboxtest"
	"github.com/oceanway/core/internal/outbox/transport"
)

// catchUpStateSQL fingerprints what the consumer durably decided,
// independent of the order that reached it: which events have receipts,
// each dimension's watermark, and each fence's evaluated input, state and
// whether its pending Work verifies the watermark (generation numbers and
// fence revisions count how the state was reached and are left out).
const catchUpStateSQL = `
SELECT concat_ws(E'\n',
 (SELECT string_agg(event_id::text, ',' ORDER BY event_id) FROM billing.settlement_catch_up_receipts),
 (SELECT string_agg(concat_ws('|', settlement_dimension_id, settlement_input_state_version, settlement_input_snapshot_ref), ';'
    ORDER BY settlement_dimension_id) FROM billing.settlement_input_watermarks),
 (SELECT string_agg(concat_ws('|', f.settlement_dimension_id, f.settlement_state_revision, f.last_evaluated_state_version,
    f.coordination_state, (SELECT w.to_verify_state_version FROM billing.settlement_catch_up_works w
      WHERE w.settlement_dimension_id = f.settlement_dimension_id AND w.work_generation = f.active_work_generation)), ';'
    ORDER BY f.settlement_dimension_id) FROM billing.settlement_catch_up_fences f))`

func (b *catchUpBundle) state(ctx context.Context) (string, error) {
	var s string
	err := b.admin.QueryRow(ctx, catchUpStateSQL).Scan(&s)
	return s, err
}

// TestCatchUpConformance runs the shared consumer conformance suite against
// the settlement catch-up consumer (CON-1..CON-3, OB-DELIVER-6, reordering):
// one dimension before its finalization (finalization_work_scheduled) and
// one after (settlement_catch_up_scheduled).
func TestCatchUpConformance(t *testing.T) {
	t.Parallel()
	inboxtest.Run(t, catchUpSubject)
}

// TestCatchUpConformanceBatch runs the conformance suite through the batch
// entry point and the batch cases (CON-1, CON-2, OB-DELIVER-6):
// ConsumeBatch answers as Consume does, although serve does not wire it for
// the catch-up consumer.
func TestCatchUpConformanceBatch(t *testing.T) {
	t.Parallel()
	inboxtest.RunBatch(t, catchUpSubject)
}

// catchUpSubject builds a conformance Subject over a fresh database.
func catchUpSubject(t *testing.T) inboxtest.Subject {
	pre, post := catchUpDimension(1), catchUpDimension(2)
	b := setupCatchUp(t)
	b.finalization.set(pre.BillingReservationID, catchup.FinalizationInputWorkScheduled)
	b.finalize(t, "100", post)
	return inboxtest.Subject{
		Consume:      b.consumer.Consume,
		ConsumeBatch: b.consumer.ConsumeBatch,
		Member:       catchUpMember,
		Chains: [][]*envelope.Envelope{
			{inputEvent(pre, 1), inputEvent(pre, 2)},
			{inputEvent(post, 2), inputEvent(post, 3)},
		},
		State: b.state,
		Block: func(t *testing.T) func() {
			b.finalization.blocked.Store(true)
			return func() { b.finalization.blocked.Store(false) }
		},
	}
}

var _ inbox.Consumer = (*catchup.Consumer)(nil)

// BSC-1 (outbox document, catch-up receipt rules): finalization_work_scheduled
// only before a successful finalization, settlement_catch_up_scheduled only
// after, and bound field by field to the fence's active Work.
func TestBSC1DurabilityBranchFollowsFinalization(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.finalization.set(d.BillingReservationID, catchup.FinalizationInputWorkScheduled)

	r := b.ack(t, inputEvent(d, 1))
	require.Equal(t, receipt.CatchUpWatermarkAdvanced, r.Outcome.Kind)
	require.EqualValues(t, 1, r.Outcome.InboxRevision)
	require.Equal(t, receipt.DurabilityFinalizationWorkScheduled, r.Outcome.Durability.State)
	require.NotNil(t, r.Outcome.Durability.FinalizationWork)

	b.finalize(t, "100", d)
	r = b.ack(t, inputEvent(d, 2))
	require.Equal(t, receipt.CatchUpWatermarkAdvanced, r.Outcome.Kind)
	require.EqualValues(t, 2, r.Outcome.InboxRevision)
	require.Equal(t, receipt.DurabilitySettlementCatchUpScheduled, r.Outcome.Durability.State)
	s := r.Outcome.Durability.SettlementCatchUp
	require.NotNil(t, s)
	// The first Work (generation 1) already verifies v2 (the watermark at
	// finalization was v1; the event is v2): a new generation binds v2.
	f := b.fence(t, d)
	require.Equal(t, f.Revision, s.SettlementCatchUpFenceRevision)
	require.Equal(t, f.Generation, s.WorkGeneration)
	var workRef, opID string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT work_ref, validation_operation_id::text FROM billing.settlement_catch_up_works
		WHERE settlement_dimension_id = $1 AND work_generation = $2`, d.SettlementDimensionID(), s.WorkGeneration).Scan(&workRef, &opID))
	require.Equal(t, workRef, s.Work.Ref)
	require.Equal(t, opID, s.BillingCatchUpValidationOperationID)
	require.Equal(t, 1, b.finalization.seen[d.BillingReservationID], "after finalization the finalization fence is not asked")
}

// BSC-2: while the finalization fence is in reconciliation, a newer input
// advances the watermark and is held_for_resolution, with no catch-up Work,
// generation or operation.
func TestBSC2HeldForResolutionHasNoWork(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.finalization.set(d.BillingReservationID, catchup.FinalizationInputHeld)
	r := b.ack(t, inputEvent(d, 1))
	require.Equal(t, receipt.DurabilityHeldForResolution, r.Outcome.Durability.State)
	require.Nil(t, r.Outcome.Durability.SettlementCatchUp)
	require.Nil(t, r.Outcome.Durability.FinalizationWork)
	require.EqualValues(t, 1, r.Outcome.Durability.HeldForResolution.ExpectedResolutionRevision)
	var works, version int64
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.settlement_catch_up_works`).Scan(&works))
	require.Zero(t, works)
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT settlement_input_state_version FROM billing.settlement_input_watermarks`).Scan(&version))
	require.EqualValues(t, 1, version, "the watermark advanced before the hold")
}

// BSC-3: an event no fence can bind yet keeps its watermark, writes no
// receipt and is retryable; once the finalization opened the fence, the
// redelivery binds the first Work, which already verifies that input.
func TestBSC3UnbindableEventWaitsWithWatermark(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.finalization.set(d.BillingReservationID, "waiting_for_closure")
	e := inputEvent(d, 2)
	_, err := b.consumer.Consume(t.Context(), catchUpDelivery(e))
	require.Error(t, err)
	retryable, code := transport.RetryableAndCode(err)
	require.True(t, retryable)
	require.Equal(t, catchup.CodeFenceNotBindable, code)
	var receipts, version int64
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.settlement_catch_up_receipts`).Scan(&receipts))
	require.Zero(t, receipts)
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT settlement_input_state_version FROM billing.settlement_input_watermarks`).Scan(&version))
	require.EqualValues(t, 2, version)

	b.finalize(t, "100", d) // settles v1; the first Work verifies the watermark v2
	r := b.ack(t, e)
	require.EqualValues(t, 1, r.Outcome.InboxRevision, "the same advance, bound now")
	s := r.Outcome.Durability.SettlementCatchUp
	require.NotNil(t, s)
	require.EqualValues(t, 1, s.WorkGeneration, "the first Work already verifies v2: no new generation")
	require.EqualValues(t, 1, s.SettlementCatchUpFenceRevision)
}

// BSC-4: already_observed only for an event below the watermark, with the
// highest observed input; every redelivery returns its original receipt,
// never one rewritten from the newer watermark.
func TestBSC4AlreadyObservedAndOriginalReceipts(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.finalize(t, "100", d)
	first := b.ack(t, inputEvent(d, 2))
	third := b.ack(t, inputEvent(d, 4))
	older := b.ack(t, inputEvent(d, 3))
	require.Equal(t, receipt.CatchUpWatermarkAdvanced, first.Outcome.Kind)
	require.Equal(t, receipt.CatchUpWatermarkAdvanced, third.Outcome.Kind)
	require.Equal(t, receipt.CatchUpAlreadyObserved, older.Outcome.Kind)
	require.EqualValues(t, 4, older.Outcome.HighestObserved.StateVersion)
	require.Equal(t, settlementInputOf(d, 4).Snapshot, older.Outcome.HighestObserved.Snapshot)
	require.EqualValues(t, 2, older.Outcome.InboxRevision)
	// Redeliveries (lost responses) answer the first receipts byte for byte.
	for _, c := range []struct {
		e    *envelope.Envelope
		want *receipt.BillingSettlementCatchUpConsumerReceipt
	}{{inputEvent(d, 2), first}, {inputEvent(d, 3), older}} {
		again := b.ack(t, c.e)
		require.Equal(t, c.want.Receipt, again.Receipt)
		require.Equal(t, c.want.Outcome.Kind, again.Outcome.Kind)
	}
	// Same revision, another snapshot: non_retryable, nothing written.
	other := inputEvent(d, 4)
	p, err := envelope.PayloadOf[envelope.MeteringSettlementInputCurrentChangedV1Payload](other)
	require.NoError(t, err)
	p.SetSettlementInputSnapshot(cquad("sis-other"))
	changed := *other
	changed.EventID, changed.Payload = cid("other-event"), p.Map()
	built, err := envelope.Build(changed)
	require.NoError(t, err)
	before, err := b.state(t.Context())
	require.NoError(t, err)
	_, err = b.consumer.Consume(t.Context(), catchUpDelivery(built))
	retryable, code := transport.RetryableAndCode(err)
	require.False(t, retryable)
	require.Equal(t, catchup.CodeSameRevisionDiff, code) // BI-3.watermark-same-version-other-snapshot
	after, err := b.state(t.Context())
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// BI-3: "S1 receipt → S2 event early → finalize on S1 → no S3" catches up
// to S2: the first Work verifies the watermark S2, commits the S1→S2
// transition with a successor Work, and only the successor's own current
// receipt marks the fence caught_up. (Suppressing the successor Work in
// commitCatchUpTransition makes this test fail: the fence would stay
// pending on a Work whose basis is stale, never caught_up.)
func TestBI3S2EarlyFinalizeOnS1NoS3CatchesUp(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.finalization.set(d.BillingReservationID, catchup.FinalizationInputWorkScheduled)
	b.metering.append(d, 1, "100")
	b.ack(t, inputEvent(d, 1))
	b.metering.append(d, 2, "80")
	r := b.ack(t, inputEvent(d, 2)) // S2 early: before the finalization
	require.Equal(t, receipt.DurabilityFinalizationWorkScheduled, r.Outcome.Durability.State)
	b.finalize(t, "100", d) // on S1, no S3 ever

	steps := b.drain(t)
	require.Equal(t, 1, steps[catchup.StepTransition])
	require.Equal(t, 1, steps[catchup.StepCaughtUp])
	require.Equal(t, []string{"1>2 refund 20 v2"}, b.transitions(t, d))
	f := b.fence(t, d)
	require.Equal(t, billingc.CatchUpCaughtUp, f.State)
	require.EqualValues(t, 2, f.LastEvaluated)
	require.EqualValues(t, 2, f.StateRevision)
	require.Equal(t, "80", f.Settled)
	require.EqualValues(t, 2, f.Generation, "caught up by the successor generation")
	// One finish per generation: gen 1 applied the transition with gen 2 as
	// its successor, gen 2 caught up.
	rows, err := b.admin.Query(t.Context(), `SELECT concat(work_generation, ' ', outcome, ' ', COALESCE(successor_generation::text, '-'))
		FROM billing.settlement_catch_up_finishes ORDER BY work_generation`)
	require.NoError(t, err)
	finishes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"1 transition_applied 2", "2 caught_up -"}, finishes)
}

// BI-3: the first Work verifies once even when no newer event arrived (the
// S2 event is still in flight): Metering's not_current answer leads to S2.
func TestBI3FirstWorkVerifiesWithoutEvent(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "100")
	b.finalize(t, "100", d)
	steps := b.drain(t)
	require.Equal(t, 1, steps[catchup.StepAlreadyEvaluated], "no difference: a rebaseline, no transition")
	require.Empty(t, b.transitions(t, d))
	f := b.fence(t, d)
	require.Equal(t, billingc.CatchUpCaughtUp, f.State)
	require.EqualValues(t, 2, f.LastEvaluated)
	require.EqualValues(t, 1, f.StateRevision)
}

// BI-3: S3 arriving during the verification reopens the fence: the step in
// flight is superseded (nothing written) and the catch-up ends at S3.
func TestBI3S3DuringVerificationReopensAndEndsAtS3(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "90")
	b.finalize(t, "100", d)
	b.ack(t, inputEvent(d, 2))
	delivered := false
	b.metering.beforeValidate = func(req catchup.ValidationRequest) {
		if delivered || req.Purpose != catchup.PurposePostFinalizationTransition {
			return
		}
		delivered = true
		b.metering.append(d, 3, "70")
		_, err := b.consumer.Consume(context.Background(), catchUpDelivery(inputEvent(d, 3)))
		require.NoError(t, err)
	}
	steps := b.drain(t)
	require.True(t, delivered)
	require.Positive(t, steps[catchup.StepValidationChanged]+steps[catchup.StepSuperseded])
	require.Equal(t, []string{"1>2 refund 30 v3"}, b.transitions(t, d))
	f := b.fence(t, d)
	require.Equal(t, billingc.CatchUpCaughtUp, f.State)
	require.EqualValues(t, 3, f.LastEvaluated)
	require.Equal(t, "70", f.Settled)
	// The stale v2 validation was not reused for v3: a new basis, a new operation.
	require.Empty(t, b.metering.reused())
}

// BI-2 (reconcile_before_charge): a positive difference after release is
// recorded as an open, blocked LateSettlementExposure@1 — never charged, no
// ledger posting, settled unchanged — and its transition event is appended.
func TestBI2PositiveDifferenceIsBlockedExposure(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "130")
	b.finalize(t, "100", d)
	b.drain(t)
	require.Equal(t, []string{"1>2 late_settlement_exposure 30 v2"}, b.transitions(t, d))
	require.Empty(t, b.ledger.posted, "an exposure never posts")
	f := b.fence(t, d)
	require.Equal(t, "100", f.Settled)
	require.Equal(t, billingc.CatchUpCaughtUp, f.State)
	var amount, state, charge, body string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT exposure_amount::text, exposure_state, automatic_charge, exposure_body
		FROM billing.late_settlement_exposures WHERE settlement_dimension_id = $1`, d.SettlementDimensionID()).Scan(&amount, &state, &charge, &body))
	require.Equal(t, "30", amount)
	require.Equal(t, "open", state)
	require.Equal(t, "blocked", charge)
	e, err := billingc.DecodeLateSettlementExposure([]byte(body))
	require.NoError(t, err)
	require.EqualValues(t, 2, e.SettlementStateRevision)
	var kind string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT event_payload->>'transitionKind' FROM outbox.outbox_events
		WHERE event_type = 'billing.settlement-transition.committed@1'`).Scan(&kind))
	require.Equal(t, billingc.TransitionLateSettlementExposure, kind)

	// Visible (inspect/admin view, as the billing role): open, blocked.
	v, err := catchup.Lookup(t.Context(), b.pool, d.BillingReservationID)
	require.NoError(t, err)
	require.Len(t, v.Fences, 1)
	require.Equal(t, "100", v.Fences[0].SettledAmount)
	require.Len(t, v.Transitions, 1)
	require.Len(t, v.Exposures, 1)
	require.Equal(t, "open", v.Exposures[0].ExposureState)
	require.Equal(t, "blocked", v.Exposures[0].AutomaticCharge)
	require.Equal(t, "30", v.Exposures[0].ExposureAmount)
	n, sum, err := catchup.OpenExposures(t.Context(), b.pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, "30", sum)
}

// BI-2: refunds post to the ledger and append their event in the
// transition's transaction; the chain is contiguous and each event is
// caused by the finalization (first) or the previous transition.
func TestBI2RefundsChainContiguousWithCausation(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "80")
	b.finalize(t, "100", d)
	b.drain(t)
	b.metering.append(d, 3, "50")
	b.ack(t, inputEvent(d, 3))
	b.drain(t)
	require.Equal(t, []string{"1>2 refund 20 v2", "2>3 refund 30 v3"}, b.transitions(t, d))
	require.Equal(t, []string{"refund:20", "refund:30"}, b.ledger.posted)
	rows, err := b.admin.Query(t.Context(), `SELECT e.aggregate_revision, e.causation_id::text, t.event_id::text
		FROM billing.settlement_transitions t JOIN outbox.outbox_events e ON e.event_id = t.event_id
		WHERE t.settlement_dimension_id = $1 ORDER BY t.from_settlement_state_revision`, d.SettlementDimensionID())
	require.NoError(t, err)
	type ev struct {
		Revision  int64
		Causation string
		EventID   string
	}
	evs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ev])
	require.NoError(t, err)
	require.Len(t, evs, 2)
	require.EqualValues(t, 1, evs[0].Revision)
	require.Equal(t, cid("finalization-event", d.BillingReservationID), evs[0].Causation)
	require.EqualValues(t, 2, evs[1].Revision)
	require.Equal(t, evs[0].EventID, evs[1].Causation)
	var deliveries int
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT count(*) FROM outbox.outbox_deliveries d JOIN billing.settlement_transitions t
		ON t.event_id = d.event_id`).Scan(&deliveries))
	require.Equal(t, 2, deliveries, "each transition event has its core_operations delivery")
}

// BI-2: a transition and its successor Work commit together or not at all:
// a failing ledger posting leaves no transition, no event, no Work and the
// fence unchanged; the retry then commits exactly one transition.
func TestBI2TransitionRollsBackWhole(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "60")
	b.finalize(t, "100", d)
	before := b.fence(t, d)
	b.ledger.fail.Store(true)
	_, err := b.worker.Step(t.Context(), d.SettlementDimensionID())
	require.ErrorIs(t, err, errLedgerDown)
	require.Equal(t, before, b.fence(t, d))
	require.Empty(t, b.transitions(t, d))
	var events, works int
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT count(*) FROM outbox.outbox_events WHERE event_type = 'billing.settlement-transition.committed@1'`).Scan(&events))
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.settlement_catch_up_works`).Scan(&works))
	require.Zero(t, events)
	require.Equal(t, 1, works)
	b.ledger.fail.Store(false)
	b.drain(t)
	require.Equal(t, []string{"1>2 refund 40 v2"}, b.transitions(t, d))
}

// BI-2: a transition is never applied twice: the same step replayed after
// its commit (lost response) is superseded and writes nothing, and the
// database refuses a second transition from the same revision.
func TestBI2DuplicateTransitionRejected(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "60")
	b.finalize(t, "100", d)
	step, err := b.worker.Step(t.Context(), d.SettlementDimensionID())
	require.NoError(t, err)
	require.Equal(t, catchup.StepTransition, step)
	b.drain(t)
	require.Len(t, b.transitions(t, d), 1)

	// The database itself: a copy of the committed transition under a new
	// ref and event does not start from the fence's settled state (BC010,
	// as the billing role); with that guard switched off inside the table
	// owner's own transaction, the (dimension, from) key refuses it (23505).
	copyTransition := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO billing.settlement_transitions (settlement_dimension_id, from_settlement_state_revision,
			to_settlement_state_revision, billing_reservation_id, billing_account_id, transition_ref, transition_schema_version,
			transition_digest_algorithm_version, transition_digest, transition_kind, settled_amount_before, settled_amount_after,
			transition_amount, settlement_input_state_version, validation_operation_id, work_generation, event_id, event_envelope_sha256, transition_body, committed_at)
			SELECT settlement_dimension_id, from_settlement_state_revision, to_settlement_state_revision, billing_reservation_id,
			billing_account_id, transition_ref || '-again', transition_schema_version, transition_digest_algorithm_version, transition_digest,
			transition_kind, settled_amount_before, settled_amount_after, transition_amount, settlement_input_state_version,
			gen_random_uuid(), work_generation, gen_random_uuid(), event_envelope_sha256, transition_body, committed_at FROM billing.settlement_transitions`)
		return err
	}
	err = db.WithTx(t.Context(), b.admin, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE oceanway_billing"); err != nil {
			return err
		}
		return copyTransition(ctx, tx)
	})
	require.Equal(t, catchup.CodeTransitionOffFence, db.SQLState(err))
	err = db.WithTx(t.Context(), b.admin, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "ALTER TABLE billing.settlement_transitions DISABLE TRIGGER settlement_transitions_from_fence"); err != nil {
			return err
		}
		return copyTransition(ctx, tx)
	})
	require.Equal(t, pgerrcode.UniqueViolation, db.SQLState(err))
}

// BSC-5: the database is the second guard, tested as the billing role.
func TestBSC5DatabaseGuards(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "130")
	b.finalize(t, "100", d)
	b.drain(t)
	b.ack(t, inputEvent(d, 3)) // the watermark is now ahead of the fence's evaluated input
	dimID := d.SettlementDimensionID()
	for _, c := range []struct {
		name, sql, state string
		asRole           bool
	}{
		{"works are insert-only (grant)", "UPDATE billing.settlement_catch_up_works SET work_cause = 'transition_successor'", pgerrcode.InsufficientPrivilege, true},
		{"works are insert-only (trigger)", "UPDATE billing.settlement_catch_up_works SET work_cause = 'transition_successor'", catchup.CodeInsertOnly, false},
		{"transitions are insert-only", "DELETE FROM billing.settlement_transitions", catchup.CodeInsertOnly, false},
		{"exposures stay open and blocked", "UPDATE billing.late_settlement_exposures SET automatic_charge = 'blocked'", catchup.CodeInsertOnly, false},
		{"receipts are insert-only", "DELETE FROM billing.settlement_catch_up_receipts", pgerrcode.InsufficientPrivilege, true},
		{"finishes are insert-only", "UPDATE billing.settlement_catch_up_finishes SET outcome = 'caught_up'", catchup.CodeInsertOnly, false},
		// A second finish carries a spent token: BC008 answers before the primary key (23505)
		// (clause BC008.token-finished). The fence's graph: clause BC003.fence-graph; the
		// watermark ahead: clause BC004.caught-up-ahead.
		{"a generation finishes once", "INSERT INTO billing.settlement_catch_up_finishes SELECT settlement_dimension_id, work_generation, finished_ref || '-again', finished_schema_version, finished_digest_algorithm_version, finished_digest, outcome, successor_generation, transition_to_revision, finished_body, finished_at, attempt_number, fencing_token FROM billing.settlement_catch_up_finishes", catchup.CodeAttemptFinished, true},
		{"fence revision moves by one", "UPDATE billing.settlement_catch_up_fences SET fence_revision = fence_revision + 2", catchup.CodeFenceGraph, true},
		{"settled never rises", "UPDATE billing.settlement_catch_up_fences SET fence_revision = fence_revision + 1, settled_amount = settled_amount + 1", catchup.CodeFenceGraph, true},
		{"state revision only with a transition", "UPDATE billing.settlement_catch_up_fences SET fence_revision = fence_revision + 1, settlement_state_revision = settlement_state_revision + 1, active_work_generation = active_work_generation", catchup.CodeFenceGraph, true},
		{"no caught_up while the watermark is ahead", "UPDATE billing.settlement_catch_up_fences SET fence_revision = fence_revision + 1, coordination_state = 'caught_up', caught_up_receipt_ref = 'r', caught_up_receipt_schema_version = '1', caught_up_receipt_digest_algorithm_version = 'jcs-sha256-v1', caught_up_receipt_digest = 'd'", catchup.CodeCaughtUpAhead, true},
		{"fences are never deleted", "DELETE FROM billing.settlement_catch_up_fences", pgerrcode.InsufficientPrivilege, true},
	} {
		err := pgx.BeginFunc(t.Context(), b.admin, func(tx pgx.Tx) error {
			if c.asRole {
				if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_billing"); err != nil {
					return err
				}
			}
			_, err := tx.Exec(t.Context(), c.sql)
			return err
		})
		require.Equal(t, c.state, db.SQLState(err), "%s (%s): %v", c.name, dimID, err)
	}
	// An exposure transition without its exposure fails at commit (BC005,
	// clause BC005.exposure-missing):
	// it starts where the fence stands (its settled amount, its active
	// Work), so BC010 lets it in.
	err := pgx.BeginFunc(t.Context(), b.admin, func(tx pgx.Tx) error {
		_, err := tx.Exec(t.Context(), `INSERT INTO billing.settlement_transitions (settlement_dimension_id, from_settlement_state_revision,
			to_settlement_state_revision, billing_reservation_id, billing_account_id, transition_ref, transition_schema_version,
			transition_digest_algorithm_version, transition_digest, transition_kind, settled_amount_before, settled_amount_after,
			transition_amount, settlement_input_state_version, validation_operation_id, work_generation, event_id, event_envelope_sha256, transition_body, committed_at)
			SELECT settlement_dimension_id, to_settlement_state_revision, to_settlement_state_revision + 1, billing_reservation_id,
			billing_account_id, transition_ref || '-next', transition_schema_version, transition_digest_algorithm_version, transition_digest,
			transition_kind, settled_amount_after, settled_amount_after, transition_amount, settlement_input_state_version + 1,
			gen_random_uuid(), (SELECT active_work_generation FROM billing.settlement_catch_up_fences f
			                     WHERE f.settlement_dimension_id = t.settlement_dimension_id),
			gen_random_uuid(), event_envelope_sha256, transition_body, committed_at FROM billing.settlement_transitions t`)
		return err
	})
	require.Equal(t, catchup.CodeExposureMissing, db.SQLState(err), "%v", err)
}

// BI-3: every order of {finalization, S2 event, S3 event, worker pass}
// converges: the fence ends caught_up at S3 with settled = S3's target and
// a contiguous chain without repeats.
func TestBI3EveryOrderConverges(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	steps := []string{"finalize", "s2", "s3", "work"}
	var orders [][]string
	var permute func(prefix, rest []string)
	permute = func(prefix, rest []string) {
		if len(rest) == 0 {
			orders = append(orders, append([]string(nil), prefix...))
			return
		}
		for i := range rest {
			next := append(append([]string(nil), rest[:i]...), rest[i+1:]...)
			permute(append(prefix, rest[i]), next)
		}
	}
	permute(nil, steps)
	for n, order := range orders {
		d := catchUpDimension(100 + n)
		b.finalization.set(d.BillingReservationID, catchup.FinalizationInputWorkScheduled)
		b.metering.append(d, 1, "100")
		b.metering.append(d, 2, "90")
		b.metering.append(d, 3, "70")
		finalized := false
		for _, s := range order {
			switch s {
			case "finalize":
				b.finalize(t, "100", d)
				finalized = true
			case "s2", "s3":
				v := map[string]int64{"s2": 2, "s3": 3}[s]
				b.ack(t, inputEvent(d, v))
			case "work":
				if finalized {
					b.drain(t)
				}
			}
		}
		b.drain(t)
		f := b.fence(t, d)
		require.Equal(t, billingc.CatchUpCaughtUp, f.State, "order %v", order)
		require.EqualValues(t, 3, f.LastEvaluated, "order %v", order)
		require.Equal(t, "70", f.Settled, "order %v", order)
		chain := b.transitions(t, d)
		require.NotEmpty(t, chain, "order %v", order)
		for i, tr := range chain {
			require.Contains(t, tr, fmt.Sprintf("%d>%d ", i+1, i+2), "order %v", order)
		}
	}
	require.Empty(t, b.metering.reused(), "a validation operation is never reused for another request")
}

// BI-3, BSC-6: real concurrent sessions — duplicate and reordered deliveries
// of S2..S5 racing two workers and the finalization's fence opening —
// converge: caught_up at S5, settled = S5's target, one contiguous chain,
// one receipt per event, and every Work generation dense.
func TestBSC6ConcurrentConsumerWorkerAndFinalization(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.finalization.set(d.BillingReservationID, catchup.FinalizationInputWorkScheduled)
	targets := []string{"100", "95", "90", "80", "75"}
	for v, target := range targets {
		b.metering.append(d, int64(v+1), target)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 64)
	for v := int64(2); v <= 5; v++ {
		for range 2 { // each event twice: a duplicate delivery races its original
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				e := inputEvent(d, v)
				for {
					_, err := b.consumer.Consume(context.Background(), catchUpDelivery(e))
					if err == nil {
						return
					}
					if retryable, _ := transport.RetryableAndCode(err); !retryable {
						errs <- err
						return
					}
				}
			}()
		}
	}
	second, err := catchup.NewWorker(b.pool, catchup.WorkerConfig{Metering: b.metering, Ledger: b.ledger})
	require.NoError(t, err)
	wg.Add(3)
	go func() {
		defer wg.Done()
		<-start
		for range 10 {
			if _, err := second.RunOnce(context.Background()); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		<-start
		errs <- db.WithTx(context.Background(), b.admin, func(ctx context.Context, tx pgx.Tx) error {
			return openAsFinalization(ctx, tx, catchup.OpenParams{Tenant: catchUpTenant,
				CorrelationID: cid("correlation", d.BillingReservationID), FinalizationCommitted: cquad("bfc-" + d.BillingReservationID),
				FinalizationEventID: cid("finalization-event", d.BillingReservationID), Now: catchUpAt,
				Dimensions: []catchup.OpenDimension{{Dimension: d, SettledInput: settlementInputOf(d, 1), SettledAmount: "100"}}})
		})
	}()
	go func() {
		defer wg.Done()
		<-start
		for range 10 {
			if _, err := b.worker.RunOnce(context.Background()); err != nil {
				errs <- err
				return
			}
		}
	}()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	b.drain(t)
	f := b.fence(t, d)
	require.Equal(t, billingc.CatchUpCaughtUp, f.State)
	require.EqualValues(t, 5, f.LastEvaluated)
	require.Equal(t, "75", f.Settled)
	for i, tr := range b.transitions(t, d) {
		require.Contains(t, tr, fmt.Sprintf("%d>%d refund", i+1, i+2))
	}
	var receipts, gaps int
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.settlement_catch_up_receipts`).Scan(&receipts))
	require.Equal(t, 4, receipts)
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT max(work_generation) - count(*) FROM billing.settlement_catch_up_works`).Scan(&gaps))
	require.Zero(t, gaps)
}

// BI-3: the worker's loop catches a dimension up on its own and stops with
// its context (no goroutine left behind: dbtest.Main checks).
func TestBI3WorkerLoopCatchesUp(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, "40")
	b.finalize(t, "100", d)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.worker.Run(ctx)
	}()
	require.Eventually(t, func() bool {
		var state string
		err := b.admin.QueryRow(t.Context(), `SELECT coordination_state FROM billing.settlement_catch_up_fences`).Scan(&state)
		return err == nil && state == billingc.CatchUpCaughtUp
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	require.Equal(t, []string{"1>2 refund 60 v2"}, b.transitions(t, d))
	require.EqualValues(t, 1, b.worker.Stats()[catchup.StepTransition])
}

// OB-DELIVER-4: every receipt the consumer answers (each durability branch
// and already_observed) passes the dispatcher's ack verification against
// the event it acknowledges (identity, digest, member).
func TestBSC7ReceiptsPassAckVerification(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	pre, held, post := catchUpDimension(1), catchUpDimension(2), catchUpDimension(3)
	b.finalization.set(pre.BillingReservationID, catchup.FinalizationInputWorkScheduled)
	b.finalization.set(held.BillingReservationID, catchup.FinalizationInputHeld)
	b.finalize(t, "100", post)
	for _, e := range []*envelope.Envelope{inputEvent(pre, 1), inputEvent(held, 1), inputEvent(post, 3), inputEvent(post, 2)} {
		res, err := b.consumer.Consume(t.Context(), catchUpDelivery(e))
		require.NoError(t, err)
		d, err := e.Digest()
		require.NoError(t, err)
		facts := receipt.EventFacts{EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
			EnvelopeDigest: d, Identity: e.Identity()}
		require.NoError(t, receipt.VerifyAck(facts, catchUpMember(e.EventType, e.EventSchemaVersion), res.Ack, res.ReceiptBody), e.EventID)
	}
}

// BI-3: a newer input that is not settleable (reconciliation required)
// writes nothing and keeps the Work pending; once Metering appends a
// settleable successor, the catch-up ends there.
func TestBI3NotSettleableInputWaits(t *testing.T) {
	t.Parallel()
	b := setupCatchUp(t)
	d := catchUpDimension(1)
	b.metering.append(d, 1, "100")
	b.metering.append(d, 2, notSettleable)
	b.finalize(t, "100", d)
	before := b.fence(t, d)
	step, err := b.worker.Step(t.Context(), d.SettlementDimensionID())
	require.NoError(t, err)
	require.Equal(t, catchup.StepNotSettleable, step)
	require.Equal(t, before, b.fence(t, d))
	require.Empty(t, b.transitions(t, d))

	b.metering.append(d, 3, "75")
	b.ack(t, inputEvent(d, 3))
	b.drain(t)
	require.Equal(t, []string{"1>2 refund 25 v3"}, b.transitions(t, d))
	require.Equal(t, billingc.CatchUpCaughtUp, b.fence(t, d).State)
}
