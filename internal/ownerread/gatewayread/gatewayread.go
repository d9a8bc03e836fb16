// Package gatewayread is the Gateway owner's directed reads as the other
// owners call them: the requests, the answers and the contract versions and
// audiences, with no database behind them. The Gateway owner answers them
// (gateway.Reads, in process); a caller depends only on this package and on
// a Reader, so it never imports the Gateway owner nor holds its DSN.
package gatewayread

import (
	"context"

	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/ownerread"
)

// Reader is every directed read the Gateway owner answers.
type Reader interface {
	ReadDispatchSlot(ctx context.Context, req DispatchSlotRead) (SlotResult, error)
	ReadAvailabilitySnapshot(ctx context.Context, req AvailabilitySnapshotRead) (AvailabilityResult, error)
	ReadProviderEvidence(ctx context.Context, req ProviderEvidenceRead) (ProviderEvidenceResult, error)
	ValidateAvailabilityCurrent(ctx context.Context, req AvailabilityValidationRequest) (AvailabilityValidationResult, error)
	ReadAttemptUsageDimensions(ctx context.Context, req AttemptUsageDimensionsRead) ([]string, error)
}

// Audiences (workload purposes) of the Gateway reads: the Metering input
// processor (event-bound bootstrap), the Billing finalization worker (the
// Gateway receipt set of a finalization bundle, ADR-031) and the Execution
// owner's eligibility (the dispatch slot).
const (
	AudienceMeteringInput        = "metering_input_processor"
	AudienceBillingFinalization  = "billing_finalization_coordinator"
	AudienceExecutionEligibility = "execution_attempt_eligibility"
)

// ReadDispatchSlotV1 is the contract version of the Gateway's dispatch slot
// read (the Execution owner calls it before AttemptNotDispatchedFact@1).
const ReadDispatchSlotV1 = "readDispatchSlot@1"

// Slot states (GW-1): reserved → bound | terminal_rejected, both absorbing.
const (
	SlotReserved         = "reserved"
	SlotBound            = "bound"
	SlotTerminalRejected = "terminal_rejected"
)

// DispatchSlotRead is the request of readDispatchSlot@1: the exact slot key
// (attempt + gateway deployment + attempt manifest quadruple).
type DispatchSlotRead struct {
	ContractVersion     string
	Audience            string
	ExecutionAttemptID  string
	GatewayDeploymentID string
	AttemptManifest     strict.Quadruple
}

// DispatchSlot is the slot as the Gateway owner answers it: its state and,
// when bound, the binding and route snapshot quadruples, when
// terminal_rejected, the rejection fact (quadruple, reason, canonical body).
type DispatchSlot struct {
	State               string
	Binding             strict.Quadruple
	RouteSnapshot       strict.Quadruple
	Rejection           strict.Quadruple
	RejectionReasonCode string
	RejectionBody       []byte
}

// SlotResult is the answer of readDispatchSlot@1.
type SlotResult = ownerread.Result[DispatchSlot]

// ReadAvailabilitySnapshotV1 is the contract version of the event-bound
// availability read the Metering input processor calls before it accepts a
// gateway.evidence-availability.current-changed@1 event.
const ReadAvailabilitySnapshotV1 = "readEvidenceAvailabilitySnapshot@1"

// AvailabilitySnapshotRead is the request: the event's chain identity, state
// version and the exact snapshot and manifest quadruples it carried.
type AvailabilitySnapshotRead struct {
	ContractVersion     string
	Audience            string
	ExecutionAttemptID  string
	GatewayDeploymentID string
	AttemptManifest     strict.Quadruple
	EvidenceKind        string
	DimensionKey        string
	StateVersion        int64
	Snapshot            strict.Quadruple
}

// AvailabilityResult is the answer: found with the snapshot and its body.
type AvailabilityResult = ownerread.Result[*contract.AvailabilitySnapshot]

// ReadProviderEvidenceV1 is the contract version of the event-bound
// provider evidence read: the metering worker reads the usage quantity of
// the evidence an accepted availability snapshot references.
const ReadProviderEvidenceV1 = "readGatewayProviderEvidence@1"

// ProviderEvidenceRead is the request: the attempt, deployment, binding,
// kind and dimension the snapshot named, and the exact evidence quadruple.
type ProviderEvidenceRead struct {
	ContractVersion     string
	Audience            string
	ExecutionAttemptID  string
	GatewayDeploymentID string
	Binding             strict.Quadruple
	EvidenceKind        string
	DimensionKey        string
	Evidence            strict.Quadruple
}

// ProviderEvidenceResult is the answer: found with the evidence and its
// body; not_found; conflicting with the reason and, when the Gateway holds a
// stored GatewayEvidenceConflictFact@1 about the evidence (the provider
// contradicted it), that fact and its stored canonical body (issue 32: the
// quadruple a Blocked@1 of cause gateway_usage_owner_conflict names).
type ProviderEvidenceResult struct {
	ownerread.Result[*contract.ProviderEvidence]
	Conflict     *contract.GatewayEvidenceConflictFact
	ConflictBody []byte
}

// ValidateAvailabilityCurrentV1 is the contract version of the Gateway's
// operation-bound current validation of an availability snapshot: the second
// stage after the event-bound bootstrap read (outbox "Gateway Event的Source
// 读取与Current验证必须分阶段"; ADR-031 "Bootstrap授权不能签Receipt").
const ValidateAvailabilityCurrentV1 = "validateEvidenceAvailabilityCurrent@1"

// AvailabilityValidationRequest names the snapshot the caller's basis uses
// (the exact identities the bootstrap read returned), the purpose, the
// caller's operation and its basis digest.
type AvailabilityValidationRequest struct {
	ContractVersion string
	Audience        string
	Purpose         string
	OperationID     string
	BasisDigest     digest.Digest
	AvailabilitySnapshotRead
}

// AvailabilityValidationResult is the answer: found with the receipt
// (current | not_current with the current five-tuple) and its stored bytes;
// not_found when the Gateway holds no such snapshot; conflicting when the
// snapshot does not match the request or the operation already validated
// another request.
type AvailabilityValidationResult = ownerread.Result[*contract.AvailabilityCurrentValidationReceipt]

// ReadAttemptUsageDimensionsV1 is the contract version of the read.
const ReadAttemptUsageDimensionsV1 = "readAttemptUsageDimensions@1"

// AttemptUsageDimensionsRead is the request: one bound attempt.
type AttemptUsageDimensionsRead struct {
	ContractVersion    string
	Audience           string
	ExecutionAttemptID string
}
