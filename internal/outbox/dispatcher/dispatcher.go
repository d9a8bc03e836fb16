package dispatcher

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oceanway/core/internal/outbox/transport"
)

// Dispatcher is the long-running delivery loop of one producer database.
type Dispatcher struct {
	cfg       Config
	store     *Store
	pool      *pgxpool.Pool
	transport transport.Transport
	metrics   *Metrics
	log       *slog.Logger
	hooks     Hooks

	wake chan struct{}
	acks chan outcomeRequest[VerifiedAck]
	// retries carries retryable outcomes to the retrier, which records them
	// set-based in batches like the acks.
	retries chan outcomeRequest[RetryRequest]
	// settling bounds the outcomes being recorded after their slot moved
	// on (Concurrency+AckBatchSize of them); settlers counts them for the
	// drain.
	settling chan struct{}
	settlers sync.WaitGroup
	running  atomic.Bool
	recovery recoveryState // touched by the Run goroutine only
}

// Hooks let tests stop a worker at exact points. Production leaves them nil.
type Hooks struct {
	// AfterDeliver runs after the consumer returned and before the outcome
	// is recorded. Returning ErrSimulatedCrash drops the outcome as if the
	// process had died at that point.
	AfterDeliver func(c Claimed) error
	// BeforeDeliver runs after the claim committed and before the consumer
	// is called; ErrSimulatedCrash drops the attempt as if the process died.
	BeforeDeliver func(c Claimed) error
	// Listening runs once LISTEN is established (tests wait for it before
	// relying on notifications).
	Listening func()
	// BeforeClaim runs on the claim loop right before each claim statement
	// (tests read the loop's own claim times).
	BeforeClaim func()
	// BeforeRenew runs before each renewal statement of queued deliveries
	// (the renewer's batch, or one delivery as its consumer call starts); a
	// non-nil error stands in for a statement that failed for a reason other
	// than the fences (a timeout, a broken connection).
	BeforeRenew func(fences []Fence) error
}

// ErrSimulatedCrash is returned by test hooks to abandon an attempt.
var ErrSimulatedCrash = errors.New("dispatcher: simulated crash")

// New builds a dispatcher over a producer database pool.
func New(pool *pgxpool.Pool, t transport.Transport, cfg Config, metrics *Metrics, log *slog.Logger) (*Dispatcher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	if metrics == nil {
		metrics = NewMetrics(prometheus.NewRegistry()) // unexported: counts nobody reads
	}
	return &Dispatcher{
		cfg:       cfg,
		store:     NewStore(pool, cfg.StatementTimeout),
		pool:      pool,
		transport: t,
		metrics:   metrics.forBoundary(cfg.Boundary),
		log:       log.With("component", "dispatcher", "worker", cfg.WorkerID, "boundary", cfg.Boundary),
		wake:      make(chan struct{}, 1),
		acks:      make(chan outcomeRequest[VerifiedAck], cfg.Concurrency+cfg.AckBatchSize),
		retries:   make(chan outcomeRequest[RetryRequest], cfg.Concurrency+cfg.AckBatchSize),
		settling:  make(chan struct{}, cfg.Concurrency+cfg.AckBatchSize),
	}, nil
}

// SetHooks installs test hooks; call before Run.
func (d *Dispatcher) SetHooks(h Hooks) { d.hooks = h }

// Wake asks the loop to claim now (used by LISTEN and by tests).
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}
