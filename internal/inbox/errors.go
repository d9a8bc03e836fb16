package inbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/transport"
)

// Normalized, low-cardinality error codes of the shared inbox (attempt
// finishes, metrics, logs). Consumers add their own.
const (
	// Non-retryable: the delivery itself is wrong.
	CodeEnvelopeInvalid        = "envelope_invalid"
	CodeUnknownEventPair       = "unknown_event_pair"
	CodeEnvelopeDigestMismatch = "envelope_digest_mismatch"
	CodeDeliveryMismatch       = "delivery_envelope_mismatch"
	CodeMemberMismatch         = "member_mismatch"
	CodeEventDigestConflict    = "event_digest_conflict"
	CodeStoredReceiptInvalid   = "stored_receipt_invalid"
	CodeReceiptInvariant       = "receipt_invariant"

	// Retryable: temporary inability, nothing written (CON-2).
	CodeLockUnavailable       = "lock_unavailable"
	CodeSerializationConflict = "serialization_conflict"
	CodeDatabaseUnavailable   = "database_unavailable"
	CodeTimeout               = "timeout"
	CodeCanceled              = "canceled"
	CodeStoreError            = "consumer_store_error"
)

// Sentinels wrapped by the inbox's classified errors.
var (
	// ErrEventDigestConflict: a receipt exists for the event id with another
	// envelope digest (CON-1).
	ErrEventDigestConflict = errors.New("inbox: same event id, different envelope digest")
	// ErrMemberMismatch: the frozen member does not belong to this consumer
	// or to the delivered event pair.
	ErrMemberMismatch = errors.New("inbox: frozen member does not match the consumer or the event")
	// ErrDeliveryMismatch: the delivery's event id/type/schema differ from
	// the envelope it carries.
	ErrDeliveryMismatch = errors.New("inbox: delivery coordinates differ from the envelope")
	// ErrReceiptInvariant: a consumer produced a receipt that does not match
	// the event or its key.
	ErrReceiptInvariant = errors.New("inbox: receipt does not match the event or its key")
	// ErrStoredReceiptInvalid: a stored receipt no longer decodes or verifies.
	ErrStoredReceiptInvalid = errors.New("inbox: stored receipt does not decode or verify")
)

// ToDeliveryError turns any error of a consumer transaction into a
// classified delivery error (transport.Classified). Errors that already
// carry a class keep it. Temporary database conditions are retryable with a
// specific code; everything else unclassified is retryable with
// CodeStoreError, never silently non-retryable.
func ToDeliveryError(err error) error {
	if err == nil {
		return nil
	}
	var c transport.Classified
	if errors.As(err, &c) {
		return err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return transport.Retryable(CodeTimeout, err)
	case errors.Is(err, context.Canceled):
		return transport.Retryable(CodeCanceled, err)
	}
	state := db.SQLState(err)
	switch {
	case state == pgerrcode.LockNotAvailable:
		return transport.Retryable(CodeLockUnavailable, err)
	case state == pgerrcode.QueryCanceled: // statement or lock timeout
		return transport.Retryable(CodeTimeout, err)
	case pgerrcode.IsTransactionRollback(state): // serialization failure, deadlock
		return transport.Retryable(CodeSerializationConflict, err)
	case pgerrcode.IsConnectionException(state), pgerrcode.IsInsufficientResources(state), isServerShutdown(state):
		return transport.Retryable(CodeDatabaseUnavailable, err)
	case state == "":
		var connErr *pgconn.ConnectError
		if errors.As(err, &connErr) || pgconn.SafeToRetry(err) {
			return transport.Retryable(CodeDatabaseUnavailable, err)
		}
	}
	return transport.Retryable(CodeStoreError, err)
}

// isServerShutdown reports the operator-intervention codes that mean the
// server is going away or not yet accepting work (57P01..57P05), as opposed
// to 57014 query_canceled and 57000.
func isServerShutdown(state string) bool {
	switch state {
	case pgerrcode.AdminShutdown, pgerrcode.CrashShutdown, pgerrcode.CannotConnectNow,
		pgerrcode.DatabaseDropped, pgerrcode.IdleSessionTimeout:
		return true
	}
	return false
}

func nonRetryable(code string, sentinel error, cause error) error {
	if cause == nil {
		return transport.NonRetryable(code, sentinel)
	}
	return transport.NonRetryable(code, fmt.Errorf("%w: %w", sentinel, cause))
}
