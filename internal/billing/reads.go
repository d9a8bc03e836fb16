package billing

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing/dbsqlc"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// Reads are Billing's directed owner reads over the core database (as the
// billing role): today readBillingFinalizationCommitted, which the
// Operations projector calls for billing.finalization.committed@1.
type Reads struct {
	DB db.Executor
}

// ReadBillingFinalizationCommitted is readBillingFinalizationCommitted: by
// the exact BillingFinalizationCommitted@1 quadruple the event carries, it
// answers found when the stored fact recomputes to that quadruple and every
// identity the event states (event id and envelope digest, reservation,
// account, run, fence, operation, fence revision, decision, amounts) equals
// the fact; not_found when Billing has no fact under that ref and none for
// the reservation; conflicting otherwise (another fact for the reservation,
// or any field differs). No list, no latest, no bare-ref read.
func (r Reads) ReadBillingFinalizationCommitted(ctx context.Context, req coreread.FinalizationCommittedRead) (ownerread.Answer, error) {
	if err := req.Committed.Validate(); err != nil || req.EventID == "" || req.BillingReservationID == "" {
		return "", fmt.Errorf("%w: readBillingFinalizationCommitted needs the full quadruple, the event and the reservation", ownerread.ErrInvalidRequest)
	}
	row, err := queries.CommittedByRef(ctx, r.DB, req.Committed.Ref)
	if errors.Is(err, pgx.ErrNoRows) {
		other, err := queries.CommittedByReservation(ctx, r.DB, req.BillingReservationID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ownerread.NotFound, nil
		}
		if err != nil {
			return "", fmt.Errorf("read committed fact by reservation: %w", err)
		}
		_ = other
		return ownerread.Conflicting, nil
	}
	if err != nil {
		return "", fmt.Errorf("read committed fact: %w", err)
	}
	fact, err := billingc.DecodeCommitted([]byte(row.CommittedBody))
	if err != nil {
		// A stored fact that no longer recomputes is never "found".
		return ownerread.Conflicting, nil
	}
	event := digest.Digest{Algorithm: digest.JCSSHA256V1, Value: row.EventEnvelopeSha256}
	same := fact.Committed == req.Committed && row.EventID == req.EventID && event == req.EventEnvelopeDigest &&
		fact.BillingReservationID == req.BillingReservationID && fact.BillingAccountID == req.BillingAccountID &&
		fact.RunID == req.RunID && fact.FenceID == req.FenceID && fact.OperationID == req.OperationID &&
		fact.FenceRevision == req.FenceRevision && fact.Outcome == req.Decision &&
		fact.SettledAmount == req.SettledAmount && fact.ReleasedAmount == req.ReleasedAmount
	if !same {
		return ownerread.Conflicting, nil
	}
	return ownerread.Found, nil
}

