package outbox_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
)

// DS-6: registration is insert-or-compare on the full quadruple; a re-run
// of the same definition is a no-op; the same version with another
// candidate or digest is rejected; registration does not activate.
func TestRegistryInsertOrCompare(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering}}).Metering()
	bindDestinations(t, pool)
	def, err := deliveryset.FirstRelease(projection, 1)
	require.NoError(t, err)

	res, err := outbox.Register(ctx, pool, def, outbox.RegisterOpts{SourceRelease: "r1"})
	require.NoError(t, err)
	require.True(t, res.Inserted)
	require.Equal(t, def.Quadruple(), res.Quadruple)

	res, err = outbox.Register(ctx, pool, def, outbox.RegisterOpts{SourceRelease: "another release label"})
	require.NoError(t, err)
	require.False(t, res.Inserted, "same definition: compare, no second row")

	_, err = outbox.ActiveDefinition(ctx, pool)
	require.ErrorIs(t, err, outbox.ErrNoActiveDefinition, "registration is not activation")

	// Same version 1, different candidate (another projection version) → another digest.
	other, err := deliveryset.FirstRelease(projection, 2)
	require.NoError(t, err)
	_, err = outbox.Register(ctx, pool, other, outbox.RegisterOpts{})
	require.ErrorIs(t, err, outbox.ErrDefinitionConflict)
	require.ErrorIs(t, err, deliveryset.ErrVersionConflict)
	var ce *outbox.DefinitionConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, def.Quadruple(), ce.Stored)
	require.Equal(t, other.Quadruple(), ce.Incoming)

	// A definition whose digest does not recompute never reaches the table.
	forged := *def
	forged.Version = 5
	_, err = outbox.Register(ctx, pool, &forged, outbox.RegisterOpts{})
	require.ErrorIs(t, err, outbox.ErrInvalidDefinition)
	require.ErrorIs(t, err, digest.ErrMismatch)

	stored, err := outbox.DefinitionByVersion(ctx, pool, 1)
	require.NoError(t, err)
	require.NoError(t, deliveryset.Compare(stored.Definition, def))
	require.Equal(t, outbox.StatusRegistered, stored.Status)
	require.Equal(t, "r1", stored.SourceRelease)
	canonical, err := def.Canonical()
	require.NoError(t, err)
	require.Equal(t, string(canonical), string(stored.CanonicalJSON))
	var members int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM outbox.delivery_set_members WHERE delivery_set_version = 1").Scan(&members))
	require.Equal(t, 14, members)
	_, err = outbox.DefinitionByVersion(ctx, pool, 42)
	require.ErrorIs(t, err, outbox.ErrDefinitionNotFound)
}

// DS-6: concurrent registrations of one definition from real concurrent
// sessions converge to one row and one member set; all succeed.
func TestRegistryConcurrentRegistrationConverges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Execution}, MaxConns: 8}).Execution()
	bindDestinations(t, pool)
	def, err := deliveryset.FirstRelease(projection, 1)
	require.NoError(t, err)

	const n = 6
	// Every session first opens its transaction and proves it is live, then
	// all register at once.
	var ready, start sync.WaitGroup
	ready.Add(n)
	start.Add(1)
	results := make(chan outbox.RegisterResult, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
					ready.Done()
					return err
				}
				ready.Done()
				start.Wait()
				r, err := outbox.RegisterTx(ctx, tx, def, outbox.RegisterOpts{SourceRelease: "concurrent"})
				if err == nil {
					results <- r
				}
				return err
			})
			errs <- err
		}()
	}
	ready.Wait()
	start.Done()
	inserted := 0
	for i := 0; i < n; i++ {
		require.NoError(t, <-errs)
	}
	close(results)
	for r := range results {
		require.Equal(t, def.Quadruple(), r.Quadruple)
		if r.Inserted {
			inserted++
		}
	}
	require.Equal(t, 1, inserted, "exactly one session inserted")
	rows, _ := pool.Query(ctx, "SELECT (SELECT count(*) FROM outbox.delivery_set_versions) AS versions, (SELECT count(*) FROM outbox.delivery_set_members) AS members")
	counts, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[struct{ Versions, Members int }])
	require.NoError(t, err)
	require.Equal(t, 1, counts.Versions)
	require.Equal(t, 14, counts.Members)
}

