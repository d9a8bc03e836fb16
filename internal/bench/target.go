package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	adminschema "github.com/oceanway/core/internal/admin/schema"
	"github.com/oceanway/core/internal/bench/measure"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/invariant"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

// System is the name of our system in reports.
const System = "oceanway"

// projectionName is the Operations projection the bench definition freezes.
const projectionName = "operations"

// eventType is the bench's event: run.created@2.0 has exactly one mandatory
// member, core_operations, so one event is one delivery.
const eventType = "run.created@2.0"

// outboxTarget is one run's producer database (Config.Lines applied, first
// release definition active), the consumer's database and K dispatchers.
type outboxTarget struct {
	producerDB, consumerDB   string
	producerDSN, consumerDSN string
	producer, consumerPool   *pgxpool.Pool
	consumer                 *receiptConsumer
	cfg                      Config
	metrics                  *dispatcher.Metrics

	stop    context.CancelFunc
	stopped sync.WaitGroup
	runErrs []error
	errMu   sync.Mutex
}

// newOutboxTarget creates and migrates the two databases of one run and
// activates the first release definition; Open opens the run's pools.
func newOutboxTarget(ctx context.Context, serverURL, prefix string, cfg Config) (*outboxTarget, error) {
	t := &outboxTarget{producerDB: migrate.DatabaseName(prefix, boundary.Core), consumerDB: prefix + "_consumer", cfg: cfg}
	lines := cfg.Lines
	if len(lines) == 0 {
		// The admin lookup indexes every producer database carries.
		lines = []migrate.Line{outboxschema.Line(), adminschema.Line()}
	}
	res, err := migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: serverURL, Prefix: prefix, Boundaries: []boundary.Boundary{boundary.Core}, Lines: lines})
	if err != nil {
		return t, fmt.Errorf("provision producer database: %w", err)
	}
	t.producerDSN = res.DSNs[boundary.Core]
	if err := measure.CreateDatabase(ctx, serverURL, t.consumerDB); err != nil {
		return t, err
	}
	t.consumerDSN = measure.DatabaseURL(serverURL, t.consumerDB)
	if err := createConsumerSchema(ctx, t.consumerDSN); err != nil {
		return t, err
	}
	conn, err := pgx.Connect(ctx, t.producerDSN)
	if err != nil {
		return t, fmt.Errorf("producer database: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	if _, err := release.Bootstrap(ctx, conn, release.BootstrapParams{
		ProjectionName: projectionName, ProjectionVersion: 1, SourceRelease: "oceanway-bench",
	}); err != nil {
		return t, fmt.Errorf("bootstrap definition: %w", err)
	}
	t.metrics = dispatcher.NewMetrics(prometheus.NewRegistry())
	return t, nil
}

// Open opens the producer pool (producers, and per dispatcher its in-flight
// acks, claim loop and LISTEN session) and the consumer's pool.
func (t *outboxTarget) Open(ctx context.Context) error {
	var err error
	producerConns := int32(t.cfg.Producers + t.cfg.Dispatchers*(t.cfg.Concurrency+2) + 1)
	if t.producer, err = measure.NewPool(ctx, t.producerDSN, producerConns); err != nil {
		return fmt.Errorf("producer pool: %w", err)
	}
	if t.consumerPool, err = measure.NewPool(ctx, t.consumerDSN, int32(t.cfg.Dispatchers*t.cfg.Concurrency)); err != nil {
		return fmt.Errorf("consumer pool: %w", err)
	}
	t.consumer = &receiptConsumer{pool: t.consumerPool}
	return nil
}

func (t *outboxTarget) System() string      { return System }
func (t *outboxTarget) Databases() []string { return []string{t.producerDB, t.consumerDB} }
func (t *outboxTarget) QueueTable() string  { return "outbox.outbox_deliveries" }

// Produce appends n run.created@2.0 events (one core_operations delivery
// each) in one business transaction with AppendTx.
func (t *outboxTarget) Produce(ctx context.Context, n int) ([]string, error) {
	events := make([]envelope.Envelope, n)
	ids := make([]string, n)
	for i := range events {
		e := sample.Envelope(eventType, 0)
		e.EventID = outbox.NewEventID()
		e.AggregateID = uuid.NewString()
		e.Payload["runId"] = e.AggregateID
		events[i], ids[i] = e, e.EventID
	}
	err := db.WithTx(ctx, t.producer, func(ctx context.Context, tx pgx.Tx) error {
		_, err := release.AppendTx(ctx, tx, events...)
		return err
	})
	return ids, err
}

