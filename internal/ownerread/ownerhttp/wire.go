package ownerhttp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/executionread"

	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// PathPrefix is where every owner read is served.
const PathPrefix = "/v1/owner-reads/"

// MaxBody bounds a request or an answer (answers carry at most a few
// canonical bodies).
const MaxBody = 4 << 20

// Owners whose reads are served: each is one token audience.
const (
	OwnerCore      = "core"
	OwnerExecution = "execution"
	OwnerGateway   = "gateway"
	OwnerMetering  = "metering"
)

// WorkloadPrefix starts the workload name of every owner process that calls
// owner reads: owner.core, owner.execution, owner.gateway, owner.metering
// (the `--workload` of `oceanway serve --owner`).
const WorkloadPrefix = "owner."

// OwnerWorkload is the workload name an owner's processes sign as.
func OwnerWorkload(owner string) string { return WorkloadPrefix + owner }

// CallerOwner is the owner a workload acts for (owner.<owner>); ok is false
// for any other workload, which may call no owner read.
func CallerOwner(workloadName string) (string, bool) {
	o, ok := strings.CutPrefix(workloadName, WorkloadPrefix)
	return o, ok && (o == OwnerCore || o == OwnerExecution || o == OwnerGateway || o == OwnerMetering)
}

// Callers are the owners that may call each read (ADR-031: each read serves
// its purposes only): Metering's input processor and worker, Billing's
// workers and the Operations projector (both Core), Execution's eligibility.
var Callers = map[string][]string{
	coreread.ReadRunAdmissionManifestV1:             {OwnerExecution, OwnerMetering},
	ReadBillingFinalizationCommittedV1:              {OwnerCore},
	ReadBillingSettlementTransitionV1:               {OwnerCore},
	ReadBillingFinalizationDecisionForOpsV1:         {OwnerCore},
	ReadResolutionAppliedForOpsV1:                   {OwnerCore},
	ReadLateExposureForOpsV1:                        {OwnerCore},
	ReadLateResultForOpsV1:                          {OwnerCore},
	ReadCaseResolutionAppliedForOpsV1:               {OwnerCore},
	executionread.ReadEligibilityFactV1:             {OwnerMetering},
	executionread.ReadAttemptManifestV1:             {OwnerMetering, OwnerCore},
	executionread.ReadRunFinalizationPreconditionV1: {OwnerCore},
	execution.ReadRunExecutionFinalizationV1:        {OwnerCore},
	gatewayread.ReadDispatchSlotV1:                  {OwnerExecution},
	gatewayread.ReadAvailabilitySnapshotV1:          {OwnerMetering, OwnerCore},
	gatewayread.ReadProviderEvidenceV1:              {OwnerMetering},
	gatewayread.ValidateAvailabilityCurrentV1:       {OwnerMetering},
	gatewayread.ReadAttemptUsageDimensionsV1:        {OwnerCore},
	ReadAttemptSettlementInputsV1:                   {OwnerCore},
	ReadSettlementInputAtV1:                         {OwnerCore},
	ReadCurrentSettlementInputV1:                    {OwnerCore},
	ValidateSettlementInputCurrentV1:                {OwnerCore},
}

// Audience is the token audience of an owner's read endpoint.
func Audience(owner string) string { return owner + "_owner_reads" }

// Scope is the token scope of one read: exactly that read.
func Scope(read string) string { return "ownerread:" + read }

// Read names of the reads that carry no contract version constant of their
// own elsewhere.
const (
	ReadBillingFinalizationCommittedV1 = "readBillingFinalizationCommitted@1"
	ReadBillingSettlementTransitionV1  = "readBillingSettlementTransition@1"
	// The Operations projector's reads of the reconciliation case pairs.
	ReadBillingFinalizationDecisionForOpsV1 = "readBillingFinalizationDecisionForOperations@1"
	ReadResolutionAppliedForOpsV1           = "readFinalizationReconciliationResolutionAppliedForOperations@1"
	// The Operations projector's read of the late settlement case pair.
	ReadLateExposureForOpsV1 = "readLateSettlementExposureForOperations@1"
	// The Operations projector's reads of the late settlement command's
	// result and applied pairs (issue 32 part 2).
	ReadLateResultForOpsV1            = "readLateSettlementCommandResultForOperations@1"
	ReadCaseResolutionAppliedForOpsV1 = "readBillingCaseResolutionAppliedForOperations@1"
	ReadAttemptSettlementInputsV1     = "readAttemptSettlementInputs@1"
	ReadSettlementInputAtV1           = "readSettlementInputAt@1"
	ReadCurrentSettlementInputV1      = "readCurrentSettlementInput@1"
	ValidateSettlementInputCurrentV1  = "validateSettlementInputCurrent@1"
)

