package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/bench"
	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/pgserver"
)

// benchOptions are the flags of `oceanway bench`.
type benchOptions struct {
	cfg         bench.Config
	databaseURL string
	mode        string
	jsonPath    string
	profilePath string
	quiet       bool
}

func newBenchCmd(streams *IO) *cobra.Command {
	o := benchOptions{cfg: bench.Config{Lines: lines.All()}}
	var lo loopOptions
	cfg := &o.cfg
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "End-to-end outbox benchmark: append, dispatch to a receipt-writing consumer, measure",
		Long: `bench measures the outbox end to end on a real PostgreSQL server.

For each transaction size (--tx-size, default 1 and 100) it creates fresh databases
<prefix>_t<size>_core (every migration line of the core boundary applied, the
first release definition active) and <prefix>_t<size>_consumer, appends --events run.created@2.0
events (one core_operations delivery each) from --producers concurrent business
transactions of that size, and runs --dispatchers dispatchers (--batch,
--concurrency) that deliver through the in-process transport to a consumer writing
an OperationsProjectionAppliedReceipt@1 insert-or-compare in its own database,
until every delivery is acknowledged. In the default concurrent mode the
dispatchers run while the events are appended; --mode burndown appends everything
first and times the drain.

It reports appends/s, acknowledged deliveries/s, commit→ack latency (p50, p99),
rows written per delivery (pg_stat_user_tables), CPU seconds per 1,000 deliveries
(this process, and the PostgreSQL backends of the run's databases when the server
runs on this machine), and the dead tuples of outbox_deliveries. --held-xmin D adds,
per tx size, a run while another session holds a REPEATABLE READ snapshot open on
the producer database for up to D.

--mode loop measures the demo's whole loop instead (issue 35, docs/bench.md "Loop
benchmark"): fresh databases <prefix>_<case>_{core,execution,gateway,metering}, the
demo's in-process runtime (dispatchers, consumers, metering, finalization and catch-up
workers) and its scenario (admission → execution attempts → gateway dispatch and
evidence → closure) per run, started open loop at --rate runs/s (or by --drivers
concurrent drivers at --rate 0) for --runs runs (--runs-list, --rate-sweep: several
cases; --svg charts them). It reports offered, admitted and finalized runs/s,
admission → finalization p50/p99, CPU ms per finalized run (this process and the
PostgreSQL backends), commits and rows read per run per database, and the demo's
invariants, which must all hold.

The server is --database-url, else DATABASE_URL, else a local server on
127.0.0.1:5432, else a throwaway cluster started for the bench. The databases are
dropped at the end unless --keep.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.mode == modeLoop {
				return runLoopBench(cmd.Context(), streams, o, lo, loopDispatcherFlags(cmd, o), cmd.Flags().Changed("timeout"))
			}
			return runBench(cmd.Context(), streams, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.databaseURL, "database-url", "", "server connection string (default $DATABASE_URL, else 127.0.0.1:5432, else a throwaway cluster)")
	f.StringVar(&cfg.Prefix, "db-prefix", "", "prefix of the run databases (default owbench_<random>)")
	f.IntVar(&cfg.Events, "events", 10_000, "events appended per run")
	f.IntSliceVar(&cfg.TxSizes, "tx-size", []int{1, 100}, "events per business transaction; one run per value")
	f.IntVar(&cfg.Producers, "producers", 4, "concurrent appending sessions")
	f.IntVar(&cfg.Dispatchers, "dispatchers", 1, "dispatchers (K)")
	f.IntVar(&cfg.Batch, "batch", 100, "dispatcher claim batch size")
	f.IntVar(&cfg.Concurrency, "concurrency", 16, "deliveries in flight per dispatcher")
	f.IntVar(&cfg.ConsumerBatch, "consumer-batch", 32, "most deliveries the consumer applies in one call and one transaction (1: one by one)")
	f.DurationVar(&cfg.Lease, "lease", 0, "dispatcher lease duration (default: the dispatcher's, 30s)")
	f.DurationVar(&cfg.PollInterval, "poll-interval", 0, "dispatcher fallback poll interval (default: the dispatcher's, 1s; LISTEN wakes it earlier)")
	f.DurationVar(&cfg.ClaimCooldown, "claim-cooldown", 0, "least time between a claim that came back short and the next claim (default: the dispatcher's, 40ms; --mode loop: serve's, 100ms; negative disables)")
	f.StringVar(&o.mode, "mode", string(measure.Concurrent), "concurrent (dispatch while appending), burndown (append all, then dispatch) or loop (the demo's whole loop, open loop at --rate runs/s)")
	f.DurationVar(&cfg.HeldXmin, "held-xmin", 0, "also run each tx size while a REPEATABLE READ snapshot is held open for up to this long (e.g. 60s)")
	f.IntSliceVar(&cfg.HeldXminTxSizes, "held-xmin-tx-size", nil, "run the held-xmin variant only for these tx sizes (default: all)")
	f.Float64Var(&cfg.Rate, "rate", 0, "limit the producers to this many events/s in total (0: as fast as possible), e.g. half the peak for latency without queueing; loop mode: offered runs/s (0: saturation with --drivers)")
	f.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "bound of each run")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the run databases")
	f.StringVar(&o.jsonPath, "json", "", "write the result as JSON to this file")
	f.StringVar(&o.profilePath, "cpuprofile", "", "write a CPU profile of this process to this file (the measured runs; --mode loop: the whole command, provisioning included)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	lo.register(cmd)
	return cmd
}

// runBench runs the benchmark on the server it finds and prints the report.
func runBench(ctx context.Context, streams *IO, o benchOptions) (err error) {
	cfg := o.cfg
	logf := func(format string, args ...any) {
		if !o.quiet {
			fmt.Fprintf(streams.Err, format+"\n", args...)
		}
	}
	logf("bench: runtime %s", applyRuntimeDefaults())
	m, ok := measure.ParseMode(o.mode)
	if !ok {
		return fmt.Errorf("bench: --mode %q: want concurrent, burndown or loop", o.mode)
	}
	cfg.Mode = m
	srv, err := pgserver.Find(ctx, pgserver.Opts{DatabaseURL: o.databaseURL, Logf: logf})
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	cfg.ServerURL, cfg.ServerSource = srv.URL, string(srv.Source)
	cfg.Logf = logf
	cfg.Log = slog.New(slog.NewTextHandler(streams.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if o.profilePath != "" {
		f, err := os.Create(o.profilePath)
		if err != nil {
			return fmt.Errorf("bench: cpu profile: %w", err)
		}
		defer func() { // the profile is written to f: a failed close loses it
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("bench: cpu profile: %w", cerr)
			}
		}()
		cfg.CPUProfile = f
	}
	report, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if o.profilePath != "" {
		report.Profile = o.profilePath
	}
	return writeBenchReport(streams.Out, report, o.jsonPath)
}

// writeBenchReport prints the tables and, with jsonPath, writes the JSON.
func writeBenchReport(out io.Writer, report measure.Report, jsonPath string) error {
	if err := measure.WriteTable(out, report.Runs, measure.TableOpts{}); err != nil {
		return err
	}
	if err := measure.WriteHeldXmin(out, report.Runs); err != nil {
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
	return nil
}
