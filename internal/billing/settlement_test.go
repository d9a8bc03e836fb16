package billing_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/billing"
)

func (b *bundle) settle(t *testing.T, in billing.SettlementInput) (billing.SettlementAdvance, error) {
	t.Helper()
	return tx(t, b.pool, func(ctx context.Context, tx pgx.Tx) (billing.SettlementAdvance, error) {
		return billing.ApplySettlementInputTx(ctx, tx, in)
	})
}

// BFC-6: an early settlement input — before its reservation's fence exists
// — is retryable (ErrFenceNotBindable) and writes nothing; before the
// closure is applied the watermark advances durably but no Work is
// scheduled (the event stays retryable, no receipt); once the closure is
// applied the same input schedules a new generation. The watermark is
// monotonic per dimension: a lower state version is already_observed, the
// same version with another snapshot conflicts, a finalized reservation is
// the catch-up's (ErrFinalized).
func TestBFC6SettlementWatermark(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	_, err := b.settle(t, r.settlement(1, 1, ""))
	require.ErrorIs(t, err, billing.ErrFenceNotBindable)
	var n int
	require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT count(*) FROM billing.settlement_input_watermarks").Scan(&n))
	require.Zero(t, n)

	admit(t, b.admin, r)
	adv, err := b.settle(t, r.settlement(1, 2, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementWaitingForClosure, adv.Outcome)
	require.Nil(t, adv.Scheduled)
	f := b.fence(t, r.fenceID)
	require.EqualValues(t, 1, f.Revision, "no Work before the closure")

	_, err = b.deliver(t, r.closure(""))
	require.NoError(t, err)
	var body string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT s.snapshot_body FROM billing.billing_finalization_works w
		JOIN billing.billing_finalization_trigger_snapshots s USING (trigger_snapshot_ref)
		WHERE w.billing_finalization_fence_id = $1 AND w.work_generation = 2`, r.fenceID).Scan(&body))
	require.Contains(t, body, `"settlementInputStateVersion":2`, "the closure's trigger freezes the watermark already advanced")

	// The retried early event now schedules.
	adv, err = b.settle(t, r.settlement(1, 2, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementWorkScheduled, adv.Outcome)
	require.EqualValues(t, 3, adv.Scheduled.Generation)
	require.EqualValues(t, b.fence(t, r.fenceID).Revision, adv.Scheduled.FenceRevision)
	state, _ := b.workState(t, r.fenceID, 2)
	require.Equal(t, billing.WorkSuperseded, state)

	adv, err = b.settle(t, r.settlement(1, 1, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementAlreadyObserved, adv.Outcome)
	require.EqualValues(t, 2, adv.HighestState)
	_, err = b.settle(t, r.settlement(1, 2, "-other"))
	require.ErrorIs(t, err, billing.ErrSettlementConflict) // BFC-6.same-version-other-snapshot
	moved := r.settlement(1, 3, "")
	moved.ChargeDimensionKey = "tokens.elsewhere"
	_, err = b.settle(t, moved)
	require.ErrorIs(t, err, billing.ErrSettlementConflict) // BFC-6.dimension-identity

	adv, err = b.settle(t, r.settlement(2, 1, ""))
	require.NoError(t, err)
	require.Equal(t, billing.SettlementWorkScheduled, adv.Outcome)
	require.EqualValues(t, 4, adv.Scheduled.Generation)

	_, err = b.commit(t, b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "1", "2499"), billing.CommitOpts{})
	require.NoError(t, err)
	_, err = b.settle(t, r.settlement(1, 3, ""))
	require.ErrorIs(t, err, billing.ErrFinalized)
}

// BFC race: the closure event and a settlement input of the same
// reservation arrive in two concurrent sessions. The fence lock serializes
// them; whichever order wins, the latest generation's trigger snapshot
// freezes both the closure and the settlement watermark (a settlement that
// came first waited for the closure, whose trigger then took its mark).
func TestBFC7ClosureAndSettlementRace(t *testing.T) {
	t.Parallel()
	for i := range 4 {
		b := setup(t)
		r := newRun(i)
		admit(t, b.admin, r)
		start := make(chan struct{})
		closureErr, settleErr := make(chan error, 1), make(chan error, 1)
		var adv billing.SettlementAdvance
		go func() {
			<-start
			_, err := b.c.Consume(context.Background(), delivery(r.closure("")))
			closureErr <- err
		}()
		go func() {
			<-start
			var err error
			adv, err = dbWithTx(b, func(ctx context.Context, tx pgx.Tx) (billing.SettlementAdvance, error) {
				return billing.ApplySettlementInputTx(ctx, tx, r.settlement(1, 1, ""))
			})
			settleErr <- err
		}()
		close(start)
		require.NoError(t, <-closureErr)
		require.NoError(t, <-settleErr)
		f := b.fence(t, r.fenceID)
		require.Equal(t, billing.FencePendingEvaluation, f.State)
		if adv.Outcome == billing.SettlementWaitingForClosure {
			require.EqualValues(t, 2, f.Latest)
		} else {
			require.Equal(t, billing.SettlementWorkScheduled, adv.Outcome)
			require.EqualValues(t, 3, f.Latest)
		}
		var body string
		require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT s.snapshot_body FROM billing.billing_finalization_works w
			JOIN billing.billing_finalization_trigger_snapshots s USING (trigger_snapshot_ref)
			WHERE w.billing_finalization_fence_id = $1 AND w.work_generation = $2`, r.fenceID, f.Latest).Scan(&body))
		require.Contains(t, body, `"closureEventId":"`+r.closure("").EventID+`"`)
		require.Contains(t, body, `"settlementInputStateVersion":1`)
	}
}

