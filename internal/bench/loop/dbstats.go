package loop

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/db"
)

// The statements read PostgreSQL's statistics views, which sqlc does not
// model.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var stmts = db.MustLoadStatements("loop", sqlFiles, "sql")

var (
	qDatabaseStats = stmts.Get("database_stats")
	qTableReads    = stmts.Get("table_reads")
)

// counters are one database's cumulative statistics at one moment.
type counters struct {
	Commits     int64 // pg_stat_database.xact_commit
	Rollbacks   int64 // pg_stat_database.xact_rollback
	TupReturned int64 // pg_stat_database.tup_returned
	TupFetched  int64 // pg_stat_database.tup_fetched
	SeqTupRead  int64 // sum of pg_stat_user_tables.seq_tup_read
	IdxTupFetch int64 // sum of pg_stat_user_tables.idx_tup_fetch
}

func (c counters) minus(o counters) counters {
	return counters{Commits: c.Commits - o.Commits, Rollbacks: c.Rollbacks - o.Rollbacks,
		TupReturned: c.TupReturned - o.TupReturned, TupFetched: c.TupFetched - o.TupFetched,
		SeqTupRead: c.SeqTupRead - o.SeqTupRead, IdxTupFetch: c.IdxTupFetch - o.IdxTupFetch}
}

// rowsRead is the user-table rows the database handed out.
func (c counters) rowsRead() int64 { return c.SeqTupRead + c.IdxTupFetch }

// readCounters reads the counters of every database: pg_stat_database on
// admin (a session of the maintenance database), the user tables' on a
// fresh session of each database (whose own statements touch only the
// catalogs).
func readCounters(ctx context.Context, admin *pgx.Conn, serverURL string, databases []string) (map[string]counters, error) {
	rows, err := admin.Query(ctx, qDatabaseStats, pgx.NamedArgs{"databases": databases})
	if err != nil {
		return nil, fmt.Errorf("loop: database stats: %w", err)
	}
	type dbRow struct {
		Name        string `db:"datname"`
		Commits     int64  `db:"xact_commit"`
		Rollbacks   int64  `db:"xact_rollback"`
		TupReturned int64  `db:"tup_returned"`
		TupFetched  int64  `db:"tup_fetched"`
	}
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByName[dbRow])
	if err != nil {
		return nil, fmt.Errorf("loop: database stats: %w", err)
	}
	out := make(map[string]counters, len(databases))
	for _, r := range rs {
		out[r.Name] = counters{Commits: r.Commits, Rollbacks: r.Rollbacks, TupReturned: r.TupReturned, TupFetched: r.TupFetched}
	}
	for _, name := range databases {
		c, ok := out[name]
		if !ok {
			return nil, fmt.Errorf("loop: database %s has no statistics", name)
		}
		if c.SeqTupRead, c.IdxTupFetch, err = tableReads(ctx, measure.DatabaseURL(serverURL, name)); err != nil {
			return nil, fmt.Errorf("loop: table reads of %s: %w", name, err)
		}
		out[name] = c
	}
	return out, nil
}

func tableReads(ctx context.Context, dsn string) (seq, idx int64, err error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	err = conn.QueryRow(ctx, qTableReads).Scan(&seq, &idx)
	return seq, idx, err
}
