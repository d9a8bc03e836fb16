package billing_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
)

// closed admits r and applies its closure: generation 2 is pending.
func (b *bundle) closed(t *testing.T, r run) {
	t.Helper()
	admit(t, b.admin, r)
	_, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)
}

func (b *bundle) commit(t *testing.T, d billing.Decision, opts billing.CommitOpts) (billing.CommitResult, error) {
	t.Helper()
	return tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.CommitResult, error) {
		if err := billingtest.StoreDecisionTx(ctx, tx, d); err != nil {
			return billing.CommitResult{}, err
		}
		return billing.CommitFinalizationTx(ctx, tx, d, opts)
	})
}

// billingRows counts what a finalization writes.
func (b *bundle) billingRows(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for name, q := range map[string]string{
		"finalization groups": "SELECT count(*) FROM billing.ledger_posting_groups WHERE group_kind = 'finalization'",
		"postings":            "SELECT count(*) FROM billing.ledger_postings",
		"committed":           "SELECT count(*) FROM billing.finalization_committed",
		"terminal":            "SELECT count(*) FROM billing.reservation_states WHERE state <> 'reserved'",
		"committed fences":    "SELECT count(*) FROM billing.billing_finalization_fences WHERE coordination_state = 'committed'",
		"committed works":     "SELECT count(*) FROM billing.billing_finalization_works WHERE work_state = 'committed'",
		"events":              "SELECT count(*) FROM outbox.outbox_events",
		"evaluations":         "SELECT count(*) FROM billing.finalization_evaluations",
	} {
		var n int
		require.NoError(t, b.admin.QueryRow(t.Context(), q).Scan(&n), name)
		out[name] = n
	}
	return out
}

func (b *bundle) balances(t *testing.T, reservationID string) map[string]string {
	t.Helper()
	rows, err := b.admin.Query(t.Context(), "SELECT account_kind, balance::text FROM billing.ledger_balances WHERE billing_reservation_id = $1", reservationID)
	require.NoError(t, err)
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		require.NoError(t, rows.Scan(&k, &v))
		out[k] = v
	}
	require.NoError(t, rows.Err())
	return out
}

