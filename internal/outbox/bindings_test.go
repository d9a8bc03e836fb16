package outbox_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

// DS-4, OB-DELIVER-1: destinations and their receipt bindings are data the
// release seeds, and PostgreSQL itself refuses what no binding covers: a
// definition member of an unbound destination (foreign key), a delivery row
// the least-privileged producer role writes to an unbound destination
// (OW016), and a binding that contradicts a stored one (OW017). Neither
// producer nor dispatcher may write bindings.
//
// Clauses: OW017.bound-differently, OW003.bindings-no-update,
// OW002.bindings-no-delete, OW016.delivery-unbound.
func TestDS4UnboundDestinationIsRefusedByTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Gateway}}).Gateway()

	// A fresh database binds nothing: the first release cannot register.
	def, err := deliveryset.FirstRelease(projection, 1)
	require.NoError(t, err)
	_, err = outbox.Register(ctx, pool, def, outbox.RegisterOpts{})
	requireCode(t, err, pgerrcode.ForeignKeyViolation)
	require.ErrorIs(t, err, outbox.ErrUnboundDestination)

	// The release binds (insert-or-compare: twice is a no-op), then
	// registers and activates.
	inserted, err := db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
		return outbox.BindDestinationsTx(ctx, tx, release.Bindings()...)
	})
	require.NoError(t, err)
	require.Equal(t, len(route.Destinations), inserted)
	_, err = release.Bootstrap(ctx, pool, release.BootstrapParams{ProjectionName: projection, ProjectionVersion: 1})
	require.NoError(t, err)
	stored, err := outbox.DestinationBindings(ctx, pool)
	require.NoError(t, err)
	require.ElementsMatch(t, release.Bindings(), stored)

	// A contradicting binding is refused; bindings are immutable.
	other := release.Bindings()[1]
	other.ExpectedReceiptSchemaVersion = "2"
	_, err = db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
		return outbox.BindDestinationsTx(ctx, tx, other)
	})
	requireCode(t, err, outbox.CodeBindingConflict)
	require.ErrorIs(t, err, outbox.ErrBindingConflict)
	requireCode(t, exec(ctx, pool, "UPDATE outbox.destination_bindings SET expected_receipt_schema_version = '2'"), outbox.CodeInsertOnly)
	requireCode(t, exec(ctx, pool, "DELETE FROM outbox.destination_bindings"), outbox.CodeAppendOnly)

	// As the producer: a delivery row to an unbound destination, or to a
	// bound destination with another consumer or receipt, is refused on
	// insert, before any commit-time proof.
	as := func(role string, stmts ...string) error {
		return db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
			setRole(t, ctx, tx, role)
			for _, s := range stmts {
				if _, err := tx.Exec(ctx, s); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, delivery := range []func(id string) string{
		func(id string) string { return rawDelivery(id, "nowhere", "nowhere_consumer", "NowhereReceipt", "") },
		func(id string) string {
			return rawDelivery(id, "core_operations", route.MeteringInputProcessorConsumer, route.OperationsProjectionAppliedReceipt, "1")
		},
		func(id string) string {
			return rawDelivery(id, "core_operations", route.OperationsProjector, route.OperationsProjectionAppliedReceipt, "")
		},
	} {
		id := uuid.NewString()
		err := as(schema.RoleProducer, rawEvent(id, 1), delivery(id))
		requireCode(t, err, outbox.CodeUnboundDestination)
		require.ErrorIs(t, outbox.TranslateError(err), outbox.ErrUnboundDestination)
	}
	id := uuid.NewString()
	require.NoError(t, as(schema.RoleProducer, rawEvent(id, 1),
		rawDelivery(id, "core_operations", route.OperationsProjector, route.OperationsProjectionAppliedReceipt, "1")),
		"the bound delivery commits as the producer")

	for _, role := range []string{schema.RoleProducer, schema.RoleDispatcher} {
		requireCode(t, as(role, `INSERT INTO outbox.destination_bindings (destination, consumer_name, expected_receipt_type,
			expected_receipt_schema_version, projection_target_state) VALUES ('nowhere', 'nowhere_consumer', 'R', '1', 'not_applicable')`),
			pgerrcode.InsufficientPrivilege)
		requireCode(t, as(role, "SELECT outbox.bind_destination('nowhere', 'nowhere_consumer', 'R', '1', 'not_applicable')"), pgerrcode.InsufficientPrivilege)
	}
}
