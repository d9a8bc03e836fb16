package api

import (
	"encoding/json"
	"net/http"

	"github.com/oceanway/core/internal/api/apigen"
)

// ProblemBase prefixes every problem type: the type is ProblemBase + code.
const ProblemBase = "https://oceanway.dev/problems/"

// Problem codes, each with its one HTTP status.
const (
	CodeInvalidRequest        = "invalid_request"             // 400: the request does not match the document
	CodeUnauthorized          = "unauthorized"                // 401: no valid workload token
	CodeForbidden             = "scope_not_allowed"           // 403: a valid token for another operation
	CodeNotFound              = "not_found"                   // 404
	CodeNotServedHere         = "operation_not_served_here"   // 404: another owner's process serves it
	CodeMethodNotAllowed      = "method_not_allowed"          // 405
	CodeIdempotencyInProgress = "idempotency_key_in_progress" // 409: the first call with this key still runs
	CodeIdempotencyKeyReused  = "idempotency_key_reused"      // 422: the key was used with another body
	CodeUnavailable           = "unavailable"                 // 503: retry; nothing was written

	// The owners' refusals of a well-formed request: the owner's state does
	// not allow it (nothing was written).
	CodeTokenInvalid        = "run_token_invalid"         // 400: not Core's signed run execution token, or it does not decode
	CodeManifestConflict    = "run_manifest_conflict"     // 409: the token differs from Core's admission manifest
	CodeTokenConflict       = "run_token_conflict"        // 409: the run is open with another token
	CodeRunClosed           = "run_closed"                // 409: the run no longer accepts attempts (or is closed already)
	CodeAttemptConflict     = "attempt_conflict"          // 409: the attempt exists with another route
	CodeEligibilityMissing  = "eligibility_missing"       // 409: an attempt of the run has no eligibility yet
	CodeEligibilityConflict = "eligibility_conflict"      // 409: the eligibility was finalized otherwise
	CodeNotProvenRejected   = "slot_not_proven_rejected"  // 409: not_dispatched, but the Gateway does not prove the slot rejected
	CodeSlotConflict        = "dispatch_slot_conflict"    // 409: the slot exists for another manifest or deployment
	CodeSlotNotBound        = "dispatch_slot_not_bound"   // 409: an observation of an attempt whose slot is not bound
	CodeOwnerUnavailable    = "owner_read_unavailable"    // 503: another owner's read did not answer; retry
	CodeCanaryNotSettled    = "canary_not_settled"        // 409: the canary's run has not closed the loop yet; retry
	CodePublicAdmission     = "public_admission_disabled" // 403: PUBLIC_ADMISSION_MODE is disabled for public callers

	// Operations' case commands (an operator's chain).
	CodeCaseNotOpen       = "case_not_open"        // 409: no open case with that ref (resolved, or a later generation)
	CodeNotApproved       = "request_not_approved" // 409: apply before a second principal approved
	CodeApproverConflict  = "approver_conflict"    // 409: the requester approving, or another principal approved already
	CodeNotRequester      = "not_requester"        // 409: only the requester applies the request
	CodeCaseDecided       = "case_already_decided" // 409: the case generation has a resolution decision
	CodeCommandConflict   = "command_conflict"     // 409: the command's operation was used with other content
	CodeGrantRefused      = "grant_refused"        // 409: Core did not issue the grant (the chain does not authorize it, or the decision is not current)
	CodeResolutionRefused = "resolution_refused"   // 409: Billing refused the grant (replayed, expired, another case generation)
)

var problemTitles = map[string]string{
	CodeInvalidRequest:        "The request does not match the API document",
	CodeUnauthorized:          "No valid workload token",
	CodeForbidden:             "The token does not allow this operation",
	CodeNotFound:              "Not found",
	CodeNotServedHere:         "This process does not serve the operation's owner",
	CodeMethodNotAllowed:      "Method not allowed",
	CodeIdempotencyInProgress: "A request with this Idempotency-Key is still being processed",
	CodeIdempotencyKeyReused:  "This Idempotency-Key was used with another request",
	CodeUnavailable:           "Temporarily unavailable; retry with the same Idempotency-Key",
	CodeTokenInvalid:          "Not a run execution token signed by Core",
	CodeManifestConflict:      "The run execution token conflicts with Core's admission manifest",
	CodeTokenConflict:         "The run is open with another execution token",
	CodeRunClosed:             "The run no longer accepts attempts",
	CodeAttemptConflict:       "The attempt exists with another route",
	CodeEligibilityMissing:    "An attempt of the run has no eligibility yet",
	CodeEligibilityConflict:   "The attempt's eligibility was finalized otherwise",
	CodeNotProvenRejected:     "The Gateway does not prove the attempt's slot rejected",
	CodeSlotConflict:          "The dispatch slot exists for another attempt manifest or deployment",
	CodeSlotNotBound:          "The attempt's dispatch slot is not bound",
	CodeOwnerUnavailable:      "Another owner's read did not answer; retry with the same Idempotency-Key",
	CodeCanaryNotSettled:      "The canary's run has not closed the whole loop yet; retry",
	CodePublicAdmission:       "Public admission is disabled on this deployment",
	CodeCaseNotOpen:           "No open case with that ref",
	CodeNotApproved:           "The request is not approved by a second principal",
	CodeApproverConflict:      "The request's approval belongs to another principal (never the requester)",
	CodeNotRequester:          "Only the requester applies the request",
	CodeCaseDecided:           "The case generation already has a resolution decision",
	CodeCommandConflict:       "The command's operation was used with other content",
	CodeGrantRefused:          "Core did not issue the command grant",
	CodeResolutionRefused:     "Billing refused the command grant",
}

// NewProblem returns the problem of code with status and detail.
func NewProblem(status int, code, detail string) apigen.Problem {
	p := apigen.Problem{Type: ProblemBase + code, Title: problemTitles[code], Status: status, Code: code}
	if detail != "" {
		p.Detail = &detail
	}
	return p
}

// WriteProblem writes an application/problem+json answer.
func WriteProblem(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(NewProblem(status, code, detail)) // the client retries a lost answer
}
