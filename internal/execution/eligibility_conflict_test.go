package execution_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
)

// eligibilityRead is the exact read of an eligibility fact.
func eligibilityRead(f *contract.ExecutionEligibilityFact) executionread.EligibilityFactRead {
	return executionread.EligibilityFactRead{ContractVersion: executionread.ReadEligibilityFactV1, Audience: executionread.AudienceMeteringInput,
		BillingReservationID: f.BillingReservationID, BillingAccountID: f.BillingAccountID, RunID: f.RunID, RunStepID: f.RunStepID,
		ExecutionAttemptID: f.ExecutionAttemptID, AttemptManifest: f.AttemptManifest, Fact: f.Fact}
}

// Issue 32 (EX-3, execution_eligibility_owner_conflict): the conflicting
// answer of readExecutionEligibilityFact@1 is a stored
// ExecutionEligibilityConflictFact@1, insert-or-compare on (attempt,
// requested fact, reason): read again it is the first fact byte for byte;
// the same key with another request is ErrEligibilityConflictDiffers
// (EX-3.eligibility-conflict-differs); found stays found.
func TestEX3EligibilityConflictFactStored(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	m := e.attemptWithEligibility(t, st.RunID, uuid.NewString())
	el, err := e.svc.FinalizeEligibility(ctx, m.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)
	ok, err := execution.ReadEligibilityFact(ctx, e.exec, eligibilityRead(el.Fact))
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ok.Answer)
	require.Nil(t, ok.Conflict)

	req := eligibilityRead(el.Fact)
	req.Fact.Digest = m.Manifest.Digest // another quadruple for the attempt's fact
	first, err := execution.ReadEligibilityFact(ctx, e.exec, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, first.Answer)
	require.Equal(t, contract.EligibilityConflictFactDiffers, first.Conflict.ReasonCode)
	require.Equal(t, el.Fact.Fact.Ref, first.Conflict.StoredRef)
	again, err := execution.ReadEligibilityFact(ctx, e.exec, req)
	require.NoError(t, err)
	require.Equal(t, string(first.ConflictBody), string(again.ConflictBody), "the first stored fact, byte for byte")

	other := req
	other.RunStepID = uuid.NewString()
	_, err = execution.ReadEligibilityFact(ctx, e.exec, other)
	require.ErrorIs(t, err, execution.ErrEligibilityConflictDiffers) // EX-3.eligibility-conflict-differs

	ident := eligibilityRead(el.Fact)
	ident.BillingAccountID = uuid.NewString()
	id, err := execution.ReadEligibilityFact(ctx, e.exec, ident)
	require.NoError(t, err)
	require.Equal(t, contract.EligibilityConflictIdentityDiffers, id.Conflict.ReasonCode)
	require.Equal(t, 2, e.count(t, "execution.eligibility_conflict_facts"))
}

// Issue 32: PostgreSQL refuses a changed, deleted, truncated or forged
// eligibility conflict fact, as the table owner:
// EX001.eligibility-conflicts-insert-only, EX001.eligibility-conflicts-no-truncate,
// and a body that does not name its row or names another fact than the
// attempt's (EX014.conflict-fact-forged).
func TestEX014EligibilityConflictFactGuarded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	m := e.attemptWithEligibility(t, st.RunID, uuid.NewString())
	el, err := e.svc.FinalizeEligibility(ctx, m.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)
	req := eligibilityRead(el.Fact)
	req.BillingAccountID = uuid.NewString()
	c, err := execution.ReadEligibilityFact(ctx, e.exec, req)
	require.NoError(t, err)
	require.NotNil(t, c.Conflict)
	const table = "execution.eligibility_conflict_facts"
	for _, stmt := range []string{"UPDATE " + table + " SET fact_body = fact_body", "DELETE FROM " + table, "TRUNCATE " + table} {
		_, err := e.exec.Exec(ctx, stmt)
		require.Equal(t, execution.CodeImmutable, db.SQLState(err), stmt)
	}
	forge := func(body string) error {
		_, err := e.exec.Exec(ctx, `INSERT INTO `+table+` SELECT execution_eligibility_conflict_fact_ref || '-x',
			execution_eligibility_conflict_fact_schema_version, execution_eligibility_conflict_fact_digest_algorithm_version,
			execution_eligibility_conflict_fact_digest, execution_attempt_id, requested_fact_ref, requested_fact_digest,
			reason_code || '-x', `+body+`, detected_at FROM `+table)
		return err
	}
	require.Equal(t, execution.CodeEligibilityConflictForged, db.SQLState(forge("fact_body")))
	require.Equal(t, execution.CodeEligibilityConflictForged, db.SQLState(forge(`jsonb_set(jsonb_set(jsonb_set(fact_body::jsonb,
		'{executionEligibilityConflictFactRef}', to_jsonb(execution_eligibility_conflict_fact_ref || '-x')),
		'{reasonCode}', to_jsonb(reason_code || '-x')), '{storedExecutionEligibilityFactRef}', '"eef-other"')::text`)))
	require.Equal(t, 1, e.count(t, table))
}
