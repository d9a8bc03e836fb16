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
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT t.schemaname || '.' || t.relname, t.n_tup_ins, t.n_tup_upd, t.n_tup_hot_upd, t.n_tup_del, t.n_dead_tup,
		  coalesce(t.seq_scan, 0), coalesce(t.seq_tup_read, 0), coalesce(t.idx_scan, 0), coalesce(i.idx_tup_read, 0)
		FROM pg_catalog.pg_stat_user_tables t
		LEFT JOIN (SELECT relid, sum(idx_tup_read)::bigint AS idx_tup_read FROM pg_catalog.pg_stat_user_indexes GROUP BY relid) i USING (relid)`)
	if err != nil {
		return nil, fmt.Errorf("table stats of %s: %w", database, err)
	}
	defer rows.Close()
	out := map[string]TableWrites{}
	for rows.Next() {
		t := TableWrites{Database: database}
		if err := rows.Scan(&t.Table, &t.Inserted, &t.Updated, &t.HOTUpdated, &t.Deleted, &t.DeadTuples,
			&t.SeqScans, &t.SeqTupRead, &t.IdxScans, &t.IdxTupRead); err != nil {
			return nil, err
		}
		out[t.Table] = t
	}
	return out, rows.Err()
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
