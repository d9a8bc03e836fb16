package metering_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/metering"
)

// BI-1 (the Billing finalization manifest's source): ReadAttemptSettlementInputs
// answers every Current SettlementInputSnapshot@1 of one attempt, verified,
// sorted by charge dimension, at the latest version of each; none for an
// attempt without settlement input.
func TestBI1ReadAttemptSettlementInputs(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(1)
	none, err := metering.ReadAttemptSettlementInputs(t.Context(), b.pool, a.attemptID)
	require.NoError(t, err)
	require.Empty(t, none)
	dispatched(t, b, a)
	_, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, ""))
	_, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)

	all, err := metering.ReadAttemptSettlementInputs(t.Context(), b.pool, a.attemptID)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Less(t, all[0].Snapshot.ChargeDimensionKey, all[1].Snapshot.ChargeDimensionKey, "sorted by charge dimension")
	for _, in := range all {
		cur, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, in.Snapshot.SettlementDimensionID)
		require.NoError(t, err)
		require.Equal(t, cur.Ref, in.Ref, "each is its dimension's Current")
		require.Equal(t, a.attemptID, in.Snapshot.ExecutionAttemptID)
	}
	_, err = metering.ReadAttemptSettlementInputs(t.Context(), b.pool, "not-a-uuid")
	require.ErrorIs(t, err, metering.ErrNoSettlementInput)
}
