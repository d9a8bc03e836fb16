package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/outbox/dispatcher"
)

// Config is one `oceanway bench` invocation.
type Config struct {
	// ServerURL connects to the server's maintenance database; the bench
	// creates its databases there.
	ServerURL string
	// ServerSource says where the server came from (pgserver.Source).
	ServerSource string
	// Prefix of the run databases: <Prefix>_t<txsize>[_held]_core and
	// ..._consumer. Default owbench_<random>.
	Prefix string
	// Events per run (default 10,000).
	Events int
	// TxSizes are the business transaction sizes, one run each (default 1, 100).
	TxSizes []int
	// Producers append concurrently (default 4).
	Producers int
	// Dispatchers, Batch, Concurrency and PollInterval configure the K
	// dispatchers (defaults 1, 100, 16 and the dispatcher's own default).
	Dispatchers  int
	Batch        int
	Concurrency  int
	PollInterval time.Duration
	// ConsumerBatch is the most deliveries the consumer applies in one call
	// and one transaction (transport.Batcher); 1 applies each on its own.
	// Default 32.
	ConsumerBatch int
	// Lease is the dispatchers' lease duration (default the dispatcher's,
	// 30s). A short lease makes the acknowledged history older than the
	// lease within one run, which is what a long-running system sees.
	Lease time.Duration
	// ClaimCooldown is the dispatchers' least time between a short claim
	// and the next one (default the dispatcher's).
	ClaimCooldown time.Duration
	// Mode: concurrent (default) or burndown.
	Mode measure.Mode
	// HeldXmin, when positive, adds a held-xmin run after each tx size's
	// run: the same workload while another session holds a REPEATABLE READ
	// snapshot open on the producer database for at most HeldXmin.
	HeldXmin time.Duration
	// HeldXminTxSizes limits the held-xmin runs to these tx sizes (default:
	// every tx size).
	HeldXminTxSizes []int
	// Lines are the migration lines applied to the producer database (the
	// outbox and admin lines when empty; oceanway bench passes every line).
	Lines []migrate.Line
	// Keep leaves the databases in place.
	Keep bool
	// CPUProfile, when set, receives one CPU profile from the opening of
	// the first run's measured window to the end of the last run (the set-up
	// of later runs, mostly server-side DDL, falls inside it).
	CPUProfile io.Writer
	// Rate, when positive, limits the producers to Rate events/s in total
	// (measure.Workload.Rate), e.g. half of the measured peak to read the
	// append→ack latency where queueing does not dominate.
	Rate float64
	// Timeout bounds each run (default 10 minutes).
	Timeout time.Duration
	// Log receives the dispatchers' warnings; Logf progress lines.
	Log  *slog.Logger
	Logf func(format string, args ...any)
}

func (c Config) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return discardLogger
}

func (c Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.Prefix == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.Prefix = "owbench_" + hex.EncodeToString(b[:])
	}
	if c.Events == 0 {
		c.Events = 10_000
	}
	if len(c.TxSizes) == 0 {
		c.TxSizes = []int{1, 100}
	}
	if c.Producers == 0 {
		c.Producers = 4
	}
	if c.Dispatchers == 0 {
		c.Dispatchers = 1
	}
	if c.Batch == 0 {
		c.Batch = 100
	}
	if c.Concurrency == 0 {
		c.Concurrency = 16
	}
	if c.ConsumerBatch == 0 {
		c.ConsumerBatch = 32
	}
	if c.Mode == "" {
		c.Mode = measure.Concurrent
	}
	return c
}

// ErrInvalidConfig marks an impossible configuration.
var ErrInvalidConfig = errors.New("bench: invalid configuration")

func (c Config) validate() error {
	switch {
	case c.ServerURL == "":
		return fmt.Errorf("%w: no server", ErrInvalidConfig)
	case c.Rate < 0:
		return fmt.Errorf("%w: rate %g < 0", ErrInvalidConfig, c.Rate)
	case c.Events < 1, c.Producers < 1, c.Dispatchers < 1, c.Batch < 1, c.Concurrency < 1, c.ConsumerBatch < 1:
		return fmt.Errorf("%w: events, producers, dispatchers, batch, concurrency and consumer batch must be ≥ 1", ErrInvalidConfig)
	case len(c.Prefix) > 30:
		return fmt.Errorf("%w: prefix %q longer than 30 characters", ErrInvalidConfig, c.Prefix)
	}
	if _, ok := measure.ParseMode(string(c.Mode)); !ok {
		return fmt.Errorf("%w: mode %q (want concurrent or burndown)", ErrInvalidConfig, c.Mode)
	}
	for _, s := range c.TxSizes {
		if s < 1 {
			return fmt.Errorf("%w: tx size %d < 1", ErrInvalidConfig, s)
		}
	}
	return nil
}

