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
// statement for all transitions and finishes, one call of the published_at
// function for all that passed their fences. The returned slice holds, per
// input, nil or ErrLeaseLost. If the batch transaction fails as a whole (for
// example the published_at function rejects one ack, or a racing writer
// appended one attempt's finish first), every ack is retried alone so one
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

// AckBatchTx records verified acks inside tx (READ COMMITTED) as AckBatch
// does, without the one-by-one fallback: out receives, per ack, nil or
// ErrLeaseLost; an error means tx must roll back.
func AckBatchTx(ctx context.Context, tx pgx.Tx, acks []VerifiedAck) (out []error, err error) {
	out = make([]error, len(acks))
	return out, recordAcksTx(ctx, tx, acks, out)
}

// errFencedAck marks a failure of the fenced ack statement itself (as
// opposed to the published_at function that follows it).
var errFencedAck = errors.New("fenced ack")

// recordAcksTx records verified acks inside tx (READ COMMITTED): one
// set-based fenced statement for every transition and success finish (each
// row guarded by its own fence), then one call of the controlled
// published_at function with the acks that passed (its not_complete answer
// is a normal result). out receives, per ack, nil or ErrLeaseLost; an error
// fails the whole transaction.
func recordAcksTx(ctx context.Context, tx pgx.Tx, acks []VerifiedAck, out []error) error {
	order := ackOrder(acks)
	var fence ackBatchColumns
	for _, i := range order {
		a := acks[i]
		q := a.ack.AppliedReceipt.Receipt
		// The fence is the claim's; the receipt type is the frozen member's
		// (the transition guard and the table checks compare them).
		fence.Destinations = append(fence.Destinations, string(a.claimed.Destination))
		fence.EventIds = append(fence.EventIds, a.claimed.EventID)
		fence.AttemptIds = append(fence.AttemptIds, a.claimed.AttemptID)
		fence.LeaseTokens = append(fence.LeaseTokens, a.claimed.LeaseToken)
		fence.ConsumerNames = append(fence.ConsumerNames, a.ack.ConsumerName)
		fence.ReceiptTypes = append(fence.ReceiptTypes, a.claimed.Member.ExpectedReceiptType)
		fence.ReceiptRefs = append(fence.ReceiptRefs, q.Ref)
		fence.ReceiptSchemaVersions = append(fence.ReceiptSchemaVersions, q.SchemaVersion)
		fence.ReceiptDigestAlgorithmVersions = append(fence.ReceiptDigestAlgorithmVersions, string(q.DigestAlgorithmVersion))
		fence.ReceiptDigests = append(fence.ReceiptDigests, q.Digest)
		fence.EnvelopeDigestAlgorithmVersions = append(fence.EnvelopeDigestAlgorithmVersions, string(a.ack.EventEnvelopeDigest.Algorithm))
		fence.EnvelopeSha256s = append(fence.EnvelopeSha256s, a.ack.EventEnvelopeDigest.Value)
	}
	// A prepared call: the fenced statement inside outbox.ack_delivery_batch
	// keeps one probe-only generic plan per session (migration 00097).
	rows, err := tx.Query(ctx, stDeliveryAckBatch.SQL, stDeliveryAckBatch.Args(fence.args())...)
	if err != nil {
		return fmt.Errorf("%w: %w", errFencedAck, err)
	}
	finished, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("%w: %w", errFencedAck, err)
	}
	markLost(out, finished, func(i int) string { return acks[i].claimed.AttemptID })
	var kept []VerifiedAck
	for i, a := range acks {
		if out[i] == nil {
			kept = append(kept, a)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	if err := queries.PublicationRecordBatch(ctx, tx, ackColumns(kept)); err != nil {
		return fmt.Errorf("record publication: %w", err)
	}
	return nil
}

// markLost sets out[i] to nil for every outcome whose attempt (attempt(i))
// a batch statement finished, and to ErrLeaseLost for the others: a row the
// statement did not return failed its own fence.
func markLost(out []error, finished []string, attempt func(int) string) {
	held := make(map[string]bool, len(finished))
	for _, id := range finished {
		held[id] = true
	}
	for i := range out {
		out[i] = nil
		if !held[attempt(i)] {
			out[i] = ErrLeaseLost
		}
	}
}

// ackBatchColumns are the parallel arrays of sql/delivery_ack_batch.sql.
type ackBatchColumns struct {
	Destinations, EventIds, AttemptIds, LeaseTokens, ConsumerNames, ReceiptTypes, ReceiptRefs []string
	ReceiptSchemaVersions, ReceiptDigestAlgorithmVersions, ReceiptDigests                     []string
	EnvelopeDigestAlgorithmVersions, EnvelopeSha256s                                          []string
}

func (c ackBatchColumns) args() pgx.NamedArgs {
	return pgx.NamedArgs{
		"destinations": c.Destinations, "event_ids": c.EventIds, "attempt_ids": c.AttemptIds,
		"lease_tokens": c.LeaseTokens, "consumer_names": c.ConsumerNames, "receipt_types": c.ReceiptTypes,
		"receipt_refs": c.ReceiptRefs, "receipt_schema_versions": c.ReceiptSchemaVersions,
		"receipt_digest_algorithm_versions": c.ReceiptDigestAlgorithmVersions, "receipt_digests": c.ReceiptDigests,
		"envelope_digest_algorithm_versions": c.EnvelopeDigestAlgorithmVersions, "envelope_sha256s": c.EnvelopeSha256s,
	}
}

// ackOrder returns the indexes of acks in (event_id, destination) order, the
// order every batch passes deliveries and events in.
func ackOrder(acks []VerifiedAck) []int {
	return fenceOrder(len(acks), func(i int) Fence { return acks[i].claimed.Fence })
}

// fenceOrder returns the indexes 0..n-1 in the (event_id, destination) order
// of their fences, the order in which every batch statement locks rows.
func fenceOrder(n int, fence func(int) Fence) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		a, b := fence(x), fence(y)
		if c := strings.Compare(a.EventID, b.EventID); c != 0 {
			return c
		}
		return strings.Compare(string(a.Destination), string(b.Destination))
	})
	return order
}

// ackColumns lays acks out as the parallel arrays of
// outbox.record_publication, in (event_id, destination) order. The fence
// (attempt id, lease token) is the claim's; everything the ack says — event
// id, destination, consumer, receipt type and quadruple, envelope digest —
// is the ack's own, so the function compares what the consumer answered
// (not the member's values, which would always match) with the frozen
// member, the event and the recorded ack (OB-PUB-1).
func ackColumns(acks []VerifiedAck) dbsqlc.PublicationRecordBatchParams {
	var c dbsqlc.PublicationRecordBatchParams
	for _, i := range ackOrder(acks) {
		a := acks[i]
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
