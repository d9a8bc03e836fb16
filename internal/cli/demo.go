package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	loopbench "github.com/oceanway/core/internal/bench/loop"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/billing/finalization"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/demo"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/pgserver"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/server"
	"github.com/oceanway/core/internal/work"
)

// demoProjection is the Operations projection the demo's definition freezes.
const (
	demoProjectionName    = "operations_read_model"
	demoProjectionVersion = 1
)

// demoOptions are the flags of `oceanway demo`.
// --via: how the demo's scenario calls the owners.
const (
	viaInProcess = "inprocess"
	viaAPI       = "api"
)

type demoOptions struct {
	disp        dispatcherFlags
	leaseSet    bool // --lease given: chaos keeps it
	databaseURL string
	prefix      string
	runs        int
	workers     int
	chaos       bool
	jsonPath    string
	timeout     time.Duration
	plain       bool
	transport   string
	processes   bool
	replicas    int
	via         string // how the scenario calls the owners: inprocess | api
	apiURL      string // --via api against a running serve's API (its deployment's databases)
	keys        string // with --api: the keys directory whose platform key signs
	lines       []migrate.Line
}

func newDemoCmd(streams *IO) *cobra.Command {
	o := demoOptions{lines: lines.All()}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "End-to-end demo of the whole loop (admission → execution → gateway → metering → billing → Operations), with a verified summary",
		Long: `demo runs the whole loop on real PostgreSQL, across the four owner databases, and
proves its invariants.

Without --database-url it uses DATABASE_URL, else the local server on 127.0.0.1:5432 with
throwaway databases it drops at the end, else a throwaway PostgreSQL cluster it starts from
the installed binaries and removes at the end. With --database-url it creates the boundary
databases <db-prefix>_core, ... on that server and leaves them in place for inspection.

It migrates every boundary, registers and activates the first full release Delivery Set
Definition and runs --runs concurrent admissions (each appends run.created@2.0 and
wallet.reserved@2.0 with its Run, manifest, reservation and billing fence). Each run then goes
through Execution attempts and Gateway dispatch with simulated provider evidence, eligibility
and closure; the Metering input processor and worker form the settlement inputs; Billing's
coordinator, finalization worker and settlement catch-up finalize each reservation into the
ledger and turn post-finality corrections into refunds or blocked late exposures; the
Operations projector reads it all. A reservation whose usage the provider could not vouch for
enters a Finalization reconciliation case; once the loop quiesced the provider reports its
fix and two simulated operators close every case through the admin command gateway (one
requests, the other approves, the grant is exchanged and the resolution applied), and the
reservation finalizes. --dispatchers dispatchers per database deliver every event.
It prints a summary and exits non-zero when any invariant fails. --chaos kills and restarts
dispatchers at random, pauses one past its lease and makes the consumer fail transiently.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.leaseSet = cmd.Flags().Changed("lease")
			return runDemo(cmd.Context(), streams, o)
		},
	}
	o.disp.register(cmd)
	cmd.Flags().StringVar(&o.databaseURL, "database-url", "", "use this server and keep the demo databases (default: DATABASE_URL, local server or a throwaway cluster; databases dropped)")
	cmd.Flags().StringVar(&o.prefix, "db-prefix", "", "prefix of the demo databases (default oceanway_demo with --database-url, else a random one)")
	cmd.Flags().IntVar(&o.runs, "runs", 2000, "admissions to run")
	cmd.Flags().IntVar(&o.workers, "admit-workers", 8, "concurrent admission sessions")
	cmd.Flags().BoolVar(&o.chaos, "chaos", false, "kill and restart dispatchers at random, pause one past its lease, fail the consumer transiently")
	cmd.Flags().StringVar(&o.jsonPath, "json", "", "write the summary as JSON to this file")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	cmd.Flags().BoolVar(&o.plain, "plain", false, "plain progress lines even on a terminal")
	cmd.Flags().StringVar(&o.transport, "transport", demo.TransportInProcess,
		"inprocess, or http: every consumer and every owner read behind a real loopback HTTP listener reached with workload tokens (with --chaos, consumer and owner answers are also dropped after the callee committed)")
	cmd.Flags().BoolVar(&o.processes, "processes", false,
		"run each owner (core, execution, gateway, metering) as its own `oceanway serve --owner` child process with only its own database, HTTP in between; with --chaos, kill and restart one at random")
	cmd.Flags().StringVar(&o.via, "via", viaInProcess,
		"how the scenario calls the owners: inprocess (their Go services) or api (the platform API over HTTP with the generated client, served by this demo on a loopback port, every owner's operations over its own database as its own role)")
	cmd.Flags().StringVar(&o.apiURL, "api", "",
		"with --via api: drive a running `oceanway serve` at this URL instead of serving the API here; the loop runs in that serve, and --database-url and --db-prefix name its deployment, whose invariants the demo proves (runs it held before, such as a canary's, are counted)")
	cmd.Flags().StringVar(&o.keys, "keys", "", "with --api: the keys directory (oceanway keys generate) whose platform key the calls are signed with")
	cmd.Flags().IntVar(&o.replicas, "replicas", 1, "with --processes: processes per owner, sharing its database (leases and SKIP LOCKED share the Work)")
	return cmd
}

// runDemo sets up the demo databases, runs the admissions and dispatchers,
// prints the summary and fails when an invariant does.
func runDemo(ctx context.Context, streams *IO, o demoOptions) error {
	say := func(format string, args ...any) { fmt.Fprintf(streams.Out, format+"\n", args...) }
	if o.transport != demo.TransportInProcess && o.transport != demo.TransportHTTP {
		return fmt.Errorf("--transport %q: want %s or %s", o.transport, demo.TransportInProcess, demo.TransportHTTP)
	}
	if o.processes && o.transport != demo.TransportInProcess {
		return errors.New("--processes: the owner processes already reach each other over HTTP; drop --transport")
	}
	switch {
	case o.via != viaInProcess && o.via != viaAPI:
		return fmt.Errorf("--via %q: want %s or %s", o.via, viaInProcess, viaAPI)
	case o.apiURL != "" && (o.via != viaAPI || o.keys == "" || o.databaseURL == "" || o.prefix == ""):
		return errors.New("--api drives a running serve: it needs --via api, --keys D, and --database-url and --db-prefix of that serve's deployment")
	case o.apiURL != "" && (o.chaos || o.transport != demo.TransportInProcess || o.processes):
		return errors.New("--api: the loop runs in that serve; --chaos and --transport are its own business")
	case o.apiURL == "" && o.keys != "":
		return errors.New("--keys goes with --api (the demo's own API signs with a key of its own)")
	}

	say("demo: runtime %s", applyRuntimeDefaults())
	serverURL, keep, restart, cleanup, err := demoServer(ctx, o.databaseURL, &o.prefix, say)
	if err != nil {
		return err
	}
	defer cleanup()
	if o.chaos && restart != nil {
		if err := durableCommits(ctx, serverURL); err != nil {
			return err
		}
	}
	dbOpts := o
	if o.processes || o.apiURL != "" {
		// This process only admits, drives the scenario and verifies: the
		// dispatchers and workers (and their sessions) are the owners'.
		dbOpts.disp = dispatcherFlags{cfg: o.disp.cfg}
		dbOpts.disp.cfg.Concurrency = 0
	}
	pools, err := demoDatabases(ctx, serverURL, dbOpts, say)
	if err != nil {
		return err
	}
	defer pools.Close()

	if o.chaos && !o.leaseSet {
		o.disp.cfg.LeaseDuration = 2 * time.Second // chaos wants lease recoveries within the run
	}
	loop := &loopRuntime{}
	var procs *ownerProcesses
	switch {
	case o.apiURL != "":
		say("demo: the loop runs in the serve at %s (its deployment %s_*); this process drives the scenario through its API and proves the invariants", o.apiURL, o.prefix)
	case o.processes:
		say("demo: starting %d process(es) per owner (core, execution, gateway, metering), each with only its own database", max(1, o.replicas))
		if procs, err = startOwnerProcesses(ctx, serverURL, o.prefix, o.disp, o.replicas); err != nil {
			return err
		}
		defer procs.stop()
	default:
		if loop, err = newLoopRuntime(pools, o.disp, o.transport); err != nil {
			return err
		}
	}
	defer loop.Close()
	mode := "plain"
	bar := !o.plain && isTerminal(streams.Out)
	if bar {
		mode = "bar"
	}
	switch {
	case o.apiURL != "":
		say("demo: %d admissions on %d sessions through the API, progress=%s", o.runs, o.workers, mode)
	case o.processes:
		say("demo: %d admissions on %d sessions, owner processes (one dispatcher each, lease %s), transport=http, chaos=%v, progress=%s",
			o.runs, o.workers, o.disp.cfg.LeaseDuration, o.chaos, mode)
	default:
		say("demo: %d admissions on %d sessions, %d dispatchers (batch %d, consumer batch %d, concurrency %d, lease %s), transport=%s, chaos=%v, progress=%s",
			o.runs, o.workers, o.disp.dispatchers, o.disp.cfg.BatchSize, o.disp.consumerBatch, o.disp.cfg.Concurrency, o.disp.cfg.LeaseDuration, o.transport, o.chaos, mode)
	}
	if o.chaos && restart == nil {
		say("demo: chaos without a database restart (the server is not a throwaway cluster of this demo)")
	}
	// The Execution owner (driven here, as a platform would) reads Core and
	// the Gateway over HTTP whenever the owners are apart.
	execReads := demo.ExecutionOwnerReads{Manifest: admission.Reads{DB: pools[boundary.Core]}, Gateway: gateway.Reads{DB: pools[boundary.Gateway]}}
	switch {
	case procs != nil:
		if execReads, err = procs.executionReads(); err != nil {
			return err
		}
	case loop.ownerReads != nil:
		c := loop.ownerReads.ClientsFor(ownerhttp.OwnerExecution)
		execReads = demo.ExecutionOwnerReads{Manifest: c[ownerhttp.OwnerCore].Core(), Gateway: c[ownerhttp.OwnerGateway].Gateway()}
	}
	scenario := demo.NewScenarioWith(pools[boundary.Core], pools[boundary.Execution], pools[boundary.Gateway], 1, execReads)
	switch {
	case o.via == viaAPI && procs != nil:
		if scenario.Platform, err = procs.platform(); err != nil {
			return err
		}
		say("demo: the scenario calls each owner through its own process's platform API (core %s, execution %s, gateway %s, metering %s)",
			procs.apis[boundary.Core], procs.apis[boundary.Execution], procs.apis[boundary.Gateway], procs.apis[boundary.Metering])
	case o.apiURL != "":
		if scenario.Platform, err = externalAPI(o.apiURL, o.keys); err != nil {
			return err
		}
		say("demo: the scenario calls the owners through the platform API at %s", o.apiURL)
	case o.via == viaAPI:
		dapi, err := startDemoAPI(ctx, serverURL, o.prefix, execReads)
		if err != nil {
			return fmt.Errorf("demo --via api: %w", err)
		}
		defer dapi.Close()
		scenario.Platform = dapi.platform
		say("demo: the scenario calls the owners through the platform API at %s (admitRun, issueRunExecutionToken, openRun, createAttempt, dispatchAttempt, reportProviderObservation, finalizeAttemptEligibility, closeRun, getReservation)", dapi.url)
	}
	cfg := demo.Config{
		Runs: o.runs, AdmitWorkers: o.workers, Chaos: o.chaos, Timeout: o.timeout, Progress: streams.Out, Bar: bar,
		Scenario: scenario, RestartDatabase: restart,
	}
	if o.apiURL != "" {
		cfg.External = o.apiURL
		if err := pools[boundary.Core].QueryRow(ctx, `SELECT count(*) FROM admission.runs`).Scan(&cfg.PriorRuns); err != nil {
			return err
		}
		if cfg.PriorRuns > 0 {
			say("demo: the deployment held %d run(s) before this demo (a canary's, say); the invariants count them too", cfg.PriorRuns)
		}
	}
	if procs != nil || o.apiURL != "" {
		if procs != nil {
			cfg.Processes = procs
		}
		// The core owner processes enter the cases; the case commands run
		// here, against the core database, as the other drivers do.
		desk, err := newCaseDesk(pools[boundary.Core], pools[boundary.Metering])
		if err != nil {
			return err
		}
		defer desk.Close()
		cfg.Cases = desk.cases
		cfg.Cases.Where = "in the demo process against the core database (as oceanway_operations, oceanway_grants and oceanway_billing), like the other drivers"
	}
	cost, costNote := demoCostWindow(ctx, serverURL, o, pools[boundary.Core], &cfg)
	if cost != nil {
		defer cost.m.Close(ctx)
	}
	summary, err := demo.Run(ctx, loop.rt, pools, scenario.Run, loop.config(cfg))
	if err != nil {
		return err
	}
	summary.Cost = demoCost(cost, costNote, summary)
	fmt.Fprintln(streams.Out)
	summary.WriteTable(streams.Out)
	if o.jsonPath != "" {
		if err := summary.WriteJSON(o.jsonPath); err != nil {
			return err
		}
		say("demo: summary written to %s", o.jsonPath)
	}
	if keep {
		say("demo: databases %s_* left in place for inspection (oceanway inspect --database-url ... --db-prefix %s)", o.prefix, o.prefix)
	}
	if !summary.Passed {
		return errors.New("demo: invariants failed (see summary)")
	}
	return nil
}

// loopRuntime is the whole loop's in-process runtime on one set of pools,
// as the demo and the loop benchmark run it: the dispatchers of every
// boundary, the consumers (the projector verifies finalizations with
// Billing's owner read, the coordinator applies closures, the catch-up
// consumer records settlement inputs, the Metering input processor), the
// metering worker, Billing's finalization worker (which enters
// reconciliation cases through Operations' case identities) and settlement
// catch-up, and the case desk that closes those cases.
type loopRuntime struct {
	rt           *server.Runtime
	network      *demo.Network    // --transport http only
	ownerReads   *demo.OwnerReads // --transport http only
	metering     *metering.Worker
	finalization *finalization.Worker
	catchUp      *catchup.Worker
	cases        *caseDesk
}

// newLoopRuntime builds the loop on pools (demoDatabases) with the
// dispatcher flags disp, its consumers and the owners' reads in process or
// (transportName http) behind loopback HTTP endpoints.
func newLoopRuntime(pools server.Pools, disp dispatcherFlags, transportName string) (*loopRuntime, error) {
	return buildLoopRuntime(pools, disp, transportName, nil)
}

// buildLoopRuntime is newLoopRuntime with wrapReads, when set, around the
// owner reads the consumers and workers get (a test compares every answer
// over HTTP with the same read in process).
func buildLoopRuntime(pools server.Pools, disp dispatcherFlags, transportName string, wrapReads func(ownerReaders) ownerReaders) (_ *loopRuntime, err error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	l := &loopRuntime{}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	// The owner reads each caller owner's consumers and workers get: in
	// process, the owners' own Reads; over HTTP, clients signing as that
	// caller (Metering's input processor and worker; Core's Billing
	// workers), which ownerhttp.Callers lets call only their reads.
	meteringReads := inProcessReaders(pools)
	coreReads := meteringReads
	// The Operations projector's Billing reads: from the billing pool in
	// process; over HTTP signed as Core (its owner) with the others.
	projectorReads := ownerReaders{}
	if transportName == demo.TransportHTTP {
		served := meteringReads.served()
		core := pools[boundary.Core]
		served.FinalizationCommitted, served.SettlementTransition = billing.Reads{DB: core}, catchup.Reads{DB: core}
		served.CaseDecision, served.CaseResolution = billing.Reads{DB: core}, billing.Reads{DB: core}
		served.LateExposure = catchup.Reads{DB: core}
		served.LateResult, served.CaseResolutionApplied = catchup.Reads{DB: core}, catchup.Reads{DB: core}
		if l.ownerReads, err = demo.StartOwnerReads(served, reg); err != nil {
			return nil, err
		}
		meteringReads = httpReaders(l.ownerReads.ClientsFor(ownerhttp.OwnerMetering))
		coreReads = httpReaders(l.ownerReads.ClientsFor(ownerhttp.OwnerCore))
		projectorReads = ownerReaders{committed: coreReads.committed, transition: coreReads.transition,
			caseDecision: coreReads.caseDecision, caseResolution: coreReads.caseResolution, lateExposure: coreReads.lateExposure,
			lateResult: coreReads.lateResult, caseResolutionApplied: coreReads.caseResolutionApplied}
	}
	if wrapReads != nil {
		meteringReads, coreReads = wrapReads(meteringReads), wrapReads(coreReads)
		// A wrapper that passes no case reads keeps the unwrapped ones.
		caseDecision, caseResolution, lateExposure := coreReads.caseDecision, coreReads.caseResolution, coreReads.lateExposure
		if caseDecision == nil || caseResolution == nil || lateExposure == nil {
			caseDecision, caseResolution, lateExposure = projectorReads.caseDecision, projectorReads.caseResolution, projectorReads.lateExposure
		}
		lateResult, caseResolutionApplied := coreReads.lateResult, coreReads.caseResolutionApplied
		if lateResult == nil || caseResolutionApplied == nil {
			lateResult, caseResolutionApplied = projectorReads.lateResult, projectorReads.caseResolutionApplied
		}
		projectorReads = ownerReaders{committed: coreReads.committed, transition: coreReads.transition,
			caseDecision: caseDecision, caseResolution: caseResolution, lateExposure: lateExposure,
			lateResult: lateResult, caseResolutionApplied: caseResolutionApplied}
	}
	consumers, batches, err := consumersFor(pools, meteringReads.over(projectorReads), pools[boundary.Core], true, true)
	if err != nil {
		return nil, err
	}
	if c, ok := consumers[route.MeteringInputProcessor]; ok {
		// The input processor reads the execution and gateway databases the
		// admission sessions write: bounding its concurrent deliveries (one
		// by one or in batches) keeps the demo's connections on a shared
		// server within budget.
		one, batch := limitConcurrency(c, batches[route.MeteringInputProcessor], 2)
		consumers[route.MeteringInputProcessor] = one
		if batch != nil {
			batches[route.MeteringInputProcessor] = batch
		}
	}
	wm := work.NewMetrics(reg)
	if l.metering, err = meteringWorker(pools[boundary.Metering], meteringReads, 2, 10*time.Second, wm, log); err != nil {
		return nil, err
	}
	counters := billing.NewCounters(reg)
	if l.cases, err = newCaseDesk(pools[boundary.Core], pools[boundary.Metering]); err != nil {
		return nil, err
	}
	l.finalization = finalizationWorker(pools[boundary.Core], l.cases.operations, coreReads, 2, wm, counters, log)
	if l.catchUp, err = catchUpWorker(pools[boundary.Core], l.cases.operations, coreReads.metering, wm, counters, log); err != nil {
		return nil, err
	}
	rcfg := server.Config{Dispatcher: disp.cfg, DispatchersPerBoundary: disp.dispatchers, Batches: disp.batches(batches)}
	if transportName == demo.TransportHTTP {
		if l.network, err = demo.StartNetwork(consumers, reg); err != nil {
			return nil, err
		}
		rcfg.Remote, rcfg.RemoteDestinations = l.network.Client, l.network.Client.Destinations()
		consumers = nil // every consumer is reached over HTTP
	}
	if l.rt, err = server.New(pools, consumers, rcfg, reg, log); err != nil {
		return nil, err
	}
	return l, nil
}

// config sets the loop's workers, network and case desk in cfg.
func (l *loopRuntime) config(cfg demo.Config) demo.Config {
	cfg.Network, cfg.OwnerReads, cfg.Metering, cfg.Finalization, cfg.CatchUp = l.network, l.ownerReads, l.metering, l.finalization, l.catchUp
	if l.cases != nil {
		cfg.Cases = l.cases.cases
	}
	return cfg
}

// Close stops the loopback HTTP endpoint, if any, and closes the case
// desk's pools.
func (l *loopRuntime) Close() {
	if l.network != nil {
		_ = l.network.Close()
	}
	if l.ownerReads != nil {
		_ = l.ownerReads.Close()
	}
	if l.cases != nil {
		l.cases.Close()
	}
}

// demoDatabases migrates every boundary, activates the first release in
// each and opens the core pool, which must hold no events yet.
func demoDatabases(ctx context.Context, serverURL string, o demoOptions, say func(string, ...any)) (server.Pools, error) {
	res, err := migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: serverURL, Prefix: o.prefix, Lines: o.lines})
	if err != nil {
		return nil, err
	}
	say("demo: boundary databases %s_{core,execution,gateway,metering} migrated (%d migrations applied)", o.prefix, len(res.Applied))
	// Every boundary gets the first full release.
	if err := bootstrapBoundaries(ctx, res.DSNs, say); err != nil {
		return nil, err
	}
	pools, err := openPools(ctx, map[boundary.Boundary]string{boundary.Core: res.DSNs[boundary.Core]},
		int32(o.disp.dispatchers*(o.disp.cfg.Concurrency+2)+o.workers+8))
	if err != nil {
		return nil, err
	}
	// The other boundaries: the Execution and Gateway owners write there on
	// the admission sessions; their dispatchers find nothing they serve.
	others := map[boundary.Boundary]string{}
	for _, b := range []boundary.Boundary{boundary.Execution, boundary.Gateway} {
		others[b] = res.DSNs[b]
	}
	rest, err := openPools(ctx, others, int32(2*o.disp.dispatchers+o.workers+4))
	if err != nil {
		pools.Close()
		return nil, err
	}
	for b, p := range rest {
		pools[b] = p
	}
	// The metering database serves only the Metering input processor (and
	// its empty outbox's dispatchers): a small pool keeps the demo's
	// connection budget on a shared server; deliveries wait for a session.
	// (plus the metering worker's slots: two on the eligibility lane, one on
	// the provider-cost lane, so the owner reads of the finalization and the
	// catch-up still find a session).
	met, err := openPools(ctx, map[boundary.Boundary]string{boundary.Metering: res.DSNs[boundary.Metering]}, int32(o.disp.dispatchers+5))
	if err != nil {
		pools.Close()
		return nil, err
	}
	pools[boundary.Metering] = met[boundary.Metering]
	// The summary proves invariants over the whole database, so the
	// demo needs its own empty one.
	var existing int64
	if err := pools[boundary.Core].QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events`).Scan(&existing); err != nil {
		pools.Close()
		return nil, err
	}
	if existing > 0 && o.apiURL == "" {
		pools.Close()
		return nil, fmt.Errorf("demo: %s already holds %d events from an earlier run; choose another --db-prefix", migrate.DatabaseName(o.prefix, boundary.Core), existing)
	}
	return pools, nil
}

