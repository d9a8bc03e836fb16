package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing/dbsqlc"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

// Resolution command errors (none writes anything).
var (
	// ErrGrantInvalid: the grant's signature, issuer or claims do not
	// verify, or it does not bind exactly this candidate and decision.
	ErrGrantInvalid = errors.New("billing: command grant does not verify")
	// ErrGrantExpired: the grant is not valid now (and no resolution was
	// applied with it before).
	ErrGrantExpired = errors.New("billing: command grant is not valid now")
	// ErrGrantReplayed: the grant's jti was consumed before, by another
	// resolution.
	ErrGrantReplayed = errors.New("billing: command grant already consumed")
	// ErrStaleCaseGeneration: the fence is not in the grant's case
	// generation (resolved, superseded by the next generation, or never
	// that case).
	ErrStaleCaseGeneration = errors.New("billing: the fence is not in the grant's case generation")
	// ErrResolutionConflict: the resolution operation was applied before
	// with another request, candidate, decision or grant.
	ErrResolutionConflict = errors.New("billing: resolution operation applied with other content")
)

// GrantVerifier verifies a SignedWorkforceCommandExecutionGrant@1: its
// signature by Core's grant key, its issuer and the strict shape of its
// claims. The time window and the jti are ApplyResolutionTx's to check.
type GrantVerifier interface {
	VerifyGrant(compactJWS string) (*reconciliation.GrantClaims, error)
}

// ResolutionCommand is the one resolution command of a case generation:
// the signed grant and the Operations candidate and decision it binds.
type ResolutionCommand struct {
	Grant     string
	Candidate *reconciliation.Candidate
	Decision  *reconciliation.Decision
	// Now is the time the grant must be valid at (time.Now when zero).
	Now time.Time
}

// ResolutionResult is the applied fact (the command's stable result).
type ResolutionResult struct {
	Fact    *reconciliation.Applied
	Body    []byte
	EventID string
	// Replayed: the resolution operation was applied before with exactly
	// this command; nothing was written.
	Replayed bool
}

// RefPrefixResolutionApplied prefixes the applied fact's content-derived ref.
const RefPrefixResolutionApplied = "frra-"

