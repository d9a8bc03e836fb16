package dispatcher

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/oceanway/core/internal/db"
)

var (
	//go:embed sql/ack_batch.sql
	ackBatchSQL string
	//go:embed sql/record_publication_batch.sql
	recordPublicationBatchSQL string
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
		cols := ackColumns(acks)
		rows, err := tx.Query(ctx, ackBatchSQL, cols.args()...)
		if err != nil {
			return fmt.Errorf("batched ack: %w", err)
		}
		passed := map[string]bool{}
		for rows.Next() {
			var attempt pgtype.UUID
			if err := rows.Scan(&attempt); err != nil {
				rows.Close()
				return err
			}
			passed[attempt.String()] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("batched ack: %w", err)
		}
		var kept []VerifiedAck
		for i, a := range acks {
			if passed[a.claimed.AttemptID] {
				kept = append(kept, a)
				out[i] = nil
			} else {
				out[i] = ErrLeaseLost
			}
		}
		if len(kept) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, recordPublicationBatchSQL, ackColumns(kept).args()...); err != nil {
			return fmt.Errorf("record publication (batch): %w", err)
		}
		return nil
	})
}

// ackCols are the parallel arrays of ack_batch.sql.
type ackCols struct {
	dest, eventID, attemptID, token, consumer, receiptType, ref, schema, alg, digest, envAlg, envSHA []string
}

func ackColumns(acks []VerifiedAck) ackCols {
	sorted := slices.Clone(acks)
	slices.SortFunc(sorted, func(a, b VerifiedAck) int {
		if c := strings.Compare(a.claimed.EventID, b.claimed.EventID); c != 0 {
			return c
		}
		return strings.Compare(string(a.claimed.Destination), string(b.claimed.Destination))
	})
	var c ackCols
	for _, a := range sorted {
		q := a.ack.AppliedReceipt.Receipt
		c.dest = append(c.dest, string(a.claimed.Destination))
		c.eventID = append(c.eventID, a.claimed.EventID)
		c.attemptID = append(c.attemptID, a.claimed.AttemptID)
		c.token = append(c.token, a.claimed.LeaseToken)
		c.consumer = append(c.consumer, a.ack.ConsumerName)
		c.receiptType = append(c.receiptType, a.claimed.Member.ExpectedReceiptType)
		c.ref = append(c.ref, q.Ref)
		c.schema = append(c.schema, q.SchemaVersion)
		c.alg = append(c.alg, string(q.DigestAlgorithmVersion))
		c.digest = append(c.digest, q.Digest)
		c.envAlg = append(c.envAlg, string(a.ack.EventEnvelopeDigest.Algorithm))
		c.envSHA = append(c.envSHA, a.ack.EventEnvelopeDigest.Value)
	}
	return c
}

func (c ackCols) args() []any {
	return []any{c.dest, c.eventID, c.attemptID, c.token, c.consumer, c.receiptType, c.ref, c.schema, c.alg, c.digest, c.envAlg, c.envSHA}
}
