package dispatcher

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/transport"
)

// settle verifies and records the outcome of one consumer call: the ack
// (batched, fenced), or a retry or quarantine.
func (d *Dispatcher) settle(recordCtx context.Context, c Claimed, res transport.Result, err error) {
	dest := string(c.Member.Destination)
	if err == nil {
		var v VerifiedAck
		v, err = VerifyResult(c, res)
		if err == nil {
			err = d.recordAckPersistently(recordCtx, v)
		}
		if err == nil {
			d.metrics.Acknowledged.WithLabelValues(dest).Inc()
			d.metrics.AckLatencySecs.WithLabelValues(dest).Observe(time.Since(c.CreatedAt).Seconds())
			return
		}
		if errors.Is(err, ErrLeaseLost) {
			d.leaseLost(c, outcomeAck)
			return
		}
		var rejected *AckRejectedError
		if !errors.As(err, &rejected) {
			d.outcomeRecordFailed(c, outcomeAck, err)
			if !permanentRecordError(err) {
				// Database trouble: leave the attempt to lease-expiry
				// recovery; the consumer's receipt makes the redelivery
				// converge.
				return
			}
			// The database rejected the ack itself (e.g. the published_at
			// function found it invalid): retrying cannot help.
			err = transport.NonRetryable(CodeOutcomeRecordInvalid, err)
		}
	}
	d.fail(recordCtx, c, err)
}

// fail records a retryable or non-retryable outcome.
func (d *Dispatcher) fail(ctx context.Context, c Claimed, cause error) {
	dest := string(c.Member.Destination)
	retryable, code := transport.RetryableAndCode(cause)
	d.metrics.Failures.WithLabelValues(dest, c.EventType, c.EventSchemaVersion, code).Inc()
	var classified transport.Classified
	if !errors.As(cause, &classified) || code == transport.CodeConsumerPanic {
		// Unclassified errors and panics are retried, and recorded here with
		// their text so they are never swallowed.
		d.log.Warn("unclassified delivery error or consumer panic (retried)", "destination", dest, "event_type", c.EventType,
			"event_id", c.EventID, "attempt", c.AttemptCount, "error", cause.Error())
	}
	wait := transport.IsRecoverableWait(cause)
	unsupported := transport.IsUnsupportedWait(cause)
	if retryable && (wait || d.cfg.MaxAttempts == 0 || c.AttemptCount < d.cfg.MaxAttempts) {
		delay := d.backoff(c.AttemptCount)
		if wait && !unsupported {
			// A data wait ends when the missing fact arrives; poll for it at
			// a bounded pace instead of drifting to BackoffMax. An
			// unsupported pair or a missing consumer ends with a release or
			// a restart: it backs off up to BackoffMax.
			delay = min(delay, d.cfg.WaitBackoffMax)
		}
		err := d.recordRetry(ctx, RetryRequest{Fence: c.Fence, Backoff: delay, Code: code})
		switch {
		case errors.Is(err, ErrLeaseLost):
			d.leaseLost(c, outcomeRetry)
		case err != nil:
			d.outcomeRecordFailed(c, outcomeRetry, err)
			if permanentRecordError(err) {
				d.quarantine(ctx, c, CodeOutcomeRecordInvalid, err.Error(), false)
			}
		default:
			d.metrics.Retried.WithLabelValues(dest, code).Inc()
			if unsupported {
				d.metrics.UnsupportedWaits.WithLabelValues(dest, code).Inc()
				d.metrics.UnsupportedWaitSecs.WithLabelValues(dest, code).Set(delay.Seconds())
			}
		}
		return
	}
	limitReached := retryable
	if limitReached {
		code = "max_attempts_exceeded"
	}
	d.quarantine(ctx, c, code, cause.Error(), limitReached)
}

// quarantine records the terminal quarantine, its metric and its log line.
func (d *Dispatcher) quarantine(ctx context.Context, c Claimed, code, reason string, limitReached bool) {
	dest := string(c.Member.Destination)
	err := d.store.Quarantine(ctx, c.Fence, code, reason, limitReached)
	switch {
	case errors.Is(err, ErrLeaseLost):
		d.leaseLost(c, outcomeQuarantine)
	case err != nil:
		d.outcomeRecordFailed(c, outcomeQuarantine, err)
	default:
		d.metrics.Quarantined.WithLabelValues(dest, c.EventType, c.EventSchemaVersion, code).Inc()
		// OBS-3: one structured, low-sensitivity line; the event id is a
		// log field (never a metric label), the reason is the normalized code.
		d.log.Error("delivery quarantined", "destination", dest, "consumer", c.Member.ConsumerName,
			"event_type", c.EventType, "schema_version", c.EventSchemaVersion, "event_id", c.EventID,
			"attempt", c.AttemptCount, "code", code)
	}
}

// CodeOutcomeRecordInvalid quarantines a delivery whose outcome the
// database rejects for a reason retrying cannot change.
const CodeOutcomeRecordInvalid = "outcome_record_invalid"

// permanentRecordError reports whether the database rejected an outcome for
// a reason a retry cannot fix: data exceptions (22), integrity violations
// (23) and the outbox's own OWxxx codes, all about the outcome itself.
// Everything else is transient: connection, transaction-rollback, resource
// and shutdown classes (08, 40, 53, 57), errors without a SQLSTATE, and
// syntax or privilege errors (42: a missing grant, a function not yet
// migrated), which say the deployment is wrong, not the delivery. Those
// must not turn an ack the consumer already applied into a terminal
// quarantine; the attempt goes back through lease-expiry recovery until
// the deployment is fixed.
func permanentRecordError(err error) bool {
	code := db.SQLState(err)
	return pgerrcode.IsDataException(code) || pgerrcode.IsIntegrityConstraintViolation(code) || isOutboxCode(code)
}

// outboxCodeClass is the SQLSTATE class of the outbox's own errors
// (outbox.CodeImmutable and the others, OW001..OW019), raised by its
// triggers and functions.
const outboxCodeClass = "OW"

func isOutboxCode(code string) bool {
	return len(code) == 5 && strings.HasPrefix(code, outboxCodeClass)
}

func (d *Dispatcher) outcomeRecordFailed(c Claimed, outcome string, err error) {
	class := recordClassTransient
	if permanentRecordError(err) {
		class = recordClassPermanent
	}
	d.metrics.OutcomeRecordFailures.WithLabelValues(string(c.Member.Destination), outcome, class).Inc()
	d.log.Warn("recording an outcome failed", "destination", string(c.Member.Destination), "outcome", outcome,
		"class", class, "sqlstate", db.SQLState(err), "event_id", c.EventID, "attempt", c.AttemptCount, "error", err)
}

func (d *Dispatcher) leaseLost(c Claimed, outcome string) {
	d.metrics.LeaseLost.WithLabelValues(string(c.Member.Destination), outcome).Inc()
	d.log.Info("late outcome dropped: lease lost", "destination", string(c.Member.Destination), "outcome", outcome, "attempt", c.AttemptCount)
}

// backoff returns min(max, base·2^(attempt-1)) with ±jitter.
func (d *Dispatcher) backoff(attempt int) time.Duration {
	delay := d.cfg.BackoffBase
	for i := 1; i < attempt && delay < d.cfg.BackoffMax; i++ {
		delay *= 2
	}
	delay = min(delay, d.cfg.BackoffMax)
	if j := d.cfg.BackoffJitter; j > 0 {
		delay = time.Duration(float64(delay) * (1 - j + 2*j*rand.Float64()))
	}
	return delay
}
