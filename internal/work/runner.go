package work

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Queue is one leased queue of Work as the Runner sees it. A is the queue's
// claimed attempt (its Work, attempt number and fencing token).
type Queue[A any] interface {
	// Claim starts up to limit attempts of claimable Work, each with a fresh
	// fencing token and a lease of the given length (Claimable.LeasedClaim).
	Claim(ctx context.Context, limit int, lease time.Duration) ([]A, error)
	// Work runs one attempt to its Result. Every write it makes names the
	// attempt's token; the database refuses a token that is not the latest.
	Work(ctx context.Context, a A) Result
	// Release makes the attempt's Work claimable again after a delay, while
	// the attempt still owns it (Claimable.Release).
	Release(ctx context.Context, a A, after time.Duration) error
	// Backlog reads the queue's claimable depth (Claimable.Backlog).
	Backlog(ctx context.Context) (Backlog, error)
}

// Renewer is a leased queue whose attempts can extend their lease while
// they run (Claimable.Renew); ErrLeaseLost when the attempt lost its Work.
type Renewer[A any] interface {
	Renew(ctx context.Context, a A, lease time.Duration) error
}

// LockedQueue is a queue whose claim is the row lock of the transaction that
// does the work (Claimable.LockedClaim): claim, work and finish are one
// transaction, so a crash leaves nothing to release.
type LockedQueue interface {
	// WorkNext claims one Work and runs it; ErrEmpty when none is claimable.
	WorkNext(ctx context.Context) (Result, error)
	Backlog(ctx context.Context) (Backlog, error)
}

// Backlog is a queue's claimable Work at one moment.
type Backlog struct {
	Depth int64
	// OldestAge is how long the oldest claimable Work has waited.
	OldestAge time.Duration
}

// Config configures a Runner.
type Config struct {
	// Name is the queue's metric label: a fixed name, never an id.
	Name string
	// Slots is how many attempts run at once (default 1); a slot claims
	// only when it is free.
	Slots int
	// Lease is each attempt's lease (leased queues; default 30s). A running
	// attempt renews it every Lease/3 when the queue is a Renewer.
	Lease time.Duration
	// Idle is how long a slot waits after claiming nothing, after a failed
	// attempt, or after a retry handed back claimable at once (default 100ms).
	Idle time.Duration
	// Drain is how long in-flight attempts may run on after the Runner's
	// context ends before they are cancelled (default 10s).
	Drain time.Duration
	// Metrics receives the queue's metrics (default: unregistered ones).
	Metrics *Metrics
	// Outcomes are the queue's finished outcomes (its fixed set), exported
	// at zero from the start so a dashboard has their series.
	Outcomes []string
	Log      *slog.Logger
}

// Runner runs one queue's attempts: claim when a slot is free, work, act on
// the Result, release with its delay; stop claiming on stop, then drain.
type Runner struct {
	cfg  Config
	m    queueMetrics
	step func(claimCtx, workCtx context.Context, limit int) ([]Result, error)
}

