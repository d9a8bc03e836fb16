package projector

import (
	"context"
	"fmt"

	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// OwnerAnswer is the shared answer of a directed, versioned owner read
// (package ownerread).
type OwnerAnswer = ownerread.Answer

const (
	OwnerFound       = ownerread.Found
	OwnerNotFound    = ownerread.NotFound
	OwnerConflicting = ownerread.Conflicting
)

// BillingReads are the Billing owner reads the projector calls (ADR-031:
// "Operations只凭 Event四元组调用 readBillingFinalizationCommitted验证").
// The Billing module implements it; until it is wired the projector answers
// owner_read_unavailable (retryable, nothing written).
type BillingReads interface {
	ReadBillingFinalizationCommitted(ctx context.Context, req coreread.FinalizationCommittedRead) (OwnerAnswer, error)
}

// verifyFinalization runs the owner read for a finalization event (CON-2:
// unavailable → retryable with nothing written; conflicting → non_retryable).
func (p *Projector) verifyFinalization(ctx context.Context, ev *inbox.Event, f finalizationFacts) error {
	if p.cfg.BillingReads == nil {
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: readBillingFinalizationCommitted is not wired", ErrOwnerRead))
	}
	ans, err := p.cfg.BillingReads.ReadBillingFinalizationCommitted(ctx, coreread.FinalizationCommittedRead{
		Committed: f.Committed, EventID: f.EventID, EventEnvelopeDigest: ev.Delivery.EnvelopeDigest,
		BillingReservationID: f.ReservationID, BillingAccountID: f.AccountID, RunID: f.RunID,
		FenceID: f.FenceID, OperationID: f.OperationID, FenceRevision: f.FenceRevision,
		Decision: f.Decision, SettledAmount: f.SettledAmount, ReleasedAmount: f.ReleasedAmount,
	})
	switch {
	case err != nil:
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: readBillingFinalizationCommitted: %w", ErrOwnerRead, err))
	case ans == OwnerFound:
		return nil
	case ans == OwnerNotFound:
		return transport.Retryable(CodeOwnerFactNotReadable, fmt.Errorf("%w: BillingFinalizationCommitted %s not readable yet", ErrOwnerRead, f.Committed.Ref))
	case ans == OwnerConflicting:
		return transport.NonRetryable(CodeOwnerFactConflicting, fmt.Errorf("%w: BillingFinalizationCommitted %s conflicts with event %s", ErrOwnerRead, f.Committed.Ref, f.EventID))
	default:
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: unknown answer %q", ErrOwnerRead, ans))
	}
}
