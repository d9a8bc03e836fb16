package invariant_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/invariant"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// broken lists the checks of r that fail in scope.
func broken(r invariant.Report, scope invariant.Scope) []string {
	var out []string
	for _, c := range r.In(scope) {
		if !c.OK() {
			out = append(out, c.Name)
		}
	}
	return out
}

func evaluate(t *testing.T, pool db.Executor) invariant.Report {
	t.Helper()
	r, err := invariant.Evaluate(t.Context(), pool)
	require.NoError(t, err)
	return r
}

// An open delivery breaks only the drained checks; its acknowledgement
// makes every check hold; a status rewritten behind the dispatcher's back
// is caught by the quiescent checks.
func TestReport_ScopesAndViolations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}})
	pool := b.Core()
	_, err := release.Bootstrap(ctx, pool, release.BootstrapParams{ProjectionName: "operations", ProjectionVersion: 1})
	require.NoError(t, err)

	require.NoError(t, evaluate(t, pool).Err(invariant.Drained), "an empty outbox is drained")

	e := sample.Envelope("run.created@2.0", 0)
	e.EventID = outbox.NewEventID()
	_, err = db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, e)
	})
	require.NoError(t, err)
	r := evaluate(t, pool)
	require.EqualValues(t, 1, r.Events)
	require.EqualValues(t, 1, r.Deliveries)
	require.NoError(t, r.Err(invariant.Quiescent))
	require.Equal(t, []string{"no_lost_delivery", "every_event_published"}, broken(r, invariant.Drained))
	require.ErrorIs(t, r.Err(invariant.Drained), invariant.ErrViolated)

	store := dispatcher.NewStore(pool, 5*time.Second)
	claims, err := store.Claim(ctx, dispatcher.ClaimParams{Owner: "invariant-test", Limit: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, claims, 1)
	require.Equal(t, []string{"no_lost_delivery", "every_start_finished", "every_event_published"}, broken(evaluate(t, pool), invariant.Drained))
	res, err := outboxtest.Ack(ctx, claims[0].Delivery())
	require.NoError(t, err)
	require.NoError(t, store.VerifyAndAck(ctx, claims[0], res))
	outboxtest.RequireDrained(t, pool)

	// As the table owner, bypassing the triggers: an acknowledged finish
	// whose delivery is pending again, and published_at left set.
	require.NoError(t, db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `ALTER TABLE outbox.outbox_deliveries DISABLE TRIGGER USER`)
		if err == nil {
			_, err = tx.Exec(ctx, `UPDATE outbox.outbox_deliveries SET status = 'pending', delivered_at = NULL,
				ack_consumer_name = NULL, ack_receipt_type = NULL, ack_receipt_key = NULL, ack_receipt_schema_version = NULL,
				ack_receipt_digest_algorithm_version = NULL, ack_receipt_digest = NULL,
				ack_event_envelope_digest_algorithm_version = NULL, ack_event_envelope_sha256 = NULL`)
		}
		if err == nil {
			_, err = tx.Exec(ctx, `ALTER TABLE outbox.outbox_deliveries ENABLE TRIGGER USER`)
		}
		return err
	}))
	require.Equal(t, []string{"published_at_exact", "ack_iff_one_acked_finish"}, broken(evaluate(t, pool), invariant.Quiescent))
}
