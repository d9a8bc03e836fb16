package projector_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// settlementReads is a fake readBillingSettlementTransition: it answers
// answer and records the requests.
type settlementReads struct {
	mu     sync.Mutex
	answer projector.OwnerAnswer
	seen   []coreread.SettlementTransitionRead
}

func (s *settlementReads) ReadBillingSettlementTransition(_ context.Context, req coreread.SettlementTransitionRead) (projector.OwnerAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, req)
	return s.answer, nil
}

// transitionAt is the sample transition event of one dimension at from
// revision rev (caused by the previous one).
func transitionAt(rev int64) *envelope.Envelope {
	e := *sample.Built(envelope.BillingSettlementTransitionCommittedV1, 1)
	p, err := envelope.PayloadOf[envelope.BillingSettlementTransitionCommittedV1Payload](&e)
	if err != nil {
		panic(err)
	}
	p.FromSettlementStateRevision, p.ToSettlementStateRevision = rev, rev+1
	p.ValidationOperationID = envelope.SettlementTransitionValidationOperationID(p.LogicalOperationID, p.BillingReservationID,
		p.RunStepID, p.ExecutionAttemptID, p.ChargeDimensionKey, rev, p.SettlementBasisDigestAlgorithmVersion, p.SettlementBasisDigest)
	e.EventID = operationstest.ID(int(rev), 40)
	e.CausationID = operationstest.ID(int(rev), 41)
	e.AggregateRevision, e.Payload = rev, p.Map()
	built, err := envelope.Build(e)
	if err != nil {
		panic(err)
	}
	return built
}

// Issue 16 item 5: billing.settlement-transition.committed@1 is projected
// (no projector_pair_unsupported) after Billing's owner read verifies it:
// unwired or not_found is retryable with nothing written, conflicting is
// non_retryable, found applies; a later transition before its predecessor
// is a revision gap that resolves (OPS-2).
func TestSettlementTransitionProjected(t *testing.T) {
	t.Parallel()
	reads := &settlementReads{answer: projector.OwnerFound}
	b := setup(t, projector.Config{SettlementReads: reads})
	first, second := transitionAt(1), transitionAt(2)

	unwired, err := projector.New(b.pool, projector.Config{BillingReads: operationstest.Found()})
	require.NoError(t, err)
	before := b.state(t)
	_, err = unwired.Consume(t.Context(), operationstest.DeliveryV1(first))
	requireCode(t, err, true, projector.CodeOwnerReadUnavailable)
	require.Equal(t, before, b.state(t))

	reads.answer = projector.OwnerConflicting
	_, err = b.deliver(t, first)
	requireCode(t, err, false, projector.CodeOwnerFactConflicting)
	require.Equal(t, before, b.state(t))

	reads.answer = projector.OwnerFound
	_, err = b.deliver(t, second) // its predecessor is not projected yet
	require.Error(t, err)
	b.ack(t, first)
	b.ack(t, second)
	require.Zero(t, b.count(t, "unsupported_events"))
	req := reads.seen[len(reads.seen)-1]
	p, err := envelope.PayloadOf[envelope.BillingSettlementTransitionCommittedV1Payload](second)
	require.NoError(t, err)
	require.Equal(t, p.BillingSettlementTransition(), req.Transition)
	require.EqualValues(t, 2, req.FromSettlementStateRevision)
	require.Equal(t, p.ValidationOperationID, req.ValidationOperationID)
	var effects int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM operations.projected_events
		WHERE projection_effect = 'settlement_transition_recorded'`).Scan(&effects))
	require.Equal(t, 2, effects)
}
