// Command peerbench runs OceanWay's `oceanway bench`, River, watermill-sql
// (default and queue schema adapters) and the machine's physical limit on
// the same PostgreSQL server, one after another, and prints one table.
//
//	go run ./cmd/peerbench                      # from bench/peers
//	go run ./cmd/peerbench --events 20000 --held-xmin 60s --json out.json
//
// Our numbers come from `oceanway bench --json` run as a subprocess (built
// from the main module with go build unless --oceanway names a binary), or
// from an earlier result with --ours FILE.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/oceanway/core/internal/bench"
	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/pgserver"

	"github.com/oceanway/core/bench/peers/river"
	"github.com/oceanway/core/bench/peers/watermill"
)

// ourSystem is the name `oceanway bench` reports.
const ourSystem = "oceanway"

// referencePeer is the peer the table's "vs river" column divides by: issue
// 17's bar is stated against plain River, so every row's ratio to it (ours,
// and River's own with a receipt row) is read off the same run.
const referencePeer = river.SystemTuned

type options struct {
	databaseURL   string
	events        int
	txSizes       []int
	producers     int
	workers       int
	mode          measure.Mode
	systems       []string
	heldXmin      time.Duration
	heldTxSizes   []int
	limitDuration time.Duration
	watermillPoll time.Duration
	oceanway      string
	oursFile      string
	oursArgs      []string
	cpuProfile    string
	jsonPath      string
	keep          bool
	timeout       time.Duration
	repeat        int
}

// allSystems can be chosen with --systems; defaultSystems run by default
// (river-defaults is slow by construction: about MaxWorkers jobs per 100ms).
var (
	allSystems     = []string{"ours", "river", "river-receipt", "river-defaults", "watermill-default", "watermill-queue", "limit"}
	defaultSystems = []string{"ours", "river", "river-receipt", "watermill-default", "watermill-queue", "limit"}
	peerSystems    = []string{"river", "river-receipt", "river-defaults", "watermill-default", "watermill-queue"}
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "peerbench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }

	srv, err := pgserver.Find(ctx, pgserver.Opts{DatabaseURL: o.databaseURL, Logf: logf})
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	env := measure.Env{ServerURL: srv.URL, Logf: logf}
	server, err := measure.ServerInfo(ctx, srv.URL, string(srv.Source), runtime.NumCPU())
	if err != nil {
		return err
	}
	report := measure.Report{Tool: "peerbench", Started: time.Now().UTC(), Server: server}

	var repeats [][]measure.Run
	var limits []measure.Limit
	msgBytes := 0
	for i := range o.repeat {
		if o.repeat > 1 {
			logf("peerbench: repeat %d of %d", i+1, o.repeat)
		}
		runs, limit, kept, bytes, err := runOnce(ctx, o, env, srv.URL, logf)
		report.Databases = append(report.Databases, kept...)
		if err != nil {
			return err
		}
		repeats = append(repeats, runs)
		if limit != nil {
			limits = append(limits, *limit)
		}
		msgBytes = bytes
	}
	report.Runs = measure.MedianRuns(repeats)
	report.Limit = measure.MedianLimit(limits)

	repeatText := ""
	if o.repeat > 1 {
		repeatText = fmt.Sprintf("; each row is the median of %d interleaved repeats", o.repeat)
	}
	fmt.Fprintf(stdout, "PostgreSQL %s (synchronous_commit=%s, %s server), %d CPUs; %d messages per run, %s mode, %d producers, %d consumer workers, %d-byte messages%s\n",
		server.Version, server.SynchronousCommit, server.Source, server.CPUs, o.events, o.mode, o.producers, o.workers, msgBytes, repeatText)
	if err := measure.WriteTable(stdout, report.Runs, measure.TableOpts{Ours: ourSystem, Reference: referencePeer, Limit: report.Limit}); err != nil {
		return err
	}
	if err := measure.WriteHeldXmin(stdout, report.Runs); err != nil {
		return err
	}
	if len(report.Databases) > 0 {
		fmt.Fprintf(stdout, "kept databases: %v\n", report.Databases)
	}
	if o.jsonPath != "" {
		raw, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(o.jsonPath, append(raw, '\n'), 0o644)
	}
	return nil
}

