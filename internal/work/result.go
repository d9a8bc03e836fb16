package work

import (
	"errors"
	"time"
)

// Kind is what one attempt came to.
type Kind int

const (
	// Finished: the Work's one finish is written (by this attempt or found
	// written); the Work leaves the queue.
	Finished Kind = iota + 1
	// Retry: nothing was written; the Work is claimable again after After.
	Retry
	// Blocked: the attempt recorded its visible Blocked fact; the Work stays
	// active and is claimable again after After (usually Backoff.After).
	Blocked
	// Fenced: a newer attempt owns the Work; this one wrote nothing (the
	// database refused its token) and releases nothing.
	Fenced
	// Failed: an unexpected error; nothing was written and the Work is
	// claimable again after After.
	Failed
)

var kindNames = map[Kind]string{Finished: "finished", Retry: "retry", Blocked: "blocked", Fenced: "fenced", Failed: "failed"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "unknown"
}

// Result is one attempt's outcome as the queue reports it.
type Result struct {
	Kind Kind
	// Outcome names a finished Work's domain outcome for the finishes metric
	// (applied, superseded, caught_up, ...); a small fixed set per queue.
	Outcome string
	// After is how long a Retry, Blocked or Failed Work waits before it is
	// claimable again.
	After time.Duration
	// Err is the cause of a Failed result (logged, never a label).
	Err error
}

// Done is a Finished result with its outcome.
func Done(outcome string) Result { return Result{Kind: Finished, Outcome: outcome} }

// RetryAfter is a Retry result.
func RetryAfter(d time.Duration) Result { return Result{Kind: Retry, After: d} }

// BlockedFor is a Blocked result.
func BlockedFor(d time.Duration) Result { return Result{Kind: Blocked, After: d} }

// FencedOut is a Fenced result.
func FencedOut() Result { return Result{Kind: Fenced} }

// FailedAfter is a Failed result.
func FailedAfter(err error, d time.Duration) Result { return Result{Kind: Failed, Err: err, After: d} }

// ErrLeaseLost: a renewal found the attempt no longer owns its Work (its
// lease ended and another attempt claimed it, or it was released).
var ErrLeaseLost = errors.New("work: lease lost")

// ErrEmpty: a locked queue had nothing claimable.
var ErrEmpty = errors.New("work: nothing claimable")

// Backoff is a capped exponential delay: Base after the first attempt (or
// block), doubled for each one after it, never above Max.
type Backoff struct {
	Base, Max time.Duration
}

// After is the delay after the n-th attempt or block (n ≥ 1).
func (b Backoff) After(n int64) time.Duration {
	d := b.Base
	for i := int64(1); i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}
