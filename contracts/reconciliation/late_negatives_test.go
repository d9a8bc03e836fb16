package reconciliation_test

import (
	"github.com/oceanway/core/contracts/digest"
	rc "github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
)

const (
	lc1 = "credits_generation_1"
	lm2 = "money_generation_2"
)

// lateChainNegatives: the late settlement command chain's rejects (BI-2,
// OP-1, CT-2, CT-3), each with its named reason.
func lateChainNegatives() []negative {
	R, P, A, J := rc.KindLateCommandRequest, rc.KindLateImpactPreview, rc.KindLateApproval, rc.KindLateJitActivation
	C, D, G, F := rc.KindLateCandidate, rc.KindLateDecision, rc.KindLateGrantClaims, rc.KindFundingDecision
	X, Y := rc.KindLateResult, rc.KindCaseResolutionApplied
	dimID := lateFirst.dimension().SettlementDimensionID()
	// otherGeneration rebinds an object to generation 2 of the same
	// dimension with a correctly derived case ref: only the identity
	// reservation (and the chain) can tell; the decoder still refuses a
	// generation whose case ref was not re-derived.
	otherGenerationUnderived := set("caseGeneration", int64(2))
	money := map[string]any{"kind": "money", "currency": "EUR"}
	return []negative{
		{R, "amount", "OP-1", lc1, set("amount", "12.5"), strict.ErrUnknownField},
		{R, "exposure_amount", "OP-1", lc1, set("exposureAmount", "12.5"), strict.ErrUnknownField},
		{R, "ledger_account", "OP-1", lc1, set("ledgerAccountId", otherUUID), strict.ErrUnknownField},
		{R, "successor_funding_decision", "OP-1", lc1, set("fundingDecisionJti", otherUUID), strict.ErrUnknownField},
		{R, "successor_operation", "OP-1", lc1, set("lateSettlementCommandOperationId", otherUUID), strict.ErrUnknownField},
		{R, "finalization_action", "OP-1", lc1, set("action", rc.ActionReevaluateCurrentOwnerState), strict.ErrUnexpectedLiteral},
		{R, "expected_revision_2", "OP-1", lc1, set("expectedResolutionRevision", int64(2)), strict.ErrOutOfRange},
		{R, "case_ref_not_derived", "BI-2", lc1, set("reconciliationCaseRef", "lcase-chosen-by-hand"), rc.ErrDerivedID},
		{R, "case_ref_of_other_generation", "BI-2", lm2, set("reconciliationCaseRef", rc.LateSettlementCaseRef(lateSecond.dimension().SettlementDimensionID(), 1)), rc.ErrDerivedID},
		{R, "exposure_id_not_derived", "BI-2", lc1, set("lateSettlementExposureId", otherUUID), rc.ErrDerivedID},
		{R, "exposure_of_other_revision", "BI-2", lc1, set("exposureSettlementStateRevision", int64(4)), rc.ErrDerivedID},
		{R, "dimension_not_derived", "BI-2", lc1, set("runStepId", otherUUID), rc.ErrDerivedID},
		{R, "evidence_unsorted", "OP-1", lc1, swapEvidence, rc.ErrEvidenceSet},
		{R, "finalization_case_identity", "OP-1", lc1, set("finalizationCaseIdentityReservationRef", "fcir-1"), strict.ErrUnknownField},
		{R, "economic_identity_mixed_union", "CT-2", lm2, func(m map[string]any) {
			m["settlementEconomicIdentity"] = map[string]any{"kind": "credits", "currency": "EUR"}
		}, strict.ErrMixedUnion},
		{R, "justification_changed_same_digest", "CT-3", lc1, set("justification", "another reason"), digest.ErrMismatch},

		{P, "effect_amount", "OP-1", lc1, func(m map[string]any) { m["effects"].(map[string]any)["amount"] = "12.5" }, strict.ErrUnknownField},
		{P, "reservation_effect", "OP-1", lc1, func(m map[string]any) { m["effects"].(map[string]any)["reservation"] = "reopen" }, strict.ErrUnexpectedLiteral},
		{P, "ledger_effect_other", "OP-1", lc1, func(m map[string]any) { m["effects"].(map[string]any)["ledger"] = "none" }, strict.ErrUnexpectedLiteral},
		{P, "other_statement", "OP-1", lc1, set("statement", rc.ImpactStatement), strict.ErrUnexpectedLiteral},
		{P, "finalization_audience", "OP-1", lc1, set("commandAudience", rc.AudienceResolutionCommand), strict.ErrUnexpectedLiteral},

		{A, "self_approval", "OP-1", lc1, func(m map[string]any) { m["approverWorkforcePrincipalId"] = m["requesterWorkforcePrincipalId"] }, rc.ErrSelfApproval},
		{A, "finalization_request", "OP-1", lc1, set("finalizationReconciliationResolutionCommandRequestRef", "frcr-1"), strict.ErrUnknownField},

		{J, "window_over_an_hour", "OP-1", lc1, set("expiresAt", "2026-03-02T10:04:00.250001Z"), rc.ErrJitWindow},
		{J, "finalization_role", "OP-1", lc1, set("role", rc.RoleReconciliationOperator), strict.ErrUnexpectedLiteral},

		{C, "finalization_audience", "OP-1", lc1, set("commandAudience", rc.AudienceResolutionCommand), strict.ErrUnexpectedLiteral},
		{C, "amount", "OP-1", lc1, set("adjustmentAmount", "12.5"), strict.ErrUnknownField},
		{C, "without_exposure", "BI-2", lc1, func(m map[string]any) { delete(m, "lateSettlementExposureDigest") }, strict.ErrMissingField},
		{C, "generation_case_ref_not_rederived", "BI-2", lc1, otherGenerationUnderived, rc.ErrDerivedID},

		{D, "successor_operation", "OP-1", lc1, set("lateSettlementCommandOperationId", otherUUID), strict.ErrUnknownField},
		{D, "amount", "OP-1", lc1, set("fundingAmount", "12.5"), strict.ErrUnknownField},
		{D, "evidence_duplicated", "OP-1", lm2, func(m map[string]any) {
			e := m["investigationEvidenceReferences"].([]any)
			m["investigationEvidenceReferences"] = append(e, e[0])
		}, rc.ErrEvidenceSet},

		{G, "finalization_audience", "OP-1", lc1, set("aud", rc.AudienceResolutionCommand), strict.ErrUnexpectedLiteral},
		{G, "amount", "OP-1", lc1, set("amount", "12.5"), strict.ErrUnknownField},
		{G, "lifetime_too_long", "OP-1", lc1, func(m map[string]any) { m["exp"] = m["nbf"].(int64) + 3600 }, rc.ErrGrantLifetime},
		{G, "command_operation_not_derived", "OP-1", lc1, set("lateSettlementCommandOperationId", otherUUID), rc.ErrDerivedID},
		{G, "finalization_resolution_operation", "OP-1", lc1, set("resolutionOperationId", otherUUID), strict.ErrUnknownField},

		{F, "validity_over_15_minutes", "BI-2", lc1, set("validUntil", "2026-03-02T09:22:00.000001Z"), rc.ErrFundingValidity},
		{F, "validity_empty", "BI-2", lc1, func(m map[string]any) { m["validUntil"] = m["validFrom"] }, rc.ErrFundingValidity},
		{F, "validity_changed_same_digest", "CT-3", lc1, set("validUntil", "2026-03-02T09:16:00.000000Z"), digest.ErrMismatch},
		{F, "economic_identity_mismatch", "BI-2", lc1, set("fundingEconomicIdentity", money), rc.ErrEconomicIdentity},
		{F, "entitlement_without_unit", "CT-2", lm2, set("fundingEconomicIdentity", map[string]any{"kind": "entitlement", "entitlementKey": "gpu"}), strict.ErrMissingField},
		{F, "other_generation", "BI-2", lc1, otherGenerationUnderived, rc.ErrDerivedID},
		{F, "case_ref_of_other_generation", "BI-2", lc1, set("reconciliationCaseRef", rc.LateSettlementCaseRef(dimID, 2)), rc.ErrDerivedID},
		{F, "zero_amount", "BI-2", lc1, set("fundingAmount", "0"), rc.ErrNonPositiveAmount},
		{F, "negative_amount", "CT-2", lc1, set("fundingAmount", "-12.5"), strict.ErrInvalidValue},
		{F, "account_source_revision_zero", "BI-2", lc1, set("billingAccountSourceRevision", int64(0)), strict.ErrOutOfRange},
		{F, "jti_not_uuid", "CT-2", lc1, set("fundingDecisionJti", "jti-1"), strict.ErrInvalidUUID},

		{X, "jti_reuse", "BI-2", lc1, func(m map[string]any) { m["fundingDecisionJti"] = m["grantJti"] }, rc.ErrJTIReuse},
		{X, "references_applied_fact", "BI-2", lc1, set("billingCaseResolutionAppliedRef", "bcra-1"), strict.ErrUnknownField},
		{X, "to_not_from_plus_one", "BI-2", lc1, set("toSettlementStateRevision", int64(5)), rc.ErrLateResultRule},
		{X, "from_before_exposure", "BI-2", lm2, func(m map[string]any) {
			m["fromSettlementStateRevision"], m["toSettlementStateRevision"] = int64(4), int64(5)
		}, rc.ErrLateResultRule},
		{X, "settled_after_not_before_plus_adjustment", "BI-2", lc1, set("settledAmountAfter", "52.4"), rc.ErrLateResultRule},
		{X, "ledger_economic_identity_mismatch", "BI-2", lc1, set("ledgerEconomicIdentity", money), rc.ErrEconomicIdentity},
		{X, "exposure_state_after_open", "BI-2", lc1, set("exposureStateAfter", "open"), strict.ErrUnexpectedLiteral},
		{X, "other_ledger_entry", "BI-2", lc1, set("ledgerEntryKind", "charge"), strict.ErrUnexpectedLiteral},
		{X, "command_operation_not_derived", "OP-1", lc1, set("lateSettlementCommandOperationId", otherUUID), rc.ErrDerivedID},

		{Y, "resolution_operation_not_derived", "BI-2", lc1, set("resolutionOperationId", otherUUID), rc.ErrDerivedID},
		{Y, "mixed_resolution_source", "CT-2", lc1, func(m map[string]any) {
			m["resolution"].(map[string]any)["toSettlementStateRevision"] = int64(4)
		}, strict.ErrMixedUnion},
		{Y, "unknown_resolution_source", "CT-2", lc1, func(m map[string]any) {
			m["resolution"].(map[string]any)["resolutionSource"] = "operator_override"
		}, strict.ErrUnknownEnum},
		{Y, "transition_not_after_exposure", "BI-2", "settlement_transition", func(m map[string]any) {
			m["resolution"].(map[string]any)["toSettlementStateRevision"] = int64(3)
		}, rc.ErrLateResultRule},
		{Y, "amount", "OP-1", lc1, set("adjustmentAmount", "12.5"), strict.ErrUnknownField},
	}
}