// ApplyResolutionTx applies a case generation's resolution in the caller's
// transaction (ADR-031): it verifies the grant and that it binds exactly
// the candidate and decision; then, operation first, a resolution already
// applied under the decision's resolution operation is compared in full
// and returned (a lost response never leaves the command stuck, and an
// expired grant does not matter then); otherwise the grant must be valid
// now, the fence must be in the grant's case generation, and its jti is
// consumed with FinalizationReconciliationResolutionApplied@1 and
// billing.finalization-reconciliation-resolution.applied@1 (coordinator and
// core_operations deliveries). The only effect is that the coordinator
// re-evaluates: no amount, no ledger, no reservation state.
func ApplyResolutionTx(ctx context.Context, tx pgx.Tx, v GrantVerifier, cmd ResolutionCommand) (ResolutionResult, error) {
	claims, err := v.VerifyGrant(cmd.Grant)
	if err != nil {
		return ResolutionResult{}, fmt.Errorf("%w: %w", ErrGrantInvalid, err)
	}
	if err := reconciliation.CheckGrant(claims, cmd.Candidate, cmd.Decision); err != nil {
		return ResolutionResult{}, fmt.Errorf("%w: %w", ErrGrantInvalid, err)
	}
	sha := reconciliation.GrantSHA256(cmd.Grant)
	c := claims.Case
	fence, err := queries.FenceLock(ctx, tx, c.FenceID)
	if err != nil {
		return ResolutionResult{}, fmt.Errorf("lock fence %s: %w", c.FenceID, notFound(err, ErrFenceNotFound))
	}
	if stored, err := queries.ResolutionByOperation(ctx, tx, claims.ResolutionOperationID); err == nil {
		return replayResolution(stored, claims, sha)
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return ResolutionResult{}, fmt.Errorf("read resolution: %w", err)
	}
	now := cmd.Now
	if now.IsZero() {
		now = time.Now()
	}
	if now.Before(claims.NotBefore) || !now.Before(claims.ExpiresAt) {
		return ResolutionResult{}, fmt.Errorf("%w: valid %s to %s", ErrGrantExpired, claims.NotBefore.Format(time.RFC3339), claims.ExpiresAt.Format(time.RFC3339))
	}
	bound := quad(deref(fence.CaseIdentityRef), deref(fence.CaseIdentitySchemaVersion), deref(fence.CaseIdentityDigestAlgorithmVersion), deref(fence.CaseIdentityDigest))
	if fence.CoordinationState != FenceReconciliationRequired || fence.ReconciliationGeneration != c.ReconciliationGeneration ||
		deref(fence.ReconciliationCaseRef) != c.ReconciliationCaseRef || bound != c.Identity ||
		fence.BillingReservationID != c.BillingReservationID || fence.RunID != c.RunID {
		return ResolutionResult{}, fmt.Errorf("%w: fence %s is %s at case generation %d (%s), the grant is for generation %d (%s)",
			ErrStaleCaseGeneration, c.FenceID, fence.CoordinationState, fence.ReconciliationGeneration, deref(fence.ReconciliationCaseRef),
			c.ReconciliationGeneration, c.ReconciliationCaseRef)
	}
	res, err := queries.ReservationLock(ctx, tx, fence.BillingReservationID)
	if err != nil {
		return ResolutionResult{}, fmt.Errorf("lock reservation: %w", err)
	}
	if res.BillingAccountID != c.BillingAccountID {
		return ResolutionResult{}, fmt.Errorf("%w: account %s is not the reservation's", ErrStaleCaseGeneration, c.BillingAccountID)
	}
	at, err := txNow(ctx, tx)
	if err != nil {
		return ResolutionResult{}, err
	}
	consumed, err := queries.GrantConsume(ctx, tx, dbsqlc.GrantConsumeParams{GrantJti: claims.JTI, GrantSha256: sha, ConsumedAt: at})
	if err != nil {
		return ResolutionResult{}, fmt.Errorf("consume grant: %w", err)
	}
	if consumed != 1 {
		return ResolutionResult{}, fmt.Errorf("%w: jti %s", ErrGrantReplayed, claims.JTI)
	}
	fact := &reconciliation.Applied{
		ResolutionOperationID: claims.ResolutionOperationID, Case: c, ActorWorkforcePrincipalID: claims.Subject,
		CommandRequest: claims.CommandRequest, Candidate: claims.Candidate, Decision: claims.Decision,
		GrantJTI: claims.JTI, GrantSHA256: sha, Evidence: claims.Evidence,
		FinalizationFenceRevision: fence.FinalizationFenceRevision, AppliedAt: at,
	}
	body, err := reconciliation.SealAddressed(fact, RefPrefixResolutionApplied)
	if err != nil {
		return ResolutionResult{}, fmt.Errorf("%w: %w", ErrGrantInvalid, err)
	}
	ev := resolutionEvent(fact, res, at)
	appended, err := release.ForProducer(boundary.Core).AppendTx(ctx, tx, ev)
	if err != nil {
		return ResolutionResult{}, fmt.Errorf("append %s: %w", envelope.BillingFinalizationResolutionAppliedV1, err)
	}
	q := fact.Applied
	if err := queries.ResolutionInsert(ctx, tx, dbsqlc.ResolutionInsertParams{
		BillingFinalizationFenceID: c.FenceID, ReconciliationGeneration: c.ReconciliationGeneration,
		ResolutionOperationID: fact.ResolutionOperationID, AppliedRef: q.Ref, AppliedSchemaVersion: q.SchemaVersion,
		AppliedDigestAlgorithmVersion: string(q.DigestAlgorithmVersion), AppliedDigest: q.Digest,
		ActorWorkforcePrincipalID: fact.ActorWorkforcePrincipalID, GrantJti: claims.JTI,
		FinalizationFenceRevision: fence.FinalizationFenceRevision, EventID: ev.EventID,
		EventEnvelopeSha256: appended.Events[0].EnvelopeDigest.Value, AppliedBody: string(body), AppliedAt: at,
	}); err != nil {
		return ResolutionResult{}, fmt.Errorf("insert resolution: %w", err)
	}
	return ResolutionResult{Fact: fact, Body: body, EventID: ev.EventID}, nil
}

