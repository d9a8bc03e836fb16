package billing

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/dbsqlc"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
)

// CaseIdentity and CaseScope are Operations' case identity primitive's
// answer and request (ownerread/operationsread).
type (
	CaseIdentity = operationsread.CaseIdentity
	CaseScope    = operationsread.CaseScope
)

// NextCaseScopeTx reads, in the caller's transaction with the fence locked
// by the claim, the scope of the fence's next case generation.
func NextCaseScopeTx(ctx context.Context, tx pgx.Tx, fenceID string) (CaseScope, error) {
	fence, err := queries.FenceLock(ctx, tx, fenceID)
	if err != nil {
		return CaseScope{}, fmt.Errorf("lock fence %s: %w", fenceID, notFound(err, ErrFenceNotFound))
	}
	res, err := queries.ReservationLock(ctx, tx, fence.BillingReservationID)
	if err != nil {
		return CaseScope{}, fmt.Errorf("lock reservation: %w", err)
	}
	s := CaseScope{
		Tenant:           operationsread.Tenant{Kind: res.TenantKind, ID: res.TenantID, WorkspaceID: res.WorkspaceID, ProjectID: deref(res.ProjectID)},
		BillingAccountID: res.BillingAccountID, ReservationID: res.BillingReservationID, RunID: res.RunID,
		FenceID: fenceID, Generation: fence.ReconciliationGeneration + 1,
	}
	if fence.ReconciliationCaseRef != nil {
		s.Predecessor = &CaseIdentity{CaseRef: *fence.ReconciliationCaseRef, Generation: fence.ReconciliationGeneration,
			Identity: quad(deref(fence.CaseIdentityRef), deref(fence.CaseIdentitySchemaVersion),
				deref(fence.CaseIdentityDigestAlgorithmVersion), deref(fence.CaseIdentityDigest))}
		req, err := queries.ReconciliationRequestGet(ctx, tx, dbsqlc.ReconciliationRequestGetParams{
			BillingFinalizationFenceID: fenceID, ReconciliationGeneration: fence.ReconciliationGeneration})
		if err != nil {
			return CaseScope{}, fmt.Errorf("read case generation %d: %w", fence.ReconciliationGeneration, err)
		}
		s.Predecessor.CaseRequestOperationID = req.CaseRequestOperationID
	}
	return s, nil
}

// Reconciliation is a Work generation's reconciliation_required decision,
// bound to the case identity reserved for the fence's next generation.
type Reconciliation struct {
	FenceID        string
	WorkGeneration int64
	// OperationID is the generation's finalization operation.
	OperationID  string
	ReasonCode   string
	ReasonDetail string
	// Decision is the BillingFinalizationDecision (reconciliation_required).
	Decision strict.Quadruple
	Case     CaseIdentity
}

// ReconciliationResult is the recorded entrance.
type ReconciliationResult struct {
	FenceRevision int64
	EventID       string
	Event         envelope.Envelope
}