// Error codes of a refused call.
const (
	CodeInvalidRequest = "invalid_request"
	CodeBadRequest     = "bad_request"
	CodeUnauthorized   = "unauthorized"
	CodeForbidden      = "caller_not_allowed"
	CodeUnknownRead    = "unknown_read"
	CodeOwnerError     = "owner_error"
	CodeBadAnswer      = "bad_answer"
	CodeUnavailable    = "owner_unavailable"
)

var (
	// ErrUnavailable: the owner did not answer (network, timeout, a refused
	// token, an owner error, a malformed answer). Retry; nothing changed.
	ErrUnavailable = errors.New("owner read: owner unavailable")
	// ErrBadAnswer: the owner's answer does not decode or its body does
	// not recompute (also ErrUnavailable: never trusted, retried).
	ErrBadAnswer = errors.New("owner read: bad answer")
)

// Error is a refused or failed call, with its code.
type Error struct {
	Read    string
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("owner read %s: %s (%d): %s", e.Read, e.Code, e.Status, e.Message)
}

// Unwrap classifies: an invalid request is the caller's, everything else
// is an unavailable owner.
func (e *Error) Unwrap() error {
	if e.Code == CodeInvalidRequest {
		return ownerread.ErrInvalidRequest
	}
	if e.Code == CodeBadAnswer {
		return errors.Join(ErrUnavailable, ErrBadAnswer)
	}
	return ErrUnavailable
}

// answer is the 200 body of every read; each read fills its own fields.
type answer struct {
	Answer       string                    `json:"answer,omitempty"`
	Reason       string                    `json:"reason,omitempty"`
	Body         []byte                    `json:"body,omitempty"`
	ConflictBody []byte                    `json:"conflictBody,omitempty"`
	Slot         *gatewayread.DispatchSlot `json:"slot,omitempty"`
	Dimensions   []string                  `json:"dimensions,omitempty"`
	Inputs       []input                   `json:"inputs,omitempty"`
	Current      *settlement.Ref           `json:"current,omitempty"`
}

// input is one settlement input on the wire: its five-tuple and its
// canonical body (the client decodes the snapshot from the body).
type input struct {
	Ref  settlement.Ref `json:"ref"`
	Body []byte         `json:"body"`
}

// problem is the body of every refusal.
type problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func answerOf[T any](r ownerread.Result[T]) answer {
	return answer{Answer: string(r.Answer), Reason: r.Reason, Body: r.Body}
}

// resultOf rebuilds the in-process answer: a found answer's value is decoded
// from its body (strictly, the digest recomputed), never taken on trust, and
// must be the object asked for (asked: a misrouted or foreign endpoint's
// valid object of another run is refused).
func resultOf[T any](read string, a answer, decode func([]byte) (T, error), asked func(T) bool) (ownerread.Result[T], error) {
	r := ownerread.Result[T]{Answer: ownerread.Answer(a.Answer), Reason: a.Reason, Body: a.Body}
	switch {
	case !r.Answer.Valid():
		return ownerread.Result[T]{}, badAnswer(read, fmt.Sprintf("answer %q", a.Answer))
	case r.Answer != ownerread.Found:
		return r, nil
	}
	v, err := decode(a.Body)
	if err != nil {
		return ownerread.Result[T]{}, badAnswer(read, "found body: "+err.Error())
	}
	if !asked(v) {
		return ownerread.Result[T]{}, badAnswer(read, "found another object than the one asked for")
	}
	r.Value = v
	return r, nil
}

func badAnswer(read, msg string) error {
	return &Error{Read: read, Status: 200, Code: CodeBadAnswer, Message: msg}
}
