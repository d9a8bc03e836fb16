package metering

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/work"
)

// WorkerConfig configures the metering worker loop.
type WorkerConfig struct {
	Processor ProcessorConfig
	// Concurrency is the number of attempts the eligibility lane runs at
	// once (default 4); the provider-cost lane runs half as many (laneSlots).
	Concurrency int
	// Lease is how long a claimed attempt owns its Work (default 30s); a
	// running attempt renews it, and a worker that dies is replaced after
	// it, with a new fencing token.
	Lease time.Duration
	// Idle is how long a loop waits after finding no claimable Work (default 100ms).
	Idle time.Duration
	// Lanes are the lanes this worker claims (default: both).
	Lanes []string
	// Metrics receives the lanes' Work metrics (queues metering_eligibility
	// and metering_provider_cost); nil for unregistered ones.
	Metrics *work.Metrics
	Log     *slog.Logger
}

// WorkerStats counts what the worker did (monotonic).
type WorkerStats struct {
	Applied, Superseded, Blocked, Retried, Fenced, Failed, Snapshots int64
	// OwnerConflicts counts attempts handed back because an owner read
	// answered conflicting (ErrOwnerConflictUnbound).
	OwnerConflicts int64
	// Awaiting counts eligibility attempts that found registered charge
	// dimensions without Gateway usage yet (the Work stayed active).
	Awaiting int64
}

// Worker is the metering worker: one work.Runner per lane, each claiming
// Work of its lane (fenced attempts under a lease), processing it and
// finishing it.
type Worker struct {
	pool    db.Beginner
	proc    *Processor
	cfg     WorkerConfig
	runners []*work.Runner
	stats   struct {
		applied, superseded, blocked, retried, fenced, failed, snapshots, ownerConflicts, awaiting atomic.Int64
	}
}

// NewWorker builds the worker over the metering database.
func NewWorker(pool db.Beginner, cfg WorkerConfig) (*Worker, error) {
	proc, err := NewProcessor(pool, cfg.Processor)
	if err != nil {
		return nil, err
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 100 * time.Millisecond
	}
	if len(cfg.Lanes) == 0 {
		cfg.Lanes = []string{receipt.LaneEligibility, receipt.LaneProviderCost}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = work.NewMetrics(nil)
	}
	w := &Worker{pool: pool, proc: proc, cfg: cfg}
	store := laneStore(pool)
	for _, lane := range cfg.Lanes {
		w.runners = append(w.runners, work.NewRunner[*Attempt](&laneQueue{w: w, lane: lane, store: store}, work.Config{
			Name: laneQueueName[lane], Slots: laneSlots(lane, cfg.Concurrency), Lease: cfg.Lease, Idle: cfg.Idle, Drain: cfg.Lease,
			Metrics: cfg.Metrics, Outcomes: []string{workOutcomeApplied, workOutcomeSuperseded}, Log: cfg.Log,
		}))
	}
	return w, nil
}

// laneSlots: the eligibility lane (every settlement input a finalization
// waits for) gets Concurrency slots, the provider-cost lane (diagnostics
// only, ME-2: never on the charging path) half of them, at least one, so
// it does not take the CPU the charging path needs.
func laneSlots(lane string, concurrency int) int {
	if lane == receipt.LaneProviderCost {
		return max(1, concurrency/2)
	}
	return concurrency
}

// Stats returns the counters so far.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{Applied: w.stats.applied.Load(), Superseded: w.stats.superseded.Load(), Blocked: w.stats.blocked.Load(),
		Retried: w.stats.retried.Load(), Fenced: w.stats.fenced.Load(), Failed: w.stats.failed.Load(), Snapshots: w.stats.snapshots.Load(),
		OwnerConflicts: w.stats.ownerConflicts.Load(), Awaiting: w.stats.awaiting.Load()}
}

// Run runs every lane's Runner until ctx ends; in-flight attempts finish first.
func (w *Worker) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range w.runners {
		wg.Go(func() { r.Run(ctx) })
	}
	wg.Wait()
}

// RunOnce claims and processes Work, lane by lane in order, until none is
// claimable (tests, bench); it stops at the first attempt that failed or
// was handed back for a retryable cause and returns that cause.
func (w *Worker) RunOnce(ctx context.Context) error {
	for {
		did := false
		for _, r := range w.runners {
			results, err := r.Pass(ctx, 1)
			if err != nil {
				return err
			}
			if len(results) == 0 {
				continue
			}
			if results[0].Err != nil {
				return results[0].Err
			}
			did = true
			break
		}
		if !did {
			return nil
		}
	}
}
