package outbox_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
)

// The clauses of the delivery transition guard (OB-STORE-6, SQLSTATE OW019,
// outbox.deliveries_prove_transitions in outbox migration 00101), one test
// per clause (issue 37). Each drives, as oceanway_dispatcher (the runtime
// role that owns the delivery state columns), a write that every other
// check lets through, so that only the named clause refuses it: `go run
// ./scripts/guards mutate -run OW019` disables each clause in turn and its
// test must fail. Each asserts OW019 and the message fragment of its own
// clause (one code covers them all).

// transitionRefused asserts that err is the transition guard's refusal
// with the reason of one clause.
func transitionRefused(t *testing.T, err error, reason string) {
	t.Helper()
	requireCode(t, err, outbox.CodeUnprovenTransition)
	require.ErrorIs(t, outbox.TranslateError(err), outbox.ErrUnprovenTransition)
	require.Contains(t, err.Error(), reason)
}

// guardDest is the delivery the tests below move; the event's other
// delivery stays pending, so no ack of it completes the event.
const guardDest = route.BillingFinalizationCoordinator

// claimed leases guardDest in a committed dispatcher transaction (attempt
// start and lease, as the dispatcher's claim does).
func (b forgedBundle) claimed(t *testing.T) attempt {
	t.Helper()
	var a attempt
	require.NoError(t, b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		a = claim(t, ctx, tx, b.event.EventID, guardDest)
		return nil
	}))
	return a
}

// expired claims guardDest and then shortens its lease into the past (a
// lease may always be shortened), committed: a leased delivery whose lease
// has ended.
func (b forgedBundle) expired(t *testing.T) attempt {
	t.Helper()
	a := b.claimed(t)
	require.NoError(t, b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE outbox.outbox_deliveries SET lease_expires_at = now() - interval '1 minute'
			WHERE event_id = $1 AND destination = $2`, b.event.EventID, string(guardDest))
		return err
	}))
	require.Equal(t, "leased", b.status(t, guardDest))
	return a
}

func (b forgedBundle) exec(ctx context.Context, tx pgx.Tx, sql string, args ...any) error {
	_, err := tx.Exec(ctx, sql, append([]any{b.event.EventID, string(guardDest)}, args...)...)
	return err
}

// finish appends a finish of attempt a with outcome and disposition.
func finish(ctx context.Context, tx pgx.Tx, a attempt, outcome, disposition string) error {
	_, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition)
		VALUES ($1, $2, $3)`, a.ID, outcome, disposition)
	return err
}

// leaseStmt is a claim's UPDATE with the attempt id, token, lease end and
// attempt count step as parameters ($3..$6).
const leaseStmt = `UPDATE outbox.outbox_deliveries
	SET status = 'leased', lease_owner = 'guard-test', lease_token = $3, lease_expires_at = $5,
	    current_attempt_id = $4, attempt_count = attempt_count + $6, last_attempt_at = now()
	WHERE event_id = $1 AND destination = $2`

