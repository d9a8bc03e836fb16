package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/bench/loop"
	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/demo"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/pgserver"
)

// modeLoop is `oceanway bench --mode loop`: the demo's whole loop, driven
// open loop (issue 35).
const modeLoop = "loop"

// loopOptions are the flags only the loop mode reads.
type loopOptions struct {
	runs        int
	runsList    []int
	rateSweep   []float64
	drivers     int
	svgPath     string
	statsSettle time.Duration
}

func (o *loopOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&o.runs, "runs", 1000, "loop mode: runs (admission → attempts → gateway → closure → finalization) per measured case")
	f.IntSliceVar(&o.runsList, "runs-list", nil, "loop mode: measure at each of these run counts (e.g. 1000,10000) to compare the cost per run")
	f.Float64SliceVar(&o.rateSweep, "rate-sweep", nil, "loop mode: measure at each of these offered rates in runs/s (e.g. 5,10,20,40); with --svg, chart them")
	f.IntVar(&o.drivers, "drivers", 8, "loop mode: concurrent drivers at --rate 0, and the sessions the scenario's owner calls share at any rate")
	f.StringVar(&o.svgPath, "svg", "", "loop mode: write a chart of finalized runs/s and p99 against offered rate to this file")
	f.DurationVar(&o.statsSettle, "stats-settle", 11*time.Second,
		"loop mode: wait this long after the loop quiesced before reading pg_stat counters (PostgreSQL flushes an idle backend's after up to 10s), and as long again to measure the idle activity subtracted")
}

// loopCase is one measured case: a run count at an offered rate.
type loopCase struct {
	runs int
	rate float64
}

func (o loopOptions) cases(rate float64) []loopCase {
	counts := o.runsList
	if len(counts) == 0 {
		counts = []int{o.runs}
	}
	rates := o.rateSweep
	if len(rates) == 0 {
		rates = []float64{rate}
	}
	var out []loopCase
	for _, r := range rates {
		for _, n := range counts {
			out = append(out, loopCase{runs: n, rate: r})
		}
	}
	return out
}

// loopDispatcherFlags are the demo's dispatcher settings (flag defaults and
// OCEANWAY_* environment), overridden by the bench flags given explicitly.
func loopDispatcherFlags(cmd *cobra.Command, cfg benchOptions) dispatcherFlags {
	var disp dispatcherFlags
	disp.register(&cobra.Command{}) // the defaults, as the demo's flags set them
	f := cmd.Flags()
	if f.Changed("dispatchers") {
		disp.dispatchers = cfg.cfg.Dispatchers
	}
	if f.Changed("batch") {
		disp.cfg.BatchSize = cfg.cfg.Batch
	}
	if f.Changed("concurrency") {
		disp.cfg.Concurrency = cfg.cfg.Concurrency
	}
	if f.Changed("consumer-batch") {
		disp.consumerBatch = cfg.cfg.ConsumerBatch
	}
	if f.Changed("lease") {
		disp.cfg.LeaseDuration = cfg.cfg.Lease
	}
	if f.Changed("poll-interval") {
		disp.cfg.PollInterval = cfg.cfg.PollInterval
	}
	if f.Changed("claim-cooldown") {
		disp.cfg.ClaimCooldown = cfg.cfg.ClaimCooldown
	}
	return disp
}

// runLoopBench measures each case on fresh databases and prints the report.
func runLoopBench(ctx context.Context, streams *IO, o benchOptions, lo loopOptions, disp dispatcherFlags, timeoutSet bool) (err error) {
	logf := func(format string, args ...any) {
		if !o.quiet {
			fmt.Fprintf(streams.Err, format+"\n", args...)
		}
	}
	logf("bench: runtime %s", applyRuntimeDefaults())
	if o.profilePath != "" {
		// The whole command, provisioning included (a few per cent of a
		// 1,000-run case): where this process's share of the loop goes.
		f, perr := os.Create(o.profilePath)
		if perr != nil {
			return fmt.Errorf("bench --mode loop: cpu profile: %w", perr)
		}
		if perr := pprof.StartCPUProfile(f); perr != nil {
			_ = f.Close()
			return fmt.Errorf("bench --mode loop: cpu profile: %w", perr)
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("bench --mode loop: cpu profile: %w", cerr)
			}
		}()
	}
	cases := lo.cases(o.cfg.Rate)
	for _, c := range cases {
		if c.runs < 1 || c.rate < 0 || (c.rate == 0 && lo.drivers < 1) {
			return fmt.Errorf("bench --mode loop: need --runs ≥ 1, rates ≥ 0 and --drivers ≥ 1 (got runs %d, rate %g, drivers %d)", c.runs, c.rate, lo.drivers)
		}
	}
	prefix := o.cfg.Prefix
	if prefix == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		prefix = "owloop_" + hex.EncodeToString(b)
	}
	if len(prefix) > 30 {
		return fmt.Errorf("bench --mode loop: --db-prefix %q longer than 30 characters", prefix)
	}
	srv, err := pgserver.Find(ctx, pgserver.Opts{DatabaseURL: o.databaseURL, Logf: logf})
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	report := loop.Report{Tool: "oceanway bench --mode loop", Started: time.Now().UTC(),
		Settings: fmt.Sprintf("dispatchers=%d batch=%d consumer-batch=%d concurrency=%d poll=%s claim-cooldown=%s drivers=%d stats-settle=%s",
			disp.dispatchers, disp.cfg.BatchSize, disp.consumerBatch, disp.cfg.Concurrency, disp.cfg.PollInterval, disp.cfg.ClaimCooldown, lo.drivers, lo.statsSettle)}
	if report.Server, err = measure.ServerInfo(ctx, srv.URL, string(srv.Source), runtime.NumCPU()); err != nil {
		return fmt.Errorf("bench --mode loop: server: %w", err)
	}
	failed := false
	for k, c := range cases {
		timeout := o.cfg.Timeout
		if !timeoutSet {
			timeout += time.Duration(c.runs) * 200 * time.Millisecond
		}
		casePrefix := fmt.Sprintf("%s_%d", prefix, k)
		logf("bench: loop case %d/%d: %d runs at %s, databases %s_*", k+1, len(cases), c.runs, rateName(c.rate, lo.drivers), casePrefix)
		res, err := runLoopCase(ctx, srv.URL, casePrefix, c, lo, disp, timeout, logf)
		if o.cfg.Keep {
			for _, b := range boundary.All {
				report.Databases = append(report.Databases, migrate.DatabaseName(casePrefix, b))
			}
		} else if derr := dropBoundaryDatabases(context.WithoutCancel(ctx), srv.URL, casePrefix); derr != nil {
			logf("bench: dropping %s_*: %v", casePrefix, derr)
		}
		if err != nil {
			err = fmt.Errorf("bench --mode loop: %d runs at %s: %w", c.runs, rateName(c.rate, lo.drivers), err)
			if len(report.Cases) > 0 { // the cases measured so far are kept
				report.Compare()
				if werr := writeLoopReport(streams.Out, &report, o.jsonPath, lo.svgPath); werr != nil {
					return errors.Join(err, werr)
				}
			}
			return err
		}
		failed = failed || !res.Passed
		report.Cases = append(report.Cases, res)
	}
	report.Compare()
	if err := writeLoopReport(streams.Out, &report, o.jsonPath, lo.svgPath); err != nil {
		return err
	}
	if failed {
		return errors.New("bench --mode loop: invariants failed (see the report)")
	}
	return nil
}

