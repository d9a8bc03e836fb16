package admin

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	adminschema "github.com/oceanway/core/internal/admin/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

// casesCore is a core database with the operations line and the Operations
// projection active (no case: the tests below need none).
func casesCore(t *testing.T) *pgxpool.Pool {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), adminschema.Line(), operationsschema.Line()}})
	_, err := release.Bootstrap(t.Context(), b.Core(), release.BootstrapParams{ProjectionName: projector.ProjectionName, ProjectionVersion: 1})
	require.NoError(t, err)
	return b.Core()
}

// Issue 31 item 6, OBS-4: the Cases read runs in the reader's read-only
// transaction (the path Reader.Cases takes: ownerSection, casesPresent,
// readCases). Inside it, after every case query ran, a write of a case or
// of its command chain is rejected by PostgreSQL (25006), and the
// transaction is READ ONLY with the local statement timeout.
func TestCasesReadTransactionRejectsWrites(t *testing.T) {
	t.Parallel()
	core := casesCore(t)
	r := NewReader(Boundaries{"core": core}, Config{StatementTimeout: 7 * time.Second})
	for _, stmt := range []string{
		"UPDATE operations.finalization_cases SET state = 'resolved'",
		`INSERT INTO operations.resolution_command_approvals (request_ref, approval_ref, approval_digest,
		   approver_workforce_principal_id, approval_body, approved_at) VALUES ('r', 'a', repeat('a', 64), 'p', '{}', now())`,
		"DELETE FROM operations.resolution_command_requests",
		"INSERT INTO operations.resolution_decisions SELECT * FROM operations.resolution_decisions",
	} {
		var writeErr error
		st := r.ownerSection(t.Context(), CoreBoundary, casesPresent, func(ctx context.Context, tx pgx.Tx, asOf time.Time) error {
			c, err := readCases(ctx, tx, asOf, r.cfg)
			require.NoError(t, err)
			require.Equal(t, "operations_read_model@1", c.Projection)
			var readOnly, timeout string
			require.NoError(t, tx.QueryRow(ctx, "SHOW transaction_read_only").Scan(&readOnly))
			require.NoError(t, tx.QueryRow(ctx, "SHOW statement_timeout").Scan(&timeout))
			require.Equal(t, []string{"on", "7s"}, []string{readOnly, timeout})
			_, writeErr = tx.Exec(ctx, stmt)
			return writeErr
		})
		require.True(t, st.Installed, stmt)
		require.Error(t, writeErr, stmt)
		require.Equal(t, pgerrcode.ReadOnlySQLTransaction, db.SQLState(writeErr), stmt)
		require.NotEmpty(t, st.Error, stmt)
	}
}

// namedStatements splits a sqlc query file into its statements by name.
func namedStatements(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]string{}
	for _, part := range strings.Split(string(b), "-- name: ")[1:] {
		header, body, _ := strings.Cut(part, "\n")
		name, _, _ := strings.Cut(header, " ")
		out[name] = strings.TrimSuffix(strings.TrimSpace(withoutComments(body)), ";")
	}
	return out
}

// Issue 31 item 6: the plans of the Cases queries are bounded. Each list is
// a Limit; the open cases are read through the partial index of open cases
// (resolved history is never read for them), the command chain through the
// requests' case index and the approvals' and decisions' primary keys. The
// resolved list is a Limit over a top-N Sort: the
// operations line has no index on resolved_at (docs/admin.md, "Cases").
func TestCasesQueryPlansAreBounded(t *testing.T) {
	t.Parallel()
	core := casesCore(t)
	stmts := namedStatements(t, "queries/cases.sql")
	require.Len(t, stmts, 6)
	args := pgx.NamedArgs{"projection_name": projector.ProjectionName, "projection_version": int64(1), "row_limit": int32(51),
		"case_refs": []string{"fcase-a", "fcase-b"}}
	plan := func(name string) []string {
		t.Helper()
		sql, ok := stmts[name]
		require.True(t, ok, name)
		var lines []string
		require.NoError(t, db.WithTx(t.Context(), core, func(ctx context.Context, tx pgx.Tx) error {
			// The test tables are empty: forbid the sequential scan so the
			// plan shows which index the statement can use.
			if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, "EXPLAIN (FORMAT TEXT) "+sql, args)
			if err != nil {
				return err
			}
			lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		}))
		return lines
	}
	node := regexp.MustCompile(`^\s*(?:->\s*)?([A-Z][A-Za-z ]+?)(?:\s+using|\s+on|\s+\(|$)`)
	nodes := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if m := node.FindStringSubmatch(l); m != nil {
				out = append(out, m[1])
			}
		}
		return out
	}

	open := plan("CaseOpenList")
	text := strings.Join(open, "\n")
	require.Equal(t, []string{"Limit", "Sort"}, nodes(open)[:2], text)
	require.Contains(t, text, "finalization_cases_one_open_per_fence", text)
	require.NotContains(t, text, "Seq Scan", text)

	total := strings.Join(plan("CaseOpenTotal"), "\n")
	require.Contains(t, total, "finalization_cases_one_open_per_fence", total)
	require.NotContains(t, total, "Seq Scan", total)

	resolved := plan("CaseResolvedList")
	require.Equal(t, []string{"Limit", "Sort"}, nodes(resolved)[:2], strings.Join(resolved, "\n"))

	requests := plan("RequestsOfCases")
	text = strings.Join(requests, "\n")
	require.Equal(t, "Limit", nodes(requests)[0], text)
	for _, index := range []string{"resolution_command_requests_case", "resolution_command_approvals_pkey", "resolution_decisions_pkey"} {
		require.Contains(t, text, index, text)
	}
	require.NotContains(t, text, "Seq Scan", text)
}
