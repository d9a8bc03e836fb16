package catchup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
)

// Late settlement case generation states (billing.late_settlement_cases).
// New exposures join the open generation; the late settlement command moves
// a generation to resolving and resolved, after which the next positive
// difference reserves generation + 1.
const (
	LateCaseOpen      = "open"
	LateCaseResolving = "resolving"
	LateCaseResolved  = "resolved"
)

// CodeExposureCaseNotOpen: the database refused an exposure joining a case
// generation that is not its dimension's open one (migration 00047).
const CodeExposureCaseNotOpen = "BC013"

// DerivationExposureCaseRequestOperation names the operation of one
// exposure's case-requested event.
const DerivationExposureCaseRequestOperation = "late_settlement_exposure_case_request_event@1"

// lateCase is one generation of a dimension's late settlement case.
type lateCase struct {
	Generation             int64
	CaseRef                string
	Identity               strict.Quadruple
	CaseRequestOperationID string
	State                  string
}

// caseForExposure returns the case generation a new exposure of f's
// dimension joins, under the fence lock the caller holds: the open
// generation if there is one; otherwise Billing reserves generation + 1
// (1 for the first) with Operations, naming the latest generation as
// predecessor, and records it open.
func caseForExposure(ctx context.Context, tx pgx.Tx, f *catchUpFenceRow, dim billingc.SettlementDimension, ids operationsread.LateCaseIdentities, now time.Time) (lateCase, error) {
	var latest lateCase
	var alg string
	err := tx.QueryRow(ctx, `SELECT case_generation, reconciliation_case_ref, case_identity_ref, case_identity_schema_version,
		    case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id, state
		  FROM billing.late_settlement_cases WHERE settlement_dimension_id = $1
		 ORDER BY case_generation DESC LIMIT 1`, f.SettlementDimensionID).Scan(&latest.Generation, &latest.CaseRef,
		&latest.Identity.Ref, &latest.Identity.SchemaVersion, &alg, &latest.Identity.Digest, &latest.CaseRequestOperationID, &latest.State)
	latest.Identity.DigestAlgorithmVersion = digest.Algorithm(alg)
	switch {
	case err == nil && latest.State == LateCaseOpen:
		return latest, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return lateCase{}, fmt.Errorf("read late settlement case of %s: %w", f.SettlementDimensionID, err)
	}
	t := f.tenant()
	scope := operationsread.LateCaseScope{Tenant: operationsread.Tenant{Kind: t.Kind, ID: t.ID, WorkspaceID: t.WorkspaceID, ProjectID: t.ProjectID},
		Dimension: dim, Generation: 1}
	if err == nil {
		scope.Generation = latest.Generation + 1
		scope.Predecessor = &operationsread.CaseIdentity{Identity: latest.Identity, CaseRef: latest.CaseRef,
			Generation: latest.Generation, CaseRequestOperationID: latest.CaseRequestOperationID}
	}
	id, err := ids.ReserveLateSettlementCaseIdentity(ctx, scope)
	if err != nil {
		return lateCase{}, fmt.Errorf("reserve late settlement case generation %d of %s: %w", scope.Generation, f.SettlementDimensionID, err)
	}
	if id.Generation != scope.Generation {
		return lateCase{}, fmt.Errorf("reserve late settlement case of %s: asked generation %d, Operations answered %d",
			f.SettlementDimensionID, scope.Generation, id.Generation)
	}
	var pred *int64
	if scope.Predecessor != nil {
		pred = &scope.Predecessor.Generation
	}
	q := id.Identity
	if _, err := tx.Exec(ctx, `INSERT INTO billing.late_settlement_cases (settlement_dimension_id, case_generation,
		    reconciliation_case_ref, case_identity_ref, case_identity_schema_version, case_identity_digest_algorithm_version,
		    case_identity_digest, case_request_operation_id, predecessor_generation, billing_reservation_id, billing_account_id,
		    state, opened_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'open', $12)`,
		f.SettlementDimensionID, id.Generation, id.CaseRef, q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest,
		id.CaseRequestOperationID, pred, f.BillingReservationID, f.BillingAccountID, now); err != nil {
		return lateCase{}, fmt.Errorf("record late settlement case generation %d of %s: %w", id.Generation, f.SettlementDimensionID, err)
	}
	return lateCase{Generation: id.Generation, CaseRef: id.CaseRef, Identity: q, CaseRequestOperationID: id.CaseRequestOperationID,
		State: LateCaseOpen}, nil
}

