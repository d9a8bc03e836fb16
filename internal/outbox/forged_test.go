package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

// The forged writes of issue 18, each run as the project's own role against
// an open delivery of an event with two mandatory deliveries
// (billing.finalization-resolution.applied@1: core_operations and
// billing_finalization_coordinator), each refused by the database with a
// stable SQLSTATE, so the fence no longer rests on our own SQL alone.

// forgedBundle is a populated outbox: one event with two open mandatory
// deliveries.
type forgedBundle struct {
	*testBundle
	event outbox.AppendedEvent
}

func setupForged(t *testing.T) forgedBundle {
	t.Helper()
	b := setup(t)
	e := appendTx(t, b.pool, freshSample(envelope.BillingFinalizationResolutionAppliedV1)).Events[0]
	require.Len(t, e.Deliveries, 2, "the pair has two mandatory deliveries")
	return forgedBundle{testBundle: b, event: e}
}

// asRole runs fn in one transaction as role; the error is fn's or COMMIT's.
func (b forgedBundle) asRole(t *testing.T, role string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	t.Helper()
	return db.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
		setRole(t, ctx, tx, role)
		return fn(ctx, tx)
	})
}

func (b forgedBundle) status(t *testing.T, dest route.Destination) string {
	t.Helper()
	var s string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT status FROM outbox.outbox_deliveries
		WHERE event_id = $1 AND destination = $2`, b.event.EventID, string(dest)).Scan(&s))
	return s
}

func (b forgedBundle) published(t *testing.T) bool {
	t.Helper()
	var published bool
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT published_at IS NOT NULL FROM outbox.outbox_events
		WHERE event_id = $1`, b.event.EventID).Scan(&published))
	return published
}

// OB-STORE-6 (issue 18, forged write 1): as oceanway_dispatcher, a pending
// delivery set to leased with a new token and attempt id and no attempt
// start row is refused (OW019); so is a lease whose start was written by
// another transaction. The dispatcher's own claim (lease + start in one
// transaction) commits.
func TestForgedLeaseWithoutAttemptStart_OBSTORE6(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	lease := func(ctx context.Context, tx pgx.Tx, a attempt) error {
		_, err := tx.Exec(ctx, `UPDATE outbox.outbox_deliveries
			SET status = 'leased', lease_owner = 'forger', lease_token = $3, lease_expires_at = now() + interval '1 minute',
			    current_attempt_id = $4, attempt_count = attempt_count + 1, last_attempt_at = now()
			WHERE event_id = $1 AND destination = $2`, b.event.EventID, string(route.CoreOperations), a.Token, a.ID)
		return err
	}
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		return lease(ctx, tx, attempt{ID: uuid.NewString(), Token: uuid.NewString()})
	})
	requireCode(t, err, outbox.CodeUnprovenTransition) // OW019.claim-without-start: no start
	require.ErrorIs(t, outbox.TranslateError(err), outbox.ErrUnprovenTransition)
	require.Contains(t, err.Error(), "a lease needs the attempt start")
	require.Equal(t, "pending", b.status(t, route.CoreOperations))

	// Reusing an old token: not a fresh lease.
	err = b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE outbox.outbox_deliveries SET status = 'leased', lease_owner = 'forger',
			lease_token = '00000000-0000-4000-8000-000000000001', lease_expires_at = now() - interval '1 minute',
			current_attempt_id = gen_random_uuid(), attempt_count = attempt_count + 1
			WHERE event_id = $1 AND destination = 'core_operations'`, b.event.EventID)
		return err
	})
	requireCode(t, err, outbox.CodeUnprovenTransition) // a lease that is already over

	// The start written in an earlier transaction is not this claim's start.
	a := attempt{ID: uuid.NewString(), Token: uuid.NewString()}
	require.NoError(t, b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_delivery_attempt_starts (attempt_id, destination, event_id, lease_token)
			VALUES ($1, 'core_operations', $2, $3)`, a.ID, b.event.EventID, a.Token)
		return err
	}))
	err = b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error { return lease(ctx, tx, a) })
	requireCode(t, err, outbox.CodeUnprovenTransition) // OW019.claim-without-start: another transaction's start
	require.Contains(t, err.Error(), "a lease needs the attempt start")
	require.Equal(t, "pending", b.status(t, route.CoreOperations))

	// The controlled path: lease and start in one transaction.
	require.NoError(t, b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		claim(t, ctx, tx, b.event.EventID, route.CoreOperations)
		return nil
	}))
	require.Equal(t, "leased", b.status(t, route.CoreOperations))
}

