package envelope

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/oceanway/core/contracts/jcs"
)

// Derivation names of the deterministic identifiers the contracts define.
// Each is versioned: changing the inputs of a derivation is a new name.
const (
	DerivationSettlementDimension              = "settlement_dimension@1"
	DerivationGatewayAvailabilityChain         = "gateway_evidence_availability_chain@1"
	DerivationFinalizationCaseRequest          = "billing_finalization_reconciliation_case_request@1"
	DerivationFinalizationResolution           = "billing_finalization_reconciliation_resolution@1"
	DerivationSettlementTransitionValidationOp = "billing_settlement_transition_validation_operation@1"
)

// DeriveID returns the deterministic identifier of a derivation: an RFC 9562
// version-8 UUID built from the first 16 bytes of
// SHA-256(JCS({"derivation": derivation, "fields": fields})) with the version
// and variant bits set. Because the input is canonical JSON, every platform
// derives the same identifier. fields must hold jcs.Marshal-compatible values.
func DeriveID(derivation string, fields map[string]any) string {
	canonical, err := jcs.Marshal(map[string]any{"derivation": derivation, "fields": fields})
	if err != nil {
		// Only programming errors (unsupported Go types, unsafe integers) get here.
		panic("envelope: derive " + derivation + ": " + err.Error())
	}
	sum := sha256.Sum256(canonical)
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = (u[6] & 0x0f) | 0x80 // version 8
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 9562 variant
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// SettlementDimensionID is the Contracts-deterministic Settlement Dimension
// ID of one Attempt × Charge Dimension: the aggregate of
// metering.settlement-input.current-changed@1 and of the Billing settlement
// dimension events.
func SettlementDimensionID(billingReservationID, runID, runStepID, executionAttemptID, chargeDimensionKey string) string {
	return DeriveID(DerivationSettlementDimension, map[string]any{
		"billingReservationId": billingReservationID,
		"runId":                runID,
		"runStepId":            runStepID,
		"executionAttemptId":   executionAttemptID,
		"chargeDimensionKey":   chargeDimensionKey,
	})
}

// GatewayAvailabilityChainID identifies one attempt-bound Gateway
// availability current chain (the aggregate of
// gateway.evidence-availability.current-changed@1).
func GatewayAvailabilityChainID(executionAttemptID, gatewayDeploymentID, providerEvidenceKind, evidenceDimensionKey string) string {
	return DeriveID(DerivationGatewayAvailabilityChain, map[string]any{
		"executionAttemptId":   executionAttemptID,
		"gatewayDeploymentId":  gatewayDeploymentID,
		"providerEvidenceKind": providerEvidenceKind,
		"evidenceDimensionKey": evidenceDimensionKey,
	})
}

// FinalizationCaseRequestAggregateID is the aggregate of
// billing.finalization-reconciliation.case-requested@1: one per Finalization
// Fence and reconciliation generation.
func FinalizationCaseRequestAggregateID(billingFinalizationFenceID string, reconciliationGeneration int64) string {
	return DeriveID(DerivationFinalizationCaseRequest, map[string]any{
		"billingFinalizationFenceId": billingFinalizationFenceID,
		"reconciliationGeneration":   reconciliationGeneration,
	})
}

// FinalizationResolutionAggregateID is the aggregate of
// billing.finalization-reconciliation-resolution.applied@1, derived from the
// Fence ID and the generation as the outbox document requires.
func FinalizationResolutionAggregateID(billingFinalizationFenceID string, reconciliationGeneration int64) string {
	return DeriveID(DerivationFinalizationResolution, map[string]any{
		"billingFinalizationFenceId": billingFinalizationFenceID,
		"reconciliationGeneration":   reconciliationGeneration,
	})
}

// SettlementTransitionValidationOperationID derives the Validation Operation
// of a settlement transition from (logical Operation, Reservation, Run Step,
// Attempt, Dimension, From State Revision, full Basis digest), as the outbox
// document requires; consumers recompute it field by field.
func SettlementTransitionValidationOperationID(logicalOperationID, billingReservationID, runStepID, executionAttemptID, chargeDimensionKey string, fromSettlementStateRevision int64, basisDigestAlgorithmVersion, basisDigest string) string {
	return DeriveID(DerivationSettlementTransitionValidationOp, map[string]any{
		"logicalOperationId":                    logicalOperationID,
		"billingReservationId":                  billingReservationID,
		"runStepId":                             runStepID,
		"executionAttemptId":                    executionAttemptID,
		"chargeDimensionKey":                    chargeDimensionKey,
		"fromSettlementStateRevision":           fromSettlementStateRevision,
		"settlementBasisDigestAlgorithmVersion": basisDigestAlgorithmVersion,
		"settlementBasisDigest":                 basisDigest,
	})
}
