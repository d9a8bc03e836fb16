package dbgauge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbgauge"
	"github.com/oceanway/core/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// pool is a plain database: the gauges under test read VALUES lists and
// a scratch table, no owner's tables.
func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}}).Core()
}

func collector(p *pgxpool.Pool, timeout time.Duration, qs ...dbgauge.Query) *dbgauge.Collector {
	return dbgauge.New(dbgauge.Config{Owner: "scratch", Pool: p, Timeout: timeout, Queries: qs})
}

// byState is a labelled query: two rows of (state, count, age), with the
// "blocked" tuple always exported.
var byState = dbgauge.Query{
	SQL:    `SELECT * FROM (VALUES ('open', 3::float8, 12.5::float8), ('waiting', 1::float8, 4::float8)) v(state, n, age)`,
	Labels: []string{"state"},
	Gauges: []dbgauge.Gauge{
		{Name: "oceanway_scratch_items", Help: "Items by state."},
		{Name: "oceanway_scratch_oldest_age_seconds", Help: "Oldest item by state."},
	},
	Always: [][]string{{"open"}, {"blocked"}},
}

// unlabelled is a query without labels: one row, one series per gauge.
var unlabelled = dbgauge.Query{
	SQL:    `SELECT 7::float8`,
	Gauges: []dbgauge.Gauge{{Name: "oceanway_scratch_total", Help: "Everything."}},
}

// OBS-1, OBS-2 (issue 36): every row of a statement becomes one series per
// gauge, labelled by its leading text columns; an Always tuple the
// statement did not return is exported at 0, and one it did return is
// exported once, with its value (never a second 0 beside it); a scrape
// that read everything says scrape_ok 1.
func TestRowsBecomeLabelledGaugesWithAlwaysTuplesAtZero(t *testing.T) {
	t.Parallel()
	c := collector(pool(t), 5*time.Second, byState, unlabelled)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP oceanway_scratch_items Items by state.
# TYPE oceanway_scratch_items gauge
oceanway_scratch_items{state="blocked"} 0
oceanway_scratch_items{state="open"} 3
oceanway_scratch_items{state="waiting"} 1
# HELP oceanway_scratch_oldest_age_seconds Oldest item by state.
# TYPE oceanway_scratch_oldest_age_seconds gauge
oceanway_scratch_oldest_age_seconds{state="blocked"} 0
oceanway_scratch_oldest_age_seconds{state="open"} 12.5
oceanway_scratch_oldest_age_seconds{state="waiting"} 4
# HELP oceanway_scratch_total Everything.
# TYPE oceanway_scratch_total gauge
oceanway_scratch_total 7
# HELP oceanway_scratch_scrape_ok 1 when the owner's scrape-time state could be read from its database.
# TYPE oceanway_scratch_scrape_ok gauge
oceanway_scratch_scrape_ok 1
`)))
	// A registry gathers them without a duplicate series (the pedantic
	// registry also checks every series against Describe).
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 4)
}

// OBS-1 (issue 36): a statement that returns no row at all still exports
// its Always tuples at 0, so a series an alert names exists before its
// first non-zero value.
func TestEmptyStatementExportsAlwaysTuples(t *testing.T) {
	t.Parallel()
	q := byState
	q.SQL = `SELECT * FROM (VALUES ('open', 3::float8, 1::float8)) v(state, n, age) WHERE false`
	c := collector(pool(t), 5*time.Second, q)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP oceanway_scratch_items Items by state.
# TYPE oceanway_scratch_items gauge
oceanway_scratch_items{state="blocked"} 0
oceanway_scratch_items{state="open"} 0
`), "oceanway_scratch_items"))
	require.Equal(t, 5, testutil.CollectAndCount(c), "2 tuples × 2 gauges + scrape_ok")
}

