package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox"
)

// ErrForeignProducer: an event's exact pair is produced by another fact
// boundary than the appender's (e.g. a billing event in the execution
// database). AppendTx refuses it before any write; the database refuses it
// too (SQLSTATE OWP01, outbox migration 00091) once the owner line declared
// the database's producer.
var ErrForeignProducer = errors.New("release: pair produced by another boundary")

// CodeForeignProducer is the SQLSTATE of the database's refusal.
const CodeForeignProducer = "OWP01"

// ProducerAppender appends only the pairs one boundary produces.
type ProducerAppender struct {
	producer boundary.Boundary
}

// ForProducer returns the appender of producer b: owners append through it.
func ForProducer(b boundary.Boundary) ProducerAppender { return ProducerAppender{producer: b} }

// AppendTx checks that every event's exact pair is produced by the
// appender's boundary, then appends under the release policy
// (outbox.Appender.AppendTx). The database's own refusal comes back as
// ErrForeignProducer too.
func (p ProducerAppender) AppendTx(ctx context.Context, tx pgx.Tx, events ...envelope.Envelope) (outbox.AppendResult, error) {
	for i, e := range events {
		if err := checkProducer(p.producer, e); err != nil {
			return outbox.AppendResult{}, fmt.Errorf("append event %d: %w", i, err)
		}
	}
	res, err := AppendTx(ctx, tx, events...)
	return res, TranslateProducerError(err)
}

func checkProducer(b boundary.Boundary, e envelope.Envelope) error {
	for _, pair := range envelope.Pairs() {
		if pair.EventType == e.EventType && pair.EventSchemaVersion == e.EventSchemaVersion {
			if pair.Producer != string(b) {
				return fmt.Errorf("%w: %s@%s is produced by %s, not %s", ErrForeignProducer, e.EventType, e.EventSchemaVersion, pair.Producer, b)
			}
			return nil
		}
	}
	return nil // an unknown pair is refused by the engine (exact pair, DS-9)
}

// TranslateProducerError wraps the database's OWP01 refusal in
// ErrForeignProducer (other errors pass unchanged).
func TranslateProducerError(err error) error {
	if err != nil && db.SQLState(err) == CodeForeignProducer && !errors.Is(err, ErrForeignProducer) {
		return fmt.Errorf("%w: %w", ErrForeignProducer, err)
	}
	return err
}
