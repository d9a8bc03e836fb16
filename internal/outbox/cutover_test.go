package outbox_test

import (
	"context"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

func frozen(t *testing.T, b *testBundle, eventID string) (dsv, projectionVersion int64, status string) {
	t.Helper()
	rows, _ := b.pool.Query(t.Context(), `SELECT e.delivery_set_version, d.required_projection_version, d.status
		FROM outbox.outbox_events e JOIN outbox.outbox_deliveries d USING (event_id)
		WHERE e.event_id = @event_id AND d.destination = 'core_operations'`, pgx.NamedArgs{"event_id": eventID})
	row, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[struct {
		DeliverySetVersion        int64  `db:"delivery_set_version"`
		RequiredProjectionVersion int64  `db:"required_projection_version"`
		Status                    string `db:"status"`
	}])
	require.NoError(t, err)
	return row.DeliverySetVersion, row.RequiredProjectionVersion, row.Status
}

// DS-8: the cutover proves the new projection version ready, switches the
// pointer and activates a definition referencing exactly that version under
// one lock; new events freeze the new definition, pending old events keep
// their own.
func TestProjectionCutover(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	old := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Events[0]

	def2, err := deliveryset.Build(2, projection, 2)
	require.NoError(t, err)
	_, err = outbox.Register(ctx, b.pool, def2, outbox.RegisterOpts{SourceRelease: "projection v2"})
	require.NoError(t, err)
	cut := outbox.CutoverParams{ProjectionName: projection, ProjectionVersion: 2, DeliverySetVersion: 2}

	_, err = outbox.Cutover(ctx, b.pool, cut)
	require.ErrorIs(t, err, outbox.ErrProjectionNotReady, "unknown projection version")
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		return outbox.RegisterProjectionVersionTx(ctx, tx, projection, 2)
	}))
	_, err = outbox.Cutover(ctx, b.pool, cut)
	require.ErrorIs(t, err, outbox.ErrProjectionNotReady, "registered, not ready")
	_, err = outbox.Activate(ctx, b.pool, 2)
	require.ErrorIs(t, err, outbox.ErrProjectionNotReady)

	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		return outbox.MarkProjectionReadyTx(ctx, tx, projection, 2, "readiness-proof-2")
	}))
	// Plain activation may not move the pointer.
	_, err = outbox.Activate(ctx, b.pool, 2)
	require.ErrorIs(t, err, outbox.ErrProjectionMismatch)
	// The definition must reference exactly the cutover's version.
	_, err = outbox.Cutover(ctx, b.pool, outbox.CutoverParams{ProjectionName: projection, ProjectionVersion: 2, DeliverySetVersion: 1})
	require.ErrorIs(t, err, outbox.ErrProjectionMismatch)
	_, err = outbox.Cutover(ctx, b.pool, outbox.CutoverParams{ProjectionName: "other", ProjectionVersion: 2, DeliverySetVersion: 2})
	require.ErrorIs(t, err, outbox.ErrProjectionMismatch)

	res, err := outbox.Cutover(ctx, b.pool, cut)
	require.NoError(t, err)
	require.Equal(t, def2.Quadruple(), res.Activated)
	require.Equal(t, b.def.Quadruple(), *res.Retired)
	ptrs, err := outbox.ProjectionPointers(ctx, b.pool)
	require.NoError(t, err)
	require.Len(t, ptrs, 1)
	require.EqualValues(t, 2, ptrs[0].ProjectionVersion)
	require.EqualValues(t, 2, ptrs[0].DeliverySetVersion)

	fresh := appendTx(t, b.pool, freshSample(envelope.RunCreatedV2))
	require.Equal(t, def2.Quadruple(), fresh.Definition)
	dsv, pv, status := frozen(t, b, fresh.Events[0].EventID)
	require.Equal(t, [3]any{int64(2), int64(2), "pending"}, [3]any{dsv, pv, status})
	dsv, pv, status = frozen(t, b, old.EventID)
	require.Equal(t, [3]any{int64(1), int64(1), "pending"}, [3]any{dsv, pv, status}, "the old pending event keeps its frozen target")

	// Going back to the old definition needs a cutover too.
	_, err = outbox.Activate(ctx, b.pool, 1)
	require.ErrorIs(t, err, outbox.ErrProjectionMismatch)
}

// DS-8 with concurrency: an append transaction in flight holds the
// activation lock shared, so the cutover waits for it; the in-flight event
// keeps the old definition and every append after the cutover freezes the
// new one. A REPEATABLE READ append whose snapshot predates the cutover
// fails with a serialization error instead of freezing a retired definition.
func TestCutoverSerializesWithAppends(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	def2, err := deliveryset.Build(2, projection, 2)
	require.NoError(t, err)
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := outbox.RegisterTx(ctx, tx, def2, outbox.RegisterOpts{}); err != nil {
			return err
		}
		if err := outbox.RegisterProjectionVersionTx(ctx, tx, projection, 2); err != nil {
			return err
		}
		return outbox.MarkProjectionReadyTx(ctx, tx, projection, 2, "proof")
	}))

	inflight, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = inflight.Rollback(ctx) }() // no-op after Commit; on a failed step the test has already failed
	early, err := release.AppendTx(ctx, inflight, freshSample(envelope.WalletReservedV2))
	require.NoError(t, err)

	rr, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = rr.Rollback(ctx) }()                            // no-op after Commit; on a failed step the test has already failed
	_, err = rr.Exec(ctx, "SELECT count(*) FROM outbox.outbox_events") // takes the snapshot
	require.NoError(t, err)

	done := make(chan error, 1)
	pid := make(chan uint32, 1)
	go func() {
		_, err := db.WithTxV(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) (outbox.ActivationResult, error) {
			pid <- tx.Conn().PgConn().PID()
			return outbox.CutoverTx(ctx, tx, outbox.CutoverParams{ProjectionName: projection, ProjectionVersion: 2, DeliverySetVersion: 2})
		})
		done <- err
	}()
	waitForLockWait(t, b, <-pid)
	require.NoError(t, inflight.Commit(ctx))
	require.NoError(t, <-done)

	dsv, _, _ := frozen(t, b, early.Events[0].EventID)
	require.EqualValues(t, 1, dsv, "the in-flight append committed with the definition it froze")
	require.EqualValues(t, 2, appendTx(t, b.pool, freshSample(envelope.RunCreatedV2)).Definition.DeliverySetVersion)

	_, err = release.AppendTx(ctx, rr, freshSample(envelope.RunCreatedV2))
	requireCode(t, err, pgerrcode.SerializationFailure)
}