func rateName(rate float64, drivers int) string {
	if rate <= 0 {
		return fmt.Sprintf("saturation (%d drivers)", drivers)
	}
	return fmt.Sprintf("%g runs/s", rate)
}

// runLoopCase provisions the case's databases, builds the demo's loop on
// them and runs the demo with the measurement's driver and window.
func runLoopCase(ctx context.Context, serverURL, prefix string, c loopCase, lo loopOptions, disp dispatcherFlags, timeout time.Duration, logf func(string, ...any)) (loop.Case, error) {
	quietSay := func(string, ...any) {}
	pools, err := demoDatabases(ctx, serverURL, demoOptions{disp: disp, prefix: prefix, workers: lo.drivers, lines: lines.All()}, quietSay)
	if err != nil {
		return loop.Case{}, err
	}
	defer pools.Close()
	rt, err := newLoopRuntime(pools, disp, demo.TransportInProcess)
	if err != nil {
		return loop.Case{}, err
	}
	defer rt.Close()
	dbs := make([]loop.Database, 0, len(boundary.All))
	for _, b := range boundary.All {
		dbs = append(dbs, loop.Database{Boundary: string(b), Name: migrate.DatabaseName(prefix, b)})
	}
	m, err := loop.NewMeasurement(ctx, serverURL, dbs, loop.Schedule{Runs: c.runs, Rate: c.rate, Drivers: lo.drivers}, lo.statsSettle)
	if err != nil {
		return loop.Case{}, err
	}
	defer m.Close(ctx)
	scenario := demo.NewScenario(pools[boundary.Core], pools[boundary.Execution], pools[boundary.Gateway], 1)
	start := time.Now()
	summary, err := demo.Run(ctx, rt.rt, pools, scenario.Run, rt.config(demo.Config{
		Runs: c.runs, AdmitWorkers: lo.drivers, Timeout: timeout, Scenario: scenario,
		// No progress view: its queries would be measured with the loop.
		Progress: io.Discard, ProgressEvery: 24 * time.Hour,
		// The quiescence check after the last run is measured too: a
		// quarter second apart instead of the demo's 20ms.
		QuiescePoll: 250 * time.Millisecond, Drive: m.Drive, Quiesced: m.Quiesced,
	}))
	if err != nil {
		return loop.Case{}, err
	}
	logf("bench: loop case done in %.1fs (statistics settle included)", time.Since(start).Seconds())
	return m.Case(summary)
}

// writeLoopReport prints the report and writes the JSON and the chart.
func writeLoopReport(out io.Writer, report *loop.Report, jsonPath, svgPath string) error {
	if err := report.WriteText(out); err != nil {
		return err
	}
	if len(report.Databases) > 0 {
		fmt.Fprintf(out, "kept databases: %v\n", report.Databases)
	}
	if jsonPath != "" {
		raw, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonPath, append(raw, '\n'), 0o644); err != nil {
			return fmt.Errorf("bench: --json: %w", err)
		}
	}
	if svgPath != "" {
		f, err := os.Create(svgPath)
		if err != nil {
			return fmt.Errorf("bench: --svg: %w", err)
		}
		if err := report.WriteSVG(f); err != nil {
			_ = f.Close()
			return fmt.Errorf("bench: --svg: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("bench: --svg: %w", err)
		}
	}
	return nil
}
