package measure

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Target is one system under test, set up on fresh databases.
type Target interface {
	// System names the system in reports ("oceanway", "river", ...).
	System() string
	// Databases are the databases the system uses; the first holds its
	// queue table (the held-xmin session connects there).
	Databases() []string
	// QueueTable is the schema-qualified table whose dead tuples matter.
	QueueTable() string
	// Open opens the connections of the run (pools, clients). Set-up
	// writes (migrations, definitions) happen before, on connections that
	// are closed by then, so that Drive's "before" statistics include them.
	Open(ctx context.Context) error
	// Produce writes n messages in one transaction and returns their ids
	// (the ids the consumer side reports) once the commit returned.
	Produce(ctx context.Context, n int) ([]string, error)
	// Start starts the consumers.
	Start(ctx context.Context) error
	// Consumed is how many distinct messages are durably consumed so far;
	// it is polled often and must be cheap.
	Consumed(ctx context.Context) (int, error)
	// Finish runs once everything is consumed, before Close: it verifies
	// the system's own end state and may stamp consumption times it keeps
	// in the database into rec. It returns notes for the report.
	Finish(ctx context.Context, rec *Recorder) (latencySource string, notes []string, err error)
	// Close stops the consumers and closes every connection.
	Close(ctx context.Context) error
}

// Workload is the logical work of one run.
type Workload struct {
	Messages  int
	TxSize    int
	Producers int
	Workers   int // reported only; the target applies it
	Mode      Mode
	// HeldXmin, when positive, holds a REPEATABLE READ snapshot open on the
	// queue database from before the first message until the run ends or
	// HeldXmin passes, whichever comes first.
	HeldXmin time.Duration
	// Rate, when positive, limits the producers to Rate messages per second
	// in total: transaction i may start no earlier than i×TxSize÷Rate seconds
	// after production starts (an open-loop schedule, so a slow commit does
	// not lower the offered rate). Zero produces as fast as possible.
	Rate float64
	// Timeout bounds the run (default 10 minutes).
	Timeout time.Duration
	// OnWindow, when set, is called when the measured window opens and
	// closes (e.g. to start and stop a CPU profile).
	OnWindow func(open bool)
}

// Env is where targets run.
type Env struct {
	// ServerURL connects to the server's maintenance database.
	ServerURL string
	Logf      func(format string, args ...any)
}

func (e Env) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

// ErrIncomplete means the run ended (timeout or error) before every message
// was consumed.
var ErrIncomplete = errors.New("measure: run incomplete")

