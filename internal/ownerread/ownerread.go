// Package ownerread is the shared answer of every directed, versioned owner
// read (ADR-031, CON-2): an owner answers found (with the exact immutable
// object), not_found or conflicting (with the reason). A failure to reach
// the owner is an error, never an answer. Requests are plain values and
// answers carry canonical bodies, so no caller may assume it shares a
// process or a database with the owner.
//
// Rules every owner read follows: the request names its contract version,
// its purpose (workload audience), the tenant and every identity the caller
// holds, and the full quadruple of the object (never a bare ref, never
// "latest", never a list); the owner recomputes the digest of what it stores
// and compares every field before answering found.
package ownerread

import "errors"

// Answer is the answer of a directed, versioned owner read.
type Answer string

const (
	Found       Answer = "found"
	NotFound    Answer = "not_found"
	Conflicting Answer = "conflicting"
)

// Valid reports whether a is one of the three answers.
func (a Answer) Valid() bool { return a == Found || a == NotFound || a == Conflicting }

// ErrInvalidRequest marks a request the owner refuses to answer (unknown
// contract version or audience, missing identity, bare ref): nothing is read.
var ErrInvalidRequest = errors.New("owner read: invalid request")

// Result is one answer with, when found, the object and its canonical body,
// and when conflicting, which comparison failed.
type Result[T any] struct {
	Answer Answer
	Value  T
	Body   []byte
	Reason string
}

// FoundWith is a found answer.
func FoundWith[T any](v T, body []byte) Result[T] {
	return Result[T]{Answer: Found, Value: v, Body: body}
}

// Missing is a not_found answer.
func Missing[T any]() Result[T] { return Result[T]{Answer: NotFound} }

// Conflict is a conflicting answer with its reason.
func Conflict[T any](reason string) Result[T] { return Result[T]{Answer: Conflicting, Reason: reason} }
