package reconciliation

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

const prefixPredecessorIdentity = "predecessorFinalizationCaseIdentityReservation"

// Predecessor is the direct predecessor generation's case identity
// (envelope.FinalizationCasePredecessorDef, as in the case-requested event).
type Predecessor struct {
	ReconciliationCaseRef    string
	ReconciliationGeneration int64
	Identity                 strict.Quadruple
}

// CaseIdentityReservation is FinalizationReconciliationCaseIdentityReservation@1,
// Operations-owned: the stable case identity Billing reserves before its
// first reconciliation_required decision of a generation. It freezes only
// what cannot change while Work generations race (tenant, account,
// reservation, run, fence, generation, case request operation, predecessor)
// and deliberately no Triggering Work and no billingFinalizationOperationId:
// a generation superseded after reserving must leave the winner the same
// identity, not a conflicting second one.
//
//	finalizationCaseIdentityReservationRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	sourceKind = billing_finalization
//	tenantKind, tenantId, workspaceId, projectId?
//	billingAccountId, billingReservationId, runId, billingFinalizationFenceId
//	reconciliationCaseRef        = ReconciliationCaseRef(fence, generation)
//	reconciliationGeneration ≥ 1
//	caseRequestOperationId       = CaseRequestOperationID(fence, generation)
//	predecessorCase = {state=none} (generation 1) | {state=present; generation − 1, its case ref and identity}
//	reservedAt                   excluded from the digest candidate
type CaseIdentityReservation struct {
	Reservation              strict.Quadruple
	Tenant                   billing.Tenant
	BillingAccountID         string
	BillingReservationID     string
	RunID                    string
	FenceID                  string
	ReconciliationCaseRef    string
	ReconciliationGeneration int64
	CaseRequestOperationID   string
	Predecessor              *Predecessor // nil for generation 1
	ReservedAt               time.Time
}

func (*CaseIdentityReservation) Kind() string              { return KindCaseIdentityReservation }
func (r *CaseIdentityReservation) Quad() *strict.Quadruple { return &r.Reservation }

// Case returns the case identity the command objects of this generation carry.
func (r *CaseIdentityReservation) Case() Case {
	return Case{ReconciliationCaseRef: r.ReconciliationCaseRef, ReconciliationGeneration: r.ReconciliationGeneration,
		Identity: r.Reservation, BillingAccountID: r.BillingAccountID, BillingReservationID: r.BillingReservationID,
		RunID: r.RunID, FenceID: r.FenceID}
}

// ToJSON returns the full JSON form.
func (r *CaseIdentityReservation) ToJSON() map[string]any {
	pred := map[string]any{"state": "none"}
	if p := r.Predecessor; p != nil {
		pred = map[string]any{"state": "present", "predecessorReconciliationCaseRef": p.ReconciliationCaseRef,
			"predecessorReconciliationGeneration": p.ReconciliationGeneration}
		p.Identity.Put(pred, prefixPredecessorIdentity)
	}
	m := map[string]any{
		"sourceKind": SourceKindBillingFinalization, "tenantKind": r.Tenant.Kind, "tenantId": r.Tenant.TenantID, "workspaceId": r.Tenant.WorkspaceID,
		"billingAccountId": r.BillingAccountID, "billingReservationId": r.BillingReservationID, "runId": r.RunID,
		fieldBillingFinalizationFenceID: r.FenceID, "reconciliationCaseRef": r.ReconciliationCaseRef,
		fieldReconciliationGeneration: r.ReconciliationGeneration, "caseRequestOperationId": r.CaseRequestOperationID,
		"predecessorCase": pred, "reservedAt": strict.FormatTimestamp(r.ReservedAt),
	}
	if r.Tenant.ProjectID != "" {
		m["projectId"] = r.Tenant.ProjectID
	}
	r.Reservation.Put(m, PrefixCaseIdentity)
	return m
}

