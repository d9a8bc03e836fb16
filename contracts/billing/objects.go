package billing

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
)

// Tenant is the tenant of the Run.
type Tenant struct {
	Kind        string
	TenantID    string
	WorkspaceID string
	ProjectID   string // optional
}

func (t Tenant) put(m map[string]any) {
	m["tenantKind"], m["tenantId"], m["workspaceId"] = t.Kind, t.TenantID, t.WorkspaceID
	if t.ProjectID != "" {
		m["projectId"] = t.ProjectID
	}
}

func readTenant(m map[string]any) Tenant {
	return Tenant{Kind: str(m, "tenantKind"), TenantID: str(m, "tenantId"), WorkspaceID: str(m, "workspaceId"), ProjectID: str(m, "projectId")}
}

// EconomicIdentity is SettlementEconomicIdentity@1: credits |
// entitlement{entitlementKey,unit} | money{currency}.
type EconomicIdentity struct {
	Kind           string
	EntitlementKey string
	Unit           string
	Currency       string
}

// Credits is the economic identity of every reservation today.
var Credits = EconomicIdentity{Kind: "credits"}

func (e EconomicIdentity) toJSON() map[string]any {
	m := map[string]any{"kind": e.Kind}
	switch e.Kind {
	case "entitlement":
		m["entitlementKey"], m["unit"] = e.EntitlementKey, e.Unit
	case "money":
		m["currency"] = e.Currency
	}
	return m
}

func readEconomic(m map[string]any) EconomicIdentity {
	return EconomicIdentity{Kind: str(m, "kind"), EntitlementKey: str(m, "entitlementKey"), Unit: str(m, "unit"), Currency: str(m, "currency")}
}

// Availability identifies one attempt-bound Gateway availability snapshot.
type Availability struct {
	GatewayDeploymentID  string
	ProviderEvidenceKind string
	EvidenceDimensionKey string
	StateVersion         int64
	Snapshot             strict.Quadruple
}

func (a Availability) put(m map[string]any) {
	m["gatewayDeploymentId"], m["providerEvidenceKind"], m["evidenceDimensionKey"] = a.GatewayDeploymentID, a.ProviderEvidenceKind, a.EvidenceDimensionKey
	m["availabilityStateVersion"] = a.StateVersion
	a.Snapshot.Put(m, PrefixAvailability)
}

func readAvailability(m map[string]any) Availability {
	return Availability{GatewayDeploymentID: str(m, "gatewayDeploymentId"), ProviderEvidenceKind: str(m, "providerEvidenceKind"),
		EvidenceDimensionKey: str(m, "evidenceDimensionKey"), StateVersion: i64(m, "availabilityStateVersion"), Snapshot: quad(m, PrefixAvailability)}
}

// ManifestDimension is one Attempt × Charge Dimension of the manifest.
type ManifestDimension struct {
	RunStepID             string
	ExecutionAttemptID    string
	ChargeDimensionKey    string
	SettlementDimensionID string
	DispatchDisposition   string
	SettlementInput       strict.Quadruple
	SettlementStateVer    int64
	EconomicIdentity      EconomicIdentity
	InputState            string
	TargetAmount          string
	// Availability is nil for a not-dispatched dimension.
	Availability *Availability
}

// Key is the dimension's sort key.
func (d ManifestDimension) Key() [3]string {
	return [3]string{d.RunStepID, d.ExecutionAttemptID, d.ChargeDimensionKey}
}

func (d ManifestDimension) toJSON() map[string]any {
	av := map[string]any{"state": "none"}
	if d.Availability != nil {
		av["state"] = "present"
		d.Availability.put(av)
	}
	out := map[string]any{
		"runStepId": d.RunStepID, "executionAttemptId": d.ExecutionAttemptID, "chargeDimensionKey": d.ChargeDimensionKey,
		"settlementDimensionId": d.SettlementDimensionID, "dispatchDisposition": d.DispatchDisposition,
		"settlementInputStateVersion": d.SettlementStateVer, "settlementEconomicIdentity": d.EconomicIdentity.toJSON(),
		"inputState": d.InputState, "targetAmount": d.TargetAmount, "gatewayAvailability": av,
	}
	d.SettlementInput.Put(out, PrefixSettlementInput)
	return out
}

func readDimension(m map[string]any) ManifestDimension {
	d := ManifestDimension{
		RunStepID: str(m, "runStepId"), ExecutionAttemptID: str(m, "executionAttemptId"), ChargeDimensionKey: str(m, "chargeDimensionKey"),
		SettlementDimensionID: str(m, "settlementDimensionId"), DispatchDisposition: str(m, "dispatchDisposition"),
		SettlementInput: quad(m, PrefixSettlementInput), SettlementStateVer: i64(m, "settlementInputStateVersion"),
		EconomicIdentity: readEconomic(obj(m, "settlementEconomicIdentity")), InputState: str(m, "inputState"), TargetAmount: str(m, "targetAmount"),
	}
	if av := obj(m, "gatewayAvailability"); str(av, "state") == "present" {
		a := readAvailability(av)
		d.Availability = &a
	}
	return d
}

