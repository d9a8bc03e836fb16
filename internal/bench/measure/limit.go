package measure

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// LimitParams shape the physical-limit measurement.
type LimitParams struct {
	// Database is created fresh on the server and dropped afterwards
	// unless Keep.
	Database string
	Keep     bool
	// Concurrency is the number of sessions writing at once.
	Concurrency int
	// Duration of each of the two tests (default 3s).
	Duration time.Duration
	// PayloadBytes is the size of each row's payload (the size of a message).
	PayloadBytes int
	// BatchRows is the number of rows per batched INSERT (default 100).
	BatchRows int
}

// MeasureLimit measures what the server can do at most for this shape of
// work, with nothing of any queue around it:
//
//   - single-row INSERT commits/s: Concurrency sessions each commit
//     INSERT INTO t (payload) VALUES (@payload) in its own transaction, in a loop;
//   - batched INSERT rows/s: the same sessions each commit one
//     INSERT ... SELECT unnest(@payloads::text[]) of BatchRows rows per transaction.
//
// The table is (id bigserial primary key, payload text), the bare minimum
// of a durable message row.
func MeasureLimit(ctx context.Context, env Env, p LimitParams) (Limit, error) {
	if p.Concurrency < 1 {
		p.Concurrency = 1
	}
	if p.Duration <= 0 {
		p.Duration = 3 * time.Second
	}
	if p.BatchRows <= 0 {
		p.BatchRows = 100
	}
	if err := CreateDatabase(ctx, env.ServerURL, p.Database); err != nil {
		return Limit{}, err
	}
	if !p.Keep {
		defer func() { _ = DropDatabases(ctx, env.ServerURL, p.Database) }()
	}
	pool, err := NewPool(ctx, DatabaseURL(env.ServerURL, p.Database), int32(p.Concurrency))
	if err != nil {
		return Limit{}, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, qLimitTable); err != nil {
		return Limit{}, err
	}
	payload := strings.Repeat("x", max(1, p.PayloadBytes))
	batch := make([]string, p.BatchRows)
	for i := range batch {
		batch[i] = payload
	}
	out := Limit{Concurrency: p.Concurrency, PayloadBytes: len(payload), Seconds: p.Duration.Seconds(), BatchRows: p.BatchRows}

	loop := func(stmt string, arg any) (commits int64, lat []time.Duration, err error) {
		var n atomic.Int64
		var mu sync.Mutex
		var firstErr error
		var wg sync.WaitGroup
		deadline := time.Now().Add(p.Duration)
		for range p.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := pool.Acquire(ctx)
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				defer conn.Release()
				var local []time.Duration
				for time.Now().Before(deadline) && ctx.Err() == nil {
					start := time.Now()
					if _, err := conn.Exec(ctx, stmt, arg); err != nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
						return
					}
					local = append(local, time.Since(start))
					n.Add(1)
				}
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return n.Load(), lat, firstErr
	}

	env.logf("limit: single-row INSERT commits, %d sessions, %s", p.Concurrency, p.Duration)
	commits, lat, err := loop(qLimitInsertRow, pgx.NamedArgs{"payload": payload})
	if err != nil {
		return out, fmt.Errorf("limit single-row: %w", err)
	}
	s := Summarize(lat)
	out.SingleRowCommitsSec = round3(float64(commits) / p.Duration.Seconds())
	out.SingleRowCommitP50Ms, out.SingleRowCommitP99Ms = s.P50, s.P99

	env.logf("limit: batched INSERT of %d rows, %d sessions, %s", p.BatchRows, p.Concurrency, p.Duration)
	commits, lat, err = loop(qLimitInsertBatch, pgx.NamedArgs{"payloads": batch})
	if err != nil {
		return out, fmt.Errorf("limit batched: %w", err)
	}
	out.BatchedRowsSec = round3(float64(commits*int64(p.BatchRows)) / p.Duration.Seconds())
	out.BatchedCommitP99Ms = Summarize(lat).P99
	return out, nil
}
