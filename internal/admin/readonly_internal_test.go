package admin

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
)

// The code path cannot write: a write inside the reader's transaction is
// rejected by PostgreSQL (25006 read_only_sql_transaction).
func TestReadTransactionRejectsWrites(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}})
	r := NewReader(Boundaries{"core": b.Core()}, Config{})
	for _, stmt := range []string{
		"DELETE FROM outbox.outbox_quarantine",
		"UPDATE outbox.outbox_deliveries SET status = 'acknowledged'",
		"INSERT INTO outbox.projection_versions (projection_name, projection_version) VALUES ('x', 1)",
		"CREATE TABLE outbox.sneaky (x int)",
	} {
		err := r.readOnly(t.Context(), b.Core(), func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, stmt)
			return err
		})
		require.Error(t, err, stmt)
		require.Equal(t, pgerrcode.ReadOnlySQLTransaction, db.SQLState(err), stmt)
	}
	// The statement timeout is local to the transaction and applied.
	var timeout string
	require.NoError(t, r.readOnly(t.Context(), b.Core(), func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SHOW statement_timeout")
		if err != nil {
			return err
		}
		timeout, err = pgx.CollectExactlyOneRow(rows, pgx.RowTo[string])
		return err
	}))
	require.Equal(t, "10s", timeout)
}

// Every statement is a plain read: it starts with SELECT or WITH and
// contains no data-modifying or locking keyword. That covers the loaded
// statements (sql/, fragments spliced) and the sqlc queries (queries/),
// except the statement timeout the reader sets first in each transaction.
func TestEmbeddedSQLIsReadOnly(t *testing.T) {
	t.Parallel()
	forbidden := regexp.MustCompile(`(?i)\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE|CREATE|ALTER|DROP|GRANT|REVOKE|COPY|CALL|DO|LOCK|VACUUM|NOTIFY|FOR\s+(UPDATE|SHARE|NO\s+KEY|KEY))\b|set_config|pg_advisory|nextval|setval`)
	check := func(name, body string) {
		body = withoutComments(body)
		require.NotRegexp(t, forbidden, body, name)
		require.Regexp(t, `(?i)^(SELECT|WITH)\b`, body, name)
	}
	require.NotEmpty(t, stmts.Keys())
	for _, key := range stmts.Keys() {
		check("sql/"+key, stmts.Get(key))
	}
	files, err := filepath.Glob("queries/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		if filepath.Base(f) == "statement_timeout.sql" {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, stmt := range strings.Split(string(b), ";") {
			if strings.TrimSpace(withoutComments(stmt)) != "" {
				check(f, stmt)
			}
		}
	}
}

func withoutComments(sql string) string {
	var kept []string
	for _, l := range strings.Split(sql, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			kept = append(kept, l)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}

func TestParseID(t *testing.T) {
	t.Parallel()
	id, err := ParseID(KindEvent, "0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B")
	require.NoError(t, err)
	require.Equal(t, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", id)
	_, err = ParseID(KindEvent, strings.Repeat("<", 500))
	require.ErrorIs(t, err, ErrInvalidID)
	require.Less(t, len(err.Error()), 200, "the message clips the input")
}

func TestFormatAge(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{0: "—", 0.25: "250ms", 42.9: "42s", 192: "3m12s", 5*3600 + 180: "5h03m", 2*86400 + 4*3600: "2d04h"} {
		require.Equal(t, want, FormatAge(in), in)
	}
}
