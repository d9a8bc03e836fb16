package outbox_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/schema"
)

// codeForeignProducer is release.CodeForeignProducer (OWP01), which the
// outbox engine does not import.
const codeForeignProducer = "OWP01"

// Issue 13 item 8, a producer appends only its own pairs: a database that
// declared itself the core fact store (what the admission line does; the
// outbox line alone declares nothing) refuses an execution event appended
// by oceanway_producer, clause OWP01.event-of-other-producer; the declared
// producer is declared once, clause OWP01.declare-other-producer; the pair
// table and the declaration never change, clauses
// OW001.pair-producers-immutable and OW001.database-producer-immutable.
// declare_producer, and UPDATE or DELETE of the two tables, are the
// owner's alone (no runtime role has them, 42501): driven as the owner.
func TestGuard_ProducerPairClauses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t)
	require.NoError(t, asRoleTx(ctx, t, b, "", "SELECT outbox.declare_producer('core')"))
	err := asRoleTx(ctx, t, b, schema.RoleProducer, rawEventOfPair(uuid.NewString(), "execution.run-finalization.closed@1", "1"))
	requireRefusal(t, err, codeForeignProducer, "is produced by execution, this database is the core fact store")

	requireRefusal(t, asRoleTx(ctx, t, b, "", "SELECT outbox.declare_producer('execution')"),
		codeForeignProducer, "this database is the core fact store, not execution")
	require.NoError(t, asRoleTx(ctx, t, b, "", "SELECT outbox.declare_producer('core')"), "the same producer again is a no-op")

	for _, table := range []string{"pair_producers", "database_producer"} {
		for _, stmt := range []string{"UPDATE outbox." + table + " SET producer = 'execution'", "DELETE FROM outbox." + table} {
			requireRefusal(t, asRoleTx(ctx, t, b, "", stmt), outbox.CodeImmutable, "on outbox."+table+" is forbidden (a database's producer is declared once)")
		}
	}
}
