// Package demo is the end-to-end scenario behind `oceanway demo`: N
// concurrent admissions append run.created@2.0 + wallet.reserved@2.0 in the
// core database; K dispatchers deliver them through the in-process transport
// to the Operations projector; a live progress view follows the outbox; and
// at the end SQL over the tables proves the invariants (nothing lost, nothing
// acknowledged twice, at most one finish per start, published_at exact, one
// projector receipt per event, the read model complete and verified_current).
//
// With a Scenario (oceanway demo always sets one), each admission also
// drives the Execution and Gateway owners on their own databases (see
// Scenario), and the summary reports and proves all four boundary outboxes:
// the Metering input processor acknowledges the execution and gateway
// deliveries to metering_input_processor when it is served; the deliveries
// to the consumers that do not exist yet (Billing) stay pending, are never
// claimed, and the summary says so plainly.
//
// With the Billing workers (Finalization, CatchUp) the loop closes: each
// reservation is finalized once. With Cases, a reservation whose usage the
// provider could not vouch for enters a Finalization reconciliation case;
// once the loop quiesced the provider reports its owner-side fix, two
// simulated operators resolve every case through the admin command gateway
// and the reservation finalizes (see closeCases). Then the scenario's
// post-finality corrections become settlement transitions (refunds, blocked
// late exposures) before the summary.
//
// With Chaos, dispatchers are killed and restarted at random (some after the
// consumer committed, before the ack), one dispatcher pauses past its lease
// and the consumer fails transiently; the invariants must still hold.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/billing/finalization"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/demo/dbsqlc"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/server"
)

// AdmitFunc performs admission number i in its own transaction.
type AdmitFunc func(ctx context.Context, i int) error

// Config is one demo run.
type Config struct {
	Runs         int           // admissions (default 2000)
	AdmitWorkers int           // concurrent admission sessions (default 8)
	Chaos        bool          // kill/restart dispatchers, pause one past its lease, flaky consumer
	Timeout      time.Duration // bound for the whole run (default 10m)
	// ProgressEvery is the period of the progress view (default 500ms).
	ProgressEvery time.Duration
	// Progress receives the live view; Bar switches to a redrawn progress bar.
	Progress io.Writer
	Bar      bool
	// RestartDatabase, when set and Chaos is on, restarts the database
	// server once, immediately (as pg_ctl -m immediate), a third of the way
	// through the admissions; everything must carry on. Only for a
	// throwaway cluster the demo started itself.
	RestartDatabase func(context.Context) error
	// Network, when set, is the loopback HTTP transport the runtime's
	// dispatchers use (--transport http); with Chaos it also drops one
	// consumer answer in 20 after the consumer committed.
	Network *Network
	// Processes, when set, are the owners running as their own `oceanway
	// serve` processes (--processes): they deliver and work while the demo
	// admits, waits and verifies; there is no runtime in this process.
	Processes Processes
	// External, when set, means the loop runs in an `oceanway serve`
	// elsewhere (demo --via api --api URL): no dispatcher, consumer or worker
	// runs here; the demo drives the scenario through that deployment's API
	// and proves the invariants on its databases. PriorRuns are the runs
	// the deployment held before (a canary's): the counts expect them too.
	External  string // the serve's API URL
	PriorRuns int
	// OwnerReads, when set, carries every owner read the workers and the
	// Metering input processor call over loopback HTTP (--transport http);
	// with Chaos it also drops one owner answer in 20.
	OwnerReads *OwnerReads
	// Scenario, when set, is the owners' scenario behind the admissions
	// (its mix is reported, and the Execution and Gateway end states are
	// proved on their databases).
	Scenario *Scenario
	// Metering, when set, is the metering worker: it runs with the
	// dispatchers, the demo waits until it finished every eligibility Work,
	// and the summary proves its settlement input chains.
	Metering *metering.Worker
	// Finalization, when set, is the Billing finalization worker: it runs
	// with the dispatchers, the demo waits until no applied closure's Work
	// is left, and the summary proves the ledger.
	Finalization *finalization.Worker
	// CatchUp, when set, is the settlement catch-up worker: it runs with
	// the dispatchers; once the finalizations quiesced the scenario reports
	// its post-finality corrections, the demo waits until no catch-up fence
	// is pending, and the summary proves the transitions.
	CatchUp *catchup.Worker
	// Cases, when set, is the case desk: once the loop quiesced, the
	// provider's owner-side fixes are reported and every open
	// Finalization reconciliation case is resolved (rounds until none is
	// open), before the post-finality corrections.
	Cases *Cases
	// Drive, when set, performs the admissions instead of AdmitWorkers
	// sessions that each take the next run when their last one ended (the
	// loop benchmark's open-loop driver, issue 35). It must call admit once
	// for every run number in [0, Runs) and return once they all returned;
	// admit already retries transient database errors.
	Drive func(ctx context.Context, admit AdmitFunc) error
	// Quiesced, when set, is called once, when the loop first quiesced
	// (every reservation finalized or in a reconciliation case, every
	// delivery acknowledged), before the cases are closed and the
	// post-finality corrections reported, with the runtime still running:
	// the loop benchmark closes its measured window there.
	Quiesced func(ctx context.Context)
	// QuiescePoll is the period of the quiescence check once the
	// admissions ended (default 20ms); the loop benchmark polls less often,
	// since the check's reads are measured with the loop.
	QuiescePoll time.Duration
}

