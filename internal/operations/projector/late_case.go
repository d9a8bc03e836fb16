package projector

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// Projection effects of billing.late-settlement-exposure.case-requested@1
// (issue 32).
const (
	// EffectLateCaseOpened: the first exposure of a dimension's case
	// generation opened its case.
	EffectLateCaseOpened = "late_settlement_case_opened"
	// EffectLateCaseJoined: a later exposure of the open generation joined
	// its case.
	EffectLateCaseJoined = "late_settlement_case_joined"
)

// CodeLateCaseConflict: a late settlement case-requested event disagrees
// with the identity Operations reserved or with the projected case of its
// generation (non_retryable).
const CodeLateCaseConflict = "late_settlement_case_conflict"

// ErrLateCaseConflict is the typed reason of CodeLateCaseConflict.
var ErrLateCaseConflict = errors.New("projector: event disagrees with the late settlement case of its generation")

// lateCaseRequest is a verified late settlement case-requested event.
type lateCaseRequest struct {
	EventID        string
	EnvelopeDigest digest.Digest
	p              envelope.BillingLateSettlementExposureCaseRequestedV1Payload
	Tenant         tenant
}

func lateCaseRequestFrom(e *envelope.Envelope, d digest.Digest) lateCaseRequest {
	return lateCaseRequest{EventID: e.EventID, EnvelopeDigest: d, Tenant: tenantOf(e),
		p: mustPayload(envelope.PayloadOf[envelope.BillingLateSettlementExposureCaseRequestedV1Payload](e))}
}

func lateCaseConflict(format string, args ...any) error {
	return transport.NonRetryable(CodeLateCaseConflict, fmt.Errorf("%w: %s", ErrLateCaseConflict, fmt.Sprintf(format, args...)))
}

// verifyLateCaseRequest verifies a late settlement case-requested event
// before any projection lock: the identity Operations reserved for its case
// request operation (every field the event repeats), then Billing's
// event-bound read readLateSettlementExposureForOperations.
func (p *Projector) verifyLateCaseRequest(ctx context.Context, tx pgx.Tx, r lateCaseRequest) error {
	x := r.p
	id, err := cases.LateIdentityByCaseRequestTx(ctx, tx, x.CaseRequestOperationID)
	if errors.Is(err, cases.ErrIdentityNotReserved) {
		return lateCaseConflict("event %s: %v", r.EventID, err)
	}
	if err != nil {
		return err
	}
	d := id.Dimension
	var bad []string
	check := func(name string, ok bool) {
		if !ok {
			bad = append(bad, name)
		}
	}
	check("lateSettlementCaseIdentityReservation", id.Reservation == x.LateSettlementCaseIdentityReservation())
	check("reconciliationCaseRef", id.ReconciliationCaseRef == x.ReconciliationCaseRef)
	check("caseGeneration", id.CaseGeneration == x.CaseGeneration)
	check("settlementDimensionId", d.SettlementDimensionID() == x.SettlementDimensionID)
	check("billingReservationId", d.BillingReservationID == x.BillingReservationID)
	check("billingAccountId", d.BillingAccountID == x.BillingAccountID)
	check("runId", d.RunID == x.RunID)
	check("runStepId", d.RunStepID == x.RunStepID)
	check("executionAttemptId", d.ExecutionAttemptID == x.ExecutionAttemptID)
	check("chargeDimensionKey", d.ChargeDimensionKey == x.ChargeDimensionKey)
	check("settlementEconomicIdentity", d.EconomicIdentity == x.SettlementEconomicIdentity)
	t := r.Tenant
	check("tenant", id.Tenant.Kind == t.Kind && id.Tenant.TenantID == t.ID && id.Tenant.WorkspaceID == t.WorkspaceID &&
		id.Tenant.ProjectID == t.ProjectID)
	// guard BI-2.late-case-request-identity-mismatch
	if len(bad) > 0 {
		return lateCaseConflict("event %s and identity %s differ in %s", r.EventID, id.Reservation.Ref, strings.Join(bad, ", "))
	}
	if p.cfg.LateExposureReads == nil {
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: readLateSettlementExposureForOperations is not wired", ErrOwnerRead))
	}
	ans, err := p.cfg.LateExposureReads.ReadLateSettlementExposureForOperations(ctx, coreread.LateExposureCaseRequestRead{
		EventID: r.EventID, EventEnvelopeDigest: r.EnvelopeDigest, LateSettlementExposureID: x.LateSettlementExposureID,
		Exposure: x.LateSettlementExposure(), SettlementDimensionID: x.SettlementDimensionID, BillingReservationID: x.BillingReservationID,
		BillingAccountID: x.BillingAccountID, RunID: x.RunID, RunStepID: x.RunStepID, ExecutionAttemptID: x.ExecutionAttemptID,
		ChargeDimensionKey: x.ChargeDimensionKey, CaseRef: x.ReconciliationCaseRef, CaseGeneration: x.CaseGeneration,
		CaseIdentity: x.LateSettlementCaseIdentityReservation(), CaseRequestOperationID: x.CaseRequestOperationID,
		ExposureAmount: x.ExposureAmount,
	})
	return ownerAnswer(ans, err, "readLateSettlementExposureForOperations", "exposure "+x.LateSettlementExposureID, r.EventID)
}

