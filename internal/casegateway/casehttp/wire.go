// Package casehttp carries the Finalization reconciliation command chain
// between processes (issue 31, ADR-031's cross-process gate): Operations'
// commands and decision read, Core's grant exchange and Billing's
// resolution, each served by its owner's process and called by the admin
// command gateway (and Core's issuer, for the decision read).
//
// Wire: POST /v1/cases/{call} with a fresh single-use workload token
// (internal/workload) for the service's audience and scope cases:<call>;
// each call answers only the workloads listed for it (403 otherwise).
// Bodies are strict JSON (unknown fields refused); the chain's objects
// travel as their canonical bodies and are decoded again, digests
// verified, on arrival. The operator's actor assertion travels with every
// command and each owner verifies it itself. A refusal is
// {"code","message"}; the client maps each code back to its typed error.
//
// The late settlement command (issue 32 part 2, late.go) adds Operations'
// request-late, approve-late, decide-late and read-late-decision and Core's
// exchange-late; Billing's late calls are Billing's to serve.
package casehttp

import (
	"encoding/json"
	"errors"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread"
)

// PathPrefix is the calls' path.
const PathPrefix = "/v1/cases/"

// Services and their audiences.
const (
	AudienceOperations = "operations_cases"
	AudienceGrants     = "core_grants"
	AudienceBilling    = "billing_resolutions"
)

// Calls.
const (
	CallRequest      = "request"
	CallApprove      = "approve"
	CallDecide       = "decide"
	CallReadDecision = "read-decision"
	CallExchange     = "exchange"
	CallApply        = "apply"
)

// WorkloadGrants is Core's grant issuer's workload (it reads Operations'
// decision).
const WorkloadGrants = "core.grants"

type caller struct {
	audience string
	allowed  []string
}

// callers lists, per call, its audience and the workloads it answers.
var callers = map[string]caller{
	CallRequest:      {AudienceOperations, []string{casegateway.Workload}},
	CallApprove:      {AudienceOperations, []string{casegateway.Workload}},
	CallDecide:       {AudienceOperations, []string{casegateway.Workload}},
	CallReadDecision: {AudienceOperations, []string{WorkloadGrants}},
	CallExchange:     {AudienceGrants, []string{casegateway.Workload}},
	CallApply:        {AudienceBilling, []string{casegateway.Workload}},

	CallRequestLate:      {AudienceOperations, []string{casegateway.Workload}},
	CallApproveLate:      {AudienceOperations, []string{casegateway.Workload}},
	CallDecideLate:       {AudienceOperations, []string{casegateway.Workload}},
	CallReadLateDecision: {AudienceOperations, []string{WorkloadGrants}},
	CallExchangeLate:     {AudienceGrants, []string{casegateway.Workload}},
}

// Scope is a call's workload scope.
func Scope(call string) string { return "cases:" + call }

type refusalCode struct {
	code string
	err  error
}

// Refusal codes, each bound to the typed error it stands for.
var codes = []refusalCode{
	{"case_not_open", cases.ErrCaseNotOpen},
	{"request_not_found", cases.ErrRequestNotFound},
	{"not_approved", cases.ErrNotApproved},
	{"already_approved", cases.ErrAlreadyApproved},
	{"not_requester", cases.ErrNotRequester},
	{"case_decided", cases.ErrCaseDecided},
	{"request_conflict", cases.ErrRequestConflict},
	{"self_approval", reconciliation.ErrSelfApproval},
	{"jit_expired", reconciliation.ErrJitExpired},
	{"chain_mismatch", reconciliation.ErrChainMismatch},
	{"invalid_object", reconciliation.ErrInvalidObject},
	{"unauthenticated", casegateway.ErrUnauthenticated},
	{"assertion_invalid", grants.ErrAssertion},
	{"assertion_expired", grants.ErrAssertionExpired},
	{"exchange_conflict", grants.ErrExchangeConflict},
	{"not_authorized", grants.ErrNotAuthorized},
	{"decision_not_current", grants.ErrDecisionNotCurrent},
	{"grant_invalid", billing.ErrGrantInvalid},
	{"grant_expired", billing.ErrGrantExpired},
	{"grant_replayed", billing.ErrGrantReplayed},
	{"stale_case_generation", billing.ErrStaleCaseGeneration},
	{"resolution_conflict", billing.ErrResolutionConflict},
	{"invalid_request", ownerread.ErrInvalidRequest},
	{"late_case_not_open", cases.ErrLateCaseNotOpen},
	{"late_exposure_not_in_case", cases.ErrLateExposureNotInCase},
	{"late_exposure_not_current", cases.ErrLateExposureNotCurrent},
	{"late_request_not_found", cases.ErrLateRequestNotFound},
	{"late_case_decided", cases.ErrLateCaseDecided},
}