func startAttempt(ctx context.Context, tx pgx.Tx, eventID string, a attempt) error {
	_, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_delivery_attempt_starts (attempt_id, destination, event_id, lease_token)
		VALUES ($1, $2, $3, $4)`, a.ID, string(guardDest), eventID, a.Token)
	return err
}

func freshAttempt() attempt { return attempt{ID: uuid.NewString(), Token: uuid.NewString()} }

// OB-STORE-6, clauses OW019.pending-changes-lease and
// OW019.unproven-transition: a pending delivery whose attempt count changes
// (nothing else) is refused; any refusal reason found raises.
func TestGuard_OW019_PendingDeliveryKeepsItsAttemptCount(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		return b.exec(ctx, tx, `UPDATE outbox.outbox_deliveries SET attempt_count = attempt_count + 1
			WHERE event_id = $1 AND destination = $2`)
	})
	// OW019.pending-changes-lease, OW019.unproven-transition
	transitionRefused(t, err, "a pending delivery changes no lease or attempt column")
}

// OB-STORE-6, clause OW019.claim-reuses-attempt: in one transaction a
// dispatcher claims, retries (finish retry_scheduled, lease released) and
// claims again with the same attempt id and token. The attempt start check
// does not refuse it (the start is this transaction's, of that id and
// token); the fresh attempt id clause does. With a fresh attempt the same
// re-claim commits.
func TestGuard_OW019_ClaimTakesAFreshAttemptID(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	reclaim := func(fresh bool) error {
		return b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
			a := claim(t, ctx, tx, b.event.EventID, guardDest)
			if err := finish(ctx, tx, a, "retryable", "retry_scheduled"); err != nil {
				return err
			}
			if err := b.exec(ctx, tx, `UPDATE outbox.outbox_deliveries
				SET status = 'pending', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
				WHERE event_id = $1 AND destination = $2`); err != nil {
				return err
			}
			if fresh {
				a = freshAttempt()
				if err := startAttempt(ctx, tx, b.event.EventID, a); err != nil {
					return err
				}
			}
			return b.exec(ctx, tx, leaseStmt, a.Token, a.ID, "infinity", 1)
		})
	}
	// OW019.claim-reuses-attempt
	transitionRefused(t, reclaim(false), "a claim takes a fresh attempt id")
	require.Equal(t, "pending", b.status(t, guardDest))
	require.NoError(t, reclaim(true))
	require.Equal(t, "leased", b.status(t, guardDest))
}

// OB-STORE-6, clause OW019.claim-counts-not-one: a claim with its own
// attempt start that adds 2 to the attempt count is refused.
func TestGuard_OW019_ClaimCountsExactlyOneAttempt(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		a := freshAttempt()
		if err := startAttempt(ctx, tx, b.event.EventID, a); err != nil {
			return err
		}
		return b.exec(ctx, tx, leaseStmt, a.Token, a.ID, "infinity", 2)
	})
	// OW019.claim-counts-not-one
	transitionRefused(t, err, "a claim counts exactly one more attempt")
	require.Equal(t, "pending", b.status(t, guardDest))
}

// OB-STORE-6, clause OW019.claim-lease-ended: a claim with its own attempt
// start whose lease has already ended is refused.
func TestGuard_OW019_ClaimLeaseEndsInTheFuture(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		a := freshAttempt()
		if err := startAttempt(ctx, tx, b.event.EventID, a); err != nil {
			return err
		}
		return b.exec(ctx, tx, leaseStmt, a.Token, a.ID, "-infinity", 1)
	})
	// OW019.claim-lease-ended
	transitionRefused(t, err, "a claim takes a lease that ends in the future")
	require.Equal(t, "pending", b.status(t, guardDest))
}

// OB-STORE-6, clause OW019.pending-skips-lease: a pending delivery set
// acknowledged directly — the right envelope digest, the frozen member's
// consumer and receipt, but no lease, no attempt and no finish — is
// refused (the event's other delivery is open, so no publication proof
// objects).
func TestGuard_OW019_PendingIsAcknowledgedOnlyFromLeased(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		return forgedAck(ctx, tx, b.event.EventID, guardDest, b.event.EnvelopeDigest.Value)
	})
	// OW019.pending-skips-lease
	transitionRefused(t, err, "pending → acknowledged: acknowledged only from leased")
	require.Equal(t, "pending", b.status(t, guardDest))
}

// OB-STORE-6, clause OW019.leased-attempt-changes: a leased delivery whose
// attempt count changes without a claim (same lease, same attempt id) is
// refused.
func TestGuard_OW019_LeasedAttemptChangesOnlyByAClaim(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	b.claimed(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		return b.exec(ctx, tx, `UPDATE outbox.outbox_deliveries SET attempt_count = attempt_count + 1
			WHERE event_id = $1 AND destination = $2`)
	})
	// OW019.leased-attempt-changes
	transitionRefused(t, err, "the current attempt of a leased delivery changes only by a claim")
}

// OB-STORE-6, clause OW019.renewal-changes-owner: a renewal of a live lease
// that replaces its owner and token is refused.
func TestGuard_OW019_RenewalKeepsOwnerAndToken(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	b.claimed(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		return b.exec(ctx, tx, `UPDATE outbox.outbox_deliveries
			SET lease_owner = 'thief', lease_token = $3, lease_expires_at = lease_expires_at + interval '1 minute'
			WHERE event_id = $1 AND destination = $2`, uuid.NewString())
	})
	// OW019.renewal-changes-owner
	transitionRefused(t, err, "a renewal keeps the lease owner and token")
}

// OB-STORE-6, clause OW019.renewal-of-expired-lease: a lease that has
// ended is not renewed (shortening it was allowed).
func TestGuard_OW019_ExpiredLeaseIsNotRenewed(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	b.expired(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		return b.exec(ctx, tx, `UPDATE outbox.outbox_deliveries SET lease_expires_at = now() + interval '1 minute'
			WHERE event_id = $1 AND destination = $2`)
	})
	// OW019.renewal-of-expired-lease
	transitionRefused(t, err, "an expired lease cannot be renewed")
}

// OB-STORE-6, clause OW019.ack-changes-lease: an ack with its acknowledged
// finish and the event's digest, under a live lease, that also extends the
// lease is refused.
func TestGuard_OW019_AckKeepsItsLease(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	a := b.claimed(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		if err := finish(ctx, tx, a, "acknowledged", "none"); err != nil {
			return err
		}
		return ackExtending(ctx, tx, b)
	})
	// OW019.ack-changes-lease
	transitionRefused(t, err, "an ack keeps the lease it was fenced by")
	require.Equal(t, "leased", b.status(t, guardDest))
}

// ackExtending is forgedAck with the event's digest that also moves the
// lease end an hour later.
func ackExtending(ctx context.Context, tx pgx.Tx, b forgedBundle) error {
	bind, err := route.BindingOf(guardDest)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE outbox.outbox_deliveries
		SET status = 'acknowledged', delivered_at = now(), ack_consumer_name = $3, ack_receipt_type = $4,
		    ack_receipt_key = 'extending', ack_receipt_schema_version = $5, ack_receipt_digest_algorithm_version = 'jcs-sha256-v1',
		    ack_receipt_digest = repeat('f', 64), ack_event_envelope_digest_algorithm_version = 'jcs-sha256-v1',
		    ack_event_envelope_sha256 = $6, lease_expires_at = lease_expires_at + interval '1 hour'
		WHERE event_id = $1 AND destination = $2`,
		b.event.EventID, string(guardDest), bind.ConsumerName, bind.ReceiptType, bind.ReceiptSchemaVersion,
		b.event.EnvelopeDigest.Value)
	return err
}