// RecordReconciliationTx enters reconciliation_required in the caller's
// transaction (ADR-031): the evaluation with its decision, the case
// request row bound to the reserved identity, the Work finished, the
// fence in the case generation and
// billing.finalization-reconciliation.case-requested@1 with its mandatory
// core_operations delivery — all or nothing. The fence must be at the
// Work's generation with the closure applied; the case must be the fence's
// next generation (PostgreSQL refuses anything else, BL003).
func RecordReconciliationTx(ctx context.Context, tx pgx.Tx, r Reconciliation) (ReconciliationResult, error) {
	if err := r.validate(); err != nil {
		return ReconciliationResult{}, err
	}
	fence, err := queries.FenceLock(ctx, tx, r.FenceID)
	if err != nil {
		return ReconciliationResult{}, fmt.Errorf("lock fence %s: %w", r.FenceID, notFound(err, ErrFenceNotFound))
	}
	if fence.CoordinationState != FencePendingEvaluation || fence.ActiveWorkGeneration == nil || *fence.ActiveWorkGeneration != r.WorkGeneration {
		return ReconciliationResult{}, fmt.Errorf("%w: fence %s is %s at generation %d, reconciliation is for generation %d",
			ErrStaleWork, r.FenceID, fence.CoordinationState, fence.LatestWorkGeneration, r.WorkGeneration)
	}
	if fence.ClosureWatermarkState != "applied" {
		return ReconciliationResult{}, fmt.Errorf("%w: fence %s", ErrClosureNotApplied, r.FenceID)
	}
	if r.Case.Generation != fence.ReconciliationGeneration+1 {
		return ReconciliationResult{}, fmt.Errorf("%w: fence %s is at case generation %d, identity is for %d",
			ErrCaseIdentityMismatch, r.FenceID, fence.ReconciliationGeneration, r.Case.Generation)
	}
	work, err := queries.WorkLock(ctx, tx, dbsqlc.WorkLockParams{BillingFinalizationFenceID: r.FenceID, WorkGeneration: r.WorkGeneration})
	if err != nil {
		return ReconciliationResult{}, fmt.Errorf("lock work: %w", err)
	}
	if work.BillingFinalizationOperationID != r.OperationID || work.WorkState != WorkPending {
		return ReconciliationResult{}, fmt.Errorf("%w: generation %d is operation %s (%s), reconciliation names %s",
			ErrStaleWork, r.WorkGeneration, work.BillingFinalizationOperationID, work.WorkState, r.OperationID)
	}
	res, err := queries.ReservationLock(ctx, tx, fence.BillingReservationID)
	if err != nil {
		return ReconciliationResult{}, fmt.Errorf("lock reservation: %w", err)
	}
	now, err := txNow(ctx, tx)
	if err != nil {
		return ReconciliationResult{}, err
	}
	revision := fence.FinalizationFenceRevision + 1
	workQuad := quad(work.WorkRef, work.WorkSchemaVersion, work.WorkDigestAlgorithmVersion, work.WorkDigest)

	p := envelope.BillingFinalizationReconciliationCaseRequestedV1Payload{
		BillingReservationID: res.BillingReservationID, BillingAccountID: res.BillingAccountID, RunID: res.RunID,
		BillingFinalizationFenceID: r.FenceID, ReconciliationCaseRef: r.Case.CaseRef, ReconciliationGeneration: r.Case.Generation,
		ExpectedResolutionRevision: 1, CaseRequestOperationID: r.Case.CaseRequestOperationID,
		TriggeringBillingFinalizationWorkGeneration: r.WorkGeneration, BillingFinalizationOperationID: r.OperationID,
		ReconciliationReasonCode: r.ReasonCode, PredecessorCase: envelope.FinalizationCasePredecessorV1{State: "none"},
	}
	setQuad(&p.FinalizationCaseIdentityReservationRef, &p.FinalizationCaseIdentityReservationSchemaVersion,
		&p.FinalizationCaseIdentityReservationDigestAlgorithmVersion, &p.FinalizationCaseIdentityReservationDigest, r.Case.Identity)
	setQuad(&p.BillingFinalizationDecisionRef, &p.BillingFinalizationDecisionSchemaVersion,
		&p.BillingFinalizationDecisionDigestAlgorithmVersion, &p.BillingFinalizationDecisionDigest, r.Decision)
	setQuad(&p.TriggeringBillingFinalizationWorkRef, &p.TriggeringBillingFinalizationWorkSchemaVersion,
		&p.TriggeringBillingFinalizationWorkDigestAlgorithmVersion, &p.TriggeringBillingFinalizationWorkDigest, workQuad)
	var predecessor *int64
	if r.Case.Generation > 1 {
		prev, err := queries.ReconciliationRequestGet(ctx, tx, dbsqlc.ReconciliationRequestGetParams{
			BillingFinalizationFenceID: r.FenceID, ReconciliationGeneration: r.Case.Generation - 1})
		if err != nil {
			return ReconciliationResult{}, fmt.Errorf("read case generation %d: %w", r.Case.Generation-1, err)
		}
		g := prev.ReconciliationGeneration
		predecessor = &g
		p.PredecessorCase = predecessorOf(prev)
	}
	ev := envelope.Envelope{
		EventID: outbox.NewEventID(), EventType: envelope.BillingFinalizationCaseRequestedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateFinalizationCaseRequest,
		AggregateID:   envelope.FinalizationCaseRequestAggregateID(r.FenceID, r.Case.Generation), AggregateRevision: 1,
		TenantKind: res.TenantKind, TenantID: res.TenantID, WorkspaceID: res.WorkspaceID, ProjectID: deref(res.ProjectID),
		CorrelationID: res.CorrelationID, OperationID: r.Case.CaseRequestOperationID, OccurredAt: now, Payload: p.Map(),
	}
	appended, err := release.ForProducer(boundary.Core).AppendTx(ctx, tx, ev)
	if err != nil {
		return ReconciliationResult{}, fmt.Errorf("append %s: %w", envelope.BillingFinalizationCaseRequestedV1, err)
	}
	alg := string(r.Decision.DigestAlgorithmVersion)
	if err := queries.EvaluationInsert(ctx, tx, dbsqlc.EvaluationInsertParams{
		BillingFinalizationFenceID: r.FenceID, WorkGeneration: r.WorkGeneration, BillingFinalizationOperationID: r.OperationID,
		Outcome: FenceReconciliationRequired, ReasonCode: r.ReasonCode, ReasonDetail: r.ReasonDetail, RecordedAt: now,
		DecisionRef: &r.Decision.Ref, DecisionSchemaVersion: &r.Decision.SchemaVersion, DecisionDigestAlgorithmVersion: &alg,
		DecisionDigest: &r.Decision.Digest,
	}); err != nil {
		return ReconciliationResult{}, fmt.Errorf("insert evaluation: %w", err)
	}
	id := r.Case.Identity
	if err := queries.ReconciliationRequestInsert(ctx, tx, dbsqlc.ReconciliationRequestInsertParams{
		BillingFinalizationFenceID: r.FenceID, ReconciliationGeneration: r.Case.Generation, ReconciliationCaseRef: r.Case.CaseRef,
		CaseRequestOperationID: r.Case.CaseRequestOperationID, CaseIdentityRef: id.Ref, CaseIdentitySchemaVersion: id.SchemaVersion,
		CaseIdentityDigestAlgorithmVersion: string(id.DigestAlgorithmVersion), CaseIdentityDigest: id.Digest,
		PredecessorGeneration: predecessor, BillingReservationID: res.BillingReservationID, RunID: res.RunID,
		FinalizationFenceRevision: revision, WorkGeneration: r.WorkGeneration, BillingFinalizationOperationID: r.OperationID,
		DecisionRef: r.Decision.Ref, DecisionSchemaVersion: r.Decision.SchemaVersion, DecisionDigestAlgorithmVersion: alg,
		DecisionDigest: r.Decision.Digest, ReasonCode: r.ReasonCode, EventID: ev.EventID,
		EventEnvelopeSha256: appended.Events[0].EnvelopeDigest.Value, RequestedAt: now,
	}); err != nil {
		return ReconciliationResult{}, fmt.Errorf("insert case request: %w", err)
	}
	if err := queries.WorkFinish(ctx, tx, dbsqlc.WorkFinishParams{
		BillingFinalizationFenceID: r.FenceID, WorkGeneration: r.WorkGeneration, WorkState: WorkEvaluated, FinishedAt: &now,
	}); err != nil {
		return ReconciliationResult{}, fmt.Errorf("finish work: %w", err)
	}
	if err := queries.FenceEnterReconciliation(ctx, tx, dbsqlc.FenceEnterReconciliationParams{
		BillingFinalizationFenceID: r.FenceID, ReconciliationGeneration: r.Case.Generation, ReconciliationCaseRef: &r.Case.CaseRef,
		CaseIdentityRef: &id.Ref, CaseIdentitySchemaVersion: &id.SchemaVersion, CaseIdentityDigestAlgorithmVersion: strPtr(string(id.DigestAlgorithmVersion)),
		CaseIdentityDigest: &id.Digest, UpdatedAt: &now,
	}); err != nil {
		return ReconciliationResult{}, fmt.Errorf("enter reconciliation_required: %w", err)
	}
	return ReconciliationResult{FenceRevision: revision, EventID: ev.EventID, Event: ev}, nil
}

