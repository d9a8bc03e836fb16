package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/transport"
)

// Event is one verified delivery, handed to Consumer.ApplyTx.
type Event struct {
	// Delivery is the delivery exactly as the transport handed it over.
	Delivery transport.Delivery
	// Envelope is the strictly decoded envelope whose digest recomputed.
	Envelope *envelope.Envelope
	// Key is the receipt key (ReceiptKey's answer).
	Key Key
	// Now is the transaction timestamp (database time).
	Now time.Time
}

// Outcome is what ApplyTx did: applied (a sealed receipt to store with the
// effect) or waiting (commit the bookkeeping, no receipt, retryable).
type Outcome struct {
	receipt receipt.Receipt
	wait    error
}

// Applied is the outcome of an applied event; r must be sealed.
func Applied(r receipt.Receipt) Outcome { return Outcome{receipt: r} }

// Wait is a recoverable wait: the transaction commits what ApplyTx wrote
// (e.g. a pending revision gap), writes no receipt, and the delivery gets a
// retryable error with code, so the event is delivered again later (OPS-2).
func Wait(code string, err error) Outcome { return Outcome{wait: transport.Wait(code, err)} }

// WaitUnsupported is a wait for a pair the consumer does not support yet:
// it backs off up to the dispatcher's maximum (transport.Unsupported).
func WaitUnsupported(code string, err error) Outcome {
	return Outcome{wait: transport.Unsupported(code, err)}
}

// Waiting reports whether the outcome is a wait.
func (o Outcome) Waiting() bool { return o.wait != nil }

// Receipt returns the applied receipt (nil for a wait).
func (o Outcome) Receipt() receipt.Receipt { return o.receipt }

// Consumer is one consumer's part of the inbox.
type Consumer interface {
	// Destination is the destination the consumer serves; its consumer
	// name, receipt contract and ack branch follow from route.BindingOf.
	Destination() route.Destination
	// Receipts is the consumer's receipt table.
	Receipts() *Table
	// ReceiptKey returns the receipt key of a verified delivery. Projection
	// consumers add the frozen member's projection target. An error here is
	// returned as is (classified) and nothing is written.
	ReceiptKey(ev *Event) (Key, error)
	// ApplyTx applies the event inside tx: the effect and, on success, the
	// sealed receipt to store with it (Applied), or a Wait. Any error rolls
	// the transaction back.
	ApplyTx(ctx context.Context, tx pgx.Tx, ev *Event) (Outcome, error)
}

// Finisher is implemented by consumers that record something after the
// receipt in the same transaction (the Operations projection build summary).
type Finisher interface {
	FinishTx(ctx context.Context, tx pgx.Tx, ev *Event, out Outcome) error
}

// Config tunes an Inbox.
type Config struct {
	// LockTimeout bounds every lock wait of the consumer transaction,
	// including the per-event advisory lock. Default 5s.
	LockTimeout time.Duration
	// StatementTimeout bounds every statement. Default 15s.
	StatementTimeout time.Duration
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.LockTimeout <= 0 {
		c.LockTimeout = 5 * time.Second
	}
	if c.StatementTimeout <= 0 {
		c.StatementTimeout = 15 * time.Second
	}
	return c
}

// Inbox runs one consumer's deliveries.
type Inbox struct {
	pool     db.Beginner
	consumer Consumer
	binding  route.Binding
	cfg      Config
}

// New builds the inbox of consumer over the consumer's database.
func New(pool db.Beginner, consumer Consumer, cfg Config) (*Inbox, error) {
	b, err := route.BindingOf(consumer.Destination())
	if err != nil {
		return nil, err
	}
	return &Inbox{pool: pool, consumer: consumer, binding: b, cfg: cfg.WithDefaults()}, nil
}

// Consume handles one delivery; it is a transport.ConsumerFunc.
func (in *Inbox) Consume(ctx context.Context, d transport.Delivery) (transport.Result, error) {
	ev, err := in.prepare(d)
	if err != nil {
		return transport.Result{}, err
	}
	var a answer
	err = db.WithTx(ctx, in.pool, func(ctx context.Context, tx pgx.Tx) error {
		if err := in.begin(ctx, tx, []*Event{ev}); err != nil {
			return err
		}
		var err error
		a, err = in.apply(ctx, tx, ev, true)
		return err
	})
	if err != nil {
		return transport.Result{}, ToDeliveryError(err)
	}
	if a.wait != nil {
		return transport.Result{}, a.wait
	}
	return a.res, nil
}

// prepare verifies a delivery and computes its receipt key (step 1): no
// database access, every failure is the delivery's answer.
func (in *Inbox) prepare(d transport.Delivery) (*Event, error) {
	ev, err := in.verify(d)
	if err != nil {
		return nil, err
	}
	key, err := in.consumer.ReceiptKey(ev)
	if err != nil {
		return nil, ToDeliveryError(err)
	}
	if key.ConsumerName != in.binding.ConsumerName || key.EventID != ev.Envelope.EventID {
		return nil, nonRetryable(CodeReceiptInvariant, ErrReceiptInvariant, fmt.Errorf("receipt key %+v", key))
	}
	ev.Key = key
	return ev, nil
}

