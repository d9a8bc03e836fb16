package execution_test

import (
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/execution"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	"github.com/oceanway/core/internal/ownerread/executionread"
)

// Issue 32 (EX-2, BI-1): readRunFinalizationPrecondition's conflicting
// answer is a stored RunExecutionFinalizationConflictFact@1, insert-or-compare
// on (run, requested finalization, reason): the same conflict read again —
// also by concurrent sessions — answers the first stored fact byte for
// byte; another conflict of the same run is its own fact.
func TestEX2FinalizationConflictFactStoredOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	e.attemptWithEligibility(t, st.RunID, uuid.NewString())
	c, err := e.svc.CloseRun(ctx, st.RunID)
	require.NoError(t, err)
	other := e.open(t)
	c0, err := e.svc.CloseRun(ctx, other.RunID)
	require.NoError(t, err)

	req := precondition(c)
	req.Finalization.Digest = c0.Fact.Fact.Digest
	first, err := execution.ReadRunFinalizationPrecondition(ctx, e.exec, req)
	require.NoError(t, err)
	require.Equal(t, executionread.PreconditionConflicting, first.Answer)
	var wg sync.WaitGroup
	bodies := make([][]byte, 4)
	errs := make([]error, 4)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := execution.ReadRunFinalizationPrecondition(ctx, e.exec, req)
			bodies[i], errs[i] = a.ConflictBody, err
		}()
	}
	wg.Wait()
	for i := range bodies {
		require.NoError(t, errs[i])
		require.Equal(t, string(first.ConflictBody), string(bodies[i]), "the first stored fact, byte for byte")
	}
	count := req
	count.Finalization, count.AttemptCount = c.Fact.Fact, 7
	second, err := execution.ReadRunFinalizationPrecondition(ctx, e.exec, count)
	require.NoError(t, err)
	require.NotEqual(t, first.Conflict.Fact, second.Conflict.Fact)
	require.Equal(t, "state_version_or_count_differs", second.Conflict.ReasonCode)
	require.Equal(t, 2, e.count(t, "execution.run_finalization_conflict_facts"))
	back, err := contract.DecodeRunExecutionFinalizationConflictFact(first.ConflictBody)
	require.NoError(t, err)
	require.Equal(t, first.Conflict, back)
}

// Issue 32: PostgreSQL refuses a changed, deleted, truncated or forged run
// finalization conflict fact, as the table owner (EX001, and 42501 for
// oceanway_execution): EX001.finalization-conflicts-insert-only,
// EX001.finalization-conflicts-no-truncate, and a body that does not name its
// row or names another closure than the run's (EX013.conflict-fact-forged).
func TestEX013FinalizationConflictFactGuarded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	c, err := e.svc.CloseRun(ctx, st.RunID)
	require.NoError(t, err)
	req := precondition(c)
	req.AttemptCount = 3
	ans, err := execution.ReadRunFinalizationPrecondition(ctx, e.exec, req)
	require.NoError(t, err)
	require.NotNil(t, ans.Conflict)
	const table = "execution.run_finalization_conflict_facts"
	role := dbtest.RolePool(t, e.exec.Config().ConnString(), executionschema.RoleExecution)
	for _, stmt := range []string{"UPDATE " + table + " SET fact_body = fact_body", "DELETE FROM " + table, "TRUNCATE " + table} {
		_, err := e.exec.Exec(ctx, stmt)
		require.Equal(t, execution.CodeImmutable, db.SQLState(err), stmt)
		_, err = role.Exec(ctx, stmt)
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err), stmt)
	}
	forge := func(set string) error {
		_, err := e.exec.Exec(ctx, `INSERT INTO `+table+` SELECT run_execution_finalization_conflict_ref || '-x',
			run_execution_finalization_conflict_schema_version, run_execution_finalization_conflict_digest_algorithm_version,
			run_execution_finalization_conflict_digest, run_id, requested_finalization_ref, requested_finalization_digest,
			reason_code || '-x', `+set+`, detected_at FROM `+table)
		return err
	}
	// The body's own ref and reason are not the row's.
	require.Equal(t, execution.CodeConflictFactForged, db.SQLState(forge("fact_body")))
	// The body agrees with its row but names another closure than the run's.
	require.Equal(t, execution.CodeConflictFactForged, db.SQLState(forge(`jsonb_set(jsonb_set(jsonb_set(fact_body::jsonb,
		'{runExecutionFinalizationConflictRef}', to_jsonb(run_execution_finalization_conflict_ref || '-x')),
		'{reasonCode}', to_jsonb(reason_code || '-x')), '{storedRunExecutionFinalizationRef}', '"ref-other"')::text`)))
	require.Equal(t, 1, e.count(t, table))
}
