// Package river is the River peer: N jobs inserted with InsertManyTx in
// business transactions of TxSize jobs, worked by a no-op worker with
// River's default batch completer, until every job is completed in the
// database.
//
// Two fetch settings: Tuned is what River's own benchmark (`river bench`)
// uses to maximize throughput — MaxWorkers 2,000, FetchCooldown 2ms,
// FetchPollInterval 20ms; Defaults leaves River's defaults (FetchCooldown
// 100ms, FetchPollInterval 1s) with MaxWorkers = the run's worker count,
// which caps a no-op queue at about MaxWorkers per 100ms.
//
// Receipt (system "river-receipt") is Tuned with the worker a River user
// writes to get what an OceanWay consumer gets: before the job completes,
// the worker stores an idempotent receipt keyed by the job's message id in
// a separate consumer database (insert, or compare with the stored receipt
// when the message was applied before), on a consumer pool of Workers
// sessions.
package river

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/oceanway/core/internal/bench/measure"
)

// System names in reports.
const (
	SystemTuned    = "river"
	SystemDefaults = "river (defaults)"
	SystemReceipt  = "river + receipt"
)

// Settings of Tuned (from River's cmd/river/riverbench).
const (
	TunedMaxWorkers        = 2_000
	TunedFetchCooldown     = 2 * time.Millisecond
	TunedFetchPollInterval = 20 * time.Millisecond
)

// Config sets up one run.
type Config struct {
	ServerURL string
	Database  string
	// Workers is the default queue's MaxWorkers with Defaults.
	Workers int
	// Tuned takes River's own benchmark settings instead of its defaults.
	Tuned bool
	// Receipt (with Tuned) makes the worker write a receipt into the
	// consumer database ConsumerDatabase before the job completes.
	Receipt          bool
	ConsumerDatabase string
	// Producers is the number of concurrent inserting sessions (sizes the pool).
	Producers int
	// Messages sizes the completion subscription.
	Messages int
	// PayloadBytes is the size of each job's args.
	PayloadBytes int
	Recorder     *measure.Recorder
	Log          *slog.Logger
}

// args is the job: a payload the size of a message; MessageID is set with
// Receipt only (the receipt's key).
type args struct {
	MessageID string `json:"message_id,omitempty"`
	Payload   string `json:"payload"`
}

func (args) Kind() string { return "peerbench_noop" }

type noopWorker struct {
	river.WorkerDefaults[args]
}

func (noopWorker) Work(context.Context, *river.Job[args]) error { return nil }

// consumerSchema is the receipt worker's own database: one receipt per
// message, keyed by the message id, like an OceanWay consumer's inbox.
const consumerSchema = `CREATE TABLE receipts (
  message_id     text PRIMARY KEY,
  consumer_name  text NOT NULL,
  payload_sha256 text NOT NULL,
  applied_at     timestamptz NOT NULL DEFAULT now()
)`

// ErrReceiptMismatch means a message id was applied before with a different
// payload.
var ErrReceiptMismatch = errors.New("river receipt: message applied before with a different payload")

// receiptWorker stores the receipt (insert-or-compare) in the consumer
// database; the job completes only after that statement committed.
type receiptWorker struct {
	river.WorkerDefaults[args]
	pool *pgxpool.Pool
}

