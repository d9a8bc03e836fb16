package loop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oceanway/core/internal/bench/measure"
)

// behindAfter is how late a scheduled start may begin before the report
// says the driver fell behind its schedule.
const behindAfter = 100 * time.Millisecond

// Schedule is how the driver offers runs.
type Schedule struct {
	Runs int
	// Rate, when positive, starts run i at i/Rate seconds after the first,
	// each on its own goroutine, whether or not earlier runs returned
	// (open loop). Zero runs as fast as Drivers concurrent drivers can, each
	// taking the next run when its last one returned (saturation).
	Rate    float64
	Drivers int
}

// DriverReport is what the driver did.
type DriverReport struct {
	Runs    int     `json:"runs"`
	Rate    float64 `json:"offeredRate"` // runs/s; 0: saturation
	Drivers int     `json:"drivers"`
	// Seconds is the first start → the last run returned; StartSeconds the
	// first start → the last start.
	Seconds      float64 `json:"seconds"`
	StartSeconds float64 `json:"startSeconds"`
	// StartedPerSecond is the rate the runs actually started at.
	StartedPerSecond float64 `json:"startedPerSecond"`
	// Lag is scheduled start → actual start of each run (open loop only).
	Lag measure.Summary `json:"lagMs"`
	// LateStarts counts runs that started more than 100 ms after their
	// scheduled time; Behind says there was at least one.
	LateStarts int  `json:"lateStarts"`
	Behind     bool `json:"behind"`
	// MaxInFlight is the most runs in progress at once.
	MaxInFlight int `json:"maxInFlight"`
	// Scenario is how long one run's scenario took (admission through
	// closure, the session waits included).
	Scenario measure.Summary `json:"scenarioMs"`
}

// Drive runs admit for every run number in [0, s.Runs) on s's schedule and
// returns once they all returned, or at the first error (the runs in
// flight are canceled and waited for).
func Drive(ctx context.Context, s Schedule, admit func(ctx context.Context, i int) error) (DriverReport, error) {
	r := DriverReport{Runs: s.Runs, Rate: max(s.Rate, 0), Drivers: s.Drivers}
	if s.Runs < 1 {
		return r, errors.New("loop: need at least one run")
	}
	if s.Rate <= 0 && s.Drivers < 1 {
		return r, errors.New("loop: need at least one driver at rate 0")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		lags      = make([]time.Duration, s.Runs)
		durations = make([]time.Duration, s.Runs)
		starts    = make([]time.Time, s.Runs)
		inFlight  atomic.Int64
		peak      atomic.Int64
		firstErr  error
		errOnce   sync.Once
		wg        sync.WaitGroup
	)
	run := func(i int, due time.Time) {
		now := time.Now()
		starts[i] = now
		if !due.IsZero() {
			lags[i] = max(now.Sub(due), 0)
		}
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		err := admit(ctx, i)
		inFlight.Add(-1)
		durations[i] = time.Since(now)
		if err != nil {
			errOnce.Do(func() { firstErr = fmt.Errorf("run %d: %w", i, err); cancel() })
		}
	}
	begin := time.Now()
	if s.Rate > 0 {
		for i := 0; i < s.Runs && ctx.Err() == nil; i++ {
			due := begin.Add(time.Duration(float64(i) / s.Rate * float64(time.Second)))
			if sleepUntil(ctx, due) != nil {
				break
			}
			wg.Add(1)
			go func() { defer wg.Done(); run(i, due) }()
		}
	} else {
		var next atomic.Int64
		for range s.Drivers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= s.Runs || ctx.Err() != nil {
						return
					}
					run(i, time.Time{})
				}
			}()
		}
	}
	wg.Wait()
	end := time.Now()
	if firstErr != nil {
		return r, firstErr
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	last := begin
	for _, t := range starts {
		if t.After(last) {
			last = t
		}
	}
	r.Seconds, r.StartSeconds = round3(end.Sub(begin).Seconds()), round3(last.Sub(begin).Seconds())
	if span := last.Sub(begin).Seconds(); span > 0 && s.Runs > 1 {
		r.StartedPerSecond = round3(float64(s.Runs-1) / span)
	}
	if s.Rate > 0 {
		for _, l := range lags {
			if l > behindAfter {
				r.LateStarts++
			}
		}
		r.Behind = r.LateStarts > 0
		r.Lag = measure.Summarize(lags)
	}
	r.MaxInFlight = int(peak.Load())
	r.Scenario = measure.Summarize(durations)
	return r, nil
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
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
