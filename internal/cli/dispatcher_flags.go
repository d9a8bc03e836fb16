package cli

import (
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/server"
)

// dispatcherFlags binds dispatcher.Config (OB-CLAIM-5) to flags whose
// defaults come from OCEANWAY_* environment variables, then from the
// documented defaults of dispatcher.Config.WithDefaults (the claim
// cool-down: defaultClaimCooldown).
type dispatcherFlags struct {
	cfg         dispatcher.Config
	dispatchers int
	// consumerBatch: most deliveries an in-process consumer that takes
	// batches applies in one call and one transaction.
	consumerBatch int
}

// defaultConsumerBatch is the --consumer-batch default.
const defaultConsumerBatch = 16

// defaultClaimCooldown is serve's and the demo's --claim-cooldown default,
// above the dispatcher's own 40 ms (which bench's outbox mode and the peer
// comparison keep): the whole loop's events trickle in per run, and claims
// that gather more deliveries, consumer batches and acks per transaction
// cost less CPU per finalized run (docs/bench.md "Item 2, second pass":
// about 5 % less than at 40 ms at saturation, for about 50 ms more
// admission → finalization p50 at an offered 5 runs/s).
const defaultClaimCooldown = 100 * time.Millisecond

func (f *dispatcherFlags) register(cmd *cobra.Command) {
	d := dispatcher.Config{}.WithDefaults()
	fl := cmd.Flags()
	fl.IntVar(&f.dispatchers, "dispatchers", envInt("OCEANWAY_DISPATCHERS", 2), "dispatcher instances per producer database (env OCEANWAY_DISPATCHERS)")
	fl.IntVar(&f.cfg.BatchSize, "batch", envInt("OCEANWAY_BATCH", d.BatchSize), "claim batch size (env OCEANWAY_BATCH)")
	fl.IntVar(&f.cfg.Concurrency, "concurrency", envInt("OCEANWAY_CONCURRENCY", d.Concurrency), "deliveries in flight per dispatcher (env OCEANWAY_CONCURRENCY)")
	fl.IntVar(&f.cfg.AckBatchSize, "ack-batch", envInt("OCEANWAY_ACK_BATCH", d.AckBatchSize), "verified acks recorded per transaction, and retries per statement (env OCEANWAY_ACK_BATCH)")
	fl.IntVar(&f.consumerBatch, "consumer-batch", envInt("OCEANWAY_CONSUMER_BATCH", defaultConsumerBatch),
		"most deliveries the in-process Operations projector (core_operations) or Metering input processor (metering_input_processor) applies in one transaction, each event in its own savepoint; 1 = one by one (env OCEANWAY_CONSUMER_BATCH)")
	fl.DurationVar(&f.cfg.LeaseDuration, "lease", envDuration("OCEANWAY_LEASE", d.LeaseDuration), "lease duration (env OCEANWAY_LEASE)")
	fl.DurationVar(&f.cfg.RenewInterval, "renew", envDuration("OCEANWAY_RENEW", 0), "lease renewal interval, at most 2/5 of the lease; 0 = lease/3, negative disables (env OCEANWAY_RENEW)")
	fl.DurationVar(&f.cfg.StatementTimeout, "statement-timeout", envDuration("OCEANWAY_STATEMENT_TIMEOUT", d.StatementTimeout), "database statement timeout (env OCEANWAY_STATEMENT_TIMEOUT)")
	fl.DurationVar(&f.cfg.BackoffBase, "backoff-base", envDuration("OCEANWAY_BACKOFF_BASE", d.BackoffBase), "first retry delay (env OCEANWAY_BACKOFF_BASE)")
	fl.DurationVar(&f.cfg.BackoffMax, "backoff-max", envDuration("OCEANWAY_BACKOFF_MAX", d.BackoffMax), "largest retry delay (env OCEANWAY_BACKOFF_MAX)")
	fl.IntVar(&f.cfg.MaxAttempts, "max-attempts", envInt("OCEANWAY_MAX_ATTEMPTS", 0), "quarantine retryable failures after this many attempts; 0 = never (env OCEANWAY_MAX_ATTEMPTS)")
	fl.DurationVar(&f.cfg.PollInterval, "poll", envDuration("OCEANWAY_POLL", d.PollInterval), "fallback poll interval (env OCEANWAY_POLL)")
	fl.DurationVar(&f.cfg.ClaimCooldown, "claim-cooldown", envDuration("OCEANWAY_CLAIM_COOLDOWN", defaultClaimCooldown),
		"least time between a claim that came back short and the next claim, so a trickle of appends is claimed in batches; negative disables (env OCEANWAY_CLAIM_COOLDOWN)")
	fl.BoolVar(&f.cfg.DisableListen, "no-listen", os.Getenv("OCEANWAY_NO_LISTEN") == "1", "disable LISTEN/NOTIFY wake-ups, poll only (env OCEANWAY_NO_LISTEN=1)")
	fl.StringVar(&f.cfg.Region, "region", envOr("OCEANWAY_REGION", d.Region), "deployment region reported by oceanway_outbox_dispatcher_info (OBS-1; env OCEANWAY_REGION)")
	fl.DurationVar(&f.cfg.DrainTimeout, "drain-timeout", envDuration("OCEANWAY_DRAIN_TIMEOUT", d.DrainTimeout), "graceful stop drain limit (env OCEANWAY_DRAIN_TIMEOUT)")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// batches are the batch entry points of the consumers with the configured
// limit (none when it is 1 or less).
func (f *dispatcherFlags) batches(apply map[route.Destination]transport.BatchConsumerFunc) map[route.Destination]server.Batch {
	if f.consumerBatch <= 1 {
		return nil
	}
	out := make(map[route.Destination]server.Batch, len(apply))
	for d, a := range apply {
		out[d] = server.Batch{Limit: f.consumerBatch, Apply: a}
	}
	return out
}