func (r Reconciliation) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidEvaluation, fmt.Sprintf(format, args...))
	}
	switch {
	case !reasonCode.MatchString(r.ReasonCode):
		return bad("reason code %q", r.ReasonCode)
	case len(r.ReasonDetail) > 1000:
		return bad("reason detail longer than 1000 bytes")
	case r.WorkGeneration < 1 || r.Case.Generation < 1:
		return bad("work generation %d, case generation %d", r.WorkGeneration, r.Case.Generation)
	case r.Case.CaseRef == "" || r.Case.CaseRequestOperationID == "":
		return bad("case ref and case request operation are required")
	}
	if err := r.Decision.Validate(); err != nil {
		return bad("decision: %v", err)
	}
	if err := r.Case.Identity.Validate(); err != nil {
		return bad("case identity: %v", err)
	}
	return nil
}

func predecessorOf(prev dbsqlc.BillingFinalizationReconciliationRequest) envelope.FinalizationCasePredecessorV1 {
	return envelope.FinalizationCasePredecessorV1{
		State: "present", PredecessorReconciliationCaseRef: prev.ReconciliationCaseRef,
		PredecessorReconciliationGeneration:                                  prev.ReconciliationGeneration,
		PredecessorFinalizationCaseIdentityReservationRef:                    prev.CaseIdentityRef,
		PredecessorFinalizationCaseIdentityReservationSchemaVersion:          prev.CaseIdentitySchemaVersion,
		PredecessorFinalizationCaseIdentityReservationDigestAlgorithmVersion: prev.CaseIdentityDigestAlgorithmVersion,
		PredecessorFinalizationCaseIdentityReservationDigest:                 prev.CaseIdentityDigest,
	}
}

func setQuad(ref, version, alg, dig *string, q strict.Quadruple) {
	*ref, *version, *alg, *dig = q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest
}

func strPtr(s string) *string { return &s }
