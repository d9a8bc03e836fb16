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
	rows, err := conn.Query(ctx, `SELECT schemaname || '.' || relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, n_dead_tup
		FROM pg_catalog.pg_stat_user_tables`)
	if err != nil {
		return nil, fmt.Errorf("table stats of %s: %w", database, err)
	}
	defer rows.Close()
	out := map[string]TableWrites{}
	for rows.Next() {
		t := TableWrites{Database: database}
		if err := rows.Scan(&t.Table, &t.Inserted, &t.Updated, &t.HOTUpdated, &t.Deleted, &t.DeadTuples); err != nil {
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
			HOTUpdated: a.HOTUpdated - b.HOTUpdated, Deleted: a.Deleted - b.Deleted, DeadTuples: a.DeadTuples}
		if d.Inserted == 0 && d.Updated == 0 && d.Deleted == 0 && d.DeadTuples == 0 {
			continue
		}
		out = append(out, d)
	}
	return out
}
