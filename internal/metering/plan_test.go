package metering_test

import (
	"testing"

	"github.com/oceanway/core/internal/dbtest"
)

// BI-1 (issue 35): readAttemptSettlementInputs (the finalization's owner
// read) probes each current dimension's snapshot by its key in the generic
// plan a pooled session keeps, whatever the statistics: as a join, a plan
// made while the table was small hashed every snapshot ever written, and on
// a server without autovacuum such a plan is never replaced.
func TestBI1AttemptSettlementInputsProbeTheSnapshotKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dbtest.RequireGenericPlanProbes(t, b.pool, "sql/settlement_attempt_current_select.sql", map[string]string{
		"settlement_input_current_attempt": "execution_attempt_id",
		"settlement_input_snapshots":       "settlement_dimension_id",
	})
}
