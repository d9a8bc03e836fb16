package reconciliation

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// The second source scope of a reconciliation case (ADR-031 "终局后变化采用追加式
// Transition", issue 32): a late settlement exposure of one settlement
// dimension. Its case identity is per (dimension, case generation), not per
// exposure: every exposure recorded while the generation is opening | open
// joins the same case; once Billing has started resolving that generation,
// the next positive difference reserves generation + 1.
const (
	KindLateCaseIdentityReservation    = "LateSettlementCaseIdentityReservation@1"
	PrefixLateCaseIdentity             = "lateSettlementCaseIdentityReservation"
	SourceKindLateSettlementExposure   = "late_settlement_exposure"
	DerivationLateCaseRef              = "late_settlement_case_ref@1"
	DerivationLateCaseRequestOperation = "late_settlement_case_request_operation@1"
	lateCaseRefPrefix                  = "lcase-"
	fieldCaseGeneration                = "caseGeneration"
	fieldSettlementDimensionID         = "settlementDimensionId"
	prefixPredecessorLateIdentity      = "predecessorLateSettlementCaseIdentityReservation"
)

// LateSettlementCaseRef is the case ref of one dimension's case generation:
// Billing and Operations compute the same ref, so a reservation whose
// response was lost is found again.
func LateSettlementCaseRef(settlementDimensionID string, caseGeneration int64) string {
	return lateCaseRefPrefix + envelope.DeriveID(DerivationLateCaseRef, dimensionGeneration(settlementDimensionID, caseGeneration))
}

// LateSettlementCaseRequestOperationID is the operation under which Billing
// reserves and reads the case identity of one dimension's case generation.
func LateSettlementCaseRequestOperationID(settlementDimensionID string, caseGeneration int64) string {
	return envelope.DeriveID(DerivationLateCaseRequestOperation, dimensionGeneration(settlementDimensionID, caseGeneration))
}

func dimensionGeneration(settlementDimensionID string, caseGeneration int64) map[string]any {
	return map[string]any{fieldSettlementDimensionID: settlementDimensionID, fieldCaseGeneration: caseGeneration}
}

// LatePredecessor is the direct predecessor generation's late settlement
// case identity.
type LatePredecessor struct {
	ReconciliationCaseRef string
	CaseGeneration        int64
	Identity              strict.Quadruple
}

// LateCaseIdentityReservation is LateSettlementCaseIdentityReservation@1,
// Operations-owned: the stable identity Billing reserves before the first
// exposure of a case generation asks for its case. It freezes what cannot
// change while exposures of the generation come and go (tenant, the full
// settlement dimension, generation, case request operation, predecessor)
// and deliberately no exposure: later exposures of the same open
// generation join the case under this same identity.
//
//	lateSettlementCaseIdentityReservationRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	sourceKind = late_settlement_exposure
//	tenantKind, tenantId, workspaceId, projectId?
//	settlement dimension in full (reservation, account, run, step, attempt, charge dimension key,
//	  settlementDimensionId, economic identity)
//	reconciliationCaseRef        = LateSettlementCaseRef(dimension, generation)
//	caseGeneration ≥ 1
//	caseRequestOperationId       = LateSettlementCaseRequestOperationID(dimension, generation)
//	predecessorCase = {state=none} (generation 1) | {state=present; generation − 1, its case ref and identity}
//	reservedAt                   excluded from the digest candidate
type LateCaseIdentityReservation struct {
	Reservation            strict.Quadruple
	Tenant                 billing.Tenant
	Dimension              billing.SettlementDimension
	ReconciliationCaseRef  string
	CaseGeneration         int64
	CaseRequestOperationID string
	Predecessor            *LatePredecessor // nil for generation 1
	ReservedAt             time.Time
}

func (*LateCaseIdentityReservation) Kind() string              { return KindLateCaseIdentityReservation }
func (r *LateCaseIdentityReservation) Quad() *strict.Quadruple { return &r.Reservation }

