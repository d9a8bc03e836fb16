package dispatcher

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/oceanway/core/contracts/route"
)

// Config is every tunable of a dispatcher (OB-CLAIM-5). Zero fields take the
// documented defaults from WithDefaults; nothing else in the package holds a
// literal that a deployment might need to change.
type Config struct {
	// WorkerID names the lease owner; default "<hostname>-<pid>".
	WorkerID string
	// Boundary names the producer database's fact boundary (core,
	// execution, gateway, metering) in metric labels and logs. Default "default".
	Boundary string
	// Destinations filters the deliveries this dispatcher claims; empty = all.
	Destinations []route.Destination
	// BatchSize is the claim LIMIT. Default 100.
	BatchSize int
	// LeaseDuration is how long a claim is valid. Default 30s.
	LeaseDuration time.Duration
	// RenewInterval renews in-flight leases of slow consumers; 0 takes the
	// default LeaseDuration/3, a negative value disables renewal. At most
	// two fifths of LeaseDuration.
	RenewInterval time.Duration
	// Concurrency is the number of consumer calls in flight at once: a slot
	// hands the outcome of a call to be recorded (the ack to the acker's
	// next batch) and starts its next delivery; at most
	// Concurrency+AckBatchSize outcomes are being recorded at once, each
	// still under its lease and fence. Default 16.
	Concurrency int
	// AckBatchSize is the most verified acks recorded in one transaction,
	// and the most retries recorded in one statement; outcomes that arrive
	// while a batch is being written form the next one. 1 records every ack
	// and every retry on its own. Default 64. (Quarantines, terminal and
	// once per delivery, are recorded one by one.)
	AckBatchSize int
	// StatementTimeout bounds every outcome/claim statement. Default 5s.
	StatementTimeout time.Duration
	// DeliveryTimeout bounds one consumer call. Default 4×LeaseDuration when
	// renewal is on (a slow consumer keeps its lease by renewal up to this
	// bound), LeaseDuration when renewal is off.
	DeliveryTimeout time.Duration
	// BackoffBase, BackoffMax and BackoffJitter shape retry delays:
	// min(BackoffMax, BackoffBase·2^(attempt-1)) · (1 ± BackoffJitter).
	// Defaults 1s, 5m, 0.2.
	BackoffBase   time.Duration
	BackoffMax    time.Duration
	BackoffJitter float64
	// WaitBackoffMax caps the retry delay of recoverable waits (revision
	// gaps, owner reads not yet available). Default 2s.
	WaitBackoffMax time.Duration
	// MaxAttempts quarantines a retryable failure after this many attempts.
	// 0 (default) means never: an unknown fact is not silently turned into
	// quarantine by a counter unless a deployment asks for it. Recoverable
	// waits are never counted (transport.Wait).
	MaxAttempts int
	// RecoverInterval is how often the dispatcher runs lease-expiry
	// recovery. Default min(LeaseDuration/4, PollInterval), at least 10ms.
	RecoverInterval time.Duration
	// FullRecoverInterval is how often a recovery scan ignores the floor of
	// the previous scans and walks every expired lease (rare cases, such as
	// a writer that rolled back while a scan skipped its locked row). Default
	// LeaseDuration: such a lease is recovered at most this late.
	FullRecoverInterval time.Duration
	// PollInterval is the fallback wake-up when no notification arrives. Default 1s.
	PollInterval time.Duration
	// ClaimCooldown is the least time between the start of a claim that
	// came back short (fewer rows than asked) and the next claim: wake-ups
	// within it (a NOTIFY per append, a slot freed) are gathered into one
	// claim, so a trickle of small appends is claimed in batches instead of
	// one claim statement per event. Full claims are followed at once.
	// Default 40ms: a claim, its consumer call and its ack transaction each
	// have a fixed cost whatever their size, and under a steady trickle the
	// 10ms of before made claims of about five rows (docs/bench.md, issue
	// 17 seventh pass). The price is up to 40ms more latency under such a
	// trickle; an append after a quiet spell is claimed at once. A negative
	// value disables it.
	ClaimCooldown time.Duration
	// Listen enables LISTEN/NOTIFY wake-ups from the append transaction. Default true
	// (set DisableListen to turn it off).
	DisableListen bool
	// DrainTimeout bounds graceful stop: in-flight deliveries get this long to
	// record their outcome. A claim already begun when the stop arrives
	// completes first (its recovery scan and claim statement, each bounded by
	// StatementTimeout) and its deliveries are drained too. Default 30s.
	DrainTimeout time.Duration
	// Version is reported in the worker info metric.
	Version string
	// Region is the deployment region reported in the worker info metric
	// (OBS-1; default "local").
	Region string
}