// Transport-level refusal codes.
const (
	CodeBadRequest = "bad_request"
	CodeUnknown    = "unknown_call"
	CodeUnauth     = "unauthorized"
	CodeForbidden  = "caller_not_allowed"
	CodeInternal   = "unavailable"
)

// ErrUnavailable: the owner could not be reached or failed; retry.
var ErrUnavailable = errors.New("casehttp: owner unavailable")

// ErrRefused: the transport refused the call (token, caller, body).
var ErrRefused = errors.New("casehttp: call refused")

func codeOf(err error) (string, bool) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code, true
		}
	}
	return "", false
}

func errorOf(code string) (error, bool) {
	for _, c := range codes {
		if c.code == code {
			return c.err, true
		}
	}
	return nil, false
}

type refusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Evidence is one investigation evidence reference on the wire.
type Evidence struct {
	Kind                   string `json:"evidenceKind"`
	Ref                    string `json:"ref"`
	SchemaVersion          string `json:"schemaVersion"`
	DigestAlgorithmVersion string `json:"digestAlgorithmVersion"`
	Digest                 string `json:"digest"`
}

type requestBody struct {
	Assertion     string     `json:"assertion"`
	CaseRef       string     `json:"caseRef"`
	OperationID   string     `json:"operationId"`
	Evidence      []Evidence `json:"evidence"`
	Justification string     `json:"justification"`
}

type refBody struct {
	Assertion  string `json:"assertion"`
	RequestRef string `json:"requestRef"`
}

// chainBody is a chain as canonical bodies (absent: not reached yet).
type chainBody struct {
	Request   json.RawMessage `json:"request"`
	Preview   json.RawMessage `json:"preview"`
	Approval  json.RawMessage `json:"approval,omitempty"`
	JIT       json.RawMessage `json:"jit,omitempty"`
	Candidate json.RawMessage `json:"candidate,omitempty"`
	Decision  json.RawMessage `json:"decision,omitempty"`
}

type quadBody struct {
	Ref                    string `json:"ref"`
	SchemaVersion          string `json:"schemaVersion"`
	DigestAlgorithmVersion string `json:"digestAlgorithmVersion"`
	Digest                 string `json:"digest"`
}

type readDecisionBody struct {
	Decision   quadBody `json:"decision"`
	Candidate  quadBody `json:"candidate"`
	CaseRef    string   `json:"caseRef"`
	Generation int64    `json:"generation"`
}

type answerBody struct {
	Answer string `json:"answer"`
}

type exchangeBody struct {
	Assertion string    `json:"assertion"`
	Chain     chainBody `json:"chain"`
}

type exchangedBody struct {
	Grant    string          `json:"grant"`
	Result   json.RawMessage `json:"result"`
	Replayed bool            `json:"replayed"`
}

type applyBody struct {
	Grant     string          `json:"grant"`
	Candidate json.RawMessage `json:"candidate"`
	Decision  json.RawMessage `json:"decision"`
}

type appliedBody struct {
	Applied  json.RawMessage `json:"applied"`
	EventID  string          `json:"eventId"`
	Replayed bool            `json:"replayed"`
}