// runOnce runs every chosen system once: ours, then the peers per tx size
// (each with its held-xmin variant), then the limit.
func runOnce(ctx context.Context, o options, env measure.Env, serverURL string, logf func(string, ...any)) (runs []measure.Run, limit *measure.Limit, kept []string, msgBytes int, err error) {
	if o.wants("ours") {
		ours, err := runOurs(ctx, o, serverURL, logf)
		kept = append(kept, ours.Databases...)
		if err != nil {
			return runs, nil, kept, 0, fmt.Errorf("oceanway bench: %w", err)
		}
		runs = append(runs, ours.Runs...)
		for _, r := range ours.Runs {
			msgBytes = r.MessageBytes
		}
	}
	if msgBytes == 0 {
		msgBytes = bench.EnvelopeBytes()
	}

	var b [3]byte
	_, _ = rand.Read(b[:])
	prefix := "owpeer_" + hex.EncodeToString(b[:])
	type variant struct {
		system string
		tx     int
		held   time.Duration
	}
	var variants []variant
	for _, tx := range o.txSizes {
		for _, s := range peerSystems {
			if !o.wants(s) {
				continue
			}
			variants = append(variants, variant{system: s, tx: tx})
			if o.heldXmin > 0 && slices.Contains(o.heldTxSizes, tx) {
				variants = append(variants, variant{system: s, tx: tx, held: o.heldXmin})
			}
		}
	}
	for _, v := range variants {
		name := fmt.Sprintf("%s_%s_t%d", prefix, strings.ReplaceAll(v.system, "-", "_"), v.tx)
		held := ""
		if v.held > 0 {
			name += "_held"
			held = ", snapshot held for up to " + v.held.String()
		}
		logf("peerbench: %s, %d messages in transactions of %d, %s mode%s", v.system, o.events, v.tx, o.mode, held)
		r, err := runPeer(ctx, env, o, v.system, name, v.tx, v.held, msgBytes)
		names := []string{name}
		if v.system == "river-receipt" {
			names = append(names, name+"_consumer")
		}
		if o.keep {
			kept = append(kept, names...)
		} else {
			_ = measure.DropDatabases(ctx, serverURL, names...)
		}
		if err != nil {
			return runs, nil, kept, msgBytes, fmt.Errorf("%s tx %d: %w", v.system, v.tx, err)
		}
		runs = append(runs, r)
	}

	if o.wants("limit") {
		l, err := measure.MeasureLimit(ctx, env, measure.LimitParams{
			Database: prefix + "_limit", Keep: o.keep, Concurrency: o.workers, Duration: o.limitDuration,
			PayloadBytes: msgBytes, BatchRows: slices.Max(o.txSizes),
		})
		if o.keep {
			kept = append(kept, prefix+"_limit")
		}
		if err != nil {
			return runs, nil, kept, msgBytes, err
		}
		limit = &l
	}
	return runs, limit, kept, msgBytes, nil
}

