package finalization_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/billing/finalization"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
)

// BI-1: the finalization Work claim (and the queue's backlog read) is
// served by a partial index of the fences that wait for an evaluation, so it
// never reads more as the history of committed fences grows (checked with
// sequential scans off: the plan shows the index exists for the predicate).
func TestBI1FinalizationClaimReadsOnlyPendingFences(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	for name, stmt := range map[string]string{"claim": finalization.WorkClaimSQL, "backlog": finalization.WorkBacklogSQL} {
		err := db.WithTx(t.Context(), k.admin, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, "EXPLAIN (FORMAT TEXT) "+stmt)
			if err != nil {
				return err
			}
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			text := strings.Join(plan, "\n")
			// Either partial index bounds it to unfinished fences: the one of
			// pending_evaluation fences, or the metrics' one of unfinished
			// fences led by the state (billing 00043).
			require.True(t, strings.Contains(text, "billing_finalization_fences_pending") ||
				strings.Contains(text, "Index Cond: (coordination_state = 'pending_evaluation'::text)") &&
					strings.Contains(text, "billing_finalization_fences_unfinished"), "%s:\n%s", name, text)
			require.NotContains(t, text, "Seq Scan on billing_finalization_fences", "%s:\n%s", name, text)
			return nil
		})
		require.NoError(t, err, name)
	}
}

// BI-1 (issue 35): whatever the statistics say (here a fresh, never-analyzed
// database, in the generic plan a pooled session keeps), the claim reads no
// table sequentially and probes each candidate fence's active Work by its
// key. With a join, such a plan hashed the whole Work history
// on every claim.
func TestBI1FinalizationClaimProbesTheActiveWork(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	dbtest.RequireGenericPlanProbesSQL(t, k.admin, "claim", finalization.WorkClaimSQL, map[string]string{
		"billing_finalization_works_pkey": "billing_finalization_fence_id",
	})
}
