package finalization_test

import (
	"context"
	"errors"
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
			text, err := dbtest.Explain(ctx, tx, stmt)
			if err != nil {
				return err
			}
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

// BI-1 (issue 35): with a history of committed fences and a backlog of
// runnable ones in the statistics (20,000 and 2,000 rows, written with the
// triggers off and analyzed, all rolled back), the claim still reads the
// runnable fences through their partial index, oldest first. Without its
// order, LIMIT 1 let the planner expect an early match in a sequential scan
// that in fact read the committed history first (3,000-run benchmark).
func TestBI1FinalizationClaimSkipsTheHistoryUnderABacklog(t *testing.T) {
	t.Parallel()
	k := newCore(t)
	errRollback := errors.New("rolled back")
	err := db.WithTx(t.Context(), k.admin, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
INSERT INTO billing.billing_finalization_fences (billing_finalization_fence_id, billing_reservation_id, run_id,
  finalization_fence_revision, coordination_state, active_work_generation, latest_work_generation,
  closure_watermark_state, settlement_input_watermark_state, created_at, committed_ref, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 7,
       CASE WHEN i <= 20000 THEN 'committed' ELSE 'pending_evaluation' END,
       CASE WHEN i <= 20000 THEN NULL ELSE 1 END, 1, 'applied', 'advanced', now(),
       CASE WHEN i <= 20000 THEN 'bfc-' || i END, now()
FROM generate_series(1, 22000) AS i`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "ANALYZE billing.billing_finalization_fences"); err != nil {
			return err
		}
		text, err := dbtest.Explain(ctx, tx, finalization.WorkClaimSQL)
		if err != nil {
			return err
		}
		require.NotContains(t, text, "Seq Scan on billing_finalization_fences", text)
		require.Contains(t, text, "billing_finalization_fences_pending", text)
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
}