// replayResolution answers a resolution operation applied before: the
// same command (request, candidate, decision, grant) returns the stored
// fact byte for byte; anything else is ErrResolutionConflict.
func replayResolution(stored dbsqlc.BillingFinalizationReconciliationResolution, claims *reconciliation.GrantClaims, sha string) (ResolutionResult, error) {
	fact, err := reconciliation.DecodeApplied([]byte(stored.AppliedBody))
	if err != nil {
		return ResolutionResult{}, fmt.Errorf("stored resolution: %w", err)
	}
	if err := reconciliation.CheckApplied(fact, claims, sha); err != nil {
		return ResolutionResult{}, fmt.Errorf("%w: %w", ErrResolutionConflict, err)
	}
	return ResolutionResult{Fact: fact, Body: []byte(stored.AppliedBody), EventID: stored.EventID, Replayed: true}, nil
}

// resolutionEvent builds billing.finalization-reconciliation-resolution.applied@1:
// aggregate derived from fence and generation at revision 1, the actor in
// the envelope, under the resolution operation and the run's correlation.
func resolutionEvent(f *reconciliation.Applied, res dbsqlc.ReservationLockRow, at time.Time) envelope.Envelope {
	c := f.Case
	p := envelope.BillingFinalizationReconciliationResolutionAppliedV1Payload{
		BillingReservationID: c.BillingReservationID, BillingAccountID: c.BillingAccountID, RunID: c.RunID,
		BillingFinalizationFenceID: c.FenceID, ReconciliationCaseRef: c.ReconciliationCaseRef,
		ReconciliationGeneration: c.ReconciliationGeneration, ResolutionRevision: 1, ResolutionOperationID: f.ResolutionOperationID,
		ActorWorkforcePrincipalID: f.ActorWorkforcePrincipalID,
	}
	setQuad(&p.FinalizationCaseIdentityReservationRef, &p.FinalizationCaseIdentityReservationSchemaVersion,
		&p.FinalizationCaseIdentityReservationDigestAlgorithmVersion, &p.FinalizationCaseIdentityReservationDigest, c.Identity)
	setQuad(&p.FinalizationReconciliationResolutionAppliedRef, &p.FinalizationReconciliationResolutionAppliedSchemaVersion,
		&p.FinalizationReconciliationResolutionAppliedDigestAlgorithmVersion, &p.FinalizationReconciliationResolutionAppliedDigest, f.Applied)
	return envelope.Envelope{
		EventID: outbox.NewEventID(), EventType: envelope.BillingFinalizationResolutionAppliedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateFinalizationResolution,
		AggregateID:   envelope.FinalizationResolutionAggregateID(c.FenceID, c.ReconciliationGeneration), AggregateRevision: 1,
		TenantKind: res.TenantKind, TenantID: res.TenantID, WorkspaceID: res.WorkspaceID, ProjectID: deref(res.ProjectID),
		CorrelationID: res.CorrelationID, OperationID: f.ResolutionOperationID,
		Actor:      &envelope.Actor{Kind: envelope.ActorWorkforcePrincipal, WorkforcePrincipalID: f.ActorWorkforcePrincipalID},
		OccurredAt: at, Payload: p.Map(),
	}
}