func (w *receiptWorker) Work(ctx context.Context, job *river.Job[args]) error {
	sum := sha256.Sum256([]byte(job.Args.Payload))
	digest := hex.EncodeToString(sum[:])
	tag, err := w.pool.Exec(ctx, `INSERT INTO receipts (message_id, consumer_name, payload_sha256) VALUES ($1, 'peerbench', $2) ON CONFLICT (message_id) DO NOTHING`, job.Args.MessageID, digest)
	if err != nil {
		return fmt.Errorf("insert receipt: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var stored string
	if err := w.pool.QueryRow(ctx, `SELECT payload_sha256 FROM receipts WHERE message_id = $1`, job.Args.MessageID).Scan(&stored); err != nil {
		return fmt.Errorf("look up receipt: %w", err)
	}
	if stored != digest {
		return fmt.Errorf("%w: %s", ErrReceiptMismatch, job.Args.MessageID)
	}
	return nil
}

// Target implements measure.Target.
type Target struct {
	cfg     Config
	payload string
	pool    *pgxpool.Pool
	cpool   *pgxpool.Pool
	client  *river.Client[pgx.Tx]
	unsub   func()
	done    chan struct{}
	count   atomic.Int64
}

// New creates the database and applies River's migrations.
func New(ctx context.Context, cfg Config) (*Target, error) {
	if err := measure.CreateDatabase(ctx, cfg.ServerURL, cfg.Database); err != nil {
		return nil, err
	}
	t := &Target{cfg: cfg, payload: strings.Repeat("x", max(1, cfg.PayloadBytes-len(`{"payload":""}`)))}
	pool, err := pgxpool.New(ctx, measure.DatabaseURL(cfg.ServerURL, cfg.Database))
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	if cfg.Receipt {
		if err := measure.CreateDatabase(ctx, cfg.ServerURL, cfg.ConsumerDatabase); err != nil {
			return nil, err
		}
		conn, err := pgx.Connect(ctx, measure.DatabaseURL(cfg.ServerURL, cfg.ConsumerDatabase))
		if err != nil {
			return nil, err
		}
		defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
		if _, err := conn.Exec(ctx, consumerSchema); err != nil {
			return nil, fmt.Errorf("create receipts: %w", err)
		}
	}
	return t, nil
}

func (t *Target) System() string {
	if t.cfg.Receipt {
		return SystemReceipt
	}
	if t.cfg.Tuned {
		return SystemTuned
	}
	return SystemDefaults
}
func (t *Target) Databases() []string {
	if t.cfg.Receipt {
		return []string{t.cfg.Database, t.cfg.ConsumerDatabase}
	}
	return []string{t.cfg.Database}
}
func (t *Target) QueueTable() string { return "public.river_job" }

// Open opens the pool and builds the client (not started).
func (t *Target) Open(ctx context.Context) error {
	var err error
	// Workers, producers, and River's own sessions: fetch, completer,
	// notifier (LISTEN), leader election and maintenance.
	if t.pool, err = measure.NewPool(ctx, measure.DatabaseURL(t.cfg.ServerURL, t.cfg.Database), int32(t.cfg.Workers+t.cfg.Producers+8)); err != nil {
		return err
	}
	workers := river.NewWorkers()
	if t.cfg.Receipt {
		if t.cpool, err = measure.NewPool(ctx, measure.DatabaseURL(t.cfg.ServerURL, t.cfg.ConsumerDatabase), int32(t.cfg.Workers)); err != nil {
			return err
		}
		river.AddWorker(workers, &receiptWorker{pool: t.cpool})
	} else {
		river.AddWorker(workers, &noopWorker{})
	}
	log := t.cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: t.cfg.Workers}},
		Workers: workers,
		Logger:  log,
	}
	if t.cfg.Tuned {
		cfg.Queues[river.QueueDefault] = river.QueueConfig{MaxWorkers: TunedMaxWorkers}
		cfg.FetchCooldown, cfg.FetchPollInterval = TunedFetchCooldown, TunedFetchPollInterval
	}
	t.client, err = river.NewClient(riverpgxv5.New(t.pool), cfg)
	if err != nil {
		return err
	}
	// Completion events are sent after the completer's UPDATE committed.
	events, unsub := t.client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: t.cfg.Messages + 1000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted},
	})
	t.unsub, t.done = unsub, make(chan struct{})
	go func() {
		defer close(t.done)
		for ev := range events {
			t.cfg.Recorder.Consumed(strconv.FormatInt(ev.Job.ID, 10), time.Now())
			t.count.Add(1)
		}
	}()
	return nil
}

// Produce inserts n jobs in one transaction with InsertManyTx.
func (t *Target) Produce(ctx context.Context, n int) ([]string, error) {
	params := make([]river.InsertManyParams, n)
	for i := range params {
		a := args{Payload: t.payload}
		if t.cfg.Receipt {
			a.MessageID = rand.Text()
		}
		params[i] = river.InsertManyParams{Args: a}
	}
	tx, err := t.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	res, err := t.client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = strconv.FormatInt(r.Job.ID, 10)
	}
	return ids, nil
}

// Start starts the client.
func (t *Target) Start(ctx context.Context) error { return t.client.Start(context.WithoutCancel(ctx)) }

// Consumed counts completion events.
func (t *Target) Consumed(context.Context) (int, error) { return t.cfg.Recorder.ConsumedCount(), nil }

// Finish checks that every job is completed in the database.
func (t *Target) Finish(ctx context.Context, _ *measure.Recorder) (string, []string, error) {
	var total, completed int
	if err := t.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'completed') FROM river_job`).Scan(&total, &completed); err != nil {
		return "", nil, err
	}
	if completed != total {
		return "", nil, fmt.Errorf("river: %d of %d jobs completed", completed, total)
	}
	var notes []string
	if n := t.count.Load(); int(n) != total {
		notes = append(notes, fmt.Sprintf("%d completion events for %d jobs", n, total))
	}
	if t.cfg.Receipt {
		var receipts int
		if err := t.cpool.QueryRow(ctx, `SELECT count(*) FROM receipts`).Scan(&receipts); err != nil {
			return "", nil, err
		}
		if receipts != total {
			return "", nil, fmt.Errorf("river receipt: %d receipts for %d completed jobs", receipts, total)
		}
	}
	return "process clock when River's completer reported the job completed (after its batch UPDATE committed) − process clock when InsertManyTx's COMMIT returned", notes, nil
}

// Close stops the client and closes the pool.
func (t *Target) Close(ctx context.Context) error {
	var err error
	if t.client != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		err = t.client.Stop(stopCtx)
		cancel()
		t.unsub()
		<-t.done
		t.client = nil
	}
	if t.pool != nil {
		t.pool.Close()
		t.pool = nil
	}
	if t.cpool != nil {
		t.cpool.Close()
		t.cpool = nil
	}
	return err
}