// forgedAck sets one delivery acknowledged with a complete frozen ack whose
// envelope digest is sha, touching nothing else.
func forgedAck(ctx context.Context, tx pgx.Tx, eventID string, dest route.Destination, sha string) error {
	bind, err := route.BindingOf(dest)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE outbox.outbox_deliveries
		SET status = 'acknowledged', delivered_at = now(), ack_consumer_name = $3, ack_receipt_type = $4,
		    ack_receipt_key = 'forged', ack_receipt_schema_version = $5, ack_receipt_digest_algorithm_version = 'jcs-sha256-v1',
		    ack_receipt_digest = repeat('f', 64), ack_event_envelope_digest_algorithm_version = 'jcs-sha256-v1',
		    ack_event_envelope_sha256 = $6
		WHERE event_id = $1 AND destination = $2`,
		eventID, string(dest), bind.ConsumerName, bind.ReceiptType, bind.ReceiptSchemaVersion, sha)
	return err
}

// OB-STORE-6, OB-PUB-1 (issue 18, forged write 2): as oceanway_dispatcher,
// one delivery of a two-delivery event set acknowledged with no lease, no
// attempt, no finish and an envelope digest that is not the event's is
// refused (OW019) — and so is each weaker forgery: under a valid lease but
// without a finish, or with the finish but the wrong digest. The other
// delivery's correct ack then leaves the event unpublished.
func TestForgedAckWithoutLeaseOrFinish_OBSTORE6(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	wrong := strings.Repeat("e", 64)
	forged := route.BillingFinalizationCoordinator

	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		return forgedAck(ctx, tx, b.event.EventID, forged, wrong)
	})
	requireCode(t, err, outbox.CodeUnprovenTransition) // no lease, no attempt, no finish
	require.Equal(t, "pending", b.status(t, forged))

	var held attempt
	require.NoError(t, b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		held = claim(t, ctx, tx, b.event.EventID, forged)
		return nil
	}))
	err = b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		return forgedAck(ctx, tx, b.event.EventID, forged, b.event.EnvelopeDigest.Value)
	})
	requireCode(t, err, outbox.CodeUnprovenTransition) // valid lease, no finish: OW019.ack-without-finish
	require.Contains(t, err.Error(), "an ack needs an acknowledged finish")
	err = b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition)
			VALUES ($1, 'acknowledged', 'none')`, held.ID); err != nil {
			return err
		}
		return forgedAck(ctx, tx, b.event.EventID, forged, wrong)
	})
	requireCode(t, err, outbox.CodeUnprovenTransition) // finish, but not the event's digest: at COMMIT
	require.Equal(t, "leased", b.status(t, forged))

	// The sibling's correct ack: the event is not complete, so not published.
	var a attempt
	require.NoError(t, b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		a = claim(t, ctx, tx, b.event.EventID, route.CoreOperations)
		return nil
	}))
	good := ack{EventID: b.event.EventID, Destination: route.CoreOperations, Attempt: a, ReceiptRef: "r1",
		ReceiptDigest: strings.Repeat("d", 64), EnvelopeSHA: b.event.EnvelopeDigest.Value}
	require.NoError(t, b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		good.write(t, ctx, tx)
		res, err := outbox.RecordPublicationTx(ctx, tx, good.params(t))
		require.Equal(t, outbox.PublicationNotComplete, res)
		return err
	}))
	require.False(t, b.published(t))
}

