package catchup_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// BI-1..BI-3 together, on the real finalization fence, ledger and owner
// read, as oceanway_billing: S1 and S2 before the finalization schedule
// finalization Work on the fence (finalization_work_scheduled, the fence's
// own trigger/Work quadruples); the finalization commits on S1 and opens the
// catch-up fence in the same transaction; the first catch-up Work verifies
// the watermark S2 and commits the refund with balanced postings (revenue
// and wallet both down by the difference, nothing negative) and its event,
// which readBillingSettlementTransition finds (and refuses when tampered);
// S3 then goes to the catch-up fence.
func TestBI3OnTheFinalizationFenceLedgerAndOwnerRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	admit(t, b.admin, r)
	_, err := b.deliver(t, r.closure(""))
	require.NoError(t, err)
	dim := billingc.SettlementDimension{BillingReservationID: r.reservationID, BillingAccountID: r.accountID, RunID: r.runID,
		RunStepID: id("step", r.n), ExecutionAttemptID: id("attempt", r.n), ChargeDimensionKey: "tokens.output",
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
	consumer, err := catchup.NewConsumer(b.pool, catchup.ConsumerConfig{Inbox: inbox.Config{LockTimeout: time.Second},
		Finalization: catchup.FinalizationFenceObserver{}})
	require.NoError(t, err)
	ack := func(e *envelope.Envelope) *receipt.BillingSettlementCatchUpConsumerReceipt {
		t.Helper()
		res, err := consumer.Consume(t.Context(), catchUpDelivery(e))
		require.NoError(t, err)
		rc, err := receipt.DecodeBillingSettlementCatchUpConsumerReceipt(res.ReceiptBody)
		require.NoError(t, err)
		return rc
	}
	for v := int64(1); v <= 2; v++ {
		rc := ack(inputEvent(dim, v))
		require.Equal(t, receipt.DurabilityFinalizationWorkScheduled, rc.Outcome.Durability.State)
		w := rc.Outcome.Durability.FinalizationWork
		var workRef string
		require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT work_ref FROM billing.billing_finalization_works
			WHERE billing_finalization_fence_id = $1 AND work_generation = $2`, r.fenceID, w.Work.WorkGeneration).Scan(&workRef))
		require.Equal(t, workRef, w.Work.Work.Ref)
	}

	// The finalization (on S1) and the catch-up fences, one transaction.
	d := b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "100", "2400")
	_, err = db.WithTxV(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) (billing.CommitResult, error) {
		if err := billingtest.StoreDecisionTx(ctx, tx, d); err != nil {
			return billing.CommitResult{}, err
		}
		res, err := billing.CommitFinalizationTx(ctx, tx, d, billing.CommitOpts{})
		if err != nil {
			return res, err
		}
		return res, catchup.OpenFencesTx(ctx, tx, catchup.OpenParams{
			Tenant:        catchup.Tenant{Kind: res.Fact.TenantKind, ID: res.Fact.TenantID, WorkspaceID: res.Fact.WorkspaceID, ProjectID: res.Fact.ProjectID},
			CorrelationID: id("correlation", r.n), FinalizationCommitted: res.Fact.Committed, FinalizationEventID: res.EventID, Now: occurred,
			Dimensions: []catchup.OpenDimension{{Dimension: dim, SettledInput: settlementInputOf(dim, 1), SettledAmount: "100"}},
		})
	})
	require.NoError(t, err)

	metering := newFakeMetering()
	metering.append(dim, 1, "100")
	metering.append(dim, 2, "80")
	worker, err := catchup.NewWorker(b.pool, catchup.WorkerConfig{Metering: metering, Ledger: catchup.TransitionPostings{}})
	require.NoError(t, err)
	for range 5 {
		steps, err := worker.RunOnce(t.Context())
		require.NoError(t, err)
		if len(steps) == 0 {
			break
		}
	}
	bal := b.balances(t, r.reservationID)
	require.Equal(t, "80", bal["settled_revenue"])
	require.Equal(t, "80", bal["customer_wallet"])
	require.Equal(t, "0", bal["reservation_hold"])

	var body string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT event_envelope FROM outbox.outbox_events
		WHERE event_type = 'billing.settlement-transition.committed@1'`).Scan(&body))
	ev, err := envelope.DecodeEnvelope([]byte(body))
	require.NoError(t, err)
	evDigest, err := ev.Digest()
	require.NoError(t, err)
	p, err := envelope.PayloadOf[envelope.BillingSettlementTransitionCommittedV1Payload](ev)
	require.NoError(t, err)
	require.Equal(t, billingc.TransitionRefund, p.TransitionKind)
	require.Equal(t, "20", p.TransitionAmount)
	req := coreread.SettlementTransitionRead{Transition: p.BillingSettlementTransition(), EventID: ev.EventID, EventEnvelopeDigest: evDigest,
		BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID, RunID: p.RunID, RunStepID: p.RunStepID,
		ExecutionAttemptID: p.ExecutionAttemptID, ChargeDimensionKey: p.ChargeDimensionKey, SettlementDimensionID: p.SettlementDimensionID,
		TransitionKind: p.TransitionKind, TransitionAmount: p.TransitionAmount, FromSettlementStateRevision: p.FromSettlementStateRevision,
		ToSettlementStateRevision: p.ToSettlementStateRevision, LogicalOperationID: p.LogicalOperationID,
		SettlementBasis: digest.Digest{Algorithm: digest.Algorithm(p.SettlementBasisDigestAlgorithmVersion), Value: p.SettlementBasisDigest}, ValidationOperationID: p.ValidationOperationID}
	reads := catchup.Reads{DB: b.pool}
	ans, err := reads.ReadBillingSettlementTransition(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)
	tampered := req
	tampered.TransitionAmount = "21"
	ans, err = reads.ReadBillingSettlementTransition(t.Context(), tampered)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, ans)
	other := req
	other.Transition.Ref = "bst-unknown"
	ans, err = reads.ReadBillingSettlementTransition(t.Context(), other)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, ans, "another ref for a step that has its transition")
	other.FromSettlementStateRevision = 7
	ans, err = reads.ReadBillingSettlementTransition(t.Context(), other)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans)

	rc := ack(inputEvent(dim, 3))
	require.Equal(t, receipt.DurabilitySettlementCatchUpScheduled, rc.Outcome.Durability.State)
}
