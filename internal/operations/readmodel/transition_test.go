package readmodel_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/release"
)

type foundTransitions struct{}

func (foundTransitions) ReadBillingSettlementTransition(context.Context, coreread.SettlementTransitionRead) (projector.OwnerAnswer, error) {
	return projector.OwnerFound, nil
}

// transitionChain is one dimension's billing.settlement-transition.committed@1
// events from revision 1 to n, each caused by the previous one.
func transitionChain(n int64) []envelope.Envelope {
	var out []envelope.Envelope
	cause := uuid.NewString()
	for rev := int64(1); rev <= n; rev++ {
		e := *sample.Built(envelope.BillingSettlementTransitionCommittedV1, 1)
		p, err := envelope.PayloadOf[envelope.BillingSettlementTransitionCommittedV1Payload](&e)
		if err != nil {
			panic(err)
		}
		p.FromSettlementStateRevision, p.ToSettlementStateRevision = rev, rev+1
		p.ValidationOperationID = envelope.SettlementTransitionValidationOperationID(p.LogicalOperationID, p.BillingReservationID,
			p.RunStepID, p.ExecutionAttemptID, p.ChargeDimensionKey, rev, p.SettlementBasisDigestAlgorithmVersion, p.SettlementBasisDigest)
		e.EventID, e.CausationID, e.AggregateRevision, e.Payload = uuid.Must(uuid.NewV7()).String(), cause, rev, p.Map()
		built, err := envelope.Build(e)
		if err != nil {
			panic(err)
		}
		out = append(out, *built)
		cause = e.EventID
	}
	return out
}

// Issue 16 item 5: with settlement transitions delivered and projected, the
// completeness proof stays complete_for_supported_scope and verified_current
// (no unsupported schema in scope, aggregate revisions match the log).
func TestOPS4CompletenessWithSettlementTransitions(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()
	p, err := projector.New(b.pool, projector.Config{BillingReads: operationstest.Found(), SettlementReads: foundTransitions{}})
	require.NoError(t, err)
	b.proj = p
	b.admit(t, 1)
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		// The sample transitions have no billing fact behind them (a
		// projection fixture, not a forgery test): Billing's guard that a
		// fact event is appended only with its fact (BL009) is switched
		// off by the table owner inside this transaction only.
		if _, err := tx.Exec(ctx, "ALTER TABLE outbox.outbox_events DISABLE TRIGGER billing_fact_events_proven"); err != nil {
			return err
		}
		_, err := release.AppendTx(ctx, tx, transitionChain(3)...)
		return err
	}))
	b.deliverAll(t)

	proof, err := b.rm.ProveCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, readmodel.CompleteForSupportedScope, proof.ProjectionCompleteness)
	require.Empty(t, proof.Reasons)
	require.EqualValues(t, 5, proof.Inputs.SourceEvents.Count)
	c := b.completeness(t)
	require.Equal(t, readmodel.VerifiedCurrent, c.SnapshotCurrency)
}