// insertLateSettlementExposure records the open, blocked exposure of an
// exposure transition. With Operations' case identities (ids) the exposure
// asks for its dimension's open case generation (caseForExposure) and, in
// the same transaction, appends billing.late-settlement-exposure.case-requested@1
// (caused by the transition's event) for the Operations projector; without
// them it is recorded not_requested, visible but with no case.
func insertLateSettlementExposure(ctx context.Context, tx pgx.Tx, f *catchUpFenceRow, t *billingc.BillingSettlementTransition,
	ids operationsread.LateCaseIdentities, transitionEventID string) error {
	e := &billingc.LateSettlementExposure{Exposure: strict.Quadruple{Ref: "lse-" + uuid.Must(uuid.NewV7()).String()},
		Dimension: t.Dimension, Transition: t.Transition, SettlementStateRevision: t.ToSettlementStateRevision(),
		SettlementInput: t.SettlementInput, ExposureAmount: t.TransitionAmount, RecordedAt: t.CommittedAt}
	var c lateCase
	if ids != nil {
		var err error
		if c, err = caseForExposure(ctx, tx, f, t.Dimension, ids, t.CommittedAt); err != nil {
			return err
		}
		e.Case = &billingc.ExposureCase{ReconciliationCaseRef: c.CaseRef, CaseGeneration: c.Generation, Identity: c.Identity,
			CaseRequestOperationID: c.CaseRequestOperationID}
	}
	body, err := billingc.SealSettlement(e)
	if err != nil {
		return fmt.Errorf("seal late settlement exposure: %w", err)
	}
	q := e.Exposure
	args := pgx.NamedArgs{
		"late_settlement_exposure_id": e.ExposureID(), "settlement_dimension_id": t.Dimension.SettlementDimensionID(),
		"settlement_state_revision": e.SettlementStateRevision, "billing_reservation_id": t.Dimension.BillingReservationID,
		"billing_account_id": t.Dimension.BillingAccountID, "exposure_ref": q.Ref, "exposure_schema_version": q.SchemaVersion,
		"exposure_digest_algorithm_version": string(q.DigestAlgorithmVersion), "exposure_digest": q.Digest,
		"exposure_amount": e.ExposureAmount, "exposure_body": string(body), "recorded_at": e.RecordedAt,
		"case_generation": nil, "reconciliation_case_ref": nil, "case_event_id": nil, "case_event_envelope_sha256": nil,
	}
	var event *envelope.Envelope
	if e.Case != nil {
		eventID := uuid.Must(uuid.NewV7()).String()
		if event, err = envelope.Build(exposureCaseRequestedEvent(f, e, eventID, transitionEventID)); err != nil {
			return fmt.Errorf("build late settlement exposure case-requested event: %w", err)
		}
		d, err := event.Digest()
		if err != nil {
			return fmt.Errorf("digest late settlement exposure case-requested event: %w", err)
		}
		args["case_generation"], args["reconciliation_case_ref"] = c.Generation, c.CaseRef
		args["case_event_id"], args["case_event_envelope_sha256"] = eventID, d.Value
	}
	if _, err := tx.Exec(ctx, qCatchUpExposureInsert, args); err != nil {
		return fmt.Errorf("insert late settlement exposure: %w", err)
	}
	if event != nil {
		if _, err := release.ForProducer(boundary.Core).AppendTx(ctx, tx, *event); err != nil {
			return fmt.Errorf("append late settlement exposure case-requested event: %w", err)
		}
	}
	return nil
}

// exposureCaseRequestedEvent is billing.late-settlement-exposure.case-requested@1:
// aggregate the exposure at revision 1, caused by the exposure transition's
// event, under an operation derived from the exposure.
func exposureCaseRequestedEvent(f *catchUpFenceRow, e *billingc.LateSettlementExposure, eventID, transitionEventID string) envelope.Envelope {
	d := e.Dimension
	p := envelope.BillingLateSettlementExposureCaseRequestedV1Payload{
		BillingReservationID: d.BillingReservationID, BillingAccountID: d.BillingAccountID, RunID: d.RunID, RunStepID: d.RunStepID,
		ExecutionAttemptID: d.ExecutionAttemptID, ChargeDimensionKey: d.ChargeDimensionKey, SettlementDimensionID: d.SettlementDimensionID(),
		SettlementEconomicIdentity: d.EconomicIdentity, LateSettlementExposureID: e.ExposureID(),
		ReconciliationCaseRef: e.Case.ReconciliationCaseRef, CaseGeneration: e.Case.CaseGeneration,
		CaseRequestOperationID: e.Case.CaseRequestOperationID, ExposureAmount: e.ExposureAmount,
	}
	p.SetLateSettlementExposure(e.Exposure)
	p.SetLateSettlementCaseIdentityReservation(e.Case.Identity)
	tenant := f.tenant()
	return envelope.Envelope{
		EventID: eventID, EventType: envelope.BillingLateExposureCaseRequestedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateBillingLateSettlementExposure, AggregateID: e.ExposureID(), AggregateRevision: 1,
		TenantKind: tenant.Kind, TenantID: tenant.ID, WorkspaceID: tenant.WorkspaceID, ProjectID: tenant.ProjectID,
		CorrelationID: f.CorrelationID, CausationID: transitionEventID,
		OperationID: envelope.DeriveID(DerivationExposureCaseRequestOperation, map[string]any{"lateSettlementExposureId": e.ExposureID()}),
		OccurredAt:  e.RecordedAt, Payload: p.Map(),
	}
}