// Start runs K dispatchers over the producer database.
func (t *outboxTarget) Start(ctx context.Context) error {
	tr := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: t.consumer.Deliver}).
		WithBatch(route.CoreOperations, t.cfg.ConsumerBatch, t.consumer.DeliverBatch)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.stop = cancel
	for i := range t.cfg.Dispatchers {
		d, err := dispatcher.New(t.producer, tr, dispatcher.Config{
			WorkerID:      fmt.Sprintf("bench-%d", i),
			BatchSize:     t.cfg.Batch,
			Concurrency:   t.cfg.Concurrency,
			PollInterval:  t.cfg.PollInterval,
			LeaseDuration: t.cfg.Lease,
			ClaimCooldown: t.cfg.ClaimCooldown,
			Version:       "bench",
		}, t.metrics, t.cfg.log())
		if err != nil {
			cancel()
			return err
		}
		t.stopped.Add(1)
		go func() {
			defer t.stopped.Done()
			if err := d.Run(runCtx); err != nil {
				t.errMu.Lock()
				t.runErrs = append(t.runErrs, err)
				t.errMu.Unlock()
			}
		}()
	}
	return nil
}

// Consumed is the dispatchers' acknowledged counter (summed over its
// label values): a delivery counts once its verified, fenced ack has
// committed.
func (t *outboxTarget) Consumed(context.Context) (int, error) {
	ch := make(chan prometheus.Metric, 8)
	go func() { t.metrics.Acknowledged.Collect(ch); close(ch) }()
	var total float64
	var err error
	for m := range ch {
		var d dto.Metric
		if werr := m.Write(&d); werr != nil {
			err = werr
			continue
		}
		total += d.GetCounter().GetValue()
	}
	return int(total), err
}

// errEndState is a run whose end state breaks the outbox's guarantees.
var errEndState = errors.New("bench: end state check failed")

// Finish checks the end state in both databases and stamps every
// delivery's delivered_at as its consumption time.
func (t *outboxTarget) Finish(ctx context.Context, rec *measure.Recorder) (string, []string, error) {
	report, err := invariant.Evaluate(ctx, t.producer)
	if err != nil {
		return "", nil, fmt.Errorf("end state: %w", err)
	}
	if err := report.Err(invariant.Drained); err != nil {
		return "", nil, fmt.Errorf("%w: %w", errEndState, err)
	}
	receipts, err := t.consumer.count(ctx)
	if err != nil {
		return "", nil, err
	}
	if int64(receipts) != report.Deliveries {
		return "", nil, fmt.Errorf("%w: %d consumer receipts for %d deliveries", errEndState, receipts, report.Deliveries)
	}
	delivered, err := queries.DeliveryAcknowledgedList(ctx, t.producer)
	if err != nil {
		return "", nil, fmt.Errorf("delivered_at: %w", err)
	}
	for _, d := range delivered {
		rec.Consumed(d.EventID, d.DeliveredAt)
	}
	var notes []string
	if calls, deliveries := t.metrics.ConsumerCalls(); calls > 0 {
		notes = append(notes, fmt.Sprintf("%d consumer calls, %.1f deliveries per call (--consumer-batch %d)", calls, deliveries/float64(calls), t.cfg.ConsumerBatch))
	}
	if report.RetriedDeliveries > 0 {
		notes = append(notes, fmt.Sprintf("%d deliveries needed more than one attempt", report.RetriedDeliveries))
	}
	return "outbox_deliveries.delivered_at (the ack transaction's now()) − process clock when the append's COMMIT returned", notes, nil
}

// Close stops the dispatchers (draining in-flight deliveries) and closes
// the pools.
func (t *outboxTarget) Close(context.Context) error {
	if t.stop != nil {
		t.stop()
		t.stopped.Wait()
		t.stop = nil
	}
	if t.producer != nil {
		t.producer.Close()
	}
	if t.consumerPool != nil {
		t.consumerPool.Close()
	}
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return errors.Join(t.runErrs...)
}

// discardLogger is the dispatchers' logger when none is configured.
var discardLogger = slog.New(slog.DiscardHandler)
