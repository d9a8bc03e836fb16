package projector

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// EffectSettlementTransition is the projection effect of
// billing.settlement-transition.committed@1 (issue 16 item 5).
const EffectSettlementTransition = "settlement_transition_recorded"

// SettlementReads is the Billing owner read the settlement transition pair
// needs (internal/billing implements it); nil answers owner_read_unavailable
// (retryable, nothing written), like an unwired BillingReads.
type SettlementReads interface {
	ReadBillingSettlementTransition(ctx context.Context, req coreread.SettlementTransitionRead) (OwnerAnswer, error)
}

// transitionRead is the owner read request a transition event states.
func transitionRead(e *envelope.Envelope, d digest.Digest) coreread.SettlementTransitionRead {
	p := mustPayload(envelope.PayloadOf[envelope.BillingSettlementTransitionCommittedV1Payload](e))
	return coreread.SettlementTransitionRead{
		Transition: p.BillingSettlementTransition(), EventID: e.EventID, EventEnvelopeDigest: d,
		BillingReservationID: p.BillingReservationID, BillingAccountID: p.BillingAccountID, RunID: p.RunID, RunStepID: p.RunStepID,
		ExecutionAttemptID: p.ExecutionAttemptID, ChargeDimensionKey: p.ChargeDimensionKey, SettlementDimensionID: p.SettlementDimensionID,
		TransitionKind: p.TransitionKind, TransitionAmount: p.TransitionAmount, FromSettlementStateRevision: p.FromSettlementStateRevision,
		ToSettlementStateRevision: p.ToSettlementStateRevision, LogicalOperationID: p.LogicalOperationID,
		SettlementBasis:       digest.Digest{Algorithm: digest.Algorithm(p.SettlementBasisDigestAlgorithmVersion), Value: p.SettlementBasisDigest},
		ValidationOperationID: p.ValidationOperationID,
	}
}

// verifyTransition runs the owner read for a transition event (CON-2:
// unavailable → retryable with nothing written; conflicting → non_retryable).
func (p *Projector) verifyTransition(ctx context.Context, req coreread.SettlementTransitionRead) error {
	if p.cfg.SettlementReads == nil {
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: readBillingSettlementTransition is not wired", ErrOwnerRead))
	}
	ans, err := p.cfg.SettlementReads.ReadBillingSettlementTransition(ctx, req)
	switch {
	case err != nil:
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: readBillingSettlementTransition: %w", ErrOwnerRead, err))
	case ans == OwnerFound:
		return nil
	case ans == OwnerNotFound:
		return transport.Retryable(CodeOwnerFactNotReadable, fmt.Errorf("%w: BillingSettlementTransition %s not readable yet", ErrOwnerRead, req.Transition.Ref))
	case ans == OwnerConflicting:
		return transport.NonRetryable(CodeOwnerFactConflicting, fmt.Errorf("%w: BillingSettlementTransition %s conflicts with event %s", ErrOwnerRead, req.Transition.Ref, req.EventID))
	default:
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: unknown answer %q", ErrOwnerRead, ans))
	}
}

// applyTransition records a verified transition: the dimension's aggregate
// chain (revision = from revision) already makes it contiguous and gapless;
// the mutation log and the index carry it to the run and the reservation.
// Operation summaries are not changed: the finalization's settled and
// released amounts stay what the finalization committed, and the
// transitions of a dimension are read from the log.
func applyTransition(_ context.Context, _ pgx.Tx, _ *inbox.Event, req coreread.SettlementTransitionRead) (mutation, error) {
	return mutation{effect: EffectSettlementTransition, runID: req.RunID, reservationID: req.BillingReservationID,
		index: []indexEntry{{IDEventID, req.EventID}}}, nil
}
