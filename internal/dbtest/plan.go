package dbtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/db"
)

// RequireStatementUsesIndex explains the statement in file (relative to the
// test's package) with sequential scans disabled, as the hot-statement
// checks do, and fails unless the plan names index and has no Seq Scan: the
// statement can read through its index, off the history.
func RequireStatementUsesIndex(t *testing.T, pool db.Beginner, file, index string) {
	t.Helper()
	stmt, err := os.ReadFile(file)
	require.NoError(t, err)
	var text string
	require.NoError(t, db.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "EXPLAIN (FORMAT TEXT) "+string(stmt))
		if err != nil {
			return err
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		text = strings.Join(plan, "\n")
		return err
	}), file)
	require.Contains(t, text, index, "%s:\n%s", file, text)
	require.NotContains(t, text, "Seq Scan", "%s:\n%s", file, text)
}