// ErrInvalidConfig marks a configuration that cannot work.
var ErrInvalidConfig = errors.New("dispatcher: invalid configuration")

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.Boundary == "" {
		c.Boundary = "default"
	}
	if c.BatchSize == 0 {
		c.BatchSize = 100
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 30 * time.Second
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = c.LeaseDuration / 3
	}
	if c.Concurrency == 0 {
		c.Concurrency = 16
	}
	if c.AckBatchSize == 0 {
		c.AckBatchSize = 64
	}
	if c.StatementTimeout == 0 {
		c.StatementTimeout = 5 * time.Second
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = c.LeaseDuration
		if c.RenewInterval > 0 {
			c.DeliveryTimeout = 4 * c.LeaseDuration
		}
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = time.Second
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.BackoffJitter == 0 {
		c.BackoffJitter = 0.2
	}
	if c.WaitBackoffMax == 0 {
		c.WaitBackoffMax = 2 * time.Second
	}
	if c.ClaimCooldown == 0 {
		c.ClaimCooldown = 40 * time.Millisecond
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.RecoverInterval == 0 {
		c.RecoverInterval = max(min(c.LeaseDuration/4, c.PollInterval), 10*time.Millisecond)
	}
	if c.FullRecoverInterval == 0 {
		c.FullRecoverInterval = c.LeaseDuration
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Region == "" {
		c.Region = "local"
	}
	return c
}

// Validate rejects impossible settings.
func (c Config) Validate() error {
	switch {
	case c.BatchSize < 1:
		return fmt.Errorf("%w: batch size %d < 1", ErrInvalidConfig, c.BatchSize)
	case c.LeaseDuration < time.Millisecond:
		return fmt.Errorf("%w: lease duration %s too short", ErrInvalidConfig, c.LeaseDuration)
	case c.RenewInterval > 0 && 5*c.RenewInterval > 2*c.LeaseDuration:
		// A call starts with more than 1.5 RenewIntervals of lease left
		// (startLease) and renews every RenewInterval: a delivery not yet due
		// for renewal (set less than one interval ago) must have that much.
		return fmt.Errorf("%w: renew interval %s must be at most two fifths of the lease %s", ErrInvalidConfig, c.RenewInterval, c.LeaseDuration)
	case c.PollInterval <= 0 || c.StatementTimeout <= 0 || c.DrainTimeout <= 0 || c.DeliveryTimeout <= 0 || c.WaitBackoffMax <= 0:
		return fmt.Errorf("%w: poll interval, statement, drain, delivery and wait timeouts must be positive", ErrInvalidConfig)
	case c.RenewInterval <= 0 && c.DeliveryTimeout > c.LeaseDuration:
		return fmt.Errorf("%w: without renewal the delivery timeout %s must not exceed the lease %s", ErrInvalidConfig, c.DeliveryTimeout, c.LeaseDuration)
	case c.AckBatchSize < 1:
		return fmt.Errorf("%w: ack batch size %d < 1", ErrInvalidConfig, c.AckBatchSize)
	case c.Concurrency < 1:
		return fmt.Errorf("%w: concurrency %d < 1", ErrInvalidConfig, c.Concurrency)
	case c.BackoffJitter < 0 || c.BackoffJitter >= 1:
		return fmt.Errorf("%w: backoff jitter %v outside [0,1)", ErrInvalidConfig, c.BackoffJitter)
	case c.BackoffMax < c.BackoffBase:
		return fmt.Errorf("%w: backoff max %s < base %s", ErrInvalidConfig, c.BackoffMax, c.BackoffBase)
	case c.MaxAttempts < 0:
		return fmt.Errorf("%w: max attempts %d < 0", ErrInvalidConfig, c.MaxAttempts)
	}
	for _, d := range c.Destinations {
		if _, err := route.ParseDestination(string(d)); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
	}
	return nil
}
