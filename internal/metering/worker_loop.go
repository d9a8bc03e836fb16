package metering

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/db"
)

// WorkerConfig configures the metering worker loop.
type WorkerConfig struct {
	Processor ProcessorConfig
	// Concurrency is the number of claim → process → finish loops (default 4).
	Concurrency int
	// Lease is how long a claimed attempt owns its Work (default 30s); a
	// worker that dies is replaced after it, with a new fencing token.
	Lease time.Duration
	// Idle is how long a loop waits after finding no claimable Work (default 100ms).
	Idle time.Duration
	// Lanes are the lanes this worker claims (default: both, the eligibility
	// lane first).
	Lanes []string
	Log   *slog.Logger
}

// WorkerStats counts what the worker did (monotonic).
type WorkerStats struct {
	Applied, Superseded, Blocked, Retried, Fenced, Failed, Snapshots int64
	// OwnerConflicts counts attempts handed back because an owner read
	// answered conflicting (ErrOwnerConflictUnbound).
	OwnerConflicts int64
}

// Worker is the metering worker: bounded concurrent loops that claim Work
// of their lanes (fenced attempts under a lease), process it and finish it.
type Worker struct {
	pool  db.Beginner
	proc  *Processor
	cfg   WorkerConfig
	stats struct {
		applied, superseded, blocked, retried, fenced, failed, snapshots, ownerConflicts atomic.Int64
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
	return &Worker{pool: pool, proc: proc, cfg: cfg}, nil
}

// Stats returns the counters so far.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{Applied: w.stats.applied.Load(), Superseded: w.stats.superseded.Load(), Blocked: w.stats.blocked.Load(),
		Retried: w.stats.retried.Load(), Fenced: w.stats.fenced.Load(), Failed: w.stats.failed.Load(), Snapshots: w.stats.snapshots.Load(),
		OwnerConflicts: w.stats.ownerConflicts.Load()}
}

// Run runs the loops until ctx ends; in-flight attempts finish first.
func (w *Worker) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range w.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, i)
		}()
	}
	wg.Wait()
}

// RunOnce claims and processes Work until none is claimable (tests, bench).
func (w *Worker) RunOnce(ctx context.Context) error {
	for {
		did, err := w.step(ctx)
		if err != nil || !did {
			return err
		}
	}
}

func (w *Worker) loop(ctx context.Context, i int) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		did, err := w.step(ctx)
		if err != nil && ctx.Err() == nil {
			w.cfg.Log.Warn("metering worker", "loop", i, "err", err)
		}
		if did && err == nil {
			timer.Reset(0)
		} else {
			timer.Reset(w.cfg.Idle)
		}
	}
}

// step claims one Work of any configured lane and processes it; did is
// false when nothing was claimable.
func (w *Worker) step(ctx context.Context) (did bool, err error) {
	for _, lane := range w.cfg.Lanes {
		a, err := ClaimLane(ctx, w.pool, lane, w.cfg.Lease)
		if errors.Is(err, ErrNoWork) {
			continue
		}
		if err != nil {
			return false, err
		}
		return true, w.process(ctx, a)
	}
	return false, nil
}

func (w *Worker) process(ctx context.Context, a *Attempt) error {
	out, err := w.proc.Process(ctx, a)
	switch {
	case errors.Is(err, ErrFenced):
		w.stats.fenced.Add(1) // a newer attempt owns the Work: nothing written
		return nil
	case errors.Is(err, ErrNotSuperseded), errors.Is(err, ErrAvailabilityNotCurrent):
		// Not a failure: a newer generation is on its way (its event
		// supersedes this Work); nothing was written.
		w.stats.retried.Add(1)
		return Release(context.WithoutCancel(ctx), w.pool, a, w.cfg.Idle)
	case err != nil:
		// Retryable (owner read, lock) or an unexpected failure: nothing was
		// written; hand the Work back (no fact, no finish, no CAS).
		switch {
		case errors.Is(err, ErrRetryable):
			w.stats.retried.Add(1)
		case errors.Is(err, ErrOwnerConflictUnbound):
			w.stats.ownerConflicts.Add(1)
		default:
			w.stats.failed.Add(1)
		}
		if rerr := Release(context.WithoutCancel(ctx), w.pool, a, 10*w.cfg.Idle); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	case out.Blocked != nil:
		w.stats.blocked.Add(1)
		// The Work stays active; retry it less often the longer it stays
		// blocked (its cause needs a fix elsewhere).
		return Release(context.WithoutCancel(ctx), w.pool, a, blockedBackoff(w.cfg.Idle, a.Head.AttemptNumber))
	case out.Finished != nil && out.Finished.Outcome.State == receipt.FinishSuperseded:
		w.stats.superseded.Add(1)
	case out.Finished != nil:
		w.stats.applied.Add(1)
	}
	w.stats.snapshots.Add(int64(out.NewSnapshots))
	return nil
}

// maxBlockedBackoff caps how long a blocked Work waits between attempts.
const maxBlockedBackoff = 10 * time.Minute

// blockedBackoff is 10 idle periods doubled per attempt of the Work, capped.
func blockedBackoff(idle time.Duration, attemptNumber int64) time.Duration {
	d := 10 * idle
	for i := int64(1); i < attemptNumber && d < maxBlockedBackoff; i++ {
		d *= 2
	}
	return min(d, maxBlockedBackoff)
}
