package readmodel_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
)

// planNode is the part of an EXPLAIN (ANALYZE, FORMAT JSON) node the test reads.
type planNode struct {
	NodeType              string     `json:"Node Type"`
	RelationName          string     `json:"Relation Name"`
	ActualRows            float64    `json:"Actual Rows"`
	ActualLoops           float64    `json:"Actual Loops"`
	RowsRemovedByFilter   float64    `json:"Rows Removed by Filter"`
	RowsRemovedByJoinFilt float64    `json:"Rows Removed by Join Filter"`
	Plans                 []planNode `json:"Plans"`
}

// planProfile is what the proof's statement read, summed over its plan.
type planProfile struct {
	rowsRead   float64  // rows produced or filtered away by every scan, over all its loops
	violations []string // nodes that rescan something that grows with history
}

func (p *planProfile) walk(n planNode) {
	switch n.NodeType {
	case "Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan", "CTE Scan", "Subquery Scan", "Function Scan":
		p.rowsRead += (n.ActualRows + n.RowsRemovedByFilter) * n.ActualLoops
	}
	// A node run more than once is only linear when each run is one probe of
	// an index by key (an indexed lookup per row); a rescan of a set, a CTE
	// or a correlated subquery per row is quadratic.
	if n.ActualLoops > 1 && n.NodeType != "Index Scan" && n.NodeType != "Index Only Scan" {
		p.violations = append(p.violations, n.NodeType+" "+n.RelationName+" rescanned per row")
	}
	if n.RowsRemovedByJoinFilt > 0 {
		p.violations = append(p.violations, n.NodeType+" compares every pair (join filter)")
	}
	for _, c := range n.Plans {
		p.walk(c)
	}
}

func (b *bundle) profileCompletenessInputs(t *testing.T) (planProfile, string) {
	t.Helper()
	var (
		profile planProfile
		text    string
	)
	err := db.WithTxOptions(t.Context(), b.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+readmodel.CompletenessInputsStatement,
			pgx.NamedArgs{"projection_name": projector.ProjectionName, "projection_version": int64(1)})
		if err != nil {
			return err
		}
		out, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		var plans []struct {
			Plan planNode `json:"Plan"`
		}
		if err := json.Unmarshal([]byte(out), &plans); err != nil {
			return err
		}
		require.Len(t, plans, 1)
		profile.walk(plans[0].Plan)
		text = out
		return nil
	})
	require.NoError(t, err)
	return profile, text
}

// OPS-4 (and "no hot-path statement reads more as history grows"): the
// completeness proof is recorded by serve on an interval and computed by
// the demo, so its input statement must stay linear in history. On tables
// whose statistics are as fresh as after a burst (never analyzed: the
// planner believes they hold a row), no plan node may rescan a set per row
// and no join may compare every pair; and the rows the statement reads per
// source event stay flat when history quadruples. The former CTE version
// rescanned materialized CTEs per row (CTE Scan loops = events) and failed
// both.
func TestOPS4CompletenessInputsPlanIsLinear(t *testing.T) {
	t.Parallel()
	b := setup(t, 8)
	perEvent := func() (float64, int64) {
		b.deliverAll(t)
		proof, err := b.rm.ProveCompleteness(t.Context(), readmodel.Params{})
		require.NoError(t, err)
		require.Equal(t, readmodel.CompleteForSupportedScope, proof.ProjectionCompleteness, proof.Reasons)
		events := proof.Inputs.SourceEvents.Count
		require.Positive(t, events)
		profile, plan := b.profileCompletenessInputs(t)
		require.Empty(t, profile.violations, "%s", plan)
		require.NotContains(t, plan, "CTE Scan")
		require.NotContains(t, plan, "SubPlan")
		return profile.rowsRead / float64(events), events
	}
	b.admit(t, 10)
	small, smallEvents := perEvent()
	b.admit(t, 30)
	large, largeEvents := perEvent()
	require.Equal(t, 4*smallEvents, largeEvents)
	t.Logf("rows read per source event: %.1f at %d events, %.1f at %d events", small, smallEvents, large, largeEvents)
	// Linear: the same rows per event (a little slack for fixed costs spread
	// thinner); quadratic would read four times as many per event.
	require.LessOrEqual(t, large, small*1.25, "rows read per event grew with history: %.1f -> %.1f", small, large)
}
