package execution_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
)

func finalizationRead(c execution.Closure, op string, manifest strict.Quadruple) executionread.RunExecutionFinalizationRead {
	return executionread.RunExecutionFinalizationRead{
		ContractVersion: contract.ReadRunExecutionFinalizationV1, Audience: executionread.AudienceBillingFinalization,
		Purpose: contract.PurposeBillingFinalization, FinalizationOperationID: op, InputManifest: manifest,
		RunID: c.Fact.RunID, BillingReservationID: c.Fact.BillingReservationID, BillingAccountID: c.Fact.BillingAccountID,
		RunAdmissionManifest: c.Fact.RunAdmissionManifest, Finalization: c.Fact.Fact, StateVersion: c.Fact.StateVersion,
		AttemptSet: c.AttemptSet.Manifest, AttemptCount: int64(len(c.Fact.Attempts)),
	}
}

func inputManifest(d string) strict.Quadruple {
	return strict.Quadruple{Ref: "fim-test", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: d}
}

// BI-1 / EX-2: readRunExecutionFinalization@1 issues the one Execution
// closure receipt of a Billing finalization: found only for a closed run
// whose closure equals the request item by item, bound to the operation and
// input manifest (a repeat issues the same digest, another manifest another
// receipt); not_found while the run accepts attempts or is unknown;
// conflicting with a RunExecutionFinalizationConflictFact@1 (no case ref);
// an unknown version, purpose or audience is refused before any read.
func TestBI1ReadRunExecutionFinalizationIssuesTheClosureReceipt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	step := uuid.NewString()
	e.attemptWithEligibility(t, st.RunID, step)
	e.attemptWithEligibility(t, st.RunID, step)
	c, err := e.svc.CloseRun(ctx, st.RunID)
	require.NoError(t, err)

	op := uuid.NewString()
	m1 := inputManifest("5555555555555555555555555555555555555555555555555555555555555555")
	ans, err := execution.ReadRunExecutionFinalization(ctx, e.exec, finalizationRead(c, op, m1))
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans.Answer)
	back, err := contract.DecodeRunExecutionFinalizationReceipt(ans.Body)
	require.NoError(t, err, "the receipt decodes strictly and its digest recomputes")
	require.Equal(t, ans.Value, back)
	require.Equal(t, op, back.FinalizationOperationID)
	require.Equal(t, m1, back.InputManifest)
	require.Equal(t, c.Fact.Fact, back.Finalization)
	require.Equal(t, c.AttemptSet.Manifest, back.AttemptSet)
	require.EqualValues(t, 2, back.AttemptCount)

	again, err := execution.ReadRunExecutionFinalization(ctx, e.exec, finalizationRead(c, op, m1))
	require.NoError(t, err)
	require.Equal(t, ans.Value.Receipt, again.Value.Receipt, "the same operation and manifest give the same receipt quadruple")
	other, err := execution.ReadRunExecutionFinalization(ctx, e.exec, finalizationRead(c, op, inputManifest("6666666666666666666666666666666666666666666666666666666666666666")))
	require.NoError(t, err)
	require.NotEqual(t, ans.Value.Receipt.Ref, other.Value.Receipt.Ref)
	require.NotEqual(t, ans.Value.Receipt.Digest, other.Value.Receipt.Digest, "a receipt cannot be replayed for another manifest")

	open := e.open(t)
	req := finalizationRead(c, op, m1)
	req.RunID = open.RunID
	ans, err = execution.ReadRunExecutionFinalization(ctx, e.exec, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans.Answer, "a run still accepting attempts is a wait, not a negative fact")
	req.RunID = uuid.NewString()
	ans, err = execution.ReadRunExecutionFinalization(ctx, e.exec, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans.Answer)

	req = finalizationRead(c, op, m1)
	req.AttemptCount = 1
	ans, err = execution.ReadRunExecutionFinalization(ctx, e.exec, req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, ans.Answer)
	require.Nil(t, ans.Value)
	cf, err := contract.DecodeRunExecutionFinalizationConflictFact(ans.ConflictBody)
	require.NoError(t, err)
	require.Equal(t, "state_version_or_count_differs", cf.ReasonCode)

	for name, mutate := range map[string]func(r *executionread.RunExecutionFinalizationRead){
		"version": func(r *executionread.RunExecutionFinalizationRead) {
			r.ContractVersion = "readRunExecutionFinalization@2"
		},
		"purpose":   func(r *executionread.RunExecutionFinalizationRead) { r.Purpose = "metering_input" },
		"audience":  func(r *executionread.RunExecutionFinalizationRead) { r.Audience = "admin" },
		"operation": func(r *executionread.RunExecutionFinalizationRead) { r.FinalizationOperationID = "" },
		"bare manifest": func(r *executionread.RunExecutionFinalizationRead) {
			r.InputManifest = strict.Quadruple{Ref: "fim-test"}
		},
	} {
		r := finalizationRead(c, op, m1)
		mutate(&r)
		_, err := execution.ReadRunExecutionFinalization(ctx, e.exec, r)
		require.ErrorIs(t, err, ownerread.ErrInvalidRequest, name)
	}
}
