package finalization_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/billing/finalization"
	"github.com/oceanway/core/internal/db"
)

// BI-1: the finalization Work claim (and the queue's backlog read) is
// served by the partial index of fences that wait for an evaluation, so it
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
			require.Contains(t, text, "billing_finalization_fences_pending", "%s:\n%s", name, text)
			require.NotContains(t, text, "Seq Scan on billing_finalization_fences", "%s:\n%s", name, text)
			return nil
		})
		require.NoError(t, err, name)
	}
}
