package dispatcher_test

import (
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// xmins returns the transaction that wrote each event's delivery row.
func (b *bundle) xmins(t *testing.T, ids []string) map[string]bool {
	t.Helper()
	rows, err := b.producer.Query(t.Context(), `SELECT xmin::text FROM outbox.outbox_deliveries WHERE event_id = ANY($1::uuid[])`, ids)
	require.NoError(t, err)
	xs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	out := map[string]bool{}
	for _, x := range xs {
		out[x] = true
	}
	return out
}

// OB-PUB-1 / OB-CLAIM-2 (issue 17, outbox migration 00100): an ack batch is
// one call of outbox.ack_and_publish_batch, committed as one transaction
// (every delivery of the batch carries one xmin, acknowledged and
// published). A session whose default isolation is REPEATABLE READ, where
// the call alone would be refused (OW013), gets an explicit READ COMMITTED
// transaction instead — still one transaction, not one per ack through the
// one-by-one fallback. Both as the dispatcher role.
func TestAckBatch_OBPUB1_OneTransactionPerBatch(t *testing.T) {
	t.Parallel()
	for name, params := range map[string]map[string]string{
		"read committed":             nil,
		"repeatable read by default": {"default_transaction_isolation": "repeatable read"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ids := b.appendRuns(t, 3)
			pool := dbtest.RolePoolWithParams(t, b.producerDSN, outboxschema.RoleDispatcher, params)
			store := dispatcher.NewStore(pool, 5*time.Second)
			acks := b.verifiedAcks(t, b.claim(t, "w", 3, lease))
			for i, err := range store.AckBatch(t.Context(), acks) {
				require.NoError(t, err, "ack %d", i)
			}
			for _, id := range ids {
				d := b.delivery(t, id)
				require.Equal(t, "acknowledged", d.Status)
				require.True(t, d.Published)
			}
			require.Len(t, b.xmins(t, ids), 1, "the batch commits as one transaction")
			b.invariants(t)
		})
	}
}

// OB-PUB-1 (outbox migration 00100): outbox.ack_and_publish_batch refuses
// to run outside READ COMMITTED (OW013) and refuses malformed arrays
// (invalid_parameter_value); either way nothing changes. As the dispatcher
// role.
func TestAckAndPublishBatch_OBPUB1_RefusesWrongIsolationAndMalformedBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ids := b.appendRuns(t, 2)
	claims := b.claim(t, "w", 2, lease)
	require.Len(t, claims, 2)
	pool := dbtest.RolePool(t, b.producerDSN, outboxschema.RoleDispatcher)
	two := func(f func(dispatcher.Claimed) string) []string { return []string{f(claims[0]), f(claims[1])} }
	dests := two(func(c dispatcher.Claimed) string { return string(c.Destination) })
	events := two(func(c dispatcher.Claimed) string { return c.EventID })
	tokens := two(func(c dispatcher.Claimed) string { return c.LeaseToken })
	text := []string{"x", "x"}
	call := func(q db.Executor, attempts []any, ackEvents []string) error {
		_, err := q.Exec(ctx, `SELECT * FROM outbox.ack_and_publish_batch($1::text[], $2::uuid[], $3::uuid[], $4::uuid[],
			$5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
			$13::text[], $14::uuid[], $15::text[])`,
			dests, events, attempts, tokens, text, text, text, text, text, text, text, text, dests, ackEvents, text)
		return err
	}
	attempts := []any{claims[0].AttemptID, claims[1].AttemptID}

	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	require.Equal(t, outbox.CodeIsolationLevel, db.SQLState(call(tx, attempts, events)))
	require.NoError(t, tx.Rollback(ctx))

	for name, err := range map[string]error{
		"lengths differ":   call(pool, attempts, events[:1]),
		"a NULL array":     call(pool, attempts, nil),
		"a NULL attempt":   call(pool, []any{claims[0].AttemptID, nil}, events),
		"no attempt array": call(pool, nil, events),
	} {
		require.Equal(t, pgerrcode.InvalidParameterValue, db.SQLState(err), name) // OB-PUB-1.ack-publish-arguments
	}
	b.untouched(t, ids...)
	b.invariants(t)
}
