package measure

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// xminHolder is a session that holds a REPEATABLE READ snapshot open, which
// pins the database's xmin horizon: VACUUM (auto or manual) cannot remove
// any row version that died after the snapshot was taken. This is what a
// long report query, a forgotten BEGIN in psql, or pg_dump does to a queue
// table. The snapshot only pins the horizon of its own database (and the
// shared catalogs), so it connects to the queue's database.
type xminHolder struct {
	conn  *pgx.Conn
	pid   int
	since time.Time

	once sync.Once
	held time.Duration
}

// holdXmin opens the snapshot and releases it by itself after d.
func holdXmin(ctx context.Context, dsn string, d time.Duration) (*xminHolder, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("held xmin: connect: %w", err)
	}
	h := &xminHolder{conn: conn, pid: int(conn.PgConn().PID())}
	// The snapshot is taken by the first statement after BEGIN.
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("held xmin: begin: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("held xmin: snapshot: %w", err)
	}
	h.since = time.Now()
	time.AfterFunc(d, func() { h.release() }) // a no-op when the run released it first
	return h, nil
}

// release ends the snapshot (once) and returns how long it was held.
func (h *xminHolder) release() time.Duration {
	h.once.Do(func() {
		h.held = time.Since(h.since)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = h.conn.Exec(ctx, "ROLLBACK")
		_ = h.conn.Close(ctx)
	})
	return h.held
}