func settlementEvent(r run, dimID string, revision int64) *envelope.Envelope {
	in := r.settlement(1, 2, "")
	p := envelope.MeteringSettlementInputCurrentChangedV1Payload{BillingReservationID: r.reservationID, BillingAccountID: r.accountID,
		RunID: r.runID, RunStepID: in.RunStepID, ExecutionAttemptID: in.ExecutionAttemptID, ChargeDimensionKey: in.ChargeDimensionKey,
		SettlementDimensionID: dimID, SettlementEconomicIdentity: in.EconomicIdentity, SettlementInputStateVersion: 2,
		PredecessorSettlementInput: envelope.SettlementInputPredecessorV1{State: "present", SettlementInputSnapshotRef: "sis-prev",
			SettlementInputSnapshotSchemaVersion: "1", SettlementInputSnapshotDigestAlgorithmVersion: "jcs-sha256-v1",
			SettlementInputSnapshotDigest: quad("sis-prev").Digest, SettlementInputStateVersion: 1}}
	s := in.Snapshot
	p.SettlementInputSnapshotRef, p.SettlementInputSnapshotSchemaVersion = s.Ref, s.SchemaVersion
	p.SettlementInputSnapshotDigestAlgorithmVersion, p.SettlementInputSnapshotDigest = string(s.DigestAlgorithmVersion), s.Digest
	return &envelope.Envelope{EventID: id("settlement-event-env", dimID), EventType: envelope.MeteringSettlementInputCurrentChangedV1,
		EventSchemaVersion: "1", AggregateType: envelope.AggregateSettlementInputDimension, AggregateID: dimID, AggregateRevision: revision,
		TenantKind: envelope.TenantOrganization, TenantID: r.tenantID, WorkspaceID: r.workspaceID,
		CorrelationID: id("correlation", r.n), OperationID: id("settlement-op"), OccurredAt: occurred, Payload: p.Map()}
}

// BFC-6: the settlement input is decoded strictly from exactly its pair;
// the dimension id must be the contracts-derived one and the aggregate
// revision the snapshot state version.
func TestBFC6SettlementInputDecodedStrictly(t *testing.T) {
	t.Parallel()
	r := newRun(1)
	in := r.settlement(1, 2, "")
	dim := envelope.SettlementDimensionID(r.reservationID, r.runID, in.RunStepID, in.ExecutionAttemptID, in.ChargeDimensionKey)
	got, err := billing.SettlementInputOf(settlementEvent(r, dim, 2))
	require.NoError(t, err)
	require.Equal(t, dim, got.SettlementDimensionID)
	require.Equal(t, in.Snapshot, got.Snapshot)
	require.EqualValues(t, 2, got.StateVersion)

	_, err = billing.SettlementInputOf(settlementEvent(r, id("not-derived"), 2))
	require.ErrorIs(t, err, billing.ErrSettlementConflict)
	_, err = billing.SettlementInputOf(settlementEvent(r, dim, 3))
	require.ErrorIs(t, err, billing.ErrSettlementConflict)
	other := settlementEvent(r, dim, 2)
	other.EventType = envelope.ExecutionRunFinalizationClosedV1
	_, err = billing.SettlementInputOf(other)
	require.ErrorIs(t, err, envelope.ErrUnknownEventPair)
}
