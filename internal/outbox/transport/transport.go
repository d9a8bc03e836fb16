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

// Answer is a consumer's answer to one delivery of a batch: a Result, or a
// classified error exactly as Deliver would return it.
type Answer struct {
	Result Result
	Err    error
}

// Unpack returns the answer as Deliver returns it.
func (a Answer) Unpack() (Result, error) { return a.Result, a.Err }

// Batcher is implemented by transports that can hand a destination's
// consumer several deliveries in one call, so that the consumer applies them
// (and writes their receipts) in one transaction instead of one each
// (issue 17). A batch only bundles the calls: every delivery keeps its own
// attempt, lease and fence, and the dispatcher verifies and records each
// answer on its own, so one bad answer never acknowledges or fails another.
type Batcher interface {
	// BatchLimit is the most deliveries of dest one DeliverBatch may carry;
	// 1 or less means dest takes single deliveries only.
	BatchLimit(dest route.Destination) int
	// DeliverBatch delivers ds, all to one destination and at most
	// BatchLimit of them, and answers each: the answer i belongs to ds[i].
	DeliverBatch(ctx context.Context, ds []Delivery) []Answer
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

// BatchConsumerFunc is an in-process consumer of several deliveries of one
// destination at once; it must return exactly one answer per delivery, in
// order.
type BatchConsumerFunc func(ctx context.Context, ds []Delivery) []Answer

// InProcess routes deliveries to consumers in the same binary by destination.
// A panicking consumer becomes a retryable error carrying the panic value.
type InProcess struct {
	consumers map[route.Destination]ConsumerFunc
	batches   map[route.Destination]batchConsumer
}

// batchConsumer is a destination's batch entry point and its limit.
type batchConsumer struct {
	limit int
	apply BatchConsumerFunc
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

// WithBatch registers a batch entry point of dest's consumer taking up to
// limit deliveries per call (the single one stays for single deliveries),
// and returns t. Call it before the transport is used.
func (t *InProcess) WithBatch(dest route.Destination, limit int, apply BatchConsumerFunc) *InProcess {
	if t.batches == nil {
		t.batches = make(map[route.Destination]batchConsumer)
	}
	t.batches[dest] = batchConsumer{limit: limit, apply: apply}
	return t
}

// BatchLimit implements Batcher.
func (t *InProcess) BatchLimit(dest route.Destination) int {
	if b, ok := t.batches[dest]; ok {
		return b.limit
	}
	return 1
}

// CodeBatchAnswers is the code of a batch consumer that did not answer
// every delivery exactly once; nothing it answered is trusted.
const CodeBatchAnswers = "consumer_batch_answers"

// ErrBatchAnswers is a batch consumer's answer count that differs from its
// deliveries.
var ErrBatchAnswers = errors.New("transport: batch consumer answers do not match its deliveries")

// DeliverBatch implements Batcher. Deliveries to a destination without a
// batch entry point, a mixed batch and a batch over the limit go one by one
// through Deliver; a panic or a wrong number of answers makes every
// delivery of the batch a retryable failure (the consumer's receipts make
// the redelivery converge).
func (t *InProcess) DeliverBatch(ctx context.Context, ds []Delivery) (out []Answer) {
	out = make([]Answer, len(ds))
	if len(ds) == 0 {
		return out
	}
	b, ok := t.batches[ds[0].Member.Destination]
	for _, d := range ds {
		ok = ok && d.Member.Destination == ds[0].Member.Destination
	}
	if !ok || len(ds) > b.limit {
		for i, d := range ds {
			out[i].Result, out[i].Err = t.Deliver(ctx, d)
		}
		return out
	}
	defer func() {
		if p := recover(); p != nil {
			out = failAll(len(ds), Retryable(CodeConsumerPanic, fmt.Errorf("consumer panicked: %v", p)))
		}
	}()
	answers := b.apply(ctx, ds)
	if len(answers) != len(ds) {
		return failAll(len(ds), Retryable(CodeBatchAnswers, fmt.Errorf("%w: %d answers for %d deliveries", ErrBatchAnswers, len(answers), len(ds))))
	}
	return answers
}

func failAll(n int, err error) []Answer {
	out := make([]Answer, n)
	for i := range out {
		out[i].Err = err
	}
	return out
}