// answer is what one event's steps 3-4 decided inside the transaction.
type answer struct {
	res  transport.Result
	wait error
	// ran: ApplyTx ran (applied or waiting; not a replay), with out.
	ran bool
	out Outcome
}

// apply runs steps 3-4 for one event whose receipt key is locked: replay a
// stored receipt, or ApplyTx and store the new receipt; finish runs the
// consumer's Finisher after ApplyTx.
func (in *Inbox) apply(ctx context.Context, tx pgx.Tx, ev *Event, finish bool) (answer, error) {
	table := in.consumer.Receipts()
	stored, err := table.LookupTx(ctx, tx, ev.Key)
	switch {
	case err == nil:
		res, err := in.replay(ev, stored)
		return answer{res: res}, err
	case !errors.Is(err, db.ErrNotFound):
		return answer{}, fmt.Errorf("look up receipt: %w", err)
	}
	out, err := in.consumer.ApplyTx(ctx, tx, ev)
	if err != nil {
		return answer{}, err
	}
	a := answer{ran: true, out: out}
	if out.wait != nil {
		if out.receipt != nil {
			return answer{}, nonRetryable(CodeReceiptInvariant, ErrReceiptInvariant, errors.New("a wait carries a receipt"))
		}
		a.wait = out.wait
	} else {
		s, err := in.check(ev, out.receipt)
		if err != nil {
			return answer{}, err
		}
		if err := table.InsertTx(ctx, tx, ev.Key, s); err != nil {
			return answer{}, fmt.Errorf("insert receipt: %w", err)
		}
		if a.res, err = in.result(out.receipt, s.Body); err != nil {
			return answer{}, err
		}
	}
	if f, ok := in.consumer.(Finisher); ok && finish {
		if err := f.FinishTx(ctx, tx, ev, out); err != nil {
			return answer{}, err
		}
	}
	return a, nil
}

// verify checks the delivery before anything is written (step 1).
func (in *Inbox) verify(d transport.Delivery) (*Event, error) {
	m := d.Member
	switch {
	case m.Destination != in.consumer.Destination():
		return nil, nonRetryable(CodeMemberMismatch, ErrMemberMismatch, fmt.Errorf("member destination %q, consumer serves %q", m.Destination, in.consumer.Destination()))
	case m.ConsumerName != in.binding.ConsumerName:
		return nil, nonRetryable(CodeMemberMismatch, ErrMemberMismatch, fmt.Errorf("member consumer %q, want %q", m.ConsumerName, in.binding.ConsumerName))
	case m.ExpectedReceiptType != in.binding.ReceiptType || m.ExpectedReceiptSchemaVersion != in.binding.ReceiptSchemaVersion:
		return nil, nonRetryable(CodeMemberMismatch, ErrMemberMismatch, fmt.Errorf("member expects %s@%s, consumer writes %s@%s",
			m.ExpectedReceiptType, m.ExpectedReceiptSchemaVersion, in.binding.ReceiptType, in.binding.ReceiptSchemaVersion))
	case m.ProjectionTarget.Required != in.binding.RequiresProjection:
		return nil, nonRetryable(CodeMemberMismatch, ErrMemberMismatch, fmt.Errorf("member projection target %+v", m.ProjectionTarget))
	case m.EventType != d.EventType || m.EventSchemaVersion != d.EventSchemaVersion:
		return nil, nonRetryable(CodeMemberMismatch, ErrMemberMismatch, fmt.Errorf("member pair %s/%s, delivery %s/%s", m.EventType, m.EventSchemaVersion, d.EventType, d.EventSchemaVersion))
	}
	env, err := envelope.DecodeEnvelope(d.Envelope)
	if err != nil {
		if errors.Is(err, envelope.ErrUnknownEventPair) {
			return nil, transport.NonRetryable(CodeUnknownEventPair, err)
		}
		return nil, transport.NonRetryable(CodeEnvelopeInvalid, err)
	}
	if env.EventID != d.EventID || env.EventType != d.EventType || env.EventSchemaVersion != d.EventSchemaVersion {
		return nil, nonRetryable(CodeDeliveryMismatch, ErrDeliveryMismatch, fmt.Errorf("delivery %s %s/%s, envelope %s %s/%s",
			d.EventID, d.EventType, d.EventSchemaVersion, env.EventID, env.EventType, env.EventSchemaVersion))
	}
	if err := env.VerifyDigest(d.EnvelopeDigest); err != nil {
		return nil, transport.NonRetryable(CodeEnvelopeDigestMismatch, err)
	}
	// The delivery carries the stored bytes; they must be the canonical
	// form the digest covers (no second spelling of the same event).
	canonical, err := env.Canonical()
	if err != nil || string(canonical) != string(d.Envelope) {
		return nil, transport.NonRetryable(CodeEnvelopeInvalid, errors.New("inbox: delivered envelope is not in its canonical form"))
	}
	return &Event{Delivery: d, Envelope: env}, nil
}

