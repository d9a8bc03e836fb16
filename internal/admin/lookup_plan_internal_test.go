package admin

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	adminschema "github.com/oceanway/core/internal/admin/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// The payload lookup indexes belong to the admin line (they moved there
// from the outbox line): every producer database carries them, and the
// events-by-reference lookup is planned on them rather than on a scan of
// outbox_events.
func TestEventsByReferenceUsesAdminLookupIndexes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := dbtest.New(t, dbtest.Opts{
		Boundaries: []boundary.Boundary{boundary.Core, boundary.Metering},
		Lines:      []migrate.Line{outboxschema.Line(), adminschema.Line()}, // the line under test
	})
	for _, bd := range []boundary.Boundary{boundary.Core, boundary.Metering} {
		pool := b.Pool(bd)
		for field, index := range map[string]string{
			"runId":                "outbox_events_lookup_run_id",
			"billingReservationId": "outbox_events_lookup_reservation_id",
		} {
			err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
				rows, err := tx.Query(ctx, "SELECT indexdef FROM pg_catalog.pg_indexes WHERE schemaname = 'outbox' AND indexname = @name",
					pgx.NamedArgs{"name": index})
				require.NoError(t, err)
				def, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[string])
				require.NoError(t, err, "%s: index %s", bd, index)
				require.Contains(t, def, "'"+field+"'")

				// The test tables are tiny: forbid the sequential scan so
				// the plan shows which index the statement can use.
				_, err = tx.Exec(ctx, "SET LOCAL enable_seqscan = off")
				require.NoError(t, err)
				rows, err = tx.Query(ctx, "EXPLAIN (FORMAT TEXT) "+qEventsByReference, pgx.NamedArgs{
					"id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "aggregate_type": "run", "payload_field": field, "row_limit": 101,
				})
				require.NoError(t, err)
				lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
				require.NoError(t, err)
				plan := strings.Join(lines, "\n")
				require.Contains(t, plan, "Index Scan using "+index+" on outbox_events p", plan)
				require.NotContains(t, plan, "Seq Scan on outbox_events", plan)
				return nil
			})
			require.NoError(t, err)
		}
	}
}
