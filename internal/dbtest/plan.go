package dbtest

import (
	"context"
	"fmt"
	"os"
	"regexp"
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
		text, err = Explain(ctx, tx, string(stmt))
		return err
	}), file)
	require.Contains(t, text, index, "%s:\n%s", file, text)
	require.NotContains(t, text, "Seq Scan", "%s:\n%s", file, text)
}

// Explain returns the text plan of stmt as q plans it (inside the caller's
// transaction, with its settings).
func Explain(ctx context.Context, q db.Executor, stmt string) (string, error) {
	rows, err := q.Query(ctx, "EXPLAIN (FORMAT TEXT) "+stmt)
	if err != nil {
		return "", err
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(plan, "\n"), err
}

// namedArg is a sqlc named argument in a query file: @name or
// sqlc.arg(name) (sqlc.narg too).
var namedArg = regexp.MustCompile(`@([a-z_][a-z0-9_]*)|sqlc\.n?arg\(([a-z_][a-z0-9_]*)\)`)

// RequireGenericPlanProbes prepares the sqlc statement in file (relative to
// the test's package) on the table as the test found it (a fresh database:
// empty, never analyzed) and explains its generic plan, the one a pooled
// connection keeps once PostgreSQL stops re-planning per call. It fails
// unless, for each index → column of probes, the plan reads that index (or
// any index of that table, when a table is named) with column in its
// condition (any condition for ""): a lookup by an identifier stays a probe
// whatever the statistics say, instead of a range of a shared key prefix.
func RequireGenericPlanProbes(t *testing.T, pool db.Beginner, file string, probes map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	RequireGenericPlanProbesSQL(t, pool, file, string(raw), probes)
}

// RequireGenericPlanProbesSQL is RequireGenericPlanProbes of a statement
// given as text (name labels the failure).
func RequireGenericPlanProbesSQL(t *testing.T, pool db.Beginner, name, raw string, probes map[string]string) {
	t.Helper()
	order := map[string]int{}
	stmt := namedArg.ReplaceAllStringFunc(raw, func(m string) string {
		sub := namedArg.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if _, ok := order[name]; !ok {
			order[name] = len(order) + 1
		}
		return fmt.Sprintf("$%d", order[name])
	})
	stmt = strings.TrimRight(strings.TrimSpace(stmt), ";")
	nulls := strings.TrimSuffix(strings.Repeat("NULL,", len(order)), ",")
	var text string
	require.NoError(t, db.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "PREPARE generic_plan_probe AS "+stmt); err != nil {
			return err
		}
		execute := "EXECUTE generic_plan_probe"
		if nulls != "" {
			execute += "(" + nulls + ")"
		}
		var err error
		if text, err = Explain(ctx, tx, execute); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "DEALLOCATE generic_plan_probe")
		return err
	}), name)
	lines := strings.Split(text, "\n")
	for index, column := range probes {
		found := false
		for i, l := range lines {
			if !strings.Contains(l, "Scan") || !strings.Contains(l, index) {
				continue
			}
			// The scan's own condition is on the next lines, before its
			// children or siblings ("" asks only that the index is read).
			for _, c := range lines[i+1:] {
				if strings.Contains(c, "->") {
					break
				}
				if column == "" || strings.Contains(c, "Index Cond:") && strings.Contains(c, "("+column+" = ") {
					found = true
				}
			}
		}
		require.True(t, found, "%s: the generic plan does not probe %s by %s:\n%s", name, index, column, text)
	}
	require.NotContains(t, text, "Seq Scan", "%s:\n%s", name, text)
}
