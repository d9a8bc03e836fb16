// Package sample builds deterministic, valid sample envelopes for every
// registered event pair. The golden vectors of package envelope are made
// from these samples, and other packages' tests (outbox append, consumers,
// receipts) may use them to get a well-formed event without restating the
// payload contracts. It is a production package, not a test helper:
// `oceanway bench` appends these samples.
package sample

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/envelope"
)

// ID returns a deterministic lowercase UUID for sample number n.
func ID(n int) string { return fmt.Sprintf("00000000-0000-7000-8000-%012d", n) }

// Hex returns a deterministic digest value (SHA-256 of label, lowercase hex).
func Hex(label string) string {
	sum := sha256.Sum256([]byte(label))
	return hex.EncodeToString(sum[:])
}

// OccurredAt is the occurredAt of every sample.
var OccurredAt = time.Date(2026, 9, 4, 10, 0, 0, 123456000, time.UTC)

// Sample identities shared by the samples.
var (
	TenantID        = ID(1)
	WorkspaceID     = ID(2)
	ProjectID       = ID(3)
	CorrelationID   = ID(4)
	RunID           = ID(10)
	AccountID       = ID(11)
	ReservationID   = ID(12)
	RunStepID       = ID(13)
	AttemptID       = ID(14)
	FenceID         = ID(15)
	ExposureID      = ID(16)
	ChargeDimension = "text.output_tokens"
	Deployment      = "text-gateway-eu-1"
	Principal       = "workforce:alice@example.org"
)

func quad(m map[string]any, prefix string) {
	m[prefix+"Ref"] = prefix + "-ref-1"
	m[prefix+"SchemaVersion"] = "1"
	m[prefix+"DigestAlgorithmVersion"] = "jcs-sha256-v1"
	m[prefix+"Digest"] = Hex(prefix)
}

func credits() map[string]any { return map[string]any{"kind": "credits"} }

func dimension(m map[string]any) {
	m["billingReservationId"] = ReservationID
	m["billingAccountId"] = AccountID
	m["runId"] = RunID
	m["runStepId"] = RunStepID
	m["executionAttemptId"] = AttemptID
	m["chargeDimensionKey"] = ChargeDimension
	m["settlementDimensionId"] = envelope.SettlementDimensionID(ReservationID, RunID, RunStepID, AttemptID, ChargeDimension)
	m["settlementEconomicIdentity"] = credits()
}