// demoServer picks the server and the database prefix. keep reports whether
// the databases stay after the run; cleanup drops them (and stops a
// throwaway cluster) otherwise. restart is non-nil only for a throwaway
// cluster this demo started (the chaos mode restarts it once).
func demoServer(ctx context.Context, databaseURL string, prefix *string, say func(string, ...any)) (serverURL string, keep bool, restart func(context.Context) error, cleanup func(), err error) {
	if databaseURL != "" {
		if *prefix == "" {
			*prefix = "oceanway_demo"
		}
		return databaseURL, true, nil, func() {}, nil
	}
	srv, err := pgserver.Find(ctx, pgserver.Opts{Logf: func(f string, a ...any) { say("demo: "+f, a...) }})
	if err != nil {
		return "", false, nil, nil, err
	}
	if srv.Source == pgserver.SourceEmbedded {
		restart = srv.RestartImmediate
	}
	if *prefix == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		*prefix = "owdemo_" + hex.EncodeToString(b)
	}
	say("demo: PostgreSQL from %s; throwaway databases %s_*", srv.Source, *prefix)
	p := *prefix
	return srv.URL, false, restart, func() {
		dropCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dropBoundaryDatabases(dropCtx, srv.URL, p); err != nil {
			say("demo: dropping %s_*: %v", p, err)
		}
		_ = srv.Stop()
	}, nil
}