// ToJSON returns the full JSON form.
func (r *LateCaseIdentityReservation) ToJSON() map[string]any {
	pred := map[string]any{"state": "none"}
	if p := r.Predecessor; p != nil {
		pred = map[string]any{"state": "present", "predecessorReconciliationCaseRef": p.ReconciliationCaseRef,
			"predecessorCaseGeneration": p.CaseGeneration}
		p.Identity.Put(pred, prefixPredecessorLateIdentity)
	}
	d := r.Dimension
	m := map[string]any{
		"sourceKind": SourceKindLateSettlementExposure, "tenantKind": r.Tenant.Kind, "tenantId": r.Tenant.TenantID, "workspaceId": r.Tenant.WorkspaceID,
		"billingAccountId": d.BillingAccountID, "billingReservationId": d.BillingReservationID, "runId": d.RunID,
		"runStepId": d.RunStepID, "executionAttemptId": d.ExecutionAttemptID, "chargeDimensionKey": d.ChargeDimensionKey,
		fieldSettlementDimensionID: d.SettlementDimensionID(), "settlementEconomicIdentity": d.EconomicIdentity.Map(),
		"reconciliationCaseRef": r.ReconciliationCaseRef, fieldCaseGeneration: r.CaseGeneration,
		"caseRequestOperationId": r.CaseRequestOperationID, "predecessorCase": pred, "reservedAt": strict.FormatTimestamp(r.ReservedAt),
	}
	if r.Tenant.ProjectID != "" {
		m["projectId"] = r.Tenant.ProjectID
	}
	r.Reservation.Put(m, PrefixLateCaseIdentity)
	return m
}

// DecodeLateCaseIdentityReservation strictly decodes a reservation, checks
// its rules and verifies its digest.
func DecodeLateCaseIdentityReservation(doc []byte) (*LateCaseIdentityReservation, error) {
	m, err := decodeMap(KindLateCaseIdentityReservation, doc)
	if err != nil {
		return nil, err
	}
	e := obj(m, "settlementEconomicIdentity")
	r := &LateCaseIdentityReservation{
		Reservation: quad(m, PrefixLateCaseIdentity),
		Tenant:      billing.Tenant{Kind: str(m, "tenantKind"), TenantID: str(m, "tenantId"), WorkspaceID: str(m, "workspaceId"), ProjectID: str(m, "projectId")},
		Dimension: billing.SettlementDimension{BillingReservationID: str(m, "billingReservationId"), BillingAccountID: str(m, "billingAccountId"),
			RunID: str(m, "runId"), RunStepID: str(m, "runStepId"), ExecutionAttemptID: str(m, "executionAttemptId"),
			ChargeDimensionKey: str(m, "chargeDimensionKey"),
			EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: str(e, "kind"), EntitlementKey: str(e, "entitlementKey"),
				Unit: str(e, "unit"), Currency: str(e, "currency")}},
		ReconciliationCaseRef: str(m, "reconciliationCaseRef"), CaseGeneration: i64(m, fieldCaseGeneration),
		CaseRequestOperationID: str(m, "caseRequestOperationId"), ReservedAt: tm(m, "reservedAt"),
	}
	if p := obj(m, "predecessorCase"); str(p, "state") == "present" {
		r.Predecessor = &LatePredecessor{ReconciliationCaseRef: str(p, "predecessorReconciliationCaseRef"),
			CaseGeneration: i64(p, "predecessorCaseGeneration"), Identity: quad(p, prefixPredecessorLateIdentity)}
	}
	return r, nil
}

// LatePredecessorDef is the direct predecessor late settlement case identity
// (none for generation 1).
var LatePredecessorDef = &schema.Def{Name: "LateSettlementCasePredecessorV1",
	Doc: "The direct predecessor late settlement case identity of the same dimension (none for generation 1).",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: "none"},
		{Value: "present", Fields: schema.Fields(
			schema.F("predecessorReconciliationCaseRef", schema.RefText, ""),
			schema.F("predecessorCaseGeneration", schema.Int{Min: 1}, ""),
			schema.Quad(prefixPredecessorLateIdentity, "LateSettlementCaseIdentityReservation@1 of the predecessor"),
		)},
	}}}