func (cfg *Config) defaults() {
	if cfg.Slots <= 0 {
		cfg.Slots = 1
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 100 * time.Millisecond
	}
	if cfg.Drain <= 0 {
		cfg.Drain = 10 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
}

// NewRunner builds the Runner of a leased queue and registers its backlog
// on cfg.Metrics.
func NewRunner[A any](q Queue[A], cfg Config) *Runner {
	cfg.defaults()
	r := &Runner{cfg: cfg, m: cfg.Metrics.forQueue(cfg.Name, cfg.Outcomes)}
	cfg.Metrics.watch(cfg.Name, q.Backlog)
	renewer, _ := q.(Renewer[A])
	r.step = func(claimCtx, workCtx context.Context, limit int) ([]Result, error) {
		attempts, err := q.Claim(claimCtx, limit, cfg.Lease)
		if err != nil {
			return nil, err
		}
		out := make([]Result, 0, len(attempts))
		for _, a := range attempts {
			out = append(out, runAttempt(workCtx, r, q, renewer, a))
		}
		return out, nil
	}
	return r
}

// NewLockedRunner builds the Runner of a locked queue.
func NewLockedRunner(q LockedQueue, cfg Config) *Runner {
	cfg.defaults()
	r := &Runner{cfg: cfg, m: cfg.Metrics.forQueue(cfg.Name, cfg.Outcomes)}
	cfg.Metrics.watch(cfg.Name, q.Backlog)
	r.step = func(_, workCtx context.Context, limit int) ([]Result, error) {
		var out []Result
		for range limit {
			start := time.Now()
			res, err := q.WorkNext(workCtx)
			if errors.Is(err, ErrEmpty) {
				break
			}
			if err != nil {
				res = FailedAfter(err, 0)
			}
			r.m.attempts.Inc()
			r.record(res, time.Since(start))
			out = append(out, res)
		}
		return out, nil
	}
	return r
}

// Name is the queue's name.
func (r *Runner) Name() string { return r.cfg.Name }

func runAttempt[A any](ctx context.Context, r *Runner, q Queue[A], renewer Renewer[A], a A) Result {
	start := time.Now()
	r.m.attempts.Inc()
	actx, cancel := context.WithCancel(ctx)
	lost := make(chan struct{})
	var wg sync.WaitGroup
	if renewer != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			renewLease(actx, r, renewer, a, cancel, lost)
		}()
	}
	res := q.Work(actx, a)
	cancel()
	wg.Wait()
	select {
	case <-lost:
		r.m.leaseExpired.Inc()
		if res.Kind != Finished {
			res = FencedOut()
		}
	default:
	}
	switch res.Kind {
	case Retry, Blocked, Failed:
		if err := q.Release(context.WithoutCancel(ctx), a, res.After); err != nil {
			r.cfg.Log.Warn("work release failed", "queue", r.cfg.Name, "err", err)
		}
	}
	r.record(res, time.Since(start))
	return res
}

// renewLease extends the attempt's lease every Lease/3 until ctx ends; a
// lost lease closes lost and cancels the attempt (its writes would be
// refused by the database anyway).
func renewLease[A any](ctx context.Context, r *Runner, renewer Renewer[A], a A, cancel context.CancelFunc, lost chan<- struct{}) {
	t := time.NewTicker(r.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := renewer.Renew(ctx, a, r.cfg.Lease)
		switch {
		case err == nil:
			r.m.renewed.Inc()
		case errors.Is(err, ErrLeaseLost):
			close(lost)
			cancel()
			return
		case ctx.Err() == nil:
			r.cfg.Log.Warn("work lease renewal failed", "queue", r.cfg.Name, "err", err)
		}
	}
}

func (r *Runner) record(res Result, took time.Duration) {
	kind := res.Kind.String()
	r.m.results.WithLabelValues(kind).Inc()
	r.m.seconds.WithLabelValues(kind).Observe(took.Seconds())
	switch res.Kind {
	case Finished:
		r.m.finishes.WithLabelValues(res.Outcome).Inc()
	case Blocked:
		r.m.blocked.Inc()
	case Failed:
		r.cfg.Log.Warn("work attempt failed; retrying", "queue", r.cfg.Name, "err", res.Err)
	}
}

// Run runs Slots loops until ctx ends, then lets in-flight attempts finish
// (at most Drain longer) and returns.
func (r *Runner) Run(ctx context.Context) {
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(r.cfg.Drain, cancelWork) })
	defer stop()
	var wg sync.WaitGroup
	for range r.cfg.Slots {
		wg.Go(func() { r.slot(ctx, workCtx) })
	}
	wg.Wait()
}

func (r *Runner) slot(ctx, workCtx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		results, err := r.step(ctx, workCtx, 1)
		if err != nil && ctx.Err() == nil {
			r.cfg.Log.Warn("work claim failed", "queue", r.cfg.Name, "err", err)
		}
		if len(results) == 1 && claimNextAtOnce(results[0]) {
			timer.Reset(0)
		} else {
			timer.Reset(r.cfg.Idle)
		}
	}
}

// claimNextAtOnce says whether a slot claims again without waiting Idle:
// yes when the attempt moved its Work on or out of the slot's way (finished,
// blocked or retried with a delay, or fenced by another attempt); no when
// it failed or handed its Work back claimable at once (the same Work would
// be claimed again straight away).
func claimNextAtOnce(res Result) bool {
	switch res.Kind {
	case Finished, Blocked, Fenced:
		return true
	case Retry:
		return res.After > 0
	}
	return false
}

// Pass claims once, up to limit Work, and runs the attempts one after
// another on the caller's goroutine (tests, RunOnce helpers): the same
// results, releases and metrics as Run.
func (r *Runner) Pass(ctx context.Context, limit int) ([]Result, error) {
	return r.step(ctx, ctx, limit)
}