// applyLateCaseRequest projects a verified late settlement case-requested
// event (its exposure aggregate already at revision 1 under lock): under
// the case's lock, the first exposure of the generation opens the case,
// a later one joins it (the same identity and generation, else conflict),
// and the exposure is recorded under its case.
func applyLateCaseRequest(ctx context.Context, tx pgx.Tx, ev *inbox.Event, r lateCaseRequest) (mutation, error) {
	t, x := ev.Key.Projection, r.p
	key := fmt.Sprintf("operations|late-case|%s|%d|%s", t.Name, t.Version, x.ReconciliationCaseRef)
	if _, err := tx.Exec(ctx, qLinkLock, pgx.NamedArgs{"keys": []string{key}}); err != nil {
		return mutation{}, fmt.Errorf("lock late settlement case %s: %w", x.ReconciliationCaseRef, err)
	}
	identity := x.LateSettlementCaseIdentityReservation()
	var stored strict.Quadruple
	var alg string
	var generation int64
	err := tx.QueryRow(ctx, `SELECT case_generation, case_identity_ref, case_identity_schema_version, case_identity_digest_algorithm_version,
		    case_identity_digest FROM operations.late_settlement_cases
		  WHERE reconciliation_case_ref = $1 AND projection_name = $2 AND projection_version = $3`,
		x.ReconciliationCaseRef, t.Name, t.Version).Scan(&generation, &stored.Ref, &stored.SchemaVersion, &alg, &stored.Digest)
	stored.DigestAlgorithmVersion = digest.Algorithm(alg)
	effect := EffectLateCaseJoined
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		effect = EffectLateCaseOpened
		if _, err := tx.Exec(ctx, `INSERT INTO operations.late_settlement_cases (reconciliation_case_ref, projection_name,
			    projection_version, settlement_dimension_id, case_generation, case_identity_ref, case_identity_schema_version,
			    case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id, billing_reservation_id,
			    billing_account_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key, tenant_kind, tenant_id,
			    workspace_id, project_id, state, opened_by_event_id, opened_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, 'open', $21, $22)`,
			x.ReconciliationCaseRef, t.Name, t.Version, x.SettlementDimensionID, x.CaseGeneration, identity.Ref, identity.SchemaVersion,
			string(identity.DigestAlgorithmVersion), identity.Digest, x.CaseRequestOperationID, x.BillingReservationID,
			x.BillingAccountID, x.RunID, x.RunStepID, x.ExecutionAttemptID, x.ChargeDimensionKey, r.Tenant.Kind, r.Tenant.ID,
			r.Tenant.WorkspaceID, nullable(r.Tenant.ProjectID), r.EventID, ev.Now); err != nil {
			return mutation{}, fmt.Errorf("open late settlement case: %w", err)
		}
	case err != nil:
		return mutation{}, fmt.Errorf("read late settlement case: %w", err)
	case stored != identity || generation != x.CaseGeneration:
		return mutation{}, lateCaseConflict("case %s is generation %d with identity %s; event %s names generation %d with %s",
			x.ReconciliationCaseRef, generation, stored.Ref, r.EventID, x.CaseGeneration, identity.Ref)
	}
	e := x.LateSettlementExposure()
	if _, err := tx.Exec(ctx, `INSERT INTO operations.late_settlement_case_exposures (late_settlement_exposure_id, projection_name,
		    projection_version, reconciliation_case_ref, exposure_ref, exposure_schema_version, exposure_digest_algorithm_version,
		    exposure_digest, exposure_amount, request_event_id, request_event_envelope_sha256, requested_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::numeric, $10, $11, $12)`,
		x.LateSettlementExposureID, t.Name, t.Version, x.ReconciliationCaseRef, e.Ref, e.SchemaVersion, string(e.DigestAlgorithmVersion),
		e.Digest, x.ExposureAmount, r.EventID, r.EnvelopeDigest.Value, ev.Envelope.OccurredAt); err != nil {
		return mutation{}, fmt.Errorf("record late settlement exposure in its case: %w", err)
	}
	return caseMutation(effect, r.EventID, x.RunID, x.BillingReservationID), nil
}