// BI-1: a settle_and_release_remainder commit writes, in one transaction,
// the balanced postings, the content-addressed BillingFinalizationCommitted@1
// bound to the fence revision, Work, closure event and coordinator receipt,
// billing.finalization.committed@1 with its core_operations delivery, the
// settled reservation and the committed fence; settled + released =
// reserved. A replay returns the byte-identical fact; another decision is
// refused.
func TestBI1CommitSettleAndReleaseRemainder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	d := b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "1500.25", "999.75")

	res, err := b.commit(t, d, billing.CommitOpts{})
	require.NoError(t, err)
	require.False(t, res.Replayed)
	require.NoError(t, billingc.ValidateCommitted(res.Body))
	f := res.Fact
	require.Equal(t, "2500", f.ReservedAmount)
	require.Equal(t, billingc.ReservationSettled, f.ReservationState)
	require.EqualValues(t, 3, f.FenceRevision)
	require.EqualValues(t, 2, f.WorkGeneration)
	require.Equal(t, r.closure("").EventID, f.ClosureEventID)
	var receiptRef string
	require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT coordinator_receipt_ref FROM billing.closure_watermarks WHERE billing_finalization_fence_id = $1", r.fenceID).Scan(&receiptRef))
	require.Equal(t, receiptRef, f.CoordinatorReceipt.Ref)

	fs := b.fence(t, r.fenceID)
	require.Equal(t, billing.FenceCommitted, fs.State)
	require.Equal(t, f.FenceRevision, fs.Revision)
	require.Equal(t, map[string]string{"reservation_hold": "0", "settled_revenue": "1500.25", "customer_wallet": "1500.25"}, b.balances(t, r.reservationID))
	var state, settled, released string
	require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT state, settled_amount::text, released_amount::text FROM billing.reservation_states WHERE billing_reservation_id = $1",
		r.reservationID).Scan(&state, &settled, &released))
	require.Equal(t, []string{"settled", "1500.25", "999.75"}, []string{state, settled, released})

	// The event: exact payload, one core_operations delivery.
	var envText, dest string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT e.event_envelope, d.destination FROM outbox.outbox_events e
		JOIN outbox.outbox_deliveries d USING (event_id) WHERE e.event_id = $1`, res.EventID).Scan(&envText, &dest))
	require.Equal(t, "core_operations", dest)
	env, err := envelope.DecodeEnvelope([]byte(envText))
	require.NoError(t, err)
	p, err := envelope.PayloadOf[envelope.BillingFinalizationCommittedV1Payload](env)
	require.NoError(t, err)
	require.Equal(t, f.Committed, p.BillingFinalizationCommitted())
	require.Equal(t, "1500.25", p.SettledAmount)
	require.EqualValues(t, 2, env.AggregateRevision)

	again, err := b.commit(t, d, billing.CommitOpts{})
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, res.Body, again.Body)
	require.Equal(t, res.EventID, again.EventID)

	other := d
	other.SettledAmount, other.ReleasedAmount = "2500", "0"
	_, err = b.commit(t, other, billing.CommitOpts{})
	require.ErrorIs(t, err, billing.ErrAlreadyFinalized)
	require.Equal(t, 1, b.billingRows(t)["committed"])
}

// BI-1: release_all settles nothing and releases the whole reservation.
func TestBI1CommitReleaseAll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	res, err := b.commit(t, b.decision(t, r, billingc.SuccessReleaseAll, "0", "2500"), billing.CommitOpts{})
	require.NoError(t, err)
	require.Equal(t, billingc.ReservationReleased, res.Fact.ReservationState)
	require.Len(t, res.Fact.Postings, 2)
	require.Equal(t, map[string]string{"reservation_hold": "0", "customer_wallet": "0"}, b.balances(t, r.reservationID))
}

// BI-1: a failure injected after each write of the finalization transaction
// leaves no billing row (and no event); the same decision then commits.
func TestBI1FailureAfterEachWriteLeavesNoBillingRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	d := b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "10", "2490")
	before := b.billingRows(t)
	fenceBefore := b.fence(t, r.fenceID)
	injected := errors.New("injected")
	for _, step := range billing.CommitSteps {
		_, err := b.commit(t, d, billing.CommitOpts{AfterStep: func(_ context.Context, _ pgx.Tx, s string) error {
			if s == step {
				return injected
			}
			return nil
		}})
		require.ErrorIs(t, err, injected, step)
		require.Equal(t, before, b.billingRows(t), "after %s", step)
		require.Equal(t, fenceBefore, b.fence(t, r.fenceID), "after %s", step)
	}
	_, err := b.commit(t, d, billing.CommitOpts{})
	require.NoError(t, err)
	require.Equal(t, 1, b.billingRows(t)["committed"])
}

// BI-1: only the two success outcomes with amounts that add up to the
// reservation commit; an old generation can never commit; nothing is
// written on refusal.
func TestBI1InvalidOrStaleDecisionRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	before := b.billingRows(t)
	good := b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "100", "2400")
	for name, mutate := range map[string]func(d *billing.Decision){
		"blocked":             func(d *billing.Decision) { d.Outcome = "blocked" },
		"reconciliation":      func(d *billing.Decision) { d.Outcome = "reconciliation_required" },
		"above reservation":   func(d *billing.Decision) { d.SettledAmount, d.ReleasedAmount = "2600", "0" },
		"does not add up":     func(d *billing.Decision) { d.ReleasedAmount = "1" },
		"float text":          func(d *billing.Decision) { d.SettledAmount = "1e2" },
		"negative":            func(d *billing.Decision) { d.SettledAmount, d.ReleasedAmount = "-100", "2600" },
		"release_all settles": func(d *billing.Decision) { d.Outcome = billingc.SuccessReleaseAll },
		"settle nothing":      func(d *billing.Decision) { d.SettledAmount, d.ReleasedAmount = "0", "2500" },
		"missing bundle":      func(d *billing.Decision) { d.ValidationBundle.Digest = "" },
	} {
		d := good
		mutate(&d)
		_, err := b.commit(t, d, billing.CommitOpts{})
		require.ErrorIs(t, err, billing.ErrInvalidDecision, name)
	}
	stale := good
	stale.WorkGeneration, stale.OperationID = 1, id("whatever")
	_, err := b.commit(t, stale, billing.CommitOpts{})
	require.ErrorIs(t, err, billing.ErrStaleWork)
	wrongOp := good
	wrongOp.OperationID = id("other-op")
	_, err = b.commit(t, wrongOp, billing.CommitOpts{})
	require.ErrorIs(t, err, billing.ErrStaleWork)
	require.Equal(t, before, b.billingRows(t))
}

// BI-1 race: two sessions commit the same decision concurrently; the fence
// lock serializes them, one commits and the other replays the same bytes.
func TestBI1ConcurrentCommitsOneFact(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	d := b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "7", "2493")
	var wg sync.WaitGroup
	results := make([]billing.CommitResult, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = db2(b, d)
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, results[0].Body, results[1].Body)
	require.NotEqual(t, results[0].Replayed, results[1].Replayed)
	require.Equal(t, 1, b.billingRows(t)["committed"])
}

func db2(b *bundle, d billing.Decision) (billing.CommitResult, error) {
	return dbWithTx(b, func(ctx context.Context, tx pgx.Tx) (billing.CommitResult, error) {
		if err := billingtest.StoreDecisionTx(ctx, tx, d); err != nil {
			return billing.CommitResult{}, err
		}
		return billing.CommitFinalizationTx(ctx, tx, d, billing.CommitOpts{})
	})
}

// Issue 15 / BI-1: an evaluation that would require reconciliation writes
// no ledger row, enters no reconciliation_required state and leaves the
// fence waiting with its reason; replay is idempotent, other content
// conflicts; an evaluation cannot claim reconciliation_required (only
// RecordReconciliationTx, with a reserved case, enters it).
func TestBI1EvaluationWritesNoLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	before := b.billingRows(t)
	d := b.decision(t, r, billingc.SuccessReleaseAll, "0", "2500")
	ev := billing.Evaluation{FenceID: r.fenceID, WorkGeneration: d.WorkGeneration, OperationID: d.OperationID,
		Outcome: billing.EvaluationReconciliationDeferred, ReasonCode: "target_above_reservation",
		ReasonDetail: "target 3000 credits above reservation 2500", DecisionObject: &d.DecisionObject}
	res, err := tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, ev)
	})
	require.NoError(t, err)
	require.False(t, res.Replayed)
	after := b.billingRows(t)
	require.Equal(t, before["evaluations"]+1, after["evaluations"])
	after["evaluations"] = before["evaluations"]
	require.Equal(t, before, after, "no ledger, fact, terminal state or event")
	f := b.fence(t, r.fenceID)
	require.Equal(t, billing.FenceAwaitingFinalization, f.State)
	require.Equal(t, "reconciliation_deferred:target_above_reservation", *f.Waiting)
	require.Equal(t, map[string]string{"reservation_hold": "2500", "customer_wallet": "2500"}, b.balances(t, r.reservationID))
	// The reason is visible in the reservation's view (inspect, admin).
	view, err := billing.LookupReservation(t.Context(), b.pool, r.reservationID)
	require.NoError(t, err)
	require.Equal(t, "reserved", view.State)
	require.Equal(t, billing.FenceAwaitingFinalization, view.FenceState)
	require.Equal(t, "reconciliation_deferred:target_above_reservation", view.WaitingReason)
	require.Len(t, view.Evaluations, 1)
	require.Equal(t, "target 3000 credits above reservation 2500", view.Evaluations[0].ReasonDetail)
	require.Len(t, view.Postings, 2, "only the admission hold")

	res, err = tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, ev)
	})
	require.NoError(t, err)
	require.True(t, res.Replayed)
	other := ev
	other.ReasonCode = "conflicting_input"
	_, err = tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, other)
	})
	require.ErrorIs(t, err, billing.ErrEvaluationConflict) // BI-1.evaluation-conflict
	rec := ev
	rec.WorkGeneration, rec.Outcome = 3, billing.FenceReconciliationRequired
	_, err = tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.EvaluationResult, error) {
		return billing.RecordEvaluationTx(ctx, tx, rec)
	})
	require.ErrorIs(t, err, billing.ErrInvalidEvaluation, "reconciliation_required enters a case through RecordReconciliationTx")

	// A committed evaluation generation cannot commit; a new input
	// schedules the next generation, which can.
	_, err = b.commit(t, d, billing.CommitOpts{})
	require.ErrorIs(t, err, billing.ErrStaleWork)
	adv, err := tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.SettlementAdvance, error) {
		return billing.ApplySettlementInputTx(ctx, tx, r.settlement(1, 1, ""))
	})
	require.NoError(t, err)
	require.Equal(t, billing.SettlementWorkScheduled, adv.Outcome)
	_, err = b.commit(t, b.decision(t, r, billingc.SuccessReleaseAll, "0", "2500"), billing.CommitOpts{})
	require.NoError(t, err)
}
