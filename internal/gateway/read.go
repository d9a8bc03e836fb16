package gateway

import (
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/ownerread"
)

// ReadDispatchSlotV1 is the contract version of the Gateway's dispatch slot
// read (the Execution owner calls it before AttemptNotDispatchedFact@1).
const ReadDispatchSlotV1 = "readDispatchSlot@1"

// AudienceExecutionEligibility is the one audience the slot read serves.
const AudienceExecutionEligibility = "execution_attempt_eligibility"

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