// bootstrapBoundaries registers and activates the first full release in
// every boundary database (a no-op where a definition is already active).
func bootstrapBoundaries(ctx context.Context, dsns map[boundary.Boundary]string, say func(string, ...any)) error {
	pools, err := openPools(ctx, dsns, 2)
	if err != nil {
		return err
	}
	defer pools.Close()
	for _, b := range pools.Boundaries() {
		def, err := release.Bootstrap(ctx, pools[b], release.BootstrapParams{
			ProjectionName: demoProjectionName, ProjectionVersion: demoProjectionVersion, SourceRelease: "oceanway-demo",
		})
		if err != nil {
			return fmt.Errorf("bootstrap %s: %w", b, err)
		}
		if b == boundary.Core {
			d, _ := def.ComputeDigest()
			say("demo: active delivery set definition v%d (%d pairs, %d members) %s", def.Version, len(def.ApplicableEvents), len(def.Members), d)
		}
	}
	return nil
}

// dropBoundaryDatabases drops <prefix>_<boundary> for every boundary.
// durableCommits turns synchronous commit back on for the demo's sessions on
// its throwaway cluster (started with synchronous_commit=off for speed):
// with the chaos mode's immediate restart, an asynchronously committed
// admission could be acknowledged and then lost, which is a property of that
// setting, not of the outbox. A role setting outranks the server's command
// line and applies to every session opened from now on.
func durableCommits(ctx context.Context, serverURL string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return fmt.Errorf("demo: durable commits: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // the setting is committed; a failed close loses nothing
	if _, err := conn.Exec(ctx, "ALTER ROLE CURRENT_USER SET synchronous_commit = on"); err != nil {
		return fmt.Errorf("demo: durable commits: %w", err)
	}
	return nil
}

func dropBoundaryDatabases(ctx context.Context, serverURL, prefix string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	for _, b := range boundary.All {
		name := pgx.Identifier{migrate.DatabaseName(prefix, b)}.Sanitize()
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// limitConcurrency lets at most n calls of c or b (one delivery, or one
// batch of them) run at once; the others wait (or give up with the
// context, which the dispatcher retries). A nil b stays nil.
func limitConcurrency(c transport.ConsumerFunc, b transport.BatchConsumerFunc, n int) (transport.ConsumerFunc, transport.BatchConsumerFunc) {
	sem := make(chan struct{}, max(n, 1))
	acquire := func(ctx context.Context) bool {
		select {
		case sem <- struct{}{}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	one := func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
		if !acquire(ctx) {
			return transport.Result{}, transport.Retryable("canceled", ctx.Err())
		}
		defer func() { <-sem }()
		return c(ctx, d)
	}
	if b == nil {
		return one, nil
	}
	batch := func(ctx context.Context, ds []transport.Delivery) []transport.Answer {
		if !acquire(ctx) {
			out := make([]transport.Answer, len(ds))
			for i := range out {
				out[i].Err = transport.Retryable("canceled", ctx.Err())
			}
			return out
		}
		defer func() { <-sem }()
		return b(ctx, ds)
	}
	return one, batch
}

// demoCostSettle is how long the demo lets PostgreSQL publish the
// statistics of its sessions before and after the idle sample (the loop
// benchmark waits 11 s, the idle flush interval; an active session
// publishes at least once a second, so the demo's figures may miss up to
// about a second of work).
const demoCostSettle = 1500 * time.Millisecond

// costWindow is the demo's measured window and the reservations finalized
// within it.
type costWindow struct {
	m *loopbench.Measurement
	// finalized counts the reservations settled or released when the
	// window closed (the case desk finalizes those in cases after it);
	// counted is false when that count failed.
	finalized int64
	counted   bool
}

// demoCostWindow measures the demo's loop as the loop benchmark does: its
// drivers are the demo's admission workers (a new run as soon as the last
// one returned), its window closes when the loop first quiesced, before
// the case desk runs. Not with --chaos, whose kills, pauses and restarts
// are not the loop's cost.
func demoCostWindow(ctx context.Context, serverURL string, o demoOptions, core *pgxpool.Pool, cfg *demo.Config) (*costWindow, string) {
	if o.chaos {
		return nil, "not measured with --chaos"
	}
	if o.processes {
		return nil, "not measured with --processes (the owners' CPU is in their own processes)"
	}
	if o.apiURL != "" {
		return nil, "not measured with --api (the loop's CPU is in that serve's process)"
	}
	dbs := make([]loopbench.Database, 0, len(boundary.All))
	for _, b := range boundary.All {
		dbs = append(dbs, loopbench.Database{Boundary: string(b), Name: migrate.DatabaseName(o.prefix, b)})
	}
	m, err := loopbench.NewMeasurement(ctx, serverURL, dbs, loopbench.Schedule{Runs: o.runs, Drivers: o.workers}, demoCostSettle)
	if err != nil {
		return nil, fmt.Sprintf("not measured: %v", err)
	}
	w := &costWindow{m: m}
	cfg.Drive = m.Drive
	cfg.Quiesced = func(ctx context.Context) {
		m.Quiesced(ctx)
		// Counted once the window closed, before the case desk runs.
		w.counted = core.QueryRow(ctx, `SELECT count(*) FROM billing.reservation_states WHERE state IN ('settled', 'released')`).
			Scan(&w.finalized) == nil
	}
	return w, ""
}

// demoCost is the summary's loop cost from the measured window: per run
// finalized within it.
func demoCost(w *costWindow, note string, s *demo.Summary) *demo.LoopCost {
	if w == nil {
		return &demo.LoopCost{Note: note}
	}
	if w.counted && s.Ledger != nil {
		windowed, l := *s, *s.Ledger
		l.Finalized, windowed.Ledger = w.finalized, &l
		s = &windowed
	}
	c, err := w.m.Case(s)
	if err != nil {
		return &demo.LoopCost{Note: fmt.Sprintf("not measured: %v", err)}
	}
	out := &demo.LoopCost{FinalizedPerSecond: c.FinalizedPerSecond, WindowSeconds: c.WindowSeconds,
		ProcessCPUMillis: c.ProcessMillisPerRun, PostgresCPUMillis: c.BackendMillisPerRun,
		CommitsPerRun: c.CommitsPerRun, RowsReadPerRun: c.RowsReadPerRun, StatisticsSource: c.StatsSource,
		CommitsByOwner: map[string]float64{}, RowsReadByOwner: map[string]float64{}}
	for _, d := range c.Databases {
		out.CommitsByOwner[d.Boundary], out.RowsReadByOwner[d.Boundary] = d.CommitsPerRun, d.RowsReadPerRun
	}
	return out
}
