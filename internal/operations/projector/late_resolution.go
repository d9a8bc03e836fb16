package projector

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// Projection effects of the late settlement command's events (issue 32
// part 2).
const (
	// EffectLateCommandResult: billing.late-settlement-command-result.committed@1
	// recorded in its dimension's revision sequence.
	EffectLateCommandResult = "late_settlement_command_result_recorded"
	// EffectLateExposureResolved: billing.case-resolution.applied@1 resolved
	// one exposure of a case that still has unresolved exposures.
	EffectLateExposureResolved = "late_settlement_exposure_resolved"
	// EffectLateCaseResolved: the applied event resolved the last unresolved
	// exposure of its case generation, and the case closed (open → resolved).
	EffectLateCaseResolved = "late_settlement_case_resolved"
)

// lateResultRead is the owner read request a late command result event
// states.
func lateResultRead(e *envelope.Envelope, d digest.Digest) coreread.LateCommandResultRead {
	p := mustPayload(envelope.PayloadOf[envelope.BillingLateSettlementCommandResultCommittedV1Payload](e))
	return coreread.LateCommandResultRead{
		EventID: e.EventID, EventEnvelopeDigest: d, Result: p.LateSettlementCommandResult(), CommandOperationID: p.LateSettlementCommandOperationID,
		SettlementDimensionID: p.SettlementDimensionID, LateSettlementExposureID: p.LateSettlementExposureID, CaseRef: p.ReconciliationCaseRef,
		CaseGeneration: p.CaseGeneration, CaseIdentity: p.LateSettlementCaseIdentityReservation(),
		FromSettlementStateRevision: p.FromSettlementStateRevision, ToSettlementStateRevision: p.ToSettlementStateRevision,
		AdjustmentAmount: p.AdjustmentAmount, Actor: p.ActorWorkforcePrincipalID,
	}
}

// verifyLateResult runs Billing's readLateSettlementCommandResultForOperations
// before any projection lock, like verifyTransition: unwired or unavailable
// → retryable, not_found → retryable, conflicting → non_retryable; nothing
// is written either way.
func (p *Projector) verifyLateResult(ctx context.Context, req coreread.LateCommandResultRead) error {
	if p.cfg.LateResultReads == nil {
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: readLateSettlementCommandResultForOperations is not wired", ErrOwnerRead))
	}
	ans, err := p.cfg.LateResultReads.ReadLateSettlementCommandResultForOperations(ctx, req)
	return ownerAnswer(ans, err, "readLateSettlementCommandResultForOperations", "LateSettlementCommandResult "+req.Result.Ref, req.EventID)
}

// applyLateResult records a verified late command result: its place in the
// settlement dimension's aggregate (revision = from revision, the same
// sequence as billing.settlement-transition.committed@1, so the next
// transition is not a gap) is already taken under lock; the mutation log
// and the index carry it to the run and the reservation. The case is
// closed by the applied event, not by the result.
func applyLateResult(e *envelope.Envelope, req coreread.LateCommandResultRead) mutation {
	p := mustPayload(envelope.PayloadOf[envelope.BillingLateSettlementCommandResultCommittedV1Payload](e))
	return caseMutation(EffectLateCommandResult, req.EventID, p.RunID, p.BillingReservationID)
}

// lateApplied is a verified billing.case-resolution.applied@1.
type lateApplied struct {
	EventID        string
	EnvelopeDigest digest.Digest
	p              envelope.BillingCaseResolutionAppliedV1Payload
}

func lateAppliedFrom(e *envelope.Envelope, d digest.Digest) lateApplied {
	return lateApplied{EventID: e.EventID, EnvelopeDigest: d,
		p: mustPayload(envelope.PayloadOf[envelope.BillingCaseResolutionAppliedV1Payload](e))}
}

// verifyLateApplied runs Billing's readBillingCaseResolutionAppliedForOperations
// before any projection lock (same classes as verifyLateResult).
func (p *Projector) verifyLateApplied(ctx context.Context, a lateApplied) error {
	if p.cfg.CaseResolutionReads == nil {
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: readBillingCaseResolutionAppliedForOperations is not wired", ErrOwnerRead))
	}
	x := a.p
	ans, err := p.cfg.CaseResolutionReads.ReadBillingCaseResolutionAppliedForOperations(ctx, coreread.CaseResolutionAppliedRead{
		EventID: a.EventID, EventEnvelopeDigest: a.EnvelopeDigest, Applied: x.BillingCaseResolutionApplied(),
		LateSettlementExposureID: x.LateSettlementExposureID, SettlementDimensionID: x.SettlementDimensionID, CaseRef: x.ReconciliationCaseRef,
		CaseGeneration: x.CaseGeneration, CaseIdentity: x.LateSettlementCaseIdentityReservation(), ResolutionSource: x.ResolutionSource,
		ResolutionOperationID: x.ResolutionOperationID,
	})
	return ownerAnswer(ans, err, "readBillingCaseResolutionAppliedForOperations", "BillingCaseResolutionApplied "+x.BillingCaseResolutionAppliedRef, a.EventID)
}

