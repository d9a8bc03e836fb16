// Package transport is the seam between a dispatcher and a consumer. The
// dispatcher hands over the event exactly as stored (canonical envelope bytes,
// envelope digest, frozen Delivery Set member, attempt identity) and gets back
// either an ActiveConsumerAck@1 with the full receipt body or a classified
// error. The canonical envelope never changes between transports; the first
// implementation is in-process, HTTP or a broker can follow.
package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
)

// Delivery is what a consumer receives for one attempt.
type Delivery struct {
	EventID            string
	EventType          string
	EventSchemaVersion string
	Envelope           []byte        // canonical envelope JSON exactly as stored
	EnvelopeDigest     digest.Digest // eventEnvelopeDigestAlgorithmVersion + eventEnvelopeSha256
	Member             route.Member  // frozen member of the event's Delivery Set Definition
	AttemptID          string
	AttemptNumber      int
}

// Result is a consumer's acknowledgement: the ActiveConsumerAck@1 and the
// full body of the receipt it names, for the dispatcher to verify.
type Result struct {
	Ack         *receipt.ActiveConsumerAck
	ReceiptBody []byte
}

// Transport delivers one attempt to the member's consumer.
type Transport interface {
	Deliver(ctx context.Context, d Delivery) (Result, error)
}

// Classified is the behaviour every delivery error is asked for through
// errors.As. Errors that do not implement it are treated as retryable.
type Classified interface {
	error
	Retryable() bool
	// Code is a normalized, low-cardinality error code used in metrics,
	// logs and the attempt finish (never an id or a free message).
	Code() string
}

// Error is the standard classified error.
type Error struct {
	code        string
	retryable   bool
	wait        bool
	unsupported bool
	err         error
}

func (e *Error) Error() string {
	if e.err == nil {
		return e.code
	}
	return e.code + ": " + e.err.Error()
}
func (e *Error) Unwrap() error   { return e.err }
func (e *Error) Retryable() bool { return e.retryable }
func (e *Error) Code() string    { return e.code }

// RecoverableWait implements Waiting.
func (e *Error) RecoverableWait() bool { return e.wait }

// Retryable marks a temporary failure: owner read unavailable, lock,
// capacity protection, timeout. Nothing was durably applied.
func Retryable(code string, err error) error { return &Error{code: code, retryable: true, err: err} }

// NonRetryable marks a failure that retrying cannot fix: unknown pair,
// digest conflict, broken invariant. The delivery is quarantined.
func NonRetryable(code string, err error) error {
	return &Error{code: code, retryable: false, err: err}
}

// Waiting is asked through errors.As: a recoverable wait (a revision gap,
// an owner read not yet available) is retried whatever the attempt count,
// because the spec forbids turning an unknown fact into quarantine by a
// counter; only governance with evidence may quarantine it.
type Waiting interface {
	error
	RecoverableWait() bool
}

// Wait marks a recoverable wait: retryable, never quarantined by MaxAttempts.
func Wait(code string, err error) error {
	return &Error{code: code, retryable: true, wait: true, err: err}
}

// Unsupported marks a wait on a deployment fact, not on data: the consumer
// does not support the event pair yet, or this process has no consumer for
// the destination. Like Wait it is never quarantined by MaxAttempts, but it
// backs off like any retry up to the configured maximum (a release or a
// restart ends it, not the next append), so it does not append an attempt
// pair every few seconds forever.
func Unsupported(code string, err error) error {
	return &Error{code: code, retryable: true, wait: true, unsupported: true, err: err}
}

// UnsupportedWait implements Unsupporting.
func (e *Error) UnsupportedWait() bool { return e.unsupported }

// Unsupporting is asked through errors.As (see Unsupported).
type Unsupporting interface {
	error
	UnsupportedWait() bool
}

// IsUnsupportedWait reports whether err is an unsupported-pair or
// no-consumer wait.
func IsUnsupportedWait(err error) bool {
	var u Unsupporting
	return errors.As(err, &u) && u.UnsupportedWait()
}

// IsRecoverableWait reports whether err is a recoverable wait.
func IsRecoverableWait(err error) bool {
	var w Waiting
	return errors.As(err, &w) && w.RecoverableWait()
}

// RetryableAndCode returns whether err is retryable and its normalized code.
// Unclassified errors are retryable with code "unclassified": an unknown
// failure must never be turned into quarantine or success silently.
func RetryableAndCode(err error) (retryable bool, code string) {
	var c Classified
	if errors.As(err, &c) {
		return c.Retryable(), c.Code()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true, "timeout"
	}
	if errors.Is(err, context.Canceled) {
		return true, "canceled"
	}
	return true, "unclassified"
}

// ConsumerFunc is an in-process consumer.
type ConsumerFunc func(ctx context.Context, d Delivery) (Result, error)

// InProcess routes deliveries to consumers in the same binary by destination.
// A panicking consumer becomes a retryable error carrying the panic value.
type InProcess struct {
	consumers map[route.Destination]ConsumerFunc
}

// NewInProcess builds an in-process transport.
func NewInProcess(consumers map[route.Destination]ConsumerFunc) *InProcess {
	return &InProcess{consumers: consumers}
}

// CodeNoConsumer is the code of a delivery whose destination has no
// consumer in this process (an unsupported wait).
const CodeNoConsumer = "no_consumer"

// CodeConsumerPanic is the code of a consumer that panicked.
const CodeConsumerPanic = "consumer_panic"

// ErrNoConsumer is returned when no consumer is wired for a destination.
var ErrNoConsumer = errors.New("transport: no consumer wired for destination")

// Deliver implements Transport.
func (t *InProcess) Deliver(ctx context.Context, d Delivery) (res Result, err error) {
	c, ok := t.consumers[d.Member.Destination]
	if !ok {
		return Result{}, Unsupported(CodeNoConsumer, fmt.Errorf("%w: %s", ErrNoConsumer, d.Member.Destination))
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = Result{}, Retryable(CodeConsumerPanic, fmt.Errorf("consumer panicked: %v", p))
		}
	}()
	return c(ctx, d)
}