// DS-6: definitions and members are immutable; members exist only with
// their registration and the counts are proved at commit; exactly one
// definition is active and activation is explicit.
//
// Clauses: OW001.definition-immutable, OW002.definitions-no-delete,
// OW003.members-no-update, OW002.members-no-delete, OW002.members-no-truncate,
// OW010.members-outside-registration, OW010.definition-incomplete,
// OW012.definition-not-registered.
func TestRegistryImmutabilityAndActivation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.delivery_set_versions SET delivery_set_definition_digest = repeat('0', 64)"), outbox.CodeImmutable)
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.delivery_set_versions SET definition_canonical_json = '{}'"), outbox.CodeImmutable)
	requireCode(t, exec(ctx, b.pool, "DELETE FROM outbox.delivery_set_versions"), outbox.CodeAppendOnly)
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.delivery_set_members SET consumer_name = consumer_name"), outbox.CodeInsertOnly)
	requireCode(t, exec(ctx, b.pool, "DELETE FROM outbox.delivery_set_members"), outbox.CodeAppendOnly)
	requireCode(t, exec(ctx, b.pool, "TRUNCATE outbox.delivery_set_members"), outbox.CodeAppendOnly)
	requireCode(t, exec(ctx, b.pool, `INSERT INTO outbox.delivery_set_members VALUES (1, 'run.created@2.0', '2.0',
		'metering_input_processor', 'metering_input_processor_consumer', true, 'MeteringInputProcessorConsumerReceipt', '1',
		'not_applicable', NULL, NULL)`), outbox.CodeDefinitionIncomplete) // member added after registration
	requireCode(t, exec(ctx, b.pool, `INSERT INTO outbox.delivery_set_versions (delivery_set_version, delivery_set_definition_schema_version,
		delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest, applicable_event_count, applicable_events,
		member_count, definition_canonical_json)
		VALUES (9, '1', 'jcs-sha256-v1', repeat('9', 64), 0, '[]', 1, '{}')`), outbox.CodeDefinitionIncomplete) // count proved at commit
	requireCode(t, exec(ctx, b.pool, `INSERT INTO outbox.delivery_set_versions (delivery_set_version, delivery_set_definition_schema_version,
		delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest, applicable_event_count, applicable_events,
		member_count, definition_canonical_json, status, activated_at)
		VALUES (9, '1', 'jcs-sha256-v1', repeat('9', 64), 0, '[]', 0, '{}', 'active', now())`), outbox.CodeNotInitialState)

	// Exactly one active: a second active row violates the partial unique index.
	d2 := withoutPair(t, 2, envelope.GatewayAvailabilityCurrentChangedV1)
	_, err := outbox.Register(ctx, b.pool, d2, outbox.RegisterOpts{})
	require.NoError(t, err)
	requireCode(t, exec(ctx, b.pool, "UPDATE outbox.delivery_set_versions SET status = 'active', activated_at = now() WHERE delivery_set_version = 2"), pgerrcode.UniqueViolation)

	active, err := outbox.ActiveDefinition(ctx, b.pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, active.Definition.Version)

	res, err := outbox.Activate(ctx, b.pool, 2)
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Activated.DeliverySetVersion)
	require.NotNil(t, res.Retired)
	require.Equal(t, b.def.Quadruple(), *res.Retired)
	res, err = outbox.Activate(ctx, b.pool, 2)
	require.NoError(t, err)
	require.True(t, res.AlreadyActive)
	all, err := outbox.Definitions(ctx, b.pool)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, outbox.StatusRetired, all[0].Status)
	require.NotNil(t, all[0].RetiredAt)
	require.Equal(t, outbox.StatusActive, all[1].Status)
	// Configuration can only select a registered version.
	_, err = outbox.Activate(ctx, b.pool, 77)
	require.ErrorIs(t, err, outbox.ErrDefinitionNotFound)
	// Re-activating the earlier one is explicit and allowed.
	_, err = outbox.Activate(ctx, b.pool, 1)
	require.NoError(t, err)
}