// Payload returns a valid sample payload of the pair.
func Payload(eventType string) map[string]any {
	p := map[string]any{}
	switch eventType {
	case envelope.RunCreatedV2:
		p["runId"], p["billingAccountId"], p["billingReservationId"] = RunID, AccountID, ReservationID
		quad(p, "runAdmissionManifest")
	case envelope.WalletReservedV2:
		p["billingReservationId"], p["billingAccountId"], p["runId"] = ReservationID, AccountID, RunID
		quad(p, "runAdmissionManifest")
		p["reservationEconomicIdentity"] = credits()
		p["reservedAmount"] = "1500"
	case envelope.BillingFinalizationCommittedV1:
		p["billingReservationId"], p["billingAccountId"], p["runId"] = ReservationID, AccountID, RunID
		p["billingFinalizationFenceId"], p["billingFinalizationOperationId"] = FenceID, ID(20)
		p["finalizationFenceRevision"] = int64(3)
		quad(p, "billingFinalizationCommitted")
		p["billingFinalizationDecision"] = "settle_and_release_remainder"
		p["reservationEconomicIdentity"] = credits()
		p["settledAmount"], p["releasedAmount"] = "1234.5", "265.5"
	case envelope.BillingSettlementTransitionCommittedV1:
		dimension(p)
		quad(p, "billingSettlementTransition")
		p["transitionKind"] = "adjustment"
		p["transitionAmount"] = "12"
		p["fromSettlementStateRevision"], p["toSettlementStateRevision"] = int64(1), int64(2)
		p["logicalOperationId"] = ID(21)
		p["settlementBasisDigestAlgorithmVersion"], p["settlementBasisDigest"] = "jcs-sha256-v1", Hex("basis")
		p["validationOperationId"] = envelope.SettlementTransitionValidationOperationID(ID(21), ReservationID, RunStepID, AttemptID, ChargeDimension, 1, "jcs-sha256-v1", Hex("basis"))
	case envelope.BillingLateExposureCaseRequestedV1:
		dimension(p)
		p["lateSettlementExposureId"] = ExposureID
		quad(p, "lateSettlementExposure")
		p["reconciliationCaseRef"] = "case-ref-1"
		p["caseGeneration"] = int64(1)
		quad(p, "lateSettlementCaseIdentityReservation")
		p["caseRequestOperationId"] = ID(22)
		p["exposureAmount"] = "7.25"
	case envelope.BillingCaseResolutionAppliedV1:
		dimension(p)
		p["lateSettlementExposureId"] = ExposureID
		p["reconciliationCaseRef"] = "case-ref-1"
		p["caseGeneration"] = int64(1)
		quad(p, "lateSettlementCaseIdentityReservation")
		quad(p, "billingCaseResolutionApplied")
		p["resolutionSource"] = "late_settlement_command"
		p["resolutionOperationId"] = ID(23)
	case envelope.BillingLateCommandResultCommittedV1:
		dimension(p)
		p["lateSettlementExposureId"] = ExposureID
		p["reconciliationCaseRef"] = "case-ref-1"
		p["caseGeneration"] = int64(1)
		quad(p, "lateSettlementCaseIdentityReservation")
		quad(p, "lateSettlementCommandResult")
		p["lateSettlementCommandOperationId"] = ID(24)
		p["fromSettlementStateRevision"], p["toSettlementStateRevision"] = int64(2), int64(3)
		p["adjustmentAmount"] = "7.25"
		p["actorWorkforcePrincipalId"] = Principal
	case envelope.ExecutionAttemptEligibilityFinalizedV1:
		p["billingReservationId"], p["billingAccountId"], p["runId"] = ReservationID, AccountID, RunID
		p["runStepId"], p["executionAttemptId"] = RunStepID, AttemptID
		quad(p, "attemptExecutionManifest")
		quad(p, "executionEligibilityFact")
	case envelope.ExecutionRunFinalizationClosedV1:
		p["billingReservationId"], p["billingAccountId"], p["runId"] = ReservationID, AccountID, RunID
		p["closureOperationId"] = ID(25)
		quad(p, "runAdmissionManifest")
		quad(p, "runExecutionFinalization")
		p["runExecutionFinalizationStateVersion"] = int64(1)
		quad(p, "attemptSetManifest")
		p["attemptCount"] = int64(1)
	case envelope.BillingFinalizationCaseRequestedV1:
		p["billingReservationId"], p["billingAccountId"], p["runId"] = ReservationID, AccountID, RunID
		p["billingFinalizationFenceId"] = FenceID
		p["reconciliationCaseRef"] = "finalization-case-ref-1"
		p["reconciliationGeneration"] = int64(1)
		p["expectedResolutionRevision"] = int64(1)
		p["caseRequestOperationId"] = ID(26)
		quad(p, "finalizationCaseIdentityReservation")
		quad(p, "billingFinalizationDecision")
		quad(p, "triggeringBillingFinalizationWork")
		p["triggeringBillingFinalizationWorkGeneration"] = int64(2)
		p["billingFinalizationOperationId"] = ID(27)
		p["reconciliationReasonCode"] = "settlement_input_conflict"
		p["predecessorCase"] = map[string]any{"state": "none"}
	case envelope.BillingFinalizationResolutionAppliedV1:
		p["billingReservationId"], p["billingAccountId"], p["runId"] = ReservationID, AccountID, RunID
		p["billingFinalizationFenceId"] = FenceID
		p["reconciliationCaseRef"] = "finalization-case-ref-1"
		p["reconciliationGeneration"] = int64(1)
		p["resolutionRevision"] = int64(1)
		p["resolutionOperationId"] = ID(28)
		quad(p, "finalizationCaseIdentityReservation")
		quad(p, "finalizationReconciliationResolutionApplied")
		p["actorWorkforcePrincipalId"] = Principal
		p["action"] = "reevaluate_current_owner_state"
	case envelope.GatewayAvailabilityCurrentChangedV1:
		p["executionAttemptId"] = AttemptID
		p["gatewayDeploymentId"] = Deployment
		quad(p, "attemptExecutionManifest")
		quad(p, "attemptRouteBinding")
		quad(p, "gatewayRouteSnapshot")
		p["providerEvidenceKind"] = "provider_usage"
		p["evidenceDimensionKey"] = ChargeDimension
		quad(p, "currentAvailability")
		p["currentAvailabilityStateVersion"] = int64(2)
		ev := map[string]any{"state": "present"}
		quad(ev, "providerEvidence")
		p["availableEvidence"] = ev
	case envelope.MeteringSettlementInputCurrentChangedV1:
		dimension(p)
		quad(p, "settlementInputSnapshot")
		p["settlementInputStateVersion"] = int64(2)
		pred := map[string]any{"state": "present", "settlementInputStateVersion": int64(1)}
		quad(pred, "settlementInputSnapshot")
		pred["settlementInputSnapshotRef"] = "settlementInputSnapshot-ref-0"
		pred["settlementInputSnapshotDigest"] = Hex("settlementInputSnapshot-0")
		p["predecessorSettlementInput"] = pred
	default:
		panic("sample: no sample for " + eventType)
	}
	return p
}

// Envelope returns a valid sample envelope of the pair, numbered n (n
// selects the eventId so several samples of one pair differ).
func Envelope(eventType string, n int) envelope.Envelope {
	pair, err := envelope.Pair(eventType, schemaVersionOf(eventType))
	if err != nil {
		panic(err)
	}
	payload := Payload(eventType)
	aggID, rev := pair.ExpectedAggregate(payload)
	e := envelope.Envelope{
		EventID:            ID(1000 + n),
		EventType:          pair.EventType,
		EventSchemaVersion: pair.EventSchemaVersion,
		AggregateType:      pair.AggregateType,
		AggregateID:        aggID,
		AggregateRevision:  rev,
		TenantKind:         envelope.TenantOrganization,
		TenantID:           TenantID,
		WorkspaceID:        WorkspaceID,
		ProjectID:          ProjectID,
		CorrelationID:      CorrelationID,
		OperationID:        ID(30),
		OccurredAt:         OccurredAt,
		Payload:            payload,
	}
	if pair.CausationRequired {
		e.CausationID = ID(999)
	}
	if pair.ActorField != "" {
		e.Actor = &envelope.Actor{Kind: envelope.ActorWorkforcePrincipal, WorkforcePrincipalID: Principal}
	}
	return e
}

// Built returns the sample envelope validated and normalized by envelope.Build.
func Built(eventType string, n int) *envelope.Envelope {
	e, err := envelope.Build(Envelope(eventType, n))
	if err != nil {
		panic(fmt.Sprintf("sample: sample %s does not validate: %v", eventType, err))
	}
	return e
}

func schemaVersionOf(eventType string) string {
	for i := len(eventType) - 1; i >= 0; i-- {
		if eventType[i] == '@' {
			return eventType[i+1:]
		}
	}
	return ""
}