// EnvelopeBytes is the size of one bench event's canonical envelope, the
// message size the peer benchmarks reproduce.
func EnvelopeBytes() int {
	e := sample.Envelope(eventType, 0)
	raw, err := e.Canonical()
	if err != nil {
		return 0
	}
	return len(raw)
}

// Run runs the benchmark: for each tx size, fresh producer and consumer
// databases, the workload, the measurements; then, with HeldXmin, the
// same again while a snapshot is held. Databases are dropped at the end
// unless Keep (also when a run fails).
func Run(ctx context.Context, cfg Config) (measure.Report, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return measure.Report{}, err
	}
	report := measure.Report{Tool: "oceanway bench", Started: time.Now().UTC()}
	server, err := measure.ServerInfo(ctx, cfg.ServerURL, cfg.ServerSource, runtime.NumCPU())
	if err != nil {
		return report, fmt.Errorf("server: %w", err)
	}
	report.Server = server

	var created []string
	defer func() {
		if cfg.Keep {
			report.Databases = created
			return
		}
		if len(created) > 0 {
			if err := measure.DropDatabases(ctx, cfg.ServerURL, created...); err != nil {
				cfg.logf("bench: %v", err)
			}
		}
	}()

	profiling := false
	onWindow := func(open bool) {
		if cfg.CPUProfile == nil {
			return
		}
		switch {
		case open && !profiling:
			if err := pprof.StartCPUProfile(cfg.CPUProfile); err == nil {
				profiling = true
			}
		case !open && profiling:
			pprof.StopCPUProfile()
			profiling = false
		}
	}
	defer onWindow(false)

	type scenario struct {
		txSize int
		held   time.Duration
	}
	var scenarios []scenario
	for _, s := range cfg.TxSizes {
		scenarios = append(scenarios, scenario{txSize: s})
		if cfg.HeldXmin > 0 && (len(cfg.HeldXminTxSizes) == 0 || slices.Contains(cfg.HeldXminTxSizes, s)) {
			scenarios = append(scenarios, scenario{txSize: s, held: cfg.HeldXmin})
		}
	}
	env := measure.Env{ServerURL: cfg.ServerURL, Logf: cfg.Logf}
	msgBytes := EnvelopeBytes()
	for _, sc := range scenarios {
		prefix := fmt.Sprintf("%s_t%d", cfg.Prefix, sc.txSize)
		if sc.held > 0 {
			prefix += "_held"
		}
		cfg.logf("bench: %s, %d events in transactions of %d, %s mode%s", prefix, cfg.Events, sc.txSize, cfg.Mode, heldText(sc.held))
		t, err := newOutboxTarget(ctx, cfg.ServerURL, prefix, cfg)
		created = append(created, t.producerDB, t.consumerDB)
		if err != nil {
			_ = t.Close(ctx)
			return report, err
		}
		rec := measure.NewRecorder(cfg.Events)
		run, err := measure.Drive(ctx, env, t, measure.Workload{
			Messages: cfg.Events, TxSize: sc.txSize, Producers: cfg.Producers, Workers: cfg.Dispatchers * cfg.Concurrency,
			Mode: cfg.Mode, HeldXmin: sc.held, Rate: cfg.Rate, Timeout: cfg.Timeout,
			OnWindow: func(open bool) {
				if open {
					onWindow(true)
				}
			},
		}, rec)
		run.MessageBytes = msgBytes
		run.Settings = fmt.Sprintf("dispatchers=%d batch=%d concurrency=%d consumer-batch=%d poll=%s claim-cooldown=%s",
			cfg.Dispatchers, cfg.Batch, cfg.Concurrency, cfg.ConsumerBatch, pollText(cfg.PollInterval), cooldownText(cfg.ClaimCooldown))
		if cfg.Rate > 0 {
			run.Settings += fmt.Sprintf(" rate=%g/s", cfg.Rate)
		}
		if err != nil {
			return report, fmt.Errorf("run %s: %w", prefix, err)
		}
		report.Runs = append(report.Runs, run)
	}
	onWindow(false)
	if cfg.CPUProfile != nil {
		report.Profile = "written"
	}
	return report, nil
}

func heldText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return ", snapshot held for up to " + d.String()
}

func cooldownText(d time.Duration) string {
	if d == 0 {
		return "default(" + dispatcher.Config{}.WithDefaults().ClaimCooldown.String() + ")"
	}
	return d.String()
}

func pollText(d time.Duration) string {
	if d <= 0 {
		return "default(1s)+LISTEN"
	}
	return d.String() + "+LISTEN"
}
