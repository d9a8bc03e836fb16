package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/dbsqlc"
)

// PublicationResult is the answer of outbox.record_publication.
type PublicationResult string

const (
	// PublicationComplete: every mandatory delivery of the event is
	// acknowledged; published_at holds the first completion time.
	PublicationComplete PublicationResult = "complete"
	// PublicationNotComplete: the ack is valid, another mandatory delivery is
	// still open; published_at stays NULL and the ack commits.
	PublicationNotComplete PublicationResult = "not_complete"
)

// PublicationParams are the coordinates of one acknowledged delivery.
type PublicationParams struct {
	EventID      string
	Destination  route.Destination
	ConsumerName string
	// AttemptID and LeaseToken of the attempt whose acknowledged finish was
	// appended in this transaction (the delivery's current attempt).
	AttemptID  string
	LeaseToken string
	// ReceiptType is the ack's receipt type (without schema suffix), e.g.
	// OperationsProjectionAppliedReceipt; Receipt is its quadruple (Ref is
	// the ack_receipt_key).
	ReceiptType string
	Receipt     strict.Quadruple
	// EventEnvelopeDigest is the envelope digest the ack carries.
	EventEnvelopeDigest digest.Digest
}

// RecordPublicationTx calls the published_at controlled function
// (OB-PUB-1) in the caller's ack transaction, which must run under READ
// COMMITTED. An invalid ack is an error wrapping ErrPublicationInvalid
// (SQLSTATE OW009); the caller's transaction must then roll back.
func RecordPublicationTx(ctx context.Context, tx pgx.Tx, p PublicationParams) (PublicationResult, error) {
	out, err := queries.PublicationRecord(ctx, tx, dbsqlc.PublicationRecordParams{
		EventID:                                p.EventID,
		Destination:                            string(p.Destination),
		ConsumerName:                           p.ConsumerName,
		AttemptID:                              p.AttemptID,
		LeaseToken:                             p.LeaseToken,
		AckReceiptType:                         p.ReceiptType,
		AckReceiptKey:                          p.Receipt.Ref,
		AckReceiptSchemaVersion:                p.Receipt.SchemaVersion,
		AckReceiptDigestAlgorithmVersion:       string(p.Receipt.DigestAlgorithmVersion),
		AckReceiptDigest:                       p.Receipt.Digest,
		AckEventEnvelopeDigestAlgorithmVersion: string(p.EventEnvelopeDigest.Algorithm),
		AckEventEnvelopeSha256:                 p.EventEnvelopeDigest.Value,
	})
	if err != nil {
		return "", fmt.Errorf("record publication of %s to %s: %w", p.EventID, p.Destination, TranslateError(err))
	}
	return PublicationResult(out), nil
}

// ProjectionPointer is one projection's active version.
type ProjectionPointer struct {
	ProjectionName     string
	ProjectionVersion  int64
	DeliverySetVersion int64
	SwitchedAt         time.Time
}

// ProjectionPointers lists the active projection pointers.
func ProjectionPointers(ctx context.Context, q db.Executor) ([]ProjectionPointer, error) {
	rows, err := queries.ProjectionPointers(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("projection pointers: %w", err)
	}
	out := make([]ProjectionPointer, len(rows))
	for i, r := range rows {
		out[i] = ProjectionPointer(r)
	}
	return out, nil
}