func (c Config) withDefaults() Config {
	if c.Runs == 0 {
		c.Runs = 2000
	}
	if c.AdmitWorkers == 0 {
		c.AdmitWorkers = 8
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.QuiescePoll <= 0 {
		c.QuiescePoll = 20 * time.Millisecond
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = 500 * time.Millisecond
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// chaosStats counts what the chaos mode did, and the admissions retried
// after a transient database error.
type chaosStats struct {
	kills, pauses, injected, restarts, admitRetries atomic.Int64
}

// catchesUp reports whether the settlement catch-up runs (here or in the
// Core owner's process).
func (c Config) catchesUp() bool { return c.CatchUp != nil || c.workersElsewhere() }

// workersElsewhere: the dispatchers and workers run in other processes
// (the owner processes, or the serve whose API the scenario calls).
// OwnerReadsInServe: the owner reads were the serve's, not this process's.
const OwnerReadsInServe = "serve"

func (c Config) workersElsewhere() bool { return c.Processes != nil || c.External != "" }

// Run executes the scenario on the runtime's core database and returns the
// verified summary. The summary's Passed is false when any invariant fails.
func Run(ctx context.Context, rt *server.Runtime, pools server.Pools, admit AdmitFunc, cfg Config) (*Summary, error) {
	cfg = cfg.withDefaults()
	core, ok := pools[boundary.Core]
	if !ok {
		return nil, errors.New("demo: the core boundary database is required")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	var stats chaosStats
	if cfg.Scenario != nil && cfg.Scenario.probe == nil {
		cfg.Scenario.SetProbe(ownerProbe(pools, cfg))
	}
	if cfg.Chaos && cfg.Network != nil {
		cfg.Network.DropResponses(20)
		defer cfg.Network.DropResponses(0)
	}
	if cfg.Chaos && cfg.OwnerReads != nil {
		cfg.OwnerReads.DropAnswers(20)
		defer cfg.OwnerReads.DropAnswers(0)
	}
	dispatchCtx, stopDispatch := context.WithCancel(ctx)
	dispatchDone := make(chan error, 1)
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		if cfg.Metering != nil {
			cfg.Metering.Run(dispatchCtx)
		}
	}()
	finalizationDone := make(chan struct{})
	go func() {
		defer close(finalizationDone)
		if cfg.Finalization != nil {
			_ = cfg.Finalization.Run(dispatchCtx)
		}
	}()
	catchUpDone := make(chan struct{})
	go func() {
		defer close(catchUpDone)
		if cfg.CatchUp != nil {
			cfg.CatchUp.Run(dispatchCtx)
		}
	}()
	served := route.Destinations
	go func() {
		switch {
		case cfg.Processes != nil:
			err := cfg.Processes.Run(dispatchCtx, cfg.Chaos)
			if err != nil {
				cancel() // an owner process failed: nothing converges without it
			}
			dispatchDone <- err
		case cfg.External != "":
			<-dispatchCtx.Done() // the deployment's serve delivers
			dispatchDone <- nil
		case cfg.Chaos:
			dispatchDone <- runChaos(dispatchCtx, rt, &stats)
		default:
			dispatchDone <- rt.Run(dispatchCtx)
		}
	}()
	if !cfg.workersElsewhere() {
		served = rt.Served()
	}

	start := time.Now()
	progress := newProgress(core, cfg, start)
	progressCtx, stopProgress := context.WithCancel(ctx)
	progressDone := make(chan struct{})
	go func() { defer close(progressDone); progress.loop(progressCtx) }()

	restartCtx, stopRestart := context.WithCancel(ctx)
	restartDone := make(chan struct{})
	go func() {
		defer close(restartDone)
		if cfg.Chaos && cfg.RestartDatabase != nil {
			restartOnce(restartCtx, core, cfg, &stats)
		}
	}()
	var admitErr error
	if cfg.Drive != nil {
		admitErr = cfg.Drive(ctx, func(ctx context.Context, i int) error { return admitRetrying(ctx, admit, i, &stats) })
	} else {
		admitErr = admitAll(ctx, admit, cfg, &stats)
	}
	// The provider's fixes of its disputed reports (issue 32) are reported
	// once the catch-up blocked on them; all of them before quiescence.
	if admitErr == nil && cfg.Scenario != nil {
		admitErr = cfg.Scenario.AwaitDisputes(ctx)
	}
	stopRestart()
	<-restartDone
	admitted := time.Since(start)
	var waitErr error
	if admitErr == nil {
		waitErr = waitQuiescent(ctx, core, pools, served, cfg)
		if waitErr == nil && cfg.Quiesced != nil {
			cfg.Quiesced(ctx)
		}
	}
	// The case desk: the provider's fixes, then the operators close every
	// case; the reservations in them finalize.
	var desk deskStats
	var caseErr error
	if admitErr == nil && waitErr == nil && cfg.Cases != nil {
		desk, caseErr = closeCases(ctx, core, func() error { return waitQuiescent(ctx, core, pools, served, cfg) }, cfg)
	}
	// Post-finality corrections: the provider reports them once the
	// reservations finalized; the catch-up turns each into a transition.
	if admitErr == nil && waitErr == nil && cfg.Scenario != nil && cfg.catchesUp() {
		if admitErr = cfg.Scenario.ApplyCorrections(ctx); admitErr == nil {
			waitErr = waitQuiescent(ctx, core, pools, served, cfg)
		}
	}
	// The late settlement desk: the operators fund every exposure's case
	// through the late settlement command; the cases close.
	var lateDesk lateDeskStats
	var lateErr error
	if admitErr == nil && waitErr == nil && cfg.Cases != nil && cfg.Cases.Gateway.LateBilling != nil && cfg.catchesUp() {
		lateDesk, lateErr = fundLateCases(ctx, core, func() error { return waitQuiescent(ctx, core, pools, served, cfg) }, cfg)
	}
	elapsed := time.Since(start)
	stopProgress()
	<-progressDone
	progress.final()
	stopDispatch()
	dispatchErr := <-dispatchDone
	<-workerDone
	<-finalizationDone
	<-catchUpDone

	if admitErr != nil && cfg.Processes != nil && dispatchErr != nil {
		return nil, fmt.Errorf("demo: owner processes: %w", dispatchErr)
	}
	if admitErr != nil {
		return nil, fmt.Errorf("demo: admissions: %w", admitErr)
	}
	var metrics *dispatcher.Metrics
	if rt != nil {
		metrics = rt.Metrics()
	}
	s, err := summarize(context.WithoutCancel(ctx), core, cfg, admitted, elapsed, metrics)
	if err != nil {
		return nil, err
	}
	s.Kills, s.Pauses, s.InjectedFailures = stats.kills.Load(), stats.pauses.Load(), stats.injected.Load()
	s.DatabaseRestarts, s.AdmissionRetries = stats.restarts.Load(), stats.admitRetries.Load()
	s.Transport = TransportInProcess
	s.Driver = DriverInProcess
	if cfg.Scenario != nil {
		if _, ok := cfg.Scenario.Platform.(*APIPlatform); ok {
			s.Driver = DriverAPI
		}
	}
	if cfg.Network != nil {
		s.Transport = TransportHTTP
		s.DroppedResponses = cfg.Network.Dropped()
	}
	if cfg.Processes != nil {
		s.Transport = TransportHTTP // between the owner processes
	}
	if cfg.External != "" {
		s.Transport = "the serve's own (" + cfg.External + ")"
	}
	if cfg.OwnerReads != nil {
		s.OwnerReadsOver = TransportHTTP
		s.OwnerReadCalls, s.OwnerReadsUnanswered = cfg.OwnerReads.Calls()
		s.OwnerAnswersDropped = cfg.OwnerReads.Dropped()
	} else {
		s.OwnerReadsOver = TransportInProcess
	}
	if cfg.External != "" {
		s.OwnerReadsOver = OwnerReadsInServe
	}
	if cfg.Scenario != nil {
		m := cfg.Scenario.Mix()
		s.Scenario = &m
		s.AdmissionRetries += m.Retries // the scenario replays its owner calls itself
	}
	if err := summarizeBoundaries(context.WithoutCancel(ctx), pools, served, cfg, s); err != nil {
		return nil, err
	}
	if cfg.Processes != nil {
		s.summarizeProcesses(context.WithoutCancel(ctx), cfg.Processes)
	}
	if cfg.Finalization != nil || cfg.workersElsewhere() {
		if err := summarizeLedger(context.WithoutCancel(ctx), core, cfg, s); err != nil {
			return nil, err
		}
	}
	if cfg.Cases != nil {
		if err := summarizeCases(context.WithoutCancel(ctx), core, cfg, desk, s); err != nil {
			return nil, err
		}
		if caseErr != nil {
			s.fail("cases_converged", caseErr.Error())
		}
	}
	if cfg.catchesUp() {
		if err := summarizeCatchUp(context.WithoutCancel(ctx), core, pools, s); err != nil {
			return nil, err
		}
		if err := summarizeLateCases(context.WithoutCancel(ctx), core, lateDesk, s); err != nil {
			return nil, err
		}
		if lateErr != nil {
			s.fail("late_cases_funded", lateErr.Error())
		}
		if err := summarizeOwnerConflicts(context.WithoutCancel(ctx), pools, s); err != nil {
			return nil, err
		}
	}
	if waitErr != nil {
		s.fail("converged", waitErr.Error())
	}
	if dispatchErr != nil && !errors.Is(dispatchErr, context.Canceled) {
		s.Notes = append(s.Notes, "dispatcher stop: "+dispatchErr.Error())
	}
	return s, nil
}

// admitAll runs cfg.Runs admissions on cfg.AdmitWorkers concurrent sessions.
// An admission that fails with a transient connection error (the database
// restarting, a connection closed under it) is retried with the same index:
// AdmitFunc derives the admission operation id from it, and admission is
// idempotent by operation id, so a commit whose outcome was lost is
// answered from the stored request instead of being admitted twice.
func admitAll(ctx context.Context, admit AdmitFunc, cfg Config, stats *chaosStats) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, cfg.AdmitWorkers)
	for w := 0; w < cfg.AdmitWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= cfg.Runs || ctx.Err() != nil {
					return
				}
				if err := admitRetrying(ctx, admit, i, stats); err != nil {
					errs <- fmt.Errorf("admission %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// admitRetrying runs admission i, retrying transient errors with a short
// doubling pause (50 ms to 2 s) until ctx ends.
func admitRetrying(ctx context.Context, admit AdmitFunc, i int, stats *chaosStats) error {
	pause := 50 * time.Millisecond
	for {
		err := admit(ctx, i)
		if !db.Transient(err) {
			return err
		}
		stats.admitRetries.Add(1)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last transient error: %w)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// restartOnce restarts the database once a third of the runs are admitted
// (not at all when the admissions end first).
func restartOnce(ctx context.Context, core queryer, cfg Config, stats *chaosStats) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		var events int
		if err := core.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events`).Scan(&events); err == nil && events >= 2*cfg.Runs/3 {
			break // two events per admission: a third of the runs
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	if err := cfg.RestartDatabase(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintf(cfg.Progress, "demo: chaos: database restart failed: %v\n", err)
		return
	}
	stats.restarts.Add(1)
	fmt.Fprintln(cfg.Progress, "demo: chaos: database restarted (immediate shutdown, crash recovery)")
}

// runChaos runs the runtime's dispatchers under chaos until ctx ends:
// each core dispatcher lives a random short time and is then killed (its
// remaining outcomes are dropped, as if the process died, including after
// the consumer committed); the first instance pauses once past its lease
// before delivering; every consumer of the core outbox (the projector, and
// the coordinator for the resolution events) fails transiently one time in
// ten.
func runChaos(ctx context.Context, rt *server.Runtime, stats *chaosStats) error {
	flakyConsumers := map[route.Destination]transport.ConsumerFunc{}
	for _, dest := range rt.Served() {
		flakyConsumers[dest] = func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
			if rand.IntN(10) == 0 {
				stats.injected.Add(1)
				return transport.Result{}, transport.Retryable("chaos_transient", errors.New("injected transient failure"))
			}
			return rt.Transport().Deliver(ctx, d)
		}
	}
	flaky := transport.NewInProcess(flakyConsumers)
	// Batches of the projector go through chaos too: every delivery of a
	// batch fails transiently one time in ten, the others are applied in
	// one consumer transaction.
	if b, ok := rt.Transport().(transport.Batcher); ok && b.BatchLimit(route.CoreOperations) > 1 {
		flaky.WithBatch(route.CoreOperations, b.BatchLimit(route.CoreOperations), func(ctx context.Context, ds []transport.Delivery) []transport.Answer {
			out := make([]transport.Answer, len(ds))
			var (
				pass []transport.Delivery
				at   []int
			)
			for i, d := range ds {
				if rand.IntN(10) == 0 {
					stats.injected.Add(1)
					out[i].Err = transport.Retryable("chaos_transient", errors.New("injected transient failure"))
					continue
				}
				pass, at = append(pass, d), append(at, i)
			}
			if len(pass) > 0 {
				for k, a := range b.DeliverBatch(ctx, pass) {
					out[at[k]] = a
				}
			}
			return out
		})
	}
	lease := rt.LeaseDuration()
	var others sync.WaitGroup
	defer others.Wait()
	// The other boundaries' dispatchers (deliveries to the Metering input
	// processor) run plainly: the chaos is on the core outbox.
	for _, b := range []boundary.Boundary{boundary.Execution, boundary.Gateway, boundary.Metering} {
		for i := 0; i < rt.DispatchersPerBoundary(); i++ {
			d, err := rt.NewDispatcher(b, 1_000_000+i, rt.Transport())
			if err != nil {
				continue // the boundary is not served by this runtime
			}
			others.Add(1)
			go func() {
				defer others.Done()
				_ = d.Run(ctx)
			}()
		}
	}
	var paused atomic.Bool
	var pausedEvent atomic.Value // event id of the paused delivery
	var wg sync.WaitGroup
	for i := 0; i < rt.DispatchersPerBoundary(); i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for life := 0; ctx.Err() == nil; life++ {
				d, err := rt.NewDispatcher(boundary.Core, i*1000+life, flaky)
				if err != nil {
					return
				}
				var dead atomic.Bool
				d.SetHooks(dispatcher.Hooks{
					BeforeDeliver: func(c dispatcher.Claimed) error {
						if dead.Load() {
							return dispatcher.ErrSimulatedCrash
						}
						if i == 0 && paused.CompareAndSwap(false, true) {
							// Pause past the lease: recovery and another
							// dispatcher take over; this late worker's
							// outcome must be rejected by the fence.
							stats.pauses.Add(1)
							pausedEvent.Store(c.EventID)
							select {
							case <-time.After(lease + lease/2):
							case <-ctx.Done():
							}
						}
						return nil
					},
					AfterDeliver: func(c dispatcher.Claimed) error {
						if pausedEvent.Load() == c.EventID {
							return nil // the paused worker always comes back late
						}
						if dead.Load() || rand.IntN(50) == 0 {
							return dispatcher.ErrSimulatedCrash
						}
						return nil
					},
				})
				// The kill is abrupt: from the moment the life ends, every
				// outcome still in flight is dropped (as if the process died),
				// including acks of consumers that already committed.
				lifeCtx, end := context.WithTimeout(ctx, time.Duration(500+rand.IntN(2500))*time.Millisecond)
				stopKill := context.AfterFunc(lifeCtx, func() {
					if ctx.Err() == nil {
						dead.Store(true)
						stats.kills.Add(1)
					}
				})
				_ = d.Run(lifeCtx)
				stopKill()
				end()
			}
		}(i)
	}
	wg.Wait()
	return nil
}

// waitQuiescent waits until no delivery is pending or leased in core and no
// delivery to a served destination is pending or leased in the other
// boundaries (the Metering input processor drains the execution and gateway
// outboxes; unserved destinations stay pending).
// With the metering worker, the eligibility Work it has to finish counts as
// open too (its settlement input events are appended by then).
// With the catch-up worker, catch-up fences pending verification count too.
func waitQuiescent(ctx context.Context, core queryer, pools server.Pools, served []route.Destination, cfg Config) error {
	// The owner processes run every worker.
	meteringWorker, finalizationWorker := cfg.Metering != nil || cfg.workersElsewhere(), cfg.Finalization != nil || cfg.workersElsewhere()
	t := time.NewTicker(cfg.QuiescePoll)
	defer t.Stop()
	dests := make([]string, 0, len(served))
	for _, d := range served {
		dests = append(dests, string(d))
	}
	// One poll reads several databases one after another, so work that
	// moves between two of its reads (a Work finished and its event not yet
	// read, a consumer applied and acked between the Work and the delivery
	// read) can look like nothing; quiescence is quietPolls polls in a row
	// that see nothing open.
	const quietPolls = 3
	quiet := 0
	// The checks run in this order and a poll stops at the first that finds
	// something open: while the loop is busy a poll costs one count, and
	// the costlier checks run only when everything before them is quiet.
	checks := []func() (int, error){func() (int, error) {
		var n int
		err := core.QueryRow(ctx, qOpenDeliveries, nil).Scan(&n)
		return n, err
	}}
	for _, b := range []boundary.Boundary{boundary.Execution, boundary.Gateway, boundary.Metering} {
		if p, ok := pools[b]; ok {
			checks = append(checks, func() (int, error) {
				var n int
				err := p.QueryRow(ctx, qOpenDeliveries, dests).Scan(&n)
				return n, err
			})
		}
	}
	if m, ok := pools[boundary.Metering]; ok && meteringWorker {
		checks = append(checks, func() (int, error) {
			n, err := dbsqlc.New().MeteringOpenWork(ctx, m)
			return int(n), err
		})
	}
	if finalizationWorker {
		// Its committed events are core deliveries: both must drain.
		checks = append(checks, func() (int, error) {
			var n int
			err := core.QueryRow(ctx, qFinalizationOpenWork).Scan(&n)
			return n, err
		})
	}
	if cfg.catchesUp() {
		// A fence whose newest post-finality input is not settleable
		// waits visibly for a late settlement case (issue 32); only the
		// others are open.
		checks = append(checks, func() (int, error) {
			n, _, err := catchUpWaits(ctx, pools)
			return n, err
		})
	}
	for {
		var open int
		var err error
		for _, check := range checks {
			if open, err = check(); err != nil || open > 0 {
				break
			}
		}
		switch {
		case err != nil && !db.Transient(err):
			return fmt.Errorf("waiting for delivery: %w", err)
		case err == nil && open == 0:
			quiet++
			if quiet == quietPolls {
				return nil
			}
		default:
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deliveries or Work still open when the demo timed out: %d in the first open check", open)
		case <-t.C:
		}
	}
}