// OB-PUB-1 (issue 18, item 2): record_publication counts a sibling as done
// only with its proof. A sibling acknowledged by hand with the triggers
// switched off (what the guards above now refuse) — no finish, a digest that
// is not the event's — makes the correct ack of the last delivery fail with
// OW009 instead of answering complete; published_at stays NULL.
func TestRecordPublicationRequiresProvenSiblings_OBPUB1(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	ctx := t.Context()
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `ALTER TABLE outbox.outbox_deliveries DISABLE TRIGGER USER`); err != nil {
			return err
		}
		if err := forgedAck(ctx, tx, b.event.EventID, route.BillingFinalizationCoordinator, strings.Repeat("e", 64)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `ALTER TABLE outbox.outbox_deliveries ENABLE TRIGGER USER`)
		return err
	}))
	var a attempt
	require.NoError(t, b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		a = claim(t, ctx, tx, b.event.EventID, route.CoreOperations)
		return nil
	}))
	good := ack{EventID: b.event.EventID, Destination: route.CoreOperations, Attempt: a, ReceiptRef: "r1",
		ReceiptDigest: strings.Repeat("d", 64), EnvelopeSHA: b.event.EnvelopeDigest.Value}
	err := b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		good.write(t, ctx, tx)
		_, err := outbox.RecordPublicationTx(ctx, tx, good.params(t))
		return err
	})
	requireCode(t, err, outbox.CodePublicationInvalid) // OW009.publication-unproven-sibling
	require.Contains(t, err.Error(), "billing_finalization_coordinator")
	require.False(t, b.published(t))
	require.Equal(t, "leased", b.status(t, route.CoreOperations))
}

// OB-PUB-1, OB-STORE-3 (issue 17: the publication function trusts the
// transition guard for a row version its own transaction wrote): a sibling
// acknowledged by hand with the triggers switched off cannot be made to look
// acknowledged in the ack's transaction by an UPDATE that changes nothing —
// a terminal delivery takes no UPDATE at all (OW008), as the dispatcher and
// as the table owner — so the correct ack of the last delivery still meets
// the sibling proof (OW009) and published_at stays NULL.
func TestNoOpUpdateCannotLaunderForgedSibling_OBPUB1(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	ctx := t.Context()
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `ALTER TABLE outbox.outbox_deliveries DISABLE TRIGGER USER`); err != nil {
			return err
		}
		if err := forgedAck(ctx, tx, b.event.EventID, route.BillingFinalizationCoordinator, b.event.EnvelopeDigest.Value); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `ALTER TABLE outbox.outbox_deliveries ENABLE TRIGGER USER`)
		return err
	}))
	noOp := `UPDATE outbox.outbox_deliveries SET status = status WHERE event_id = $1 AND destination = $2`
	err := db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error { // as the table owner
		_, err := tx.Exec(ctx, noOp, b.event.EventID, string(route.BillingFinalizationCoordinator))
		return err
	})
	requireCode(t, err, outbox.CodeTerminalDelivery) // OW008.delivery-terminal

	var a attempt
	require.NoError(t, b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		a = claim(t, ctx, tx, b.event.EventID, route.CoreOperations)
		return nil
	}))
	good := ack{EventID: b.event.EventID, Destination: route.CoreOperations, Attempt: a, ReceiptRef: "r1",
		ReceiptDigest: strings.Repeat("d", 64), EnvelopeSHA: b.event.EnvelopeDigest.Value}
	err = b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		good.write(t, ctx, tx)
		if _, err := tx.Exec(ctx, noOp, b.event.EventID, string(route.BillingFinalizationCoordinator)); err != nil {
			return err
		}
		_, err := outbox.RecordPublicationTx(ctx, tx, good.params(t))
		return err
	})
	requireCode(t, err, outbox.CodeTerminalDelivery)
	err = b.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		good.write(t, ctx, tx)
		_, err := outbox.RecordPublicationTx(ctx, tx, good.params(t))
		return err
	})
	requireCode(t, err, outbox.CodePublicationInvalid)
	require.Contains(t, err.Error(), "billing_finalization_coordinator")
	require.False(t, b.published(t))
	require.Equal(t, "leased", b.status(t, route.CoreOperations))
}

