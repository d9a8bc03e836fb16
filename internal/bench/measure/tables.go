package measure

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// tableStats reads the write counters of every user table of the database
// at dsn, from a fresh session (so the statistics snapshot is current).
func tableStats(ctx context.Context, dsn, database string) (map[string]TableWrites, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("table stats of %s: %w", database, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	rows, err := conn.Query(ctx, qTableStats)
	if err != nil {
		return nil, fmt.Errorf("table stats of %s: %w", database, err)
	}
	stats, err := pgx.CollectRows(rows, pgx.RowToStructByName[tableStatsRow])
	if err != nil {
		return nil, fmt.Errorf("table stats of %s: %w", database, err)
	}
	out := make(map[string]TableWrites, len(stats))
	for _, r := range stats {
		out[r.Table] = TableWrites{Database: database, Table: r.Table, Inserted: r.Inserted, Updated: r.Updated,
			HOTUpdated: r.HOTUpdated, Deleted: r.Deleted, DeadTuples: r.DeadTuples,
			SeqScans: r.SeqScans, SeqTupRead: r.SeqTupRead, IdxScans: r.IdxScans, IdxTupRead: r.IdxTupRead}
	}
	return out, nil
}

// tableStatsRow is a row of sql/table_stats.sql, read by column name.
type tableStatsRow struct {
	Table      string `db:"table_name"`
	Inserted   int64  `db:"n_tup_ins"`
	Updated    int64  `db:"n_tup_upd"`
	HOTUpdated int64  `db:"n_tup_hot_upd"`
	Deleted    int64  `db:"n_tup_del"`
	DeadTuples int64  `db:"n_dead_tup"`
	SeqScans   int64  `db:"seq_scan"`
	SeqTupRead int64  `db:"seq_tup_read"`
	IdxScans   int64  `db:"idx_scan"`
	IdxTupRead int64  `db:"idx_tup_read"`
}

// tableDelta subtracts before from after per table; DeadTuples keeps the
// value at the end.
func tableDelta(before, after map[string]TableWrites) []TableWrites {
	var out []TableWrites
	for key, a := range after {
		b := before[key]
		d := TableWrites{Database: a.Database, Table: a.Table,
			Inserted: a.Inserted - b.Inserted, Updated: a.Updated - b.Updated,
			HOTUpdated: a.HOTUpdated - b.HOTUpdated, Deleted: a.Deleted - b.Deleted, DeadTuples: a.DeadTuples,
			SeqScans: a.SeqScans - b.SeqScans, SeqTupRead: a.SeqTupRead - b.SeqTupRead,
			IdxScans: a.IdxScans - b.IdxScans, IdxTupRead: a.IdxTupRead - b.IdxTupRead}
		if d.Inserted == 0 && d.Updated == 0 && d.Deleted == 0 && d.DeadTuples == 0 && d.SeqScans == 0 && d.IdxScans == 0 {
			continue
		}
		out = append(out, d)
	}
	return out
}