// OB-STORE-6, clause OW019.ack-after-lease-expiry: an ack with its
// acknowledged finish and the event's digest, accepted after its lease
// ended, is refused.
func TestGuard_OW019_AckNeedsALiveLease(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	a := b.expired(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		if err := finish(ctx, tx, a, "acknowledged", "none"); err != nil {
			return err
		}
		return forgedAck(ctx, tx, b.event.EventID, guardDest, b.event.EnvelopeDigest.Value)
	})
	// OW019.ack-after-lease-expiry
	transitionRefused(t, err, "an ack needs a lease that has not expired")
	require.Equal(t, "leased", b.status(t, guardDest))
}

// OB-STORE-6, the ack's frozen member: an ack whose consumer is not the
// frozen member's is refused by the table CHECK
// outbox_deliveries_ack_matches_member (23514) before the transition guard
// runs; that CHECK owns the rule (outbox migration 00101 removed the
// guard's unreachable branch): clause OB-STORE-6.ack-matches-member.
func TestGuard_AckFrozenMemberIsTheTableChecks(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	a := b.claimed(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		if err := finish(ctx, tx, a, "acknowledged", "none"); err != nil {
			return err
		}
		return b.exec(ctx, tx, `UPDATE outbox.outbox_deliveries
			SET status = 'acknowledged', delivered_at = now(), ack_consumer_name = 'operations_projector',
			    ack_receipt_type = expected_receipt_type, ack_receipt_key = 'k',
			    ack_receipt_schema_version = expected_receipt_schema_version,
			    ack_receipt_digest_algorithm_version = 'jcs-sha256-v1', ack_receipt_digest = repeat('f', 64),
			    ack_event_envelope_digest_algorithm_version = 'jcs-sha256-v1', ack_event_envelope_sha256 = $3
			WHERE event_id = $1 AND destination = $2`, b.event.EnvelopeDigest.Value)
	})
	requireCode(t, err, pgerrcode.CheckViolation)
	require.Contains(t, err.Error(), "outbox_deliveries_ack_matches_member")
	require.Equal(t, "leased", b.status(t, guardDest))
}

// OB-STORE-6, clause OW019.retry-keeps-lease: a retry back to pending with
// its retry_scheduled finish that keeps its lease columns is refused.
func TestGuard_OW019_RetryReleasesTheLease(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	a := b.claimed(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		if err := finish(ctx, tx, a, "retryable", "retry_scheduled"); err != nil {
			return err
		}
		return b.exec(ctx, tx, `UPDATE outbox.outbox_deliveries SET status = 'pending'
			WHERE event_id = $1 AND destination = $2`)
	})
	// OW019.retry-keeps-lease
	transitionRefused(t, err, "a delivery returns to pending without its lease")
	require.Equal(t, "leased", b.status(t, guardDest))
}

// OB-STORE-6, clause OW019.retry-without-finish: leased → pending with the
// lease released but no finish row is refused.
func TestGuard_OW019_RetryNeedsAFinish(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	b.claimed(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		return b.exec(ctx, tx, `UPDATE outbox.outbox_deliveries
			SET status = 'pending', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
			WHERE event_id = $1 AND destination = $2`)
	})
	// OW019.retry-without-finish
	transitionRefused(t, err, "pending after a lease needs a retry_scheduled or reclaimable finish")
	require.Equal(t, "leased", b.status(t, guardDest))
}

// OB-STORE-6, clause OW019.quarantine-without-finish: a quarantine with its
// quarantine row (so OW014 is satisfied) but no quarantined finish is
// refused.
func TestGuard_OW019_QuarantineNeedsAQuarantinedFinish(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	a := b.claimed(t)
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		if err := b.exec(ctx, tx, `INSERT INTO outbox.outbox_quarantine (destination, event_id, reason,
				event_envelope_digest_algorithm_version, event_envelope_sha256, attempt_id)
			SELECT $2, e.event_id, 'guard test', e.event_envelope_digest_algorithm_version, e.event_envelope_sha256, $3
			  FROM outbox.outbox_events e WHERE e.event_id = $1`, a.ID); err != nil {
			return err
		}
		return b.exec(ctx, tx, `UPDATE outbox.outbox_deliveries
			SET status = 'quarantined', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
			WHERE event_id = $1 AND destination = $2`)
	})
	// OW019.quarantine-without-finish
	transitionRefused(t, err, "a quarantine needs a quarantined finish of the leased attempt")
	require.Equal(t, "leased", b.status(t, guardDest))
}
