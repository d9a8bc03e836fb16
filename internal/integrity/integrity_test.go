package integrity_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/kinds"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/integrity"
	"github.com/oceanway/core/internal/lines"
)

// issue 30 (CT-3): every stored body of every owner database is either
// recomputed by the verifier or exempted with a reason, so a new fact
// cannot be forgotten: a table with a *_body column (or the outbox's
// canonical envelope and definition texts) that Facts does not list fails
// here. Every listed column exists, in the database Facts says, and every
// kind it names is a contracts/kinds kind.
func TestFactsCoverEveryStoredBody(t *testing.T) {
	t.Parallel()
	bundle := dbtest.New(t, dbtest.Opts{Lines: lines.All()})
	listed := map[string]bool{}
	for _, f := range integrity.Facts {
		for _, b := range f.Boundaries {
			listed[fmt.Sprintf("%s %s.%s", b, f.Table, f.Body)] = true
		}
		for _, k := range append(append([]string{f.Kind}, f.Kinds...), keys(f.KindPrefix)...) {
			if k == "" {
				continue
			}
			_, err := kinds.Lookup(k)
			require.NoError(t, err, "%s.%s names kind %s", f.Table, f.Body, k)
		}
	}
	for _, e := range integrity.Exempts {
		require.NotEmpty(t, e.Reason)
	}
	exempt := func(table, column string) bool {
		for _, e := range integrity.Exempts {
			if e.Table == table && e.Column == column {
				return true
			}
		}
		return false
	}
	for _, b := range boundary.All {
		rows, err := bundle.Pool(b).Query(t.Context(), `
			SELECT c.table_schema || '.' || c.table_name, c.column_name
			  FROM information_schema.columns c
			  JOIN information_schema.tables t USING (table_schema, table_name)
			 WHERE t.table_type = 'BASE TABLE'
			   AND c.table_schema NOT IN ('pg_catalog', 'information_schema')
			   AND (c.column_name LIKE '%\_body' OR c.column_name IN ('event_envelope', 'legacy_envelope', 'definition_canonical_json'))`)
		require.NoError(t, err)
		type column struct{ table, name string }
		var columns []column
		for rows.Next() {
			var c column
			require.NoError(t, rows.Scan(&c.table, &c.name))
			columns = append(columns, c)
		}
		require.NoError(t, rows.Err())
		found := map[string]bool{}
		for _, c := range columns {
			id := fmt.Sprintf("%s %s.%s", b, c.table, c.name)
			found[id] = true
			require.True(t, listed[id] || exempt(c.table, c.name), "%s is a stored body the verifier does not cover: add it to integrity.Facts (or Exempts, with the reason)", id)
		}
		for id := range listed {
			if id[:len(b)+1] == string(b)+" " {
				require.True(t, found[id], "integrity.Facts lists %s, which the %s schema does not have", id, b)
			}
		}
	}

	// A freshly migrated, empty set of databases verifies clean, and every
	// listed table and column is readable (the statements are right).
	dbs := map[boundary.Boundary]db.TxBeginner{}
	for b, p := range bundle.Pools {
		dbs[b] = p
	}
	rep, err := integrity.Verify(t.Context(), dbs, integrity.Config{})
	require.NoError(t, err)
	require.NoError(t, rep.Err())
	require.Len(t, rep.Databases, 4)
}

// The report's error is typed: the CLI maps it to exit status 1.
func TestReportErrIsMismatchError(t *testing.T) {
	t.Parallel()
	rep := &integrity.Report{Mismatches: []integrity.Mismatch{{Database: "core", Table: "billing.ledger_postings", Key: "posting_group_id=g,line_no=2", Problem: "amount 2, want 1"}}}
	err := rep.Err()
	var me *integrity.MismatchError
	require.True(t, errors.As(err, &me))
	require.Equal(t, 1, me.Count)
	require.ErrorIs(t, err, integrity.ErrMismatch)
	require.Equal(t, "core billing.ledger_postings [posting_group_id=g,line_no=2]: amount 2, want 1", rep.Mismatches[0].String())
	require.NoError(t, (&integrity.Report{}).Err())
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
