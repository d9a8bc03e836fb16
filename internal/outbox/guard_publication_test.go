package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
)

// OB-PUB-1, the commit-time publication proof (outbox.prove_publication),
// as oceanway_dispatcher: acknowledging the last open mandatory delivery by
// hand without recording published_at cannot commit, clause
// OW015.published-at-not-recorded; a delivery acknowledged with an envelope
// digest that is not the event's cannot commit either, clause
// OW019.ack-envelope-digest (the transition guard shares OW019: the
// message tells them apart).
func TestGuard_OBPUB1_PublicationProofClauses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ev := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0]
	err := db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		setRole(t, ctx, tx, schema.RoleDispatcher)
		a := ack{EventID: ev.EventID, Destination: route.CoreOperations, Attempt: claim(t, ctx, tx, ev.EventID, route.CoreOperations),
			ReceiptRef: "r", ReceiptDigest: strings.Repeat("d", 64), EnvelopeSHA: ev.EnvelopeDigest.Value}
		a.write(t, ctx, tx) // and no record_publication
		return nil
	})
	requireRefusal(t, err, outbox.CodePublicationMissing, "is acknowledged but published_at was not recorded")

	fb := setupForged(t) // two mandatory deliveries: acknowledging one completes nothing
	err = fb.asRole(t, schema.RoleDispatcher, func(ctx context.Context, tx pgx.Tx) error {
		a := claim(t, ctx, tx, fb.event.EventID, route.CoreOperations)
		if _, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_delivery_attempt_finishes (attempt_id, outcome, retry_disposition)
			VALUES ($1, 'acknowledged', 'none')`, a.ID); err != nil {
			return err
		}
		return forgedAck(ctx, tx, fb.event.EventID, route.CoreOperations, strings.Repeat("e", 64))
	})
	requireRefusal(t, err, outbox.CodeUnprovenTransition, "became acknowledged with an envelope digest that is not the event's stored one")
}

// OB-PUB-1, the one-ack function outbox.record_publication (00102), as
// oceanway_dispatcher: it runs under READ COMMITTED only, clause
// OW013.record-publication-isolation (the batch function it calls has its
// own isolation check, with its own message); every argument is required,
// which the batch function refuses for it (clause
// OW009.publication-batch-arguments: the one-ack function's own copy of
// that check was indistinguishable from its absence and is gone).
func TestGuard_OBPUB1_RecordPublicationClauses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	ev := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0]
	call := func(iso pgx.TxIsoLevel, eventID any) error {
		return db.WithTxOptions(ctx, b.pool, pgx.TxOptions{IsoLevel: iso}, func(ctx context.Context, tx pgx.Tx) error {
			setRole(t, ctx, tx, schema.RoleDispatcher)
			_, err := tx.Exec(ctx, `SELECT outbox.record_publication($1::uuid, 'core_operations', 'c', gen_random_uuid(), gen_random_uuid(),
				'R', 'k', '1', 'jcs-sha256-v1', repeat('0', 64), 'jcs-sha256-v1', repeat('0', 64))`, eventID)
			return err
		})
	}
	requireRefusal(t, call(pgx.ReadCommitted, nil), outbox.CodePublicationInvalid, "outbox.record_publication: every argument is required")
	requireRefusal(t, call(pgx.RepeatableRead, ev.EventID), outbox.CodeIsolationLevel, "outbox.record_publication runs under READ COMMITTED")
	// Under READ COMMITTED with every argument the batch itself answers
	// (here: no such acknowledged delivery, OW009 with its own message).
	err := call(pgx.ReadCommitted, ev.EventID)
	requireCode(t, err, outbox.CodePublicationInvalid)
	require.NotContains(t, err.Error(), "every argument is required")
}