// FinalizationInputManifest is FinalizationInputManifest@1 — our definition
// of ADR-031's closed input manifest: the Execution closure the coordinator
// applied and, for every attempt of its set, every registered charge
// dimension with the current settlement input snapshot the coordinator
// recorded, its economic identity, state and target net amount, and the
// attempt-bound Gateway availability it is based on (none when the attempt
// was never dispatched).
//
//	finalizationInputManifestRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	tenant, billingAccountId, billingReservationId, runId, billingFinalizationFenceId,
//	billingFinalizationOperationId (derivation billing_finalization_operation@1)
//	runAdmissionManifest quadruple, reservationEconomicIdentity {credits}, reservedAmount
//	closureOperationId, runExecutionFinalization quadruple + state version, attemptSetManifest quadruple, attemptCount
//	dimensionCount, dimensions[] sorted by (runStepId, executionAttemptId, chargeDimensionKey)
//	targetTotal = Σ targetAmount (exact)
//	createdAt                                    excluded from the digest candidate
type FinalizationInputManifest struct {
	Manifest                strict.Quadruple
	Tenant                  Tenant
	BillingAccountID        string
	BillingReservationID    string
	RunID                   string
	FenceID                 string
	FinalizationOperationID string
	RunAdmissionManifest    strict.Quadruple
	ReservedAmount          string
	ClosureOperationID      string
	Finalization            strict.Quadruple
	FinalizationStateVer    int64
	AttemptSet              strict.Quadruple
	AttemptCount            int64
	Dimensions              []ManifestDimension
	TargetTotal             string
	CreatedAt               time.Time
}

func (*FinalizationInputManifest) Kind() string              { return KindFinalizationInputManifest }
func (m *FinalizationInputManifest) Quad() *strict.Quadruple { return &m.Manifest }

// ToJSON returns the full JSON form.
func (m *FinalizationInputManifest) ToJSON() map[string]any {
	dims := make([]any, 0, len(m.Dimensions))
	for _, d := range m.Dimensions {
		dims = append(dims, d.toJSON())
	}
	out := map[string]any{
		"billingAccountId": m.BillingAccountID, "billingReservationId": m.BillingReservationID, "runId": m.RunID,
		"billingFinalizationFenceId": m.FenceID, "billingFinalizationOperationId": m.FinalizationOperationID,
		"reservationEconomicIdentity": Credits.toJSON(), "reservedAmount": m.ReservedAmount,
		"closureOperationId": m.ClosureOperationID, "runExecutionFinalizationStateVersion": m.FinalizationStateVer,
		"attemptCount": m.AttemptCount, "dimensionCount": int64(len(m.Dimensions)), "dimensions": dims,
		"targetTotal": m.TargetTotal, "createdAt": strict.FormatTimestamp(m.CreatedAt),
	}
	m.Tenant.put(out)
	m.RunAdmissionManifest.Put(out, PrefixRunAdmission)
	m.Finalization.Put(out, PrefixRunFinalization)
	m.AttemptSet.Put(out, PrefixAttemptSet)
	m.Manifest.Put(out, PrefixInputManifest)
	return out
}

// DecodeFinalizationInputManifest strictly decodes a manifest, checks its
// rules and verifies its digest.
func DecodeFinalizationInputManifest(doc []byte) (*FinalizationInputManifest, error) {
	m, err := decodeMap(KindFinalizationInputManifest, doc)
	if err != nil {
		return nil, err
	}
	out := &FinalizationInputManifest{
		Manifest: quad(m, PrefixInputManifest), Tenant: readTenant(m), BillingAccountID: str(m, "billingAccountId"),
		BillingReservationID: str(m, "billingReservationId"), RunID: str(m, "runId"), FenceID: str(m, "billingFinalizationFenceId"),
		FinalizationOperationID: str(m, "billingFinalizationOperationId"), RunAdmissionManifest: quad(m, PrefixRunAdmission),
		ReservedAmount: str(m, "reservedAmount"), ClosureOperationID: str(m, "closureOperationId"),
		Finalization: quad(m, PrefixRunFinalization), FinalizationStateVer: i64(m, "runExecutionFinalizationStateVersion"),
		AttemptSet: quad(m, PrefixAttemptSet), AttemptCount: i64(m, "attemptCount"), TargetTotal: str(m, "targetTotal"),
		Dimensions: []ManifestDimension{},
	}
	for _, d := range list(m, "dimensions") {
		out.Dimensions = append(out.Dimensions, readDimension(d))
	}
	out.CreatedAt, _ = strict.ParseTimestamp(str(m, "createdAt"))
	return out, nil
}

// manifestRules: dimensions strictly sorted (no duplicate), counted, each
// settlement dimension id derived, availability exactly for dispatched
// dimensions, targetTotal = Σ targetAmount.
func manifestRules(m map[string]any) error {
	dims := list(m, "dimensions")
	if i64(m, "dimensionCount") != int64(len(dims)) {
		return fmt.Errorf("%w: dimensionCount %d, %d dimensions", ErrManifestRule, i64(m, "dimensionCount"), len(dims))
	}
	var targets []string
	for i, x := range dims {
		d := readDimension(x)
		if i > 0 && !less(readDimension(dims[i-1]).Key(), d.Key()) {
			return fmt.Errorf("%w: dimensions[%d] is not after dimensions[%d]", ErrManifestRule, i, i-1)
		}
		if want := envelope.SettlementDimensionID(str(m, "billingReservationId"), str(m, "runId"), d.RunStepID, d.ExecutionAttemptID, d.ChargeDimensionKey); d.SettlementDimensionID != want {
			return fmt.Errorf("%w: dimensions[%d].settlementDimensionId does not derive (want %s)", ErrManifestRule, i, want)
		}
		if (d.DispatchDisposition == DispositionDispatched) != (d.Availability != nil) {
			return fmt.Errorf("%w: dimensions[%d]: a gateway availability belongs to exactly the dispatched dimensions", ErrManifestRule, i)
		}
		targets = append(targets, d.TargetAmount)
	}
	total, err := SumAmounts(targets...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrManifestRule, err)
	}
	if total != str(m, "targetTotal") {
		return fmt.Errorf("%w: targetTotal %s, Σ targetAmount %s", ErrManifestRule, str(m, "targetTotal"), total)
	}
	return nil
}

func less(a, b [3]string) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
