package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/dispatcher/dbsqlc"
)

// AckBatch records many verified acks in one transaction: one fenced
// statement for all transitions and finishes, one statement calling the
// published_at function for each that passed its fence. The returned slice
// holds, per input, nil or ErrLeaseLost. If the batch transaction fails as a
// whole (for example the published_at function rejects one ack, or two
// batches deadlock on sibling deliveries), every ack is retried alone so one
// bad ack cannot take its neighbours down.
func (s *Store) AckBatch(ctx context.Context, acks []VerifiedAck) []error {
	out := make([]error, len(acks))
	if len(acks) == 0 {
		return out
	}
	err := s.ackBatchTx(ctx, acks, out)
	if err == nil {
		return out
	}
	for i, a := range acks {
		out[i] = s.AckOne(ctx, a)
	}
	return out
}

func (s *Store) ackBatchTx(ctx context.Context, acks []VerifiedAck, out []error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return db.WithTxOptions(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		return recordAcksTx(ctx, tx, acks, out)
	})
}

// errFencedAck marks a failure of the fenced ack statement itself (as
// opposed to the published_at function that follows it).
var errFencedAck = errors.New("fenced ack")

// recordAcksTx records verified acks inside tx (READ COMMITTED): one fenced
// statement for all transitions and success finishes, each ack guarded by
// its own fence, then the controlled published_at function for every ack
// that passed (its not_complete answer is a normal result). out receives,
// per ack, nil or ErrLeaseLost; an error fails the whole transaction.
func recordAcksTx(ctx context.Context, tx pgx.Tx, acks []VerifiedAck, out []error) error {
	passed, err := queries.DeliveryAckBatch(ctx, tx, dbsqlc.DeliveryAckBatchParams(ackColumns(acks)))
	if err != nil {
		return fmt.Errorf("%w: %w", errFencedAck, err)
	}
	fenceHeld := make(map[string]bool, len(passed))
	for _, attempt := range passed {
		fenceHeld[attempt] = true
	}
	var kept []VerifiedAck
	for i, a := range acks {
		if fenceHeld[a.claimed.AttemptID] {
			kept = append(kept, a)
			out[i] = nil
		} else {
			out[i] = ErrLeaseLost
		}
	}
	if len(kept) == 0 {
		return nil
	}
	if err := queries.PublicationRecordBatch(ctx, tx, dbsqlc.PublicationRecordBatchParams(ackColumns(kept))); err != nil {
		return fmt.Errorf("record publication: %w", err)
	}
	return nil
}

// ackColumns lays acks out as the parallel arrays of ack_batch.sql and
// record_publication_batch.sql, in (event_id, destination) order so
// concurrent batches lock deliveries in one order. The fence (attempt id,
// lease token) is the claim's; everything the ack says — event id,
// destination, consumer, receipt type and quadruple, envelope digest — is
// the ack's own, so outbox.record_publication compares what the consumer
// answered (not the member's values, which would always match) with the
// frozen member, the event and the recorded ack (OB-PUB-1).
func ackColumns(acks []VerifiedAck) dbsqlc.DeliveryAckBatchParams {
	sorted := slices.Clone(acks)
	slices.SortFunc(sorted, func(a, b VerifiedAck) int {
		if c := strings.Compare(a.claimed.EventID, b.claimed.EventID); c != 0 {
			return c
		}
		return strings.Compare(string(a.claimed.Destination), string(b.claimed.Destination))
	})
	var c dbsqlc.DeliveryAckBatchParams
	for _, a := range sorted {
		q := a.ack.AppliedReceipt.Receipt
		c.Destinations = append(c.Destinations, string(a.ack.Destination))
		c.EventIds = append(c.EventIds, a.ack.EventID)
		c.AttemptIds = append(c.AttemptIds, a.claimed.AttemptID)
		c.LeaseTokens = append(c.LeaseTokens, a.claimed.LeaseToken)
		c.ConsumerNames = append(c.ConsumerNames, a.ack.ConsumerName)
		c.ReceiptTypes = append(c.ReceiptTypes, ackReceiptType(a.ack))
		c.ReceiptRefs = append(c.ReceiptRefs, q.Ref)
		c.ReceiptSchemaVersions = append(c.ReceiptSchemaVersions, q.SchemaVersion)
		c.ReceiptDigestAlgorithmVersions = append(c.ReceiptDigestAlgorithmVersions, string(q.DigestAlgorithmVersion))
		c.ReceiptDigests = append(c.ReceiptDigests, q.Digest)
		c.EnvelopeDigestAlgorithmVersions = append(c.EnvelopeDigestAlgorithmVersions, string(a.ack.EventEnvelopeDigest.Algorithm))
		c.EnvelopeSha256s = append(c.EnvelopeSha256s, a.ack.EventEnvelopeDigest.Value)
	}
	return c
}

// ackReceiptType is the receipt type the ack's own appliedReceipt.kind
// names under its destination's binding; an unknown destination or a kind
// the binding does not use yields the kind itself, which matches no
// receipt type, so the database refuses the ack.
func ackReceiptType(a *receipt.ActiveConsumerAck) string {
	b, err := route.BindingOf(a.Destination)
	if err != nil || b.AckKind != a.AppliedReceipt.Kind {
		return a.AppliedReceipt.Kind
	}
	return b.ReceiptType
}
