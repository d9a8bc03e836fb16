package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
)

// OB-PUB-1, clause OW013.ack-publish-isolation (outbox migration 00101):
// outbox.ack_and_publish_batch, called as oceanway_dispatcher under
// REPEATABLE READ with an ack whose fence holds, refuses before any write,
// with its own message (the published_at function it calls would refuse
// too, later and with its own). The transaction is rolled back on every
// path, so a failed assertion cannot leave the pool busy.
func TestGuard_OW013_AckAndPublishBatchRunsUnderReadCommitted(t *testing.T) {
	t.Parallel()
	b := setupForged(t)
	a := b.claimed(t)
	bind, err := route.BindingOf(guardDest)
	require.NoError(t, err)
	ctx := t.Context()
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	setRole(t, ctx, tx, schema.RoleDispatcher)
	one := func(s string) []string { return []string{s} }
	_, err = tx.Exec(ctx, `SELECT * FROM outbox.ack_and_publish_batch($1::text[], $2::uuid[], $3::uuid[], $4::uuid[],
		$5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
		$13::text[], $14::uuid[], $15::text[])`,
		one(string(guardDest)), one(b.event.EventID), one(a.ID), one(a.Token), one(bind.ConsumerName), one(bind.ReceiptType),
		one("receipt-guard"), one(bind.ReceiptSchemaVersion), one("jcs-sha256-v1"), one(strings.Repeat("f", 64)),
		one("jcs-sha256-v1"), one(b.event.EnvelopeDigest.Value), one(string(guardDest)), one(b.event.EventID), one(bind.ReceiptType))
	requireCode(t, err, outbox.CodeIsolationLevel) // OW013.ack-publish-isolation
	require.Contains(t, err.Error(), "ack_and_publish_batch runs under READ COMMITTED")
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, "leased", b.status(t, guardDest))
}
