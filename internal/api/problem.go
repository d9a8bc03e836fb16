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
	CodeMethodNotAllowed      = "method_not_allowed"          // 405
	CodeIdempotencyInProgress = "idempotency_key_in_progress" // 409: the first call with this key still runs
	CodeIdempotencyKeyReused  = "idempotency_key_reused"      // 422: the key was used with another body
	CodeUnavailable           = "unavailable"                 // 503: retry; nothing was written
)

var problemTitles = map[string]string{
	CodeInvalidRequest:        "The request does not match the API document",
	CodeUnauthorized:          "No valid workload token",
	CodeForbidden:             "The token does not allow this operation",
	CodeNotFound:              "Not found",
	CodeMethodNotAllowed:      "Method not allowed",
	CodeIdempotencyInProgress: "A request with this Idempotency-Key is still being processed",
	CodeIdempotencyKeyReused:  "This Idempotency-Key was used with another request",
	CodeUnavailable:           "Temporarily unavailable; retry with the same Idempotency-Key",
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