// ReadBillingFinalizationDecisionForOperations is
// readBillingFinalizationDecisionForOperations: by the case generation the
// case-requested event names, it answers found when Billing's case request
// of that generation (written with the decision in one transaction) equals
// every identity the event states — decision, winning Work and its
// generation, finalization operation, identity reservation, case ref,
// reason, predecessor, event id and envelope digest; not_found when the
// fence has no such generation; conflicting otherwise.
func (r Reads) ReadBillingFinalizationDecisionForOperations(ctx context.Context, req coreread.FinalizationDecisionForOperationsRead) (ownerread.Answer, error) {
	if err := req.Decision.Validate(); err != nil || req.CaseIdentity.Validate() != nil || req.TriggeringWork.Validate() != nil ||
		req.EventID == "" || req.FenceID == "" || req.Generation < 1 {
		return "", fmt.Errorf("%w: readBillingFinalizationDecisionForOperations needs the event, the fence, the generation and every quadruple", ownerread.ErrInvalidRequest)
	}
	row, err := queries.ReconciliationRequestForRead(ctx, r.DB, dbsqlc.ReconciliationRequestForReadParams{
		BillingFinalizationFenceID: req.FenceID, ReconciliationGeneration: req.Generation})
	if errors.Is(err, pgx.ErrNoRows) {
		return ownerread.NotFound, nil
	}
	if err != nil {
		return "", fmt.Errorf("read case request: %w", err)
	}
	var predecessor int64
	if row.PredecessorGeneration != nil {
		predecessor = *row.PredecessorGeneration
	}
	same := row.EventID == req.EventID && row.EventEnvelopeSha256 == req.EventEnvelopeDigest.Value &&
		req.EventEnvelopeDigest.Algorithm == digest.JCSSHA256V1 &&
		row.BillingReservationID == req.BillingReservationID && row.RunID == req.RunID &&
		row.ReconciliationCaseRef == req.CaseRef && row.CaseRequestOperationID == req.CaseRequestOperationID &&
		quad(row.CaseIdentityRef, row.CaseIdentitySchemaVersion, row.CaseIdentityDigestAlgorithmVersion, row.CaseIdentityDigest) == req.CaseIdentity &&
		quad(row.DecisionRef, row.DecisionSchemaVersion, row.DecisionDigestAlgorithmVersion, row.DecisionDigest) == req.Decision &&
		quad(row.WorkRef, row.WorkSchemaVersion, row.WorkDigestAlgorithmVersion, row.WorkDigest) == req.TriggeringWork &&
		row.WorkGeneration == req.TriggeringWorkGeneration && row.BillingFinalizationOperationID == req.FinalizationOperationID &&
		row.ReasonCode == req.ReasonCode && predecessor == req.PredecessorGeneration && row.BillingAccountID == req.BillingAccountID
	if !same {
		return ownerread.Conflicting, nil
	}
	return ownerread.Found, nil
}

// ReadFinalizationReconciliationResolutionAppliedForOperations is
// readFinalizationReconciliationResolutionAppliedForOperations: by the case
// generation the resolution-applied event names, it answers found when
// Billing's applied fact of that generation recomputes to the event's
// quadruple and every identity the event states equals it (event id and
// envelope digest, case, identity reservation, resolution operation and
// revision, actor); not_found when the generation has no resolution;
// conflicting otherwise.
func (r Reads) ReadFinalizationReconciliationResolutionAppliedForOperations(ctx context.Context, req coreread.ResolutionAppliedForOperationsRead) (ownerread.Answer, error) {
	if err := req.Applied.Validate(); err != nil || req.CaseIdentity.Validate() != nil || req.EventID == "" || req.FenceID == "" || req.Generation < 1 {
		return "", fmt.Errorf("%w: readFinalizationReconciliationResolutionAppliedForOperations needs the event, the fence, the generation and both quadruples", ownerread.ErrInvalidRequest)
	}
	row, err := queries.ResolutionGet(ctx, r.DB, dbsqlc.ResolutionGetParams{BillingFinalizationFenceID: req.FenceID, ReconciliationGeneration: req.Generation})
	if errors.Is(err, pgx.ErrNoRows) {
		return ownerread.NotFound, nil
	}
	if err != nil {
		return "", fmt.Errorf("read resolution: %w", err)
	}
	fact, err := reconciliation.DecodeApplied([]byte(row.AppliedBody))
	if err != nil {
		return ownerread.Conflicting, nil
	}
	c := fact.Case
	same := fact.Applied == req.Applied && row.EventID == req.EventID && req.EventEnvelopeDigest.Algorithm == digest.JCSSHA256V1 &&
		row.EventEnvelopeSha256 == req.EventEnvelopeDigest.Value && c.BillingReservationID == req.BillingReservationID &&
		c.BillingAccountID == req.BillingAccountID && c.RunID == req.RunID && c.FenceID == req.FenceID &&
		c.ReconciliationCaseRef == req.CaseRef && c.ReconciliationGeneration == req.Generation && c.Identity == req.CaseIdentity &&
		req.ResolutionRevision == reconciliation.ResolutionRevision1 && fact.ResolutionOperationID == req.ResolutionOperationID &&
		fact.ActorWorkforcePrincipalID == req.Actor
	if !same {
		return ownerread.Conflicting, nil
	}
	return ownerread.Found, nil
}
