package billing_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

func payloadQuad(ref, version, alg, dig string) strict.Quadruple {
	return strict.Quadruple{Ref: ref, SchemaVersion: version, DigestAlgorithmVersion: digest.Algorithm(alg), Digest: dig}
}

// OP-1 (issue 31): the two event-bound reads Operations verifies the case
// events with answer found only when every identity the event states is
// Billing's own record; one field off is conflicting, an unknown
// generation not_found, a request without its quadruples is refused.
func TestOP1ReadsForOperationsCompareEveryField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs := newResolver(t)
	r := newRun(1)
	c := b.inCase(t, r)
	reads := billing.Reads{DB: b.pool}

	var caseEventID string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT event_id FROM billing.finalization_reconciliation_requests`).Scan(&caseEventID))
	ce := b.resolutionEvent(t, caseEventID)
	cd, err := ce.Digest()
	require.NoError(t, err)
	p, err := envelope.PayloadOf[envelope.BillingFinalizationReconciliationCaseRequestedV1Payload](ce)
	require.NoError(t, err)
	decision := coreread.FinalizationDecisionForOperationsRead{
		EventID: ce.EventID, EventEnvelopeDigest: cd, BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID,
		RunID: p.RunID, FenceID: p.BillingFinalizationFenceID, CaseRef: p.ReconciliationCaseRef, Generation: p.ReconciliationGeneration,
		CaseRequestOperationID: p.CaseRequestOperationID,
		CaseIdentity: payloadQuad(p.FinalizationCaseIdentityReservationRef, p.FinalizationCaseIdentityReservationSchemaVersion,
			p.FinalizationCaseIdentityReservationDigestAlgorithmVersion, p.FinalizationCaseIdentityReservationDigest),
		Decision: payloadQuad(p.BillingFinalizationDecisionRef, p.BillingFinalizationDecisionSchemaVersion,
			p.BillingFinalizationDecisionDigestAlgorithmVersion, p.BillingFinalizationDecisionDigest),
		TriggeringWork: payloadQuad(p.TriggeringBillingFinalizationWorkRef, p.TriggeringBillingFinalizationWorkSchemaVersion,
			p.TriggeringBillingFinalizationWorkDigestAlgorithmVersion, p.TriggeringBillingFinalizationWorkDigest),
		TriggeringWorkGeneration: p.TriggeringBillingFinalizationWorkGeneration, FinalizationOperationID: p.BillingFinalizationOperationID,
		ReasonCode: p.ReconciliationReasonCode,
	}
	ans, err := reads.ReadBillingFinalizationDecisionForOperations(t.Context(), decision)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)
	for name, edit := range map[string]func(*coreread.FinalizationDecisionForOperationsRead){
		"work generation": func(q *coreread.FinalizationDecisionForOperationsRead) { q.TriggeringWorkGeneration++ },
		"decision digest": func(q *coreread.FinalizationDecisionForOperationsRead) { q.Decision.Digest = q.CaseIdentity.Digest },
		"account":         func(q *coreread.FinalizationDecisionForOperationsRead) { q.BillingAccountID = r.reservationID },
		"predecessor":     func(q *coreread.FinalizationDecisionForOperationsRead) { q.PredecessorGeneration = 1 },
		"envelope digest": func(q *coreread.FinalizationDecisionForOperationsRead) {
			q.EventEnvelopeDigest.Value = q.Decision.Digest
		},
		"finalization op": func(q *coreread.FinalizationDecisionForOperationsRead) { q.FinalizationOperationID = r.runID },
	} {
		q := decision
		edit(&q)
		ans, err := reads.ReadBillingFinalizationDecisionForOperations(t.Context(), q)
		require.NoError(t, err, name)
		require.Equal(t, ownerread.Conflicting, ans, name)
	}
	other := decision
	other.Generation = 2
	ans, err = reads.ReadBillingFinalizationDecisionForOperations(t.Context(), other)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans)
	bare := decision
	bare.Decision = strict.Quadruple{Ref: decision.Decision.Ref}
	_, err = reads.ReadBillingFinalizationDecisionForOperations(t.Context(), bare)
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest, "no bare-ref read")

	cmd, _ := rs.command(t, c, time.Now())
	res, err := b.apply(t, rs, cmd)
	require.NoError(t, err)
	re := b.resolutionEvent(t, res.EventID)
	rd, err := re.Digest()
	require.NoError(t, err)
	f := res.Fact
	applied := coreread.ResolutionAppliedForOperationsRead{
		EventID: re.EventID, EventEnvelopeDigest: rd, BillingReservationID: r.reservationID, BillingAccountID: r.accountID,
		RunID: r.runID, FenceID: r.fenceID, CaseRef: c.ReconciliationCaseRef, Generation: 1, ResolutionRevision: 1,
		ResolutionOperationID: f.ResolutionOperationID, CaseIdentity: c.Identity, Applied: f.Applied, Actor: alice,
	}
	ans, err = reads.ReadFinalizationReconciliationResolutionAppliedForOperations(t.Context(), applied)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)
	for name, edit := range map[string]func(*coreread.ResolutionAppliedForOperationsRead){
		"actor":     func(q *coreread.ResolutionAppliedForOperationsRead) { q.Actor = bob },
		"applied":   func(q *coreread.ResolutionAppliedForOperationsRead) { q.Applied.Digest = c.Identity.Digest },
		"operation": func(q *coreread.ResolutionAppliedForOperationsRead) { q.ResolutionOperationID = r.runID },
		"revision":  func(q *coreread.ResolutionAppliedForOperationsRead) { q.ResolutionRevision = 2 },
		"event":     func(q *coreread.ResolutionAppliedForOperationsRead) { q.EventID = caseEventID },
		"case ref":  func(q *coreread.ResolutionAppliedForOperationsRead) { q.CaseRef = "fcase-other" },
	} {
		q := applied
		edit(&q)
		ans, err := reads.ReadFinalizationReconciliationResolutionAppliedForOperations(t.Context(), q)
		require.NoError(t, err, name)
		require.Equal(t, ownerread.Conflicting, ans, name)
	}
	other2 := applied
	other2.Generation = 2
	ans, err = reads.ReadFinalizationReconciliationResolutionAppliedForOperations(t.Context(), other2)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans)
}