// begin bounds the transaction and takes the receipt keys' advisory locks,
// all in one round trip. The locks are taken in the order of their keys,
// each once, before any other lock of the transaction: two transactions
// whose events overlap then wait for each other in one direction only, never
// in a cycle (every receipt-key lock anyone holds was taken before anything
// it waits for). Every event gets the transaction timestamp as Now.
func (in *Inbox) begin(ctx context.Context, tx pgx.Tx, evs []*Event) error {
	keys := make([]string, 0, len(evs))
	for _, ev := range evs {
		keys = append(keys, ev.Key.lockKey())
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	b := &pgx.Batch{}
	b.Queue(qTimeouts, pgx.NamedArgs{
		"lock_timeout":      fmt.Sprintf("%dms", in.cfg.LockTimeout.Milliseconds()),
		"statement_timeout": fmt.Sprintf("%dms", in.cfg.StatementTimeout.Milliseconds()),
	})
	for _, k := range keys {
		b.Queue(qBegin, pgx.NamedArgs{"lock_key": k})
	}
	br := tx.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return fmt.Errorf("set timeouts: %w", err)
	}
	var now time.Time
	for range keys {
		rows, err := br.Query()
		if err == nil {
			now, err = pgx.CollectOneRow(rows, pgx.RowTo[time.Time])
		}
		if err != nil {
			_ = br.Close()
			return fmt.Errorf("lock receipt key: %w", err)
		}
	}
	for _, ev := range evs {
		ev.Now = now
	}
	return br.Close()
}

// replay answers a delivery whose receipt exists (step 3).
func (in *Inbox) replay(ev *Event, s Stored) (transport.Result, error) {
	d := ev.Delivery
	// guard CON-1.event-digest-conflict
	if s.EnvelopeDigest != d.EnvelopeDigest {
		return transport.Result{}, nonRetryable(CodeEventDigestConflict, ErrEventDigestConflict,
			fmt.Errorf("event %s: receipt for %s, delivery carries %s", d.EventID, s.EnvelopeDigest, d.EnvelopeDigest))
	}
	r, err := receipt.DecodeReceipt(in.consumer.Destination(), s.Body)
	if err == nil {
		err = r.VerifyDigest()
	}
	// guard CON-1.stored-receipt-differs
	if err == nil && (r.ReceiptQuadruple() != s.Receipt || r.ReceiptEventID() != d.EventID || r.ReceiptEventEnvelopeDigest() != s.EnvelopeDigest) {
		err = errors.New("stored receipt columns differ from its body")
	}
	if err != nil {
		return transport.Result{}, nonRetryable(CodeStoredReceiptInvalid, ErrStoredReceiptInvalid, err)
	}
	return in.result(r, s.Body)
}

// projected is implemented by receipts that state a projection target.
type projected interface {
	Projection() route.ProjectionTarget
}

// check verifies a new receipt against the event and the key and encodes it.
func (in *Inbox) check(ev *Event, r receipt.Receipt) (Stored, error) {
	if r == nil {
		return Stored{}, nonRetryable(CodeReceiptInvariant, ErrReceiptInvariant, errors.New("applied without a receipt"))
	}
	d := ev.Delivery
	var problem string
	switch {
	case r.ReceiptDestination() != in.consumer.Destination() || r.ReceiptConsumerName() != in.binding.ConsumerName:
		problem = "destination/consumer"
	case r.ReceiptEventID() != d.EventID || r.ReceiptEventType() != d.EventType || r.ReceiptEventSchemaVersion() != d.EventSchemaVersion:
		problem = "event identity"
	case r.ReceiptEventEnvelopeDigest() != d.EnvelopeDigest:
		problem = "envelope digest"
	case r.ReceiptQuadruple().SchemaVersion != in.binding.ReceiptSchemaVersion:
		problem = "receipt schema version"
	}
	if p, ok := r.(projected); problem == "" && in.binding.RequiresProjection && (!ok || p.Projection() != ev.Key.Projection) {
		problem = "projection target"
	}
	if problem == "" {
		if err := r.VerifyDigest(); err != nil {
			problem = "digest: " + err.Error()
		}
	}
	if problem != "" {
		return Stored{}, nonRetryable(CodeReceiptInvariant, ErrReceiptInvariant, errors.New(problem))
	}
	body, err := jcs.Marshal(r.ToJSON())
	if err != nil {
		return Stored{}, nonRetryable(CodeReceiptInvariant, ErrReceiptInvariant, err)
	}
	return Stored{
		EventType: d.EventType, EventSchemaVersion: d.EventSchemaVersion,
		EnvelopeDigest: d.EnvelopeDigest, Receipt: r.ReceiptQuadruple(), Body: body,
	}, nil
}

func (in *Inbox) result(r receipt.Receipt, body []byte) (transport.Result, error) {
	ack, err := receipt.AckFor(r)
	if err != nil {
		return transport.Result{}, nonRetryable(CodeReceiptInvariant, ErrReceiptInvariant, err)
	}
	return transport.Result{Ack: ack, ReceiptBody: body}, nil
}