// OBS-1 (issue 36): a statement that fails — division by zero, a missing
// table, a statement that outlives the scrape timeout — exports ONLY
// scrape_ok 0: no gauge of any query, not even the ones read before the
// failure or the Always tuples, since a 0 there would look like a value.
func TestFailedReadExportsOnlyScrapeOkZero(t *testing.T) {
	t.Parallel()
	p := pool(t)
	for name, tc := range map[string]struct {
		sql     string
		timeout time.Duration
	}{
		"division by zero": {sql: `SELECT (1 / 0)::float8`, timeout: 5 * time.Second},
		"missing table":    {sql: `SELECT count(*)::float8 FROM public.no_such_table`, timeout: 5 * time.Second},
		"timeout":          {sql: `SELECT 1::float8 FROM pg_sleep(5)`, timeout: 200 * time.Millisecond},
	} {
		failing := dbgauge.Query{SQL: tc.sql, Gauges: []dbgauge.Gauge{{Name: "oceanway_scratch_failing", Help: "Fails."}}}
		c := collector(p, tc.timeout, byState, unlabelled, failing)
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP oceanway_scratch_scrape_ok 1 when the owner's scrape-time state could be read from its database.
# TYPE oceanway_scratch_scrape_ok gauge
oceanway_scratch_scrape_ok 0
`)), name)
		require.Equal(t, 1, testutil.CollectAndCount(c), name)
		ctx, cancel := context.WithTimeout(t.Context(), tc.timeout)
		_, err := c.Read(ctx)
		cancel()
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "scratch gauges oceanway_scratch_failing", name)
	}
}

// OBS-1 (issue 36): the statements run in one read-only, repeatable-read
// transaction.
func TestReadIsOneReadOnlyRepeatableReadTransaction(t *testing.T) {
	t.Parallel()
	tx := dbgauge.Query{
		SQL: `SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only'),
		             extract(epoch FROM now())::float8`,
		Labels: []string{"isolation", "read_only"},
		Gauges: []dbgauge.Gauge{{Name: "oceanway_scratch_tx_start", Help: "Transaction start."}},
	}
	again := tx
	again.SQL = `SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only'),
	                    extract(epoch FROM now())::float8 FROM pg_sleep(0.05)`
	again.Gauges = []dbgauge.Gauge{{Name: "oceanway_scratch_tx_start_again", Help: "Transaction start, later."}}
	rows, err := collector(pool(t), 5*time.Second, tx, again).Read(t.Context())
	require.NoError(t, err)
	require.Len(t, rows, 2)
	for _, r := range rows {
		require.Len(t, r, 1)
		require.Equal(t, []string{"repeatable read", "on"}, r[0].Labels)
	}
	require.Equal(t, rows[0][0].Values, rows[1][0].Values, "now() is the transaction's start in both statements")

	// Read-only: a statement that writes fails the scrape
	// (25006 read_only_sql_transaction).
	p := pool(t)
	_, err = p.Exec(t.Context(), `CREATE SEQUENCE public.gauge_seq`)
	require.NoError(t, err)
	writes := dbgauge.Query{SQL: `SELECT nextval('public.gauge_seq')::float8`,
		Gauges: []dbgauge.Gauge{{Name: "oceanway_scratch_writes", Help: "Writes."}}}
	_, err = collector(p, 5*time.Second, writes).Read(t.Context())
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, pgerrcode.ReadOnlySQLTransaction, pgErr.Code)
}

// OBS-1 (issue 36): all queries of a scrape read one snapshot. The first
// statement takes the snapshot and then waits on an advisory lock the
// test holds; meanwhile another session commits a row; the second
// statement, which starts after that commit, must still count the rows of
// the first statement's snapshot (a statement-level snapshot would see
// the new row).
func TestAllQueriesReadOneSnapshot(t *testing.T) {
	t.Parallel()
	p := pool(t)
	ctx := t.Context()
	_, err := p.Exec(ctx, `CREATE TABLE public.gauge_rows (n int); INSERT INTO public.gauge_rows VALUES (1)`)
	require.NoError(t, err)
	const lockKey = 0x0B51 // any key no other test of this database takes
	holder, err := p.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey)
	require.NoError(t, err)

	first := dbgauge.Query{
		SQL: fmt.Sprintf(`SELECT (SELECT count(*) FROM public.gauge_rows)::float8
		        FROM (SELECT pg_advisory_xact_lock_shared(%d)) l`, lockKey),
		Gauges: []dbgauge.Gauge{{Name: "oceanway_scratch_rows_first", Help: "Rows, first statement."}},
	}
	second := dbgauge.Query{SQL: `SELECT count(*)::float8 FROM public.gauge_rows`,
		Gauges: []dbgauge.Gauge{{Name: "oceanway_scratch_rows_second", Help: "Rows, second statement."}}}
	type result struct {
		rows [][]dbgauge.Row
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := collector(p, 30*time.Second, first, second).Read(ctx)
		done <- result{rows, err}
	}()
	// Wait until the first statement waits on the lock (its snapshot is
	// taken).
	require.Eventually(t, func() bool {
		var waiting bool
		err := p.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND objid = $1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`, lockKey).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond)
	_, err = p.Exec(ctx, `INSERT INTO public.gauge_rows VALUES (2)`)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lockKey)
	require.NoError(t, err)

	var res result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the collector's read did not finish")
	}
	require.NoError(t, res.err)
	require.Equal(t, []float64{1}, res.rows[0][0].Values)
	require.Equal(t, []float64{1}, res.rows[1][0].Values, "the second statement reads the first statement's snapshot")
	var now int
	require.NoError(t, p.QueryRow(ctx, `SELECT count(*) FROM public.gauge_rows`).Scan(&now))
	require.Equal(t, 2, now)
}

// OBS-2 (issue 36): an Always tuple whose arity does not match the
// labels is a build defect, refused when the collector is built.
func TestAlwaysTupleMustMatchLabels(t *testing.T) {
	t.Parallel()
	q := byState
	q.Always = [][]string{{"open", "extra"}}
	require.Panics(t, func() { dbgauge.New(dbgauge.Config{Owner: "scratch", Queries: []dbgauge.Query{q}}) })
}
