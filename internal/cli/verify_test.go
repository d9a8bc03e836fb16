package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/dbtest"
)

// issue 30: `oceanway verify` exits 0 on a fresh demo's databases and
// non-zero, naming the row, after a superuser switches the triggers off
// (session_replication_role = replica) and edits one ledger line (BI-1,
// BI-2: the finalization posting group no longer equals its committed
// fact) or one content-addressed body (CT-3: the body no longer recomputes
// to its digest).
func TestVerifyCommandDetectsSuperuserEdits(t *testing.T) {
	// Not parallel: a demo with every boundary's dispatchers (see
	// TestDemoCommandPassesAndRefusesReuse).
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	r := runMain(t, nil, "demo", "--runs", "12", "--plain", "--database-url", srv.URL, "--db-prefix", prefix)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	verify := func(extra ...string) mainResult {
		return runMain(t, nil, append([]string{"verify", "--database-url", srv.URL, "--db-prefix", prefix}, extra...)...)
	}

	// (a) a fresh demo: everything recomputes, exit 0.
	clean := verify()
	require.Equal(t, 0, clean.code, clean.stdout+clean.stderr)
	require.NotContains(t, clean.stdout, "MISMATCH")
	require.Contains(t, clean.stdout, "billing ledger: 0 mismatch(es)")
	js := verify("--json")
	require.Equal(t, 0, js.code, js.stderr)
	var rep struct {
		Databases []struct {
			Database string `json:"database"`
			Ledger   bool   `json:"ledger"`
			Tables   []struct {
				Table string `json:"table"`
				Rows  int64  `json:"rows"`
			} `json:"tables"`
		} `json:"databases"`
		Mismatches []json.RawMessage `json:"mismatches"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &rep))
	require.Len(t, rep.Databases, 4)
	require.Empty(t, rep.Mismatches)
	rows := map[string]int64{}
	for _, d := range rep.Databases {
		for _, tb := range d.Tables {
			rows[d.Database+" "+tb.Table] += tb.Rows
		}
	}
	require.Positive(t, rows["core billing.finalization_committed.committed_body"], "the demo finalized reservations")
	require.Positive(t, rows["core billing.ledger_postings"])
	require.Positive(t, rows["metering metering.settlement_input_snapshots.snapshot_body"])

	core, err := pgx.Connect(t.Context(), srv.DatabaseURL(prefix+"_core"))
	require.NoError(t, err)
	defer func() { _ = core.Close(context.WithoutCancel(t.Context())) }()

	// (b) as the superuser, with every trigger off, raise one line of a
	// finalization group that settles something.
	var group, committedRef string
	require.NoError(t, core.QueryRow(t.Context(), `SELECT posting_group_id::text, committed_ref FROM billing.finalization_committed
		WHERE settled_amount > 0 ORDER BY committed_ref LIMIT 1`).Scan(&group, &committedRef))
	tamper(t, core, `UPDATE billing.ledger_postings SET amount = amount + 1 WHERE posting_group_id = $1 AND line_no = 2`, group)
	bad := verify()
	require.Equal(t, 1, bad.code, bad.stdout)
	require.Contains(t, bad.stdout, fmt.Sprintf("MISMATCH core billing.ledger_postings [posting_group_id=%s,line_no=2]: amount", group))
	require.Contains(t, bad.stdout, "(the finalization of committed "+committedRef+")")
	require.Contains(t, bad.stdout, fmt.Sprintf("[posting_group_id=%s]: finalization group is not balanced", group))
	require.Contains(t, bad.stderr, "mismatch")

	// (c) one content-addressed body edited: another committed fact's
	// attempt count changed by one byte.
	var other string
	require.NoError(t, core.QueryRow(t.Context(), `SELECT committed_ref FROM billing.finalization_committed
		WHERE committed_ref <> $1 ORDER BY committed_ref LIMIT 1`, committedRef).Scan(&other))
	tamper(t, core, `UPDATE billing.finalization_committed
		SET committed_body = regexp_replace(committed_body, '"attemptCount":([0-9]+)', '"attemptCount":9\1') WHERE committed_ref = $1`, other)
	bad = verify()
	require.Equal(t, 1, bad.code, bad.stdout)
	require.Contains(t, bad.stdout, fmt.Sprintf("MISMATCH core billing.finalization_committed [committed_ref=%s] committed_body: ", other))
	require.Contains(t, bad.stdout, "does not recompute")
}

// tamper runs one statement as the superuser with every trigger switched
// off, the way an operator could bypass the database's guards.
func tamper(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) }()
	_, err = tx.Exec(t.Context(), `SET LOCAL session_replication_role = replica`)
	require.NoError(t, err)
	tag, err := tx.Exec(t.Context(), sql, args...)
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected())
	require.NoError(t, tx.Commit(t.Context()))
}