// applyLateApplied projects a verified applied event. Its exposure
// aggregate is at revision 2 under lock, so the exposure's
// case-requested event (revision 1) was applied: an applied event that
// arrives first waits as a revision gap (OPS-2) and is applied when the
// case-requested event fills it — nothing of it is written before. Under
// the case's lock (the key applyLateCaseRequest takes) the exposure must be
// in the named case generation with the same identity (else
// CodeLateCaseConflict), is marked resolved (once: OP006), and the case
// closes open → resolved once no exposure of the generation is unresolved.
func applyLateApplied(ctx context.Context, tx pgx.Tx, ev *inbox.Event, a lateApplied) (mutation, error) {
	t, x := ev.Key.Projection, a.p
	key := fmt.Sprintf("operations|late-case|%s|%d|%s", t.Name, t.Version, x.ReconciliationCaseRef)
	if _, err := tx.Exec(ctx, qLinkLock, pgx.NamedArgs{"keys": []string{key}}); err != nil {
		return mutation{}, fmt.Errorf("lock late settlement case %s: %w", x.ReconciliationCaseRef, err)
	}
	var state, identityRef, identityDigest, dimensionID string
	var generation int64
	err := tx.QueryRow(ctx, `SELECT c.state, c.case_generation, c.case_identity_ref, c.case_identity_digest, c.settlement_dimension_id::text
		  FROM operations.late_settlement_case_exposures e
		  JOIN operations.late_settlement_cases c ON c.reconciliation_case_ref = e.reconciliation_case_ref
		   AND c.projection_name = e.projection_name AND c.projection_version = e.projection_version
		 WHERE e.late_settlement_exposure_id = $1 AND e.projection_name = $2 AND e.projection_version = $3
		   AND e.reconciliation_case_ref = $4`,
		x.LateSettlementExposureID, t.Name, t.Version, x.ReconciliationCaseRef).Scan(&state, &generation, &identityRef, &identityDigest, &dimensionID)
	identity := x.LateSettlementCaseIdentityReservation()
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return mutation{}, lateCaseConflict("event %s: exposure %s is not in case %s", a.EventID, x.LateSettlementExposureID, x.ReconciliationCaseRef)
	case err != nil:
		return mutation{}, fmt.Errorf("read late settlement exposure: %w", err)
	}
	// guard BI-2.late-applied-case-mismatch
	if generation != x.CaseGeneration || identityRef != identity.Ref || identityDigest != identity.Digest || dimensionID != x.SettlementDimensionID {
		return mutation{}, lateCaseConflict("case %s is generation %d with identity %s; event %s names generation %d with %s",
			x.ReconciliationCaseRef, generation, identityRef, a.EventID, x.CaseGeneration, identity.Ref)
	}
	applied := x.BillingCaseResolutionApplied()
	if _, err := tx.Exec(ctx, `UPDATE operations.late_settlement_case_exposures SET resolution_event_id = $4,
		    resolution_event_envelope_sha256 = $5, resolution_operation_id = $6, resolution_source = $7, resolution_applied_ref = $8,
		    resolution_applied_digest = $9, resolved_at = $10
		  WHERE late_settlement_exposure_id = $1 AND projection_name = $2 AND projection_version = $3`,
		x.LateSettlementExposureID, t.Name, t.Version, a.EventID, a.EnvelopeDigest.Value, x.ResolutionOperationID, x.ResolutionSource,
		applied.Ref, applied.Digest, ev.Envelope.OccurredAt); err != nil {
		return mutation{}, fmt.Errorf("resolve late settlement exposure: %w", err)
	}
	effect := EffectLateExposureResolved
	var unresolved int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM operations.late_settlement_case_exposures
		  WHERE reconciliation_case_ref = $1 AND projection_name = $2 AND projection_version = $3 AND resolved_at IS NULL`,
		x.ReconciliationCaseRef, t.Name, t.Version).Scan(&unresolved); err != nil {
		return mutation{}, fmt.Errorf("count unresolved late settlement exposures: %w", err)
	}
	if unresolved == 0 && state == "open" {
		effect = EffectLateCaseResolved
		if _, err := tx.Exec(ctx, `UPDATE operations.late_settlement_cases SET state = 'resolved', resolution_event_id = $4, resolved_at = $5
			  WHERE reconciliation_case_ref = $1 AND projection_name = $2 AND projection_version = $3`,
			x.ReconciliationCaseRef, t.Name, t.Version, a.EventID, ev.Now); err != nil {
			return mutation{}, fmt.Errorf("close late settlement case: %w", err)
		}
	}
	return caseMutation(effect, a.EventID, x.RunID, x.BillingReservationID), nil
}
