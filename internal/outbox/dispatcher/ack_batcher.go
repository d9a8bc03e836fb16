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
	"github.com/oceanway/core/internal/outbox"
)

// AckBatch records many verified acks in one statement, its own
// transaction: the fenced statement for all transitions and finishes and
// the published_at function for all that passed their fences run in one
// call of outbox.ack_and_publish_batch (one round trip; a session whose
// default isolation is not READ COMMITTED gets an explicit READ COMMITTED
// transaction instead). The returned slice holds, per input, nil or
// ErrLeaseLost. If the batch fails as a whole (for example the published_at
// function rejects one ack, or a racing writer appended one attempt's
// finish first), every ack is retried alone so one bad ack cannot take its
// neighbours down.
func (s *Store) AckBatch(ctx context.Context, acks []VerifiedAck) []error {
	out := make([]error, len(acks))
	if len(acks) == 0 {
		return out
	}
	err := s.ackBatch(ctx, acks, out)
	if err == nil {
		return out
	}
	for i, a := range acks {
		out[i] = s.AckOne(ctx, a)
	}
	return out
}

func (s *Store) ackBatch(ctx context.Context, acks []VerifiedAck, out []error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if !s.explicitAckTx.Load() {
		err := recordAcks(ctx, s.pool, acks, out)
		if db.SQLState(err) != outbox.CodeIsolationLevel {
			return err
		}
		// The session default is not READ COMMITTED: from now on every
		// batch runs in an explicit READ COMMITTED transaction.
		s.explicitAckTx.Store(true)
	}
	return db.WithTxOptions(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		return recordAcks(ctx, tx, acks, out)
	})
}

// AckBatchTx records verified acks inside tx (READ COMMITTED) as AckBatch
// does, without the one-by-one fallback: out receives, per ack, nil or
// ErrLeaseLost; an error means tx must roll back.
func AckBatchTx(ctx context.Context, tx pgx.Tx, acks []VerifiedAck) (out []error, err error) {
	out = make([]error, len(acks))
	return out, recordAcks(ctx, tx, acks, out)
}

// errFencedAck marks a failure of the ack batch statement (the fenced
// statement or the published_at function inside it).
var errFencedAck = errors.New("fenced ack")

// recordAcks records verified acks with one call of
// outbox.ack_and_publish_batch on q: a pool (the call is its own
// transaction) or a READ COMMITTED transaction. Inside it, one set-based
// fenced statement records every transition and success finish (each row
// guarded by its own fence), then the controlled published_at function
// takes the acks that passed (its not_complete answer is a normal result).
// out receives, per ack, nil or ErrLeaseLost; an error fails the whole
// batch.
func recordAcks(ctx context.Context, q db.Executor, acks []VerifiedAck, out []error) error {
	cols := ackColumns(acks)
	// A prepared call: the statements inside keep one probe-only generic
	// plan per session (migrations 00097, 00100).
	rows, err := q.Query(ctx, stDeliveryAckBatch.SQL, stDeliveryAckBatch.Args(cols.args())...)
	if err != nil {
		return fmt.Errorf("%w: %w", errFencedAck, err)
	}
	finished, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("%w: %w", errFencedAck, err)
	}
	markLost(out, finished, func(i int) string { return acks[i].claimed.AttemptID })
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
		// guard OB-CLAIM-2.ack-fence
		if !held[attempt(i)] {
			out[i] = ErrLeaseLost
		}
	}
}

// ackBatchColumns are the parallel arrays of sql/delivery_ack_batch.sql.
// The fence (destination, event id, attempt id, lease token) is the
// claim's and the receipt type the frozen member's, for the fenced
// statement (the transition guard and the table checks compare them); the
// Ack* columns, the consumer, the receipt quadruple and the envelope digest
// are what the consumer answered, for the published_at function.
type ackBatchColumns struct {
	Destinations, EventIds, AttemptIds, LeaseTokens, ConsumerNames, ReceiptTypes, ReceiptRefs []string
	ReceiptSchemaVersions, ReceiptDigestAlgorithmVersions, ReceiptDigests                     []string
	EnvelopeDigestAlgorithmVersions, EnvelopeSha256s                                          []string
	AckDestinations, AckEventIds, AckReceiptTypes                                             []string
}

func (c ackBatchColumns) args() pgx.NamedArgs {
	return pgx.NamedArgs{
		"destinations": c.Destinations, "event_ids": c.EventIds, "attempt_ids": c.AttemptIds,
		"lease_tokens": c.LeaseTokens, "consumer_names": c.ConsumerNames, "receipt_types": c.ReceiptTypes,
		"receipt_refs": c.ReceiptRefs, "receipt_schema_versions": c.ReceiptSchemaVersions,
		"receipt_digest_algorithm_versions": c.ReceiptDigestAlgorithmVersions, "receipt_digests": c.ReceiptDigests,
		"envelope_digest_algorithm_versions": c.EnvelopeDigestAlgorithmVersions, "envelope_sha256s": c.EnvelopeSha256s,
		"ack_destinations": c.AckDestinations, "ack_event_ids": c.AckEventIds, "ack_receipt_types": c.AckReceiptTypes,
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
// sql/delivery_ack_batch.sql, in (event_id, destination) order. The fence
// is the claim's; for the published_at function everything the ack says —
// event id, destination, consumer, receipt type and quadruple, envelope
// digest — is the ack's own, so it compares what the consumer answered
// (not the member's values, which would always match) with the frozen
// member, the event and the recorded ack (OB-PUB-1).
func ackColumns(acks []VerifiedAck) ackBatchColumns {
	var c ackBatchColumns
	for _, i := range ackOrder(acks) {
		a := acks[i]
		q := a.ack.AppliedReceipt.Receipt
		c.Destinations = append(c.Destinations, string(a.claimed.Destination))
		c.EventIds = append(c.EventIds, a.claimed.EventID)
		c.AttemptIds = append(c.AttemptIds, a.claimed.AttemptID)
		c.LeaseTokens = append(c.LeaseTokens, a.claimed.LeaseToken)
		c.ConsumerNames = append(c.ConsumerNames, a.ack.ConsumerName)
		c.ReceiptTypes = append(c.ReceiptTypes, a.claimed.Member.ExpectedReceiptType)
		c.ReceiptRefs = append(c.ReceiptRefs, q.Ref)
		c.ReceiptSchemaVersions = append(c.ReceiptSchemaVersions, q.SchemaVersion)
		c.ReceiptDigestAlgorithmVersions = append(c.ReceiptDigestAlgorithmVersions, string(q.DigestAlgorithmVersion))
		c.ReceiptDigests = append(c.ReceiptDigests, q.Digest)
		c.EnvelopeDigestAlgorithmVersions = append(c.EnvelopeDigestAlgorithmVersions, string(a.ack.EventEnvelopeDigest.Algorithm))
		c.EnvelopeSha256s = append(c.EnvelopeSha256s, a.ack.EventEnvelopeDigest.Value)
		c.AckDestinations = append(c.AckDestinations, string(a.ack.Destination))
		c.AckEventIds = append(c.AckEventIds, a.ack.EventID)
		c.AckReceiptTypes = append(c.AckReceiptTypes, ackReceiptType(a.ack))
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
