// Package watermill is the watermill-sql peer on PostgreSQL: N messages
// published with a transactional Publisher (one multi-row INSERT per
// business transaction of TxSize messages) and consumed once by one
// Subscriber, with either the default schema adapter (append-only log plus
// a consumer-group offset row, REPEATABLE READ reads below the snapshot
// xmin) or the queue schema adapter (acked flag per row). A message counts
// as consumed when the subscriber's transaction that records its ack has
// committed.
package watermill

import (
	"context"
	stdsql "database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/bench/measure"
)

// Adapter selects the schema adapter.
type Adapter string

const (
	Default Adapter = "default"
	Queue   Adapter = "queue"
)

// System names the system in reports.
func (a Adapter) System() string { return "watermill-sql " + string(a) }

const topic = "peerbench"

// Config sets up one run.
type Config struct {
	ServerURL string
	Database  string
	Adapter   Adapter
	// Producers is the number of concurrent publishing sessions (sizes the pool).
	Producers int
	// PollInterval of the subscriber when it finds nothing (watermill's
	// default is 1s).
	PollInterval time.Duration
	PayloadBytes int
	Recorder     *measure.Recorder
}

// Target implements measure.Target.
type Target struct {
	cfg     Config
	schema  wsql.SchemaAdapter
	offsets wsql.OffsetsAdapter
	group   string
	payload []byte

	pool    *pgxpool.Pool
	sub     *wsql.Subscriber
	cancel  context.CancelFunc
	done    chan struct{}
	pending *pendingAcks
}

// New creates the database and watermill's tables for the topic.
func New(ctx context.Context, cfg Config) (*Target, error) {
	t := &Target{cfg: cfg, pending: &pendingAcks{rec: cfg.Recorder}}
	switch cfg.Adapter {
	case Default:
		t.schema, t.offsets, t.group = wsql.DefaultPostgreSQLSchema{}, wsql.DefaultPostgreSQLOffsetsAdapter{}, "peerbench"
	case Queue:
		t.schema, t.offsets = wsql.PostgreSQLQueueSchema{}, wsql.PostgreSQLQueueOffsetsAdapter{}
	default:
		return nil, fmt.Errorf("watermill: unknown adapter %q", cfg.Adapter)
	}
	payload, err := json.Marshal(map[string]string{"payload": strings.Repeat("x", max(1, cfg.PayloadBytes-len(`{"payload":""}`)))})
	if err != nil {
		return nil, err
	}
	t.payload = payload
	if err := measure.CreateDatabase(ctx, cfg.ServerURL, cfg.Database); err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, measure.DatabaseURL(cfg.ServerURL, cfg.Database))
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	sub, err := t.newSubscriber(wsql.BeginnerFromPgx(pool), true)
	if err != nil {
		return nil, err
	}
	if err := sub.SubscribeInitialize(topic); err != nil {
		return nil, fmt.Errorf("watermill: initialize schema: %w", err)
	}
	return t, sub.Close()
}

func (t *Target) newSubscriber(db wsql.Beginner, initialize bool) (*wsql.Subscriber, error) {
	return wsql.NewSubscriber(db, wsql.SubscriberConfig{
		ConsumerGroup:    t.group,
		PollInterval:     t.cfg.PollInterval,
		SchemaAdapter:    t.schema,
		OffsetsAdapter:   t.offsets,
		InitializeSchema: initialize,
	}, nil)
}

func (t *Target) System() string      { return t.cfg.Adapter.System() }
func (t *Target) Databases() []string { return []string{t.cfg.Database} }
func (t *Target) QueueTable() string  { return "public.watermill_" + topic }

// Open opens the pool and the subscriber (not subscribed yet).
func (t *Target) Open(ctx context.Context) error {
	var err error
	if t.pool, err = measure.NewPool(ctx, measure.DatabaseURL(t.cfg.ServerURL, t.cfg.Database), int32(t.cfg.Producers+2)); err != nil {
		return err
	}
	t.sub, err = t.newSubscriber(&stampingBeginner{Beginner: wsql.BeginnerFromPgx(t.pool), pending: t.pending}, false)
	return err
}

