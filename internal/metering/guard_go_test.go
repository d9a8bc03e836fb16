package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// Go clauses of the metering input processor and worker (issue 37): each
// test drives the write a Go check refuses and fails if the check is gone.

// TestGuardGoEligibilityFactConflict: an attempt whose fence already holds
// one eligibility fact refuses an event carrying another fact for the same
// attempt (non_retryable eligibility_fact_conflict, nothing written) instead
// of recording it as already_observed.
// Clause: ME-1.eligibility-fact-conflict.
func TestGuardGoEligibilityFactConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	before, err := state(t.Context(), b.pool)
	require.NoError(t, err)
	_, err = b.deliver(t, a.eligibility(b.owners, contract.DispositionNotDispatched))
	requireCode(t, err, false, metering.CodeEligibilityConflict) // ME-1.eligibility-fact-conflict
	require.ErrorIs(t, err, metering.ErrEligibilityConflict)
	after, err := state(t.Context(), b.pool)
	require.NoError(t, err)
	require.Equal(t, before, after, "a conflicting eligibility fact writes nothing")
}

// TestGuardGoWorkGenerationConflict: a stored Work generation whose digest
// differs from the one the input processor recomputes for the same lane
// and generation is non_retryable work_generation_conflict: the event is
// not bound to a Work it did not define.
// Clause: ME-1.work-generation-conflict.
func TestGuardGoWorkGenerationConflict(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched)) // the attempt's input fence
	// Generation 1 of the cost lane, stored with another body, as the
	// metering role (it holds INSERT on input_works), with its queue row
	// (ME013: a Work commits queued).
	_, err := b.pool.Exec(t.Context(), `WITH w AS (INSERT INTO metering.input_works (work_ref, work_schema_version, work_digest_algorithm_version,
		work_digest, execution_attempt_id, lane_kind, gateway_deployment_id, source_evidence_dimension_key, work_generation,
		operation_id, trigger_digest, work_body)
		VALUES ('miw-forged', '1', 'jcs-sha256-v1', repeat('f', 64), $1::uuid, 'provider_cost', $2, 'cost.usd', 1, $3::uuid, repeat('f', 64), '{}')
		RETURNING work_ref, lane_kind)
		INSERT INTO metering.pending_works (work_ref, lane_kind) SELECT work_ref, lane_kind FROM w`,
		a.attemptID, a.deployment, uuid.NewString())
	require.NoError(t, err)
	before, err := state(t.Context(), b.pool)
	require.NoError(t, err)
	_, err = b.deliver(t, a.availability(b.owners, cost, "cost.usd", 1, contract.AvailabilityPending, ""))
	requireCode(t, err, false, metering.CodeWorkConflict) // ME-1.work-generation-conflict
	require.ErrorIs(t, err, metering.ErrWorkConflict)
	after, err := state(t.Context(), b.pool)
	require.NoError(t, err)
	require.Equal(t, before, after, "a conflicting Work generation writes nothing")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works WHERE work_ref = 'miw-forged'`), "only the forged Work's own queue row")
}

// TestGuardGoFinishConflict: a Work already finished `applied` by its
// latest attempt is not finished again as `superseded` when its lane moves:
// the late worker's superseded finish is ErrFinishConflict, never reported
// as written, and the stored finish stays.
// Clause: ME-1.finish-conflict.
func TestGuardGoFinishConflict(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(1)
	dispatched(t, b, a)
	a1 := claimEligibility(t, b, time.Hour)
	out, err := p.Process(t.Context(), a1)
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, "")) // the lane moves to generation 2

	f, err := metering.FinishSupersededIfMoved(t.Context(), b.pool, a1)
	require.ErrorIs(t, err, metering.ErrFinishConflict) // ME-1.finish-conflict
	require.Nil(t, f)
	var state string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT outcome_state FROM metering.work_finishes WHERE work_ref = $1`, a1.Head.Work.Ref).Scan(&state))
	require.Equal(t, receipt.FinishApplied, state, "the applied finish stays")
}

// otherOperationValidation answers every availability validation with the
// Gateway's sealed receipt of another operation (a replayed answer): found,
// current, internally consistent, but not bound to the request.
type otherOperationValidation struct{ *fakeOwners }

func (o otherOperationValidation) ValidateAvailabilityCurrent(ctx context.Context, req gatewayread.AvailabilityValidationRequest) (gatewayread.AvailabilityValidationResult, error) {
	res, err := o.fakeOwners.ValidateAvailabilityCurrent(ctx, req)
	if err != nil || res.Answer != ownerread.Found {
		return res, err
	}
	r := *res.Value
	r.OperationID = uuid.NewString()
	r.Receipt = strict.Quadruple{Ref: "gacvr-" + r.OperationID}
	if _, err := contract.Seal(&r); err != nil {
		return gatewayread.AvailabilityValidationResult{}, err
	}
	return ownerread.FoundWith(&r, nil), nil
}

// TestGuardGoUsageValidationUnbound: the Gateway's Current Receipt bound
// into a usage basis must answer the worker's own validation request
// (operation, basis digest, snapshot, state version, purpose); a found,
// current receipt of another operation is an owner conflict: nothing is
// written and the Work stays queued.
// Clause: ME-1.usage-validation-unbound.
func TestGuardGoUsageValidationUnbound(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p, err := metering.NewProcessor(b.pool, metering.ProcessorConfig{Reads: otherOperationValidation{b.owners}})
	require.NoError(t, err)
	a := newAttempt(1)
	dispatched(t, b, a)
	_, err = p.Process(t.Context(), claimEligibility(t, b, 0))
	require.ErrorIs(t, err, metering.ErrOwnerConflictUnbound) // ME-1.usage-validation-unbound
	require.ErrorContains(t, err, "the receipt does not bind the request")
	nothingWritten(t, b)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`), "the Work stays queued")
}
