package reconciliation_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	rc "github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
)

const (
	runStep = "0195f4a8-0000-7000-8000-000000000021"
	attempt = "0195f4a8-0000-7000-8000-000000000022"
)

func lateDimension() billing.SettlementDimension {
	return billing.SettlementDimension{BillingReservationID: reservation, BillingAccountID: account, RunID: run, RunStepID: runStep,
		ExecutionAttemptID: attempt, ChargeDimensionKey: "output_tokens",
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}
}

// lateIdentities seals generation 1 of a dimension's late settlement case
// identity and generation 2 naming it.
func lateIdentities(t testing.TB) (first, second *rc.LateCaseIdentityReservation) {
	t.Helper()
	dim := lateDimension()
	id := dim.SettlementDimensionID()
	first = &rc.LateCaseIdentityReservation{Tenant: billing.Tenant{Kind: envelope.TenantOrganization, TenantID: tenantID, WorkspaceID: workspaceID},
		Dimension: dim, ReconciliationCaseRef: rc.LateSettlementCaseRef(id, 1), CaseGeneration: 1,
		CaseRequestOperationID: rc.LateSettlementCaseRequestOperationID(id, 1), ReservedAt: at}
	_, err := rc.SealAddressed(first, "lcir-")
	require.NoError(t, err)
	second = &rc.LateCaseIdentityReservation{Tenant: billing.Tenant{Kind: envelope.TenantOrganization, TenantID: tenantID, WorkspaceID: workspaceID, ProjectID: projectID},
		Dimension: dim, ReconciliationCaseRef: rc.LateSettlementCaseRef(id, 2), CaseGeneration: 2,
		CaseRequestOperationID: rc.LateSettlementCaseRequestOperationID(id, 2),
		Predecessor:            &rc.LatePredecessor{ReconciliationCaseRef: first.ReconciliationCaseRef, CaseGeneration: 1, Identity: first.Reservation},
		ReservedAt:             at}
	_, err = rc.SealAddressed(second, "lcir-")
	require.NoError(t, err)
	return first, second
}

func lateNegatives() []negative {
	L := rc.KindLateCaseIdentityReservation
	pred := func(m map[string]any) map[string]any { return m["predecessorCase"].(map[string]any) }
	return []negative{
		{L, "binds_exposure", "BI-2", g1, set("lateSettlementExposureId", otherUUID), strict.ErrUnknownField},
		{L, "other_source_kind", "BI-2", g1, set("sourceKind", "billing_finalization"), strict.ErrUnexpectedLiteral},
		{L, "generation_zero", "BI-2", g1, set("caseGeneration", int64(0)), strict.ErrOutOfRange},
		{L, "dimension_not_derived", "BI-2", g1, set("chargeDimensionKey", "input_tokens"), rc.ErrDerivedID},
		{L, "case_ref_of_other_generation", "BI-2", g2, set("reconciliationCaseRef", rc.LateSettlementCaseRef(lateDimension().SettlementDimensionID(), 1)), rc.ErrDerivedID},
		{L, "case_request_operation_not_derived", "BI-2", g1, set("caseRequestOperationId", otherUUID), rc.ErrDerivedID},
		{L, "generation_1_with_predecessor", "BI-2", g2, func(m map[string]any) {
			m["caseGeneration"] = int64(1)
			m["reconciliationCaseRef"] = rc.LateSettlementCaseRef(lateDimension().SettlementDimensionID(), 1)
			m["caseRequestOperationId"] = rc.LateSettlementCaseRequestOperationID(lateDimension().SettlementDimensionID(), 1)
		}, rc.ErrGenerationRule},
		{L, "generation_2_without_predecessor", "BI-2", g2, set("predecessorCase", map[string]any{"state": "none"}), rc.ErrGenerationRule},
		{L, "predecessor_skips_a_generation", "BI-2", g2, func(m map[string]any) { pred(m)["predecessorCaseGeneration"] = int64(3) }, rc.ErrGenerationRule},
		{L, "amount", "OP-1", g1, set("exposureAmount", "1"), strict.ErrUnknownField},
	}
}