// Produce publishes n messages in one transaction (one multi-row INSERT).
func (t *Target) Produce(ctx context.Context, n int) ([]string, error) {
	tx, err := t.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	pub, err := wsql.NewPublisher(wsql.TxFromPgx(tx), wsql.PublisherConfig{SchemaAdapter: t.schema}, nil)
	if err != nil {
		return nil, err
	}
	msgs := make([]*message.Message, n)
	ids := make([]string, n)
	for i := range msgs {
		ids[i] = watermill.NewUUID()
		msgs[i] = message.NewMessage(ids[i], t.payload)
	}
	if err := pub.Publish(topic, msgs...); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return ids, nil
}

// Start subscribes once and acknowledges every message.
func (t *Target) Start(ctx context.Context) error {
	subCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	msgs, err := t.sub.Subscribe(subCtx, topic)
	if err != nil {
		cancel()
		return err
	}
	t.cancel, t.done = cancel, make(chan struct{})
	go func() {
		defer close(t.done)
		for m := range msgs {
			t.pending.add(m.UUID)
			m.Ack()
		}
	}()
	return nil
}

// Consumed counts messages whose ack transaction committed.
func (t *Target) Consumed(context.Context) (int, error) { return t.cfg.Recorder.ConsumedCount(), nil }

// Finish checks the consumption in the database.
func (t *Target) Finish(ctx context.Context, _ *measure.Recorder) (string, []string, error) {
	switch t.cfg.Adapter {
	case Default:
		var lastOffset, acked int64
		// The subscriber reads in (transaction_id, offset) order, and
		// concurrent producers interleave offsets across transactions: the
		// last row is the one of the highest transaction id.
		if err := t.pool.QueryRow(ctx, `SELECT "offset" FROM watermill_`+topic+` ORDER BY transaction_id DESC, "offset" DESC LIMIT 1`).Scan(&lastOffset); err != nil {
			return "", nil, err
		}
		if err := t.pool.QueryRow(ctx, `SELECT offset_acked FROM watermill_offsets_`+topic+` WHERE consumer_group = $1`, t.group).Scan(&acked); err != nil {
			return "", nil, err
		}
		if acked != lastOffset {
			return "", nil, fmt.Errorf("watermill: offset acked %d, last offset %d", acked, lastOffset)
		}
	case Queue:
		var unacked int
		if err := t.pool.QueryRow(ctx, `SELECT count(*) FROM watermill_`+topic+` WHERE NOT acked`).Scan(&unacked); err != nil {
			return "", nil, err
		}
		if unacked != 0 {
			return "", nil, fmt.Errorf("watermill: %d messages not acked", unacked)
		}
	}
	return "process clock when the subscriber's transaction recording the ack committed − process clock when the publishing COMMIT returned", nil, nil
}

// Close stops the subscriber and closes the pool.
func (t *Target) Close(context.Context) error {
	var err error
	if t.sub != nil {
		err = t.sub.Close()
		if t.cancel != nil {
			t.cancel()
			<-t.done
		}
		t.sub = nil
	}
	if t.pool != nil {
		t.pool.Close()
		t.pool = nil
	}
	return err
}

// pendingAcks are the messages acknowledged in the subscriber's open
// transaction; they become consumed when it commits.
type pendingAcks struct {
	mu  sync.Mutex
	ids []string
	rec *measure.Recorder
}

func (p *pendingAcks) add(id string) {
	p.mu.Lock()
	p.ids = append(p.ids, id)
	p.mu.Unlock()
}

func (p *pendingAcks) settle(committed bool) {
	p.mu.Lock()
	ids := p.ids
	p.ids = nil
	p.mu.Unlock()
	if !committed {
		return // rolled back: the messages come again
	}
	now := time.Now()
	for _, id := range ids {
		p.rec.Consumed(id, now)
	}
}

// stampingBeginner wraps the subscriber's database so that the commit of
// each of its transactions stamps the messages acked inside it. One
// subscription runs its transactions one after another.
type stampingBeginner struct {
	wsql.Beginner
	pending *pendingAcks
}

func (b *stampingBeginner) BeginTx(ctx context.Context, opts *stdsql.TxOptions) (wsql.Tx, error) {
	tx, err := b.Beginner.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &stampingTx{Tx: tx, pending: b.pending}, nil
}

type stampingTx struct {
	wsql.Tx
	pending *pendingAcks
}

func (t *stampingTx) Commit() error {
	err := t.Tx.Commit()
	t.pending.settle(err == nil)
	return err
}

func (t *stampingTx) Rollback() error {
	err := t.Tx.Rollback()
	t.pending.settle(false)
	return err
}