// OB-STORE-2 (issue 18, forged write 3): as oceanway_producer, an event
// whose event_payload — or any other column derived from the envelope —
// contradicts its own stored envelope is refused on insert (OW018).
//
// Clauses: OW018.event-contradicts-envelope and one per column (the
// message names it): OW018.envelope-event-payload, OW018.envelope-event-type,
// OW018.envelope-schema-version, OW018.envelope-aggregate-type,
// OW018.envelope-aggregate-id, OW018.envelope-aggregate-revision,
// OW018.envelope-tenant-kind, OW018.envelope-tenant-id,
// OW018.envelope-workspace-id, OW018.envelope-project-id,
// OW018.envelope-correlation-id, OW018.envelope-causation-id,
// OW018.envelope-operation-id, OW018.envelope-occurred-at,
// OW018.envelope-event-id; OW018.envelope-not-object below.
func TestForgedEventContradictsEnvelope_OBSTORE2(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	for column, value := range map[string]string{
		"event_payload":      `'{"forged":true}'`,
		"event_type":         `'wallet.reserved@2.0'`,
		"schema_version":     `'9'`,
		"aggregate_type":     `'other'`,
		"aggregate_id":       `'other'`,
		"aggregate_revision": `2`,
		"tenant_kind":        `'user'`,
		"tenant_id":          `'other'`,
		"workspace_id":       `'other'`,
		"project_id":         `'p'`,
		"correlation_id":     `'other'`,
		"causation_id":       `'other'`,
		"operation_id":       `'other'`,
		"occurred_at":        `'2026-01-01T00:00:00.000001Z'`,
		"event_id":           `'` + uuid.NewString() + `'`,
		"event_envelope":     `'[]'`, // OW018.envelope-not-object
	} {
		t.Run(column, func(t *testing.T) {
			stmt := rawEventWith(uuid.NewString(), 1, map[string]string{column: value})
			err := b.asRole(t, schema.RoleProducer, func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, stmt)
				return err
			})
			requireCode(t, err, outbox.CodeEnvelopeContradiction)
			require.ErrorIs(t, outbox.TranslateError(err), outbox.ErrEnvelopeContradiction)
			require.Contains(t, err.Error(), "column "+column)
		})
	}
	// The unaltered row agrees with its envelope: it fails only later, at
	// COMMIT, for lack of delivery rows.
	err := b.asRole(t, schema.RoleProducer, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, rawEvent(uuid.NewString(), 1))
		return err
	})
	requireCode(t, err, outbox.CodeDeliverySetMismatch)
}

// OB-STORE-2 (issue 17, item 3: what the immutability triggers cost per
// row): the append's event checks (envelope OW018, archived id OWR03,
// producer OWP01) run once per statement over the statement's new rows, not
// once per row: appending 20 events as the producer role in one AppendTx
// calls outbox.check_appended_events once, and no per-row check function at
// all (this transaction's own function counters; migration 00099).
func TestAppend_OBSTORE2_EventChecksRunOncePerStatement(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	events := make([]envelope.Envelope, 20)
	for i := range events {
		events[i] = freshSample(envelope.RunCreatedV2)
	}
	err := db.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SET LOCAL track_functions = 'pl'`)
		require.NoError(t, err)
		setRole(t, ctx, tx, schema.RoleProducer)
		// The backend's own counters, read around the append (they may
		// still hold calls of earlier transactions not yet reported).
		calls := func() (statementChecks, rowChecks int64) {
			require.NoError(t, tx.QueryRow(ctx, `SELECT
				coalesce(pg_stat_get_xact_function_calls('outbox.check_appended_events'::regproc), 0),
				coalesce(pg_stat_get_xact_function_calls('outbox.outbox_events_check_envelope'::regproc), 0)
				  + coalesce(pg_stat_get_xact_function_calls('outbox.outbox_events_not_archived'::regproc), 0)`).
				Scan(&statementChecks, &rowChecks))
			return statementChecks, rowChecks
		}
		statementBefore, rowBefore := calls()
		_, err = release.AppendTx(ctx, tx, events...)
		require.NoError(t, err)
		statementAfter, rowAfter := calls()
		require.Equal(t, int64(1), statementAfter-statementBefore, "one call of the event checks for the append statement")
		require.Zero(t, rowAfter-rowBefore, "no per-row event check")
		return nil
	})
	require.NoError(t, err)
	// Its plan is estimated from guesses (a transition table, small tables
	// never analyzed) high enough for JIT with inlining: about a second per
	// append of 100 events unless the function turns JIT off.
	var noJIT bool
	require.NoError(t, b.pool.QueryRow(t.Context(),
		`SELECT 'jit=off' = ANY(proconfig) FROM pg_proc WHERE oid = 'outbox.check_appended_events'::regproc`).Scan(&noJIT))
	require.True(t, noJIT, "outbox.check_appended_events runs with jit = off")
}