func (o options) wants(system string) bool { return slices.Contains(o.systems, system) }

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("peerbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	txSizes := fs.String("tx-size", "1,100", "messages per producing transaction, comma-separated; one run per value")
	systems := fs.String("systems", strings.Join(defaultSystems, ","), "systems to run, from: "+strings.Join(allSystems, ","))
	fs.IntVar(&o.repeat, "repeat", 1, "run everything this many times (interleaved) and report, per row, the run with the median consumed/s")
	heldTx := fs.String("held-xmin-tx-size", "100", "tx sizes that get the held-xmin variant, comma-separated")
	mode := fs.String("mode", string(measure.Concurrent), "concurrent (consume while producing) or burndown (produce all, then consume)")
	oursArgs := fs.String("ours-args", "", "extra arguments for oceanway bench, space-separated (e.g. \"--dispatchers 2 --batch 50\")")
	fs.StringVar(&o.databaseURL, "database-url", "", "server connection string (default $DATABASE_URL, else 127.0.0.1:5432, else a throwaway cluster)")
	fs.IntVar(&o.events, "events", 10_000, "messages per run")
	fs.IntVar(&o.producers, "producers", 4, "concurrent producing sessions")
	fs.IntVar(&o.workers, "workers", 16, "consumer concurrency: River MaxWorkers, our dispatcher --concurrency, the limit's sessions")
	fs.DurationVar(&o.heldXmin, "held-xmin", 0, "also run each system while a REPEATABLE READ snapshot is held open for up to this long")
	fs.DurationVar(&o.limitDuration, "limit-duration", 3*time.Second, "duration of each physical-limit test")
	fs.DurationVar(&o.watermillPoll, "watermill-poll", 10*time.Millisecond, "watermill subscriber poll interval (watermill's own default is 1s)")
	fs.StringVar(&o.oceanway, "oceanway", "", "oceanway binary (default: go build the main module's ./cmd/oceanway)")
	fs.StringVar(&o.oursFile, "ours", "", "read our result from this oceanway bench --json file instead of running it")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "pass --cpuprofile FILE to oceanway bench")
	fs.StringVar(&o.jsonPath, "json", "", "write the combined result as JSON to this file")
	fs.BoolVar(&o.keep, "keep", false, "keep every database")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound of each run")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	var err error
	if o.txSizes, err = ints(*txSizes); err != nil {
		return o, fmt.Errorf("--tx-size: %w", err)
	}
	if o.heldTxSizes, err = ints(*heldTx); err != nil {
		return o, fmt.Errorf("--held-xmin-tx-size: %w", err)
	}
	m, ok := measure.ParseMode(*mode)
	if !ok {
		return o, fmt.Errorf("--mode %q: want concurrent or burndown", *mode)
	}
	o.mode = m
	for _, s := range strings.Split(*systems, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allSystems, s) {
			return o, fmt.Errorf("--systems: unknown system %q (want %s)", s, strings.Join(allSystems, ","))
		}
		o.systems = append(o.systems, s)
	}
	o.oursArgs = strings.Fields(*oursArgs)
	if o.events < 1 || o.producers < 1 || o.workers < 1 || o.repeat < 1 {
		return o, errors.New("--events, --producers, --workers and --repeat must be ≥ 1")
	}
	return o, nil
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runOurs runs oceanway bench --json (or reads --ours).
func runOurs(ctx context.Context, o options, serverURL string, logf func(string, ...any)) (measure.Report, error) {
	var report measure.Report
	path := o.oursFile
	if path == "" {
		dir, err := os.MkdirTemp("", "peerbench-")
		if err != nil {
			return report, err
		}
		defer os.RemoveAll(dir)
		bin := o.oceanway
		if bin == "" {
			if bin, err = buildOceanway(ctx, dir, logf); err != nil {
				return report, err
			}
		}
		path = filepath.Join(dir, "ours.json")
		args := []string{"bench", "--database-url", serverURL, "--json", path,
			"--events", strconv.Itoa(o.events), "--tx-size", joinInts(o.txSizes), "--mode", string(o.mode),
			"--producers", strconv.Itoa(o.producers), "--concurrency", strconv.Itoa(o.workers),
			"--timeout", o.timeout.String()}
		if o.heldXmin > 0 {
			args = append(args, "--held-xmin", o.heldXmin.String(), "--held-xmin-tx-size", joinInts(o.heldTxSizes))
		}
		if o.cpuProfile != "" {
			args = append(args, "--cpuprofile", o.cpuProfile)
		}
		if o.keep {
			args = append(args, "--keep")
		}
		args = append(args, o.oursArgs...)
		logf("peerbench: %s %s", bin, strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return report, err
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return report, err
	}
	return report, json.Unmarshal(raw, &report)
}

// buildOceanway builds the main module's command into dir with go build,
// in the main module's own directory (its own go.mod and go.sum).
func buildOceanway(ctx context.Context, dir string, logf func(string, ...any)) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/oceanway/core").Output()
	if err != nil {
		return "", fmt.Errorf("locate the main module: %w", err)
	}
	root := strings.TrimSpace(string(out))
	bin := filepath.Join(dir, "oceanway")
	logf("peerbench: go build -o %s ./cmd/oceanway (in %s)", bin, root)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/oceanway")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build oceanway: %w", err)
	}
	return bin, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// runPeer sets up one peer on a fresh database and drives the workload.
