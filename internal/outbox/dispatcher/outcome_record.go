package dispatcher

import (
	"context"
	"errors"
	"time"
)

// outcomeRequest asks a batch recorder (acks, retries) to record one
// outcome and report back.
type outcomeRequest[T any] struct {
	outcome T
	done    chan error
}

// recordAck hands a verified ack to the acker (batched) or records it in
// its own transaction when batching is off.
func (d *Dispatcher) recordAck(ctx context.Context, v VerifiedAck) error {
	if d.cfg.AckBatchSize == 1 {
		return d.store.AckOne(ctx, v)
	}
	return submit(d.acks, v)
}

// recordRetry hands a retryable outcome to the retrier (batched) or records
// it in its own statement when batching is off.
func (d *Dispatcher) recordRetry(ctx context.Context, r RetryRequest) error {
	if d.cfg.AckBatchSize == 1 {
		return d.store.Retry(ctx, r.Fence, r.Backoff, r.Code)
	}
	return submit(d.retries, r)
}

// submit hands one outcome to a batch recorder and waits for its answer.
func submit[T any](recorder chan<- outcomeRequest[T], outcome T) error {
	req := outcomeRequest[T]{outcome: outcome, done: make(chan error, 1)}
	recorder <- req
	return <-req.done
}

// ackRecordRetries bounds how often a verified ack whose recording failed
// transiently (pool exhausted, statement timeout, connection lost) is
// recorded again before the attempt is left to lease-expiry recovery; each
// try is still fenced, so a try after a lost commit answer is a lease loss,
// never a second acknowledgement.
var ackRecordRetries = []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 800 * time.Millisecond}

// recordAckPersistently records a verified ack, retrying transient database
// failures a few times. Whether the lease is still ours is the fence's
// answer (ErrLeaseLost), not a local guess: the claim's expiry is stale once
// the call renewed the lease, and it is in the database's clock.
func (d *Dispatcher) recordAckPersistently(ctx context.Context, v VerifiedAck) error {
	err := d.recordAck(ctx, v)
	for _, pause := range ackRecordRetries {
		if err == nil || errors.Is(err, ErrLeaseLost) || permanentRecordError(err) {
			return err
		}
		d.outcomeRecordFailed(v.claimed, outcomeAck, err)
		time.Sleep(pause)
		err = d.recordAck(ctx, v)
	}
	return err
}

// recordInBatches records outcomes in batches until in is closed: it takes
// whatever requests are waiting (up to limit) and records them with one call
// of record, so the statement and commit cost is shared while every outcome
// stays individually fenced; record answers per outcome.
func recordInBatches[T any](in <-chan outcomeRequest[T], limit int, record func([]T) []error) {
	batch := make([]outcomeRequest[T], 0, limit)
	for first := range in {
		batch = append(batch[:0], first)
	collect:
		for len(batch) < limit {
			select {
			case r, ok := <-in:
				if !ok {
					break collect
				}
				batch = append(batch, r)
			default:
				break collect
			}
		}
		outcomes := make([]T, len(batch))
		for i, r := range batch {
			outcomes[i] = r.outcome
		}
		errs := record(outcomes)
		for i, r := range batch {
			r.done <- errs[i]
		}
	}
}
