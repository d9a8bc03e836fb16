package catchup

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// ReadLateSettlementCommandResultForOperations is
// readLateSettlementCommandResultForOperations: by the command operation the
// result-committed event names, it answers found when Billing's stored
// LateSettlementCommandResult@1 recomputes to the event's quadruple, every
// identity the event states (dimension, exposure, case ref, generation and
// identity, from/to revisions, adjustment amount, actor) equals it, and its
// stored event is this event (id and envelope digest); not_found when
// Billing has no result under that operation (nor at that revision of the
// dimension); conflicting otherwise. No list, no latest.
func (r Reads) ReadLateSettlementCommandResultForOperations(ctx context.Context, req coreread.LateCommandResultRead) (ownerread.Answer, error) {
	if err := req.Result.Validate(); err != nil || req.CaseIdentity.Validate() != nil || req.EventID == "" ||
		req.CommandOperationID == "" || req.SettlementDimensionID == "" {
		return "", fmt.Errorf("%w: readLateSettlementCommandResultForOperations needs the event, the operation, the dimension and both quadruples", ownerread.ErrInvalidRequest)
	}
	var body, eventID, eventSHA256 string
	err := r.DB.QueryRow(ctx, `SELECT result_body, event_id::text, event_envelope_sha256
		FROM billing.late_settlement_command_results WHERE command_operation_id = $1`, req.CommandOperationID).Scan(&body, &eventID, &eventSHA256)
	if errors.Is(err, pgx.ErrNoRows) {
		var taken bool
		if err := r.DB.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM billing.late_settlement_command_results
			WHERE settlement_dimension_id = $1 AND from_settlement_state_revision = $2)`,
			req.SettlementDimensionID, req.FromSettlementStateRevision).Scan(&taken); err != nil {
			return "", fmt.Errorf("read late settlement command result by revision: %w", err)
		}
		if taken {
			return ownerread.Conflicting, nil
		}
		return ownerread.NotFound, nil
	}
	if err != nil {
		return "", fmt.Errorf("read late settlement command result: %w", err)
	}
	res, err := reconciliation.DecodeLateResult([]byte(body))
	if err != nil {
		return ownerread.Conflicting, nil
	}
	c := res.Case
	same := res.Result == req.Result && res.CommandOperationID == req.CommandOperationID && eventID == req.EventID &&
		(digest.Digest{Algorithm: digest.JCSSHA256V1, Value: eventSHA256}) == req.EventEnvelopeDigest &&
		c.Dimension.SettlementDimensionID() == req.SettlementDimensionID &&
		res.Exposure.LateSettlementExposureID == req.LateSettlementExposureID && c.ReconciliationCaseRef == req.CaseRef &&
		c.CaseGeneration == req.CaseGeneration && c.Identity == req.CaseIdentity &&
		res.FromSettlementStateRevision == req.FromSettlementStateRevision && res.ToSettlementStateRevision() == req.ToSettlementStateRevision &&
		res.AdjustmentAmount == req.AdjustmentAmount && res.ActorWorkforcePrincipalID == req.Actor
	if !same {
		return ownerread.Conflicting, nil
	}
	return ownerread.Found, nil
}

// ReadBillingCaseResolutionAppliedForOperations is
// readBillingCaseResolutionAppliedForOperations: by the exposure the
// applied event names, it answers found when Billing's stored
// BillingCaseResolutionApplied@1 of that exposure recomputes to the event's
// quadruple, every identity the event states (dimension, case ref,
// generation and identity, source, resolution operation) equals it, and its
// stored event is this event (id and envelope digest); not_found when the
// exposure has no resolution; conflicting otherwise. No list, no latest.
func (r Reads) ReadBillingCaseResolutionAppliedForOperations(ctx context.Context, req coreread.CaseResolutionAppliedRead) (ownerread.Answer, error) {
	if err := req.Applied.Validate(); err != nil || req.CaseIdentity.Validate() != nil || req.EventID == "" ||
		req.LateSettlementExposureID == "" || req.ResolutionOperationID == "" {
		return "", fmt.Errorf("%w: readBillingCaseResolutionAppliedForOperations needs the event, the exposure, the operation and both quadruples", ownerread.ErrInvalidRequest)
	}
	var body, eventID, eventSHA256 string
	err := r.DB.QueryRow(ctx, `SELECT applied_body, event_id::text, event_envelope_sha256
		FROM billing.late_settlement_exposure_resolutions WHERE late_settlement_exposure_id = $1`, req.LateSettlementExposureID).
		Scan(&body, &eventID, &eventSHA256)
	if errors.Is(err, pgx.ErrNoRows) {
		return ownerread.NotFound, nil
	}
	if err != nil {
		return "", fmt.Errorf("read case resolution applied: %w", err)
	}
	a, err := reconciliation.DecodeCaseResolutionApplied([]byte(body))
	if err != nil {
		return ownerread.Conflicting, nil
	}
	c := a.Case
	same := a.Applied == req.Applied && eventID == req.EventID &&
		(digest.Digest{Algorithm: digest.JCSSHA256V1, Value: eventSHA256}) == req.EventEnvelopeDigest &&
		a.Exposure.LateSettlementExposureID == req.LateSettlementExposureID &&
		c.Dimension.SettlementDimensionID() == req.SettlementDimensionID && c.ReconciliationCaseRef == req.CaseRef &&
		c.CaseGeneration == req.CaseGeneration && c.Identity == req.CaseIdentity &&
		a.ResolutionSource == req.ResolutionSource && a.ResolutionOperationID == req.ResolutionOperationID
	if !same {
		return ownerread.Conflicting, nil
	}
	return ownerread.Found, nil
}

var (
	_ coreread.LateCommandResultReader     = Reads{}
	_ coreread.CaseResolutionAppliedReader = Reads{}
)