// Drive runs the workload against t and measures it. rec must be the
// recorder the target's consumers stamp (a target that keeps consumption
// times in the database stamps them in Finish). Drive always closes t.
func Drive(ctx context.Context, env Env, t Target, w Workload, rec *Recorder) (run Run, err error) {
	if w.Messages < 1 || w.TxSize < 1 || w.Producers < 1 {
		_ = t.Close(ctx)
		return Run{}, fmt.Errorf("measure: need messages, tx size and producers ≥ 1")
	}
	if w.Mode == "" {
		w.Mode = Concurrent
	}
	if w.Timeout <= 0 {
		w.Timeout = 10 * time.Minute
	}
	closed := false
	defer func() {
		if !closed {
			if cerr := t.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	run = Run{System: t.System(), Mode: w.Mode, Messages: w.Messages, TxSize: w.TxSize,
		Producers: w.Producers, Workers: w.Workers, QueueTable: t.QueueTable(), RateLimit: max(w.Rate, 0)}
	dbs := t.Databases()

	sampleConn, err := pgx.Connect(ctx, env.ServerURL)
	if err != nil {
		return run, fmt.Errorf("measure: connect: %w", err)
	}
	defer func() { _ = sampleConn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	before, err := settledStats(ctx, env, sampleConn, dbs, nil)
	if err != nil {
		return run, err
	}
	if err := t.Open(ctx); err != nil {
		return run, fmt.Errorf("open %s: %w", t.System(), err)
	}

	var holder *xminHolder
	var holderPID atomic.Int64
	excluded := func() []int {
		if p := holderPID.Load(); p != 0 {
			return []int{int(p)}
		}
		return nil
	}
	if w.HeldXmin > 0 {
		holder, err = holdXmin(ctx, DatabaseURL(env.ServerURL, dbs[0]), w.HeldXmin)
		if err != nil {
			return run, err
		}
		holderPID.Store(int64(holder.pid))
		defer holder.release()
		run.Variant = "held-xmin"
	}

	runCtx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()

	sampler := newCPUSampler(sampleConn, dbs, excluded)
	if w.Mode == BurnDown {
		// Production is not part of a burn-down's consume window, but its
		// CPU is part of the work: the sampler covers both.
		sampler.Start(runCtx)
		if w.OnWindow != nil {
			w.OnWindow(true)
		}
		t0 := time.Now()
		if err := produce(runCtx, t, w, rec); err != nil {
			return run, err
		}
		run.ProduceSeconds = time.Since(t0).Seconds()
		sampler.Mark(runCtx)
		start := time.Now()
		if err := t.Start(runCtx); err != nil {
			return run, fmt.Errorf("start consumers: %w", err)
		}
		if err := waitConsumed(runCtx, t, w.Messages); err != nil {
			return run, err
		}
		run.ConsumeSeconds = time.Since(start).Seconds()
	} else {
		if err := t.Start(runCtx); err != nil {
			return run, fmt.Errorf("start consumers: %w", err)
		}
		sampler.Start(runCtx)
		if w.OnWindow != nil {
			w.OnWindow(true)
		}
		t0 := time.Now()
		var prodErr error
		var prodDone sync.WaitGroup
		prodDone.Add(1)
		go func() {
			defer prodDone.Done()
			prodErr = produce(runCtx, t, w, rec)
			run.ProduceSeconds = time.Since(t0).Seconds()
		}()
		waitErr := waitConsumed(runCtx, t, w.Messages)
		end := time.Now()
		if waitErr != nil {
			cancel()
		}
		prodDone.Wait()
		if prodErr != nil {
			return run, prodErr
		}
		if waitErr != nil {
			return run, waitErr
		}
		run.ConsumeSeconds = end.Sub(t0).Seconds()
	}
	if w.OnWindow != nil {
		w.OnWindow(false)
	}
	run.CPU = sampler.Stop(ctx, w.Messages)
	run.ProducedPerSec = perSec(w.Messages, run.ProduceSeconds)
	run.ConsumedPerSec = perSec(w.Messages, run.ConsumeSeconds)
	run.ProduceSeconds, run.ConsumeSeconds = round3(run.ProduceSeconds), round3(run.ConsumeSeconds)

	src, notes, err := t.Finish(ctx, rec)
	if err != nil {
		return run, fmt.Errorf("finish %s: %w", t.System(), err)
	}
	run.LatencySource, run.Notes = src, notes
	lat, missing := rec.Latencies()
	if missing > 0 {
		return run, fmt.Errorf("%w: %d message(s) without a consumption time", ErrIncomplete, missing)
	}
	if d := rec.Duplicates(); d > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d duplicate consumption(s) observed", d))
	}
	run.Latency = Summarize(lat)

	closed = true
	if err := t.Close(ctx); err != nil {
		return run, fmt.Errorf("close %s: %w", t.System(), err)
	}
	after, err := settledStats(ctx, env, sampleConn, dbs, excluded())
	if err != nil {
		return run, err
	}
	if q := t.QueueTable(); q != "" {
		if run.QueueDeadAfterVacuum, run.VacuumSeconds, err = vacuumQueue(ctx, DatabaseURL(env.ServerURL, dbs[0]), q); err != nil {
			return run, err
		}
	}
	if holder != nil {
		run.HeldXmin = &HeldXmin{Requested: w.HeldXmin.String(), HeldSeconds: round3(holder.release().Seconds()), Database: dbs[0]}
	}
	run.Rows = rowsOf(before, after, w.Messages)
	for _, tw := range run.Rows.Tables {
		if tw.Database == dbs[0] && tw.Table == t.QueueTable() {
			run.QueueDeadTuples = tw.DeadTuples
		}
	}
	return run, nil
}

// settledStats waits until no session (but the excluded) is connected to
// the databases, then reads their table statistics until two reads 100 ms
// apart agree: a backend leaves pg_stat_activity a moment before its
// exit-time statistics flush lands.
func settledStats(ctx context.Context, env Env, admin *pgx.Conn, dbs []string, exclude []int) (map[string]TableWrites, error) {
	if err := waitBackendsGone(ctx, admin, dbs, exclude, 30*time.Second); err != nil {
		return nil, err
	}
	read := func() (map[string]TableWrites, error) {
		all := map[string]TableWrites{}
		for _, name := range dbs {
			s, err := tableStats(ctx, DatabaseURL(env.ServerURL, name), name)
			if err != nil {
				return nil, err
			}
			for k, v := range s {
				all[name+"/"+k] = v
			}
		}
		return all, nil
	}
	prev, err := read()
	for i := 0; err == nil && i < 20; i++ {
		time.Sleep(100 * time.Millisecond)
		var cur map[string]TableWrites
		if cur, err = read(); err == nil {
			if maps.Equal(prev, cur) {
				return cur, nil
			}
			prev = cur
		}
	}
	return prev, err
}

func rowsOf(before, after map[string]TableWrites, messages int) Rows {
	r := Rows{Tables: tableDelta(before, after),
		Source: "pg_stat_user_tables n_tup_ins+n_tup_upd+n_tup_del deltas over the run's databases, read after its sessions closed"}
	sort.Slice(r.Tables, func(i, j int) bool {
		if r.Tables[i].Database != r.Tables[j].Database {
			return r.Tables[i].Database < r.Tables[j].Database
		}
		return r.Tables[i].Table < r.Tables[j].Table
	})
	var read, scans int64
	for _, t := range r.Tables {
		r.Inserted += t.Inserted
		r.Updated += t.Updated
		r.Deleted += t.Deleted
		read += t.SeqTupRead + t.IdxTupRead
		scans += t.SeqScans + t.IdxScans
	}
	if messages > 0 {
		r.PerMessage = round3(float64(r.Inserted+r.Updated+r.Deleted) / float64(messages))
		r.ReadPerMessage = round3(float64(read) / float64(messages))
		r.ScansPerMessage = round3(float64(scans) / float64(messages))
	}
	return r
}

// produce runs w.Producers producers over ceil(Messages/TxSize) transactions.
func produce(ctx context.Context, t Target, w Workload, rec *Recorder) error {
	txs := (w.Messages + w.TxSize - 1) / w.TxSize
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, w.Producers)
	for range w.Producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= txs || ctx.Err() != nil {
					return
				}
				if w.Rate > 0 {
					if err := sleepUntil(ctx, start.Add(scheduled(i, w.TxSize, w.Rate))); err != nil {
						return
					}
				}
				n := min(w.TxSize, w.Messages-i*w.TxSize)
				ids, err := t.Produce(ctx, n)
				if err != nil {
					errs <- fmt.Errorf("produce: %w", err)
					return
				}
				rec.Committed(ids, time.Now())
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// scheduled is when transaction i is due after production starts at rate
// messages per second, txSize messages per transaction.
func scheduled(i, txSize int, rate float64) time.Duration {
	return time.Duration(float64(i*txSize) / rate * float64(time.Second))
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitConsumed polls t.Consumed until n messages are consumed.
func waitConsumed(ctx context.Context, t Target, n int) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := t.Consumed(ctx)
		if err != nil {
			return fmt.Errorf("consumed: %w", err)
		}
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %d of %d consumed: %w", ErrIncomplete, got, n, ctx.Err())
		case <-tick.C:
		}
	}
}

// vacuumQueue runs VACUUM on the queue table and returns the dead tuples it
// left (pg_stat_user_tables.n_dead_tup right after it: the row versions
// still visible to some snapshot) and how long it took.
func vacuumQueue(ctx context.Context, dsn, table string) (int64, float64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, 0, fmt.Errorf("vacuum %s: %w", table, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	schema, name, ok := strings.Cut(table, ".")
	if !ok {
		return 0, 0, fmt.Errorf("vacuum: table %q is not schema-qualified", table)
	}
	start := time.Now()
	if _, err := conn.Exec(ctx, "VACUUM "+pgx.Identifier{schema, name}.Sanitize()); err != nil {
		return 0, 0, fmt.Errorf("vacuum %s: %w", table, err)
	}
	took := time.Since(start).Seconds()
	rows, err := conn.Query(ctx, qDeadTuples, pgx.NamedArgs{"schema": schema, "name": name})
	if err != nil {
		return 0, 0, fmt.Errorf("vacuum %s: dead tuples: %w", table, err)
	}
	dead, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, 0, fmt.Errorf("vacuum %s: dead tuples: %w", table, err)
	}
	return dead, round3(took), nil
}