// resolveExposuresByTransition resolves, in the transition's transaction,
// every open exposure of t's dimension that asked for a case: the
// transition changes the dimension's target, so a new exposure supersedes
// the previous open one and a refund makes it moot (ADR-031; at most one
// exposure per dimension stays open). Each gets its
// BillingCaseResolutionApplied@1 with source settlement_transition and
// billing.case-resolution.applied@1 (caused by the transition's event);
// Operations closes the case by generation and exposure revision.
func resolveExposuresByTransition(ctx context.Context, tx pgx.Tx, f *catchUpFenceRow, t *billingc.BillingSettlementTransition, transitionEventID string) error {
	rows, err := tx.Query(ctx, `SELECT e.exposure_body FROM billing.late_settlement_exposures e
		WHERE e.settlement_dimension_id = $1 AND e.case_generation IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions x
		                   WHERE x.late_settlement_exposure_id = e.late_settlement_exposure_id)
		ORDER BY e.settlement_state_revision`, f.SettlementDimensionID)
	if err != nil {
		return fmt.Errorf("read open late settlement exposures: %w", err)
	}
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("read open late settlement exposures: %w", err)
	}
	for _, body := range bodies {
		e, err := billingc.DecodeLateSettlementExposure([]byte(body))
		if err != nil {
			return fmt.Errorf("%w: stored exposure of %s: %w", ErrConflict, f.SettlementDimensionID, err)
		}
		k := e.Case
		lc := reconciliation.LateCase{ReconciliationCaseRef: k.ReconciliationCaseRef, CaseGeneration: k.CaseGeneration, Identity: k.Identity,
			Dimension: e.Dimension}
		app := &reconciliation.CaseResolutionApplied{Exposure: reconciliation.ExposureRef(e), Case: lc,
			ResolutionOperationID: reconciliation.CaseResolutionOperationID(e.ExposureID(), k.CaseGeneration),
			ResolutionSource:      reconciliation.ResolutionSourceTransition, Source: t.Transition,
			ToSettlementStateRevision: t.ToSettlementStateRevision(), AppliedAt: t.CommittedAt}
		appBody, err := reconciliation.SealAddressed(app, "bcra-")
		if err != nil {
			return fmt.Errorf("seal case resolution applied: %w", err)
		}
		if err := reconciliation.CheckCaseResolutionByTransition(app, e, t); err != nil {
			return fmt.Errorf("case resolution by transition: %w", err)
		}
		tenant := f.tenant()
		eventID := uuid.Must(uuid.NewV7()).String()
		ev, err := envelope.Build(envelope.Envelope{EventID: eventID, EventType: envelope.BillingCaseResolutionAppliedV1,
			EventSchemaVersion: "1", AggregateType: envelope.AggregateBillingLateSettlementExposure, AggregateID: e.ExposureID(),
			AggregateRevision: 2, TenantKind: tenant.Kind, TenantID: tenant.ID, WorkspaceID: tenant.WorkspaceID, ProjectID: tenant.ProjectID,
			CorrelationID: f.CorrelationID, CausationID: transitionEventID, OperationID: app.ResolutionOperationID,
			OccurredAt: t.CommittedAt, Payload: app.AppliedPayload().Map()})
		if err != nil {
			return fmt.Errorf("build case resolution applied event: %w", err)
		}
		d, err := ev.Digest()
		if err != nil {
			return err
		}
		q := app.Applied
		if _, err := tx.Exec(ctx, `INSERT INTO billing.late_settlement_exposure_resolutions (late_settlement_exposure_id,
			    settlement_dimension_id, case_generation, resolution_operation_id, resolution_source, transition_to_revision,
			    applied_ref, applied_schema_version, applied_digest_algorithm_version, applied_digest, applied_body, event_id,
			    event_envelope_sha256, applied_at)
			VALUES ($1, $2, $3, $4, 'settlement_transition', $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			e.ExposureID(), f.SettlementDimensionID, k.CaseGeneration, app.ResolutionOperationID, t.ToSettlementStateRevision(),
			q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest, string(appBody), eventID, d.Value, t.CommittedAt); err != nil {
			return fmt.Errorf("insert case resolution applied: %w", err)
		}
		if _, err := release.ForProducer(boundary.Core).AppendTx(ctx, tx, *ev); err != nil {
			return fmt.Errorf("append case resolution applied event: %w", err)
		}
	}
	return nil
}
