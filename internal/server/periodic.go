package server

import (
	"context"
	"log/slog"
	"time"
)

// Periodic runs a small maintenance job of a serving process: once at
// start, then every Interval until the context ends. A failed run is logged
// and retried on the next tick; it never stops the process (the job's
// output is evidence, not a dependency of delivery).
type Periodic struct {
	// Name labels the log lines.
	Name string
	// Interval between runs (> 0).
	Interval time.Duration
	// RunFunc is one run.
	RunFunc func(ctx context.Context) error
	// Log receives failures (nil: slog.Default()).
	Log *slog.Logger
	// DoneFunc, when set, is called after every run with its error (tests
	// wait on it instead of sleeping).
	DoneFunc func(err error)
}

// Run blocks until ctx ends.
func (p Periodic) Run(ctx context.Context) {
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	ticker := time.NewTicker(p.Interval)
	defer ticker.Stop()
	for {
		err := p.RunFunc(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("periodic job failed", "job", p.Name, "err", err)
		}
		if p.DoneFunc != nil {
			p.DoneFunc(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