// LateCaseIdentityReservationDef describes LateSettlementCaseIdentityReservation@1.
var LateCaseIdentityReservationDef = &schema.Def{Name: "LateSettlementCaseIdentityReservationV1",
	Doc: "LateSettlementCaseIdentityReservation@1: the stable, content-addressed identity Operations reserves for one settlement dimension's late settlement case generation; it names no exposure, so every exposure of an open generation joins the same case.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixLateCaseIdentity, "assigned by Operations; excluded from the digest candidate"),
		schema.F("sourceKind", schema.Literal{Value: SourceKindLateSettlementExposure}, "late settlement exposure cases only"),
		schema.F("tenantKind", schema.Enum{Values: []string{envelope.TenantOrganization, envelope.TenantPersonal}}, ""),
		ids("tenantId", "workspaceId"),
		schema.Opt("projectId", uuid, ""),
		ids("billingAccountId", "billingReservationId", "runId", "runStepId", "executionAttemptId"),
		schema.F("chargeDimensionKey", schema.KeyText, "registered charge dimension key"),
		schema.F(fieldSettlementDimensionID, uuid, "derivation settlement_dimension@1 over reservation/run/step/attempt/dimension"),
		schema.F("settlementEconomicIdentity", schema.Ref{Def: envelope.EconomicIdentityDef}, ""),
		schema.F("reconciliationCaseRef", schema.RefText, "LateSettlementCaseRef(dimension, generation)"),
		schema.F(fieldCaseGeneration, schema.Int{Min: 1}, ""),
		schema.F("caseRequestOperationId", uuid, "LateSettlementCaseRequestOperationID(dimension, generation)"),
		schema.F("predecessorCase", schema.Ref{Def: LatePredecessorDef}, "none exactly for generation 1"),
		schema.F("reservedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// lateIdentityRules: the dimension id, the case ref and the case request
// operation derive; generation 1 has no predecessor, generation N names
// generation N − 1 of the same dimension.
func lateIdentityRules(m map[string]any) error {
	dim, gen := str(m, fieldSettlementDimensionID), i64(m, fieldCaseGeneration)
	if want := envelope.SettlementDimensionID(str(m, "billingReservationId"), str(m, "runId"), str(m, "runStepId"),
		str(m, "executionAttemptId"), str(m, "chargeDimensionKey")); dim != want {
		return fmt.Errorf("%w: settlementDimensionId %s (want %s)", ErrDerivedID, dim, want)
	}
	if want := LateSettlementCaseRef(dim, gen); str(m, "reconciliationCaseRef") != want {
		return fmt.Errorf("%w: reconciliationCaseRef %s (want %s)", ErrDerivedID, str(m, "reconciliationCaseRef"), want)
	}
	if want := LateSettlementCaseRequestOperationID(dim, gen); str(m, "caseRequestOperationId") != want {
		return fmt.Errorf("%w: caseRequestOperationId %s (want %s)", ErrDerivedID, str(m, "caseRequestOperationId"), want)
	}
	p := obj(m, "predecessorCase")
	switch present := str(p, "state") == "present"; {
	case gen == 1 && present:
		return fmt.Errorf("%w: generation 1 has no predecessor", ErrGenerationRule)
	case gen > 1 && !present:
		return fmt.Errorf("%w: generation %d names its direct predecessor", ErrGenerationRule, gen)
	case gen > 1 && i64(p, "predecessorCaseGeneration") != gen-1:
		return fmt.Errorf("%w: predecessor generation %d is not %d − 1", ErrGenerationRule, i64(p, "predecessorCaseGeneration"), gen)
	case gen > 1 && str(p, "predecessorReconciliationCaseRef") != LateSettlementCaseRef(dim, gen-1):
		return fmt.Errorf("%w: predecessorReconciliationCaseRef (want %s)", ErrDerivedID, LateSettlementCaseRef(dim, gen-1))
	}
	return nil
}