// DecodeCaseIdentityReservation strictly decodes a reservation, checks its
// rules and verifies its digest.
func DecodeCaseIdentityReservation(doc []byte) (*CaseIdentityReservation, error) {
	m, err := decodeMap(KindCaseIdentityReservation, doc)
	if err != nil {
		return nil, err
	}
	r := &CaseIdentityReservation{
		Reservation:      quad(m, PrefixCaseIdentity),
		Tenant:           billing.Tenant{Kind: str(m, "tenantKind"), TenantID: str(m, "tenantId"), WorkspaceID: str(m, "workspaceId"), ProjectID: str(m, "projectId")},
		BillingAccountID: str(m, "billingAccountId"), BillingReservationID: str(m, "billingReservationId"), RunID: str(m, "runId"),
		FenceID: str(m, fieldBillingFinalizationFenceID), ReconciliationCaseRef: str(m, "reconciliationCaseRef"),
		ReconciliationGeneration: i64(m, fieldReconciliationGeneration), CaseRequestOperationID: str(m, "caseRequestOperationId"),
		ReservedAt: tm(m, "reservedAt"),
	}
	if p := obj(m, "predecessorCase"); str(p, "state") == "present" {
		r.Predecessor = &Predecessor{ReconciliationCaseRef: str(p, "predecessorReconciliationCaseRef"),
			ReconciliationGeneration: i64(p, "predecessorReconciliationGeneration"), Identity: quad(p, prefixPredecessorIdentity)}
	}
	return r, nil
}

// CaseIdentityReservationDef describes FinalizationReconciliationCaseIdentityReservation@1.
var CaseIdentityReservationDef = &schema.Def{Name: "FinalizationReconciliationCaseIdentityReservationV1",
	Doc: "FinalizationReconciliationCaseIdentityReservation@1: the stable, content-addressed identity Operations reserves for one Billing finalization reconciliation case generation; no Triggering Work, no finalization operation.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixCaseIdentity, "assigned by Operations; excluded from the digest candidate"),
		schema.F("sourceKind", schema.Literal{Value: SourceKindBillingFinalization}, "Run-level Billing finalization cases only"),
		schema.F("tenantKind", schema.Enum{Values: []string{envelope.TenantOrganization, envelope.TenantPersonal}}, ""),
		ids("tenantId", "workspaceId"),
		schema.Opt("projectId", uuid, ""),
		ids("billingAccountId", "billingReservationId", "runId", fieldBillingFinalizationFenceID),
		schema.F("reconciliationCaseRef", schema.RefText, "ReconciliationCaseRef(fence, generation)"),
		schema.F(fieldReconciliationGeneration, schema.Int{Min: 1}, ""),
		schema.F("caseRequestOperationId", uuid, "CaseRequestOperationID(fence, generation)"),
		schema.F("predecessorCase", schema.Ref{Def: envelope.FinalizationCasePredecessorDef}, "none exactly for generation 1"),
		schema.F("reservedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// identityRules: the case ref and the case request operation derive from
// (fence, generation); generation 1 has no predecessor, generation N names
// generation N − 1 under its derived case ref.
func identityRules(m map[string]any) error {
	fence, gen := str(m, fieldBillingFinalizationFenceID), i64(m, fieldReconciliationGeneration)
	if want := ReconciliationCaseRef(fence, gen); str(m, "reconciliationCaseRef") != want {
		return fmt.Errorf("%w: reconciliationCaseRef %s (want %s)", ErrDerivedID, str(m, "reconciliationCaseRef"), want)
	}
	if want := CaseRequestOperationID(fence, gen); str(m, "caseRequestOperationId") != want {
		return fmt.Errorf("%w: caseRequestOperationId %s (want %s)", ErrDerivedID, str(m, "caseRequestOperationId"), want)
	}
	p := obj(m, "predecessorCase")
	switch present := str(p, "state") == "present"; {
	case gen == 1 && present:
		return fmt.Errorf("%w: generation 1 has no predecessor", ErrGenerationRule)
	case gen > 1 && !present:
		return fmt.Errorf("%w: generation %d names its direct predecessor", ErrGenerationRule, gen)
	case gen > 1 && i64(p, "predecessorReconciliationGeneration") != gen-1:
		return fmt.Errorf("%w: predecessor generation %d is not %d − 1", ErrGenerationRule, i64(p, "predecessorReconciliationGeneration"), gen)
	case gen > 1 && str(p, "predecessorReconciliationCaseRef") != ReconciliationCaseRef(fence, gen-1):
		return fmt.Errorf("%w: predecessorReconciliationCaseRef (want %s)", ErrDerivedID, ReconciliationCaseRef(fence, gen-1))
	}
	return nil
}