func runPeer(ctx context.Context, env measure.Env, o options, system, database string, txSize int, held time.Duration, msgBytes int) (measure.Run, error) {
	rec := measure.NewRecorder(o.events)
	var t measure.Target
	var settings string
	switch system {
	case "river", "river-receipt", "river-defaults":
		tuned := system != "river-defaults"
		receipt := system == "river-receipt"
		rt, err := river.New(ctx, river.Config{ServerURL: env.ServerURL, Database: database, Workers: o.workers, Tuned: tuned,
			Receipt: receipt, ConsumerDatabase: database + "_consumer",
			Producers: o.producers, Messages: o.events, PayloadBytes: msgBytes, Recorder: rec,
			Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			return measure.Run{}, err
		}
		t, settings = rt, fmt.Sprintf("MaxWorkers=%d, River defaults otherwise (batch completer, LISTEN/NOTIFY, FetchCooldown 100ms, FetchPollInterval 1s)", o.workers)
		if tuned {
			settings = fmt.Sprintf("River's own benchmark settings: MaxWorkers=%d, FetchCooldown %s, FetchPollInterval %s; default batch completer",
				river.TunedMaxWorkers, river.TunedFetchCooldown, river.TunedFetchPollInterval)
		}
		if receipt {
			settings = fmt.Sprintf("River's own benchmark settings (MaxWorkers=%d, FetchCooldown %s, FetchPollInterval %s, default batch completer); the worker stores an insert-or-compare receipt keyed by the job's message id in the separate database %s_consumer (pool of %d sessions) before completing",
				river.TunedMaxWorkers, river.TunedFetchCooldown, river.TunedFetchPollInterval, database, o.workers)
		}
	case "watermill-default", "watermill-queue":
		adapter := watermill.Default
		if system == "watermill-queue" {
			adapter = watermill.Queue
		}
		wt, err := watermill.New(ctx, watermill.Config{ServerURL: env.ServerURL, Database: database, Adapter: adapter,
			Producers: o.producers, PollInterval: o.watermillPoll, PayloadBytes: msgBytes, Recorder: rec})
		if err != nil {
			return measure.Run{}, err
		}
		t, settings = wt, fmt.Sprintf("one subscriber, SubscribeBatchSize 100 (default), PollInterval %s (default 1s)", o.watermillPoll)
	default:
		return measure.Run{}, fmt.Errorf("unknown system %q", system)
	}
	workers := o.workers
	switch system {
	case "river", "river-receipt":
		workers = river.TunedMaxWorkers
	case "watermill-default", "watermill-queue":
		workers = 1 // one subscription consumes sequentially
	}
	r, err := measure.Drive(ctx, env, t, measure.Workload{
		Messages: o.events, TxSize: txSize, Producers: o.producers, Workers: workers,
		Mode: o.mode, HeldXmin: held, Timeout: o.timeout,
	}, rec)
	r.MessageBytes, r.Settings = msgBytes, settings
	return r, err
}
