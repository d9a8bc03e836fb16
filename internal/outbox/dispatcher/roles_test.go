package dispatcher_test

import (
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// dispatcherRolePool runs every session as oceanway_dispatcher.
func dispatcherRolePool(t *testing.T, dsn string) *pgxpool.Pool {
	return dbtest.RolePool(t, dsn, outboxschema.RoleDispatcher)
}

// OB-STORE-6: every dispatcher statement (claim, renew, retry, quarantine,
// recovery, single and batched acks with the published_at function) runs
// under the dispatcher role's grants, and that role can neither set
// published_at nor rewrite an event.
func TestRoles_OBSTORE6_DispatcherRoleRunsEveryStatement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	ids := b.appendRuns(t, 5)
	pool := dispatcherRolePool(t, b.producerDSN)
	store := dispatcher.NewStore(pool, 5*time.Second)

	claims, err := store.Claim(ctx, dispatcher.ClaimParams{Owner: "role", Limit: 5, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, claims, 5)
	require.NoError(t, store.Renew(ctx, claims[0].Fence, time.Hour))
	require.NoError(t, store.Retry(ctx, claims[0].Fence, time.Hour, "owner_unavailable"))
	require.NoError(t, store.Quarantine(ctx, claims[1].Fence, "unknown_pair", "no such pair", false))
	res, err := b.consumer.Deliver(ctx, claims[2].Delivery())
	require.NoError(t, err)
	require.NoError(t, store.VerifyAndAck(ctx, claims[2], res))
	var batch []dispatcher.VerifiedAck
	for _, c := range claims[3:] {
		res, err := b.consumer.Deliver(ctx, c.Delivery())
		require.NoError(t, err)
		v, err := dispatcher.VerifyResult(c, res)
		require.NoError(t, err)
		batch = append(batch, v)
	}
	for _, err := range store.AckBatch(ctx, batch) {
		require.NoError(t, err)
	}
	again, err := store.Claim(ctx, dispatcher.ClaimParams{Owner: "role", Limit: 5, Lease: time.Hour})
	require.NoError(t, err)
	require.Empty(t, again, "the retried delivery waits for its backoff")
	_, err = b.producer.Exec(ctx, `UPDATE outbox.outbox_deliveries SET available_at = now() WHERE event_id = $1`, ids[0])
	require.NoError(t, err)
	again, err = store.Claim(ctx, dispatcher.ClaimParams{Owner: "role", Limit: 5, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, again, 1)
	b.expireLease(t, again[0].EventID)
	recovered, err := store.RecoverExpired(ctx, nil, 10)
	require.NoError(t, err)
	require.Equal(t, 1, recovered["core_operations"])

	_, err = pool.Exec(ctx, `UPDATE outbox.outbox_events SET published_at = now() WHERE event_id = $1`, ids[0])
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err))
	_, err = pool.Exec(ctx, `UPDATE outbox.outbox_events SET event_envelope = '{}' WHERE event_id = $1`, ids[0])
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err))
	b.invariants(t)
}
