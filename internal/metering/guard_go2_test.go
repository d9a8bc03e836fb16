package metering_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/metering"
)

// TestGuardGoCostBlockConflict: a cost attempt already blocked on a local
// processing conflict that runs again (the same attempt, still the Work's
// latest, so PostgreSQL's fence lets its insert through and the insert
// keeps the stored row) computes a Blocked fact and conflict evidence with
// other refs and digests: the insert-or-compare refuses it with
// ErrFinishConflict instead of answering the stored block as if this run
// had written it; nothing changes.
// Clause: ME-1.cost-block-conflict.
func TestGuardGoCostBlockConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(321)
	reads := newCostReads(b.owners, a)
	b.ack(t, a.availability(b.owners, cost, costDim, 2, contract.AvailabilityAvailable, ""))
	cfg := metering.CostConfig{Reads: reads, Mappings: map[string]metering.CostUnit{}} // no mapping: a deterministic local conflict

	first := claimOne(t, b, time.Hour)
	res, err := metering.ProcessCostWork(t.Context(), b.pool, cfg, first)
	require.NoError(t, err)
	require.Equal(t, receipt.StateBlockedOnProcessingConflict, res.State)
	before := costRowsOf(t, b, a)
	var blockedDigest string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT blocked_digest FROM metering.work_blocks WHERE work_ref = $1`, first.Head.Work.Ref).Scan(&blockedDigest))

	again, err := metering.ProcessCostWork(t.Context(), b.pool, cfg, first)
	require.ErrorIs(t, err, metering.ErrFinishConflict) // ME-1.cost-block-conflict
	require.ErrorContains(t, err, "already blocked with another body")
	require.Nil(t, again.Blocked)
	require.Equal(t, before, costRowsOf(t, b, a), "the second block writes nothing")
	var stored string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT blocked_digest FROM metering.work_blocks WHERE work_ref = $1`, first.Head.Work.Ref).Scan(&stored))
	require.Equal(t, blockedDigest, stored, "the first block stays")
}
