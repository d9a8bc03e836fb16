package metering_test

import (
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/metering"
)

// TestME1UsageWorkWaitsForEveryRegisteredDimension (ME-1, issue 32 part 4):
// the attempt's manifest registers text.input_tokens and text.output_tokens;
// only the output tokens' usage has arrived. The eligibility Work records
// the input tokens as awaiting_evidence, stays active and writes no
// settlement input and no finish (Billing sees nothing of the attempt);
// once the input tokens' availability arrives, its generation supersedes
// the waiting Work and applies both dimensions in one transaction.
func TestME1UsageWorkWaitsForEveryRegisteredDimension(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(3201)
	b.owners.register(a.attemptID, dimIn, dimOut)
	b.ack(t, a.availability(b.owners, usage, dimOut, 1, contract.AvailabilityAvailable, ""))
	r := b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	require.Equal(t, receipt.StatePending, r.Lane.Eligibility.Coordination.State)

	out, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.NoError(t, err)
	require.Nil(t, out.Finished, "the Work stays active")
	require.Equal(t, []string{dimIn}, out.Awaiting)
	require.Zero(t, out.NewSnapshots)
	require.Zero(t, factCount(t, b.pool, ""), "no decision, MeterEvent or snapshot while a registered dimension awaits evidence")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`))
	inputs, err := metering.ReadAttemptSettlementInputs(t.Context(), b.pool, a.attemptID)
	require.NoError(t, err)
	require.Empty(t, inputs, "Billing's read of the attempt finds nothing: its finalization stays blocked")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.charge_dimension_awaits WHERE execution_attempt_id = $1 AND charge_dimension_key = $2`, a.attemptID, dimIn))
	var keys []string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT charge_dimension_keys FROM metering.attempt_charge_dimensions WHERE execution_attempt_id = $1`, a.attemptID).Scan(&keys))
	require.Equal(t, []string{dimIn, dimOut}, keys)

	// A retry of the same generation still waits (nothing new written).
	out, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{dimIn}, out.Awaiting)
	require.Zero(t, factCount(t, b.pool, ""))

	// The awaited dimension's evidence arrives: generation 2 supersedes the
	// waiting Work and applies both registered dimensions.
	b.ack(t, a.availability(b.owners, usage, dimIn, 1, contract.AvailabilityAvailable, ""))
	out, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.NotNil(t, out.Finished)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, int64(2), out.Finished.Outcome.Snapshots.Count)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes WHERE outcome_state = 'superseded'`))
	inputs, err = metering.ReadAttemptSettlementInputs(t.Context(), b.pool, a.attemptID)
	require.NoError(t, err)
	require.Len(t, inputs, 2)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`), "every Work finished")
	requireDenseChains(t, b.pool)
}

// TestME1UnregisteredUsageDimensionBlocks (ME-1, guard
// ME-1.dimension-not-registered): usage of a dimension the attempt's
// manifest does not register is a local conflict (Blocked@1), never a
// charge nobody expected; nothing is settled.
func TestME1UnregisteredUsageDimensionBlocks(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(3202)
	b.owners.register(a.attemptID, dimOut)
	b.ack(t, a.availability(b.owners, usage, dimOut, 1, contract.AvailabilityAvailable, ""))
	b.ack(t, a.availability(b.owners, usage, dimIn, 1, contract.AvailabilityAvailable, ""))
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	out, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.NotNil(t, out.Blocked)
	require.Nil(t, out.Finished)
	require.Zero(t, factCount(t, b.pool, ""))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`))
}

// TestGuardClausesME014RegisteredDimensions (ME-1): PostgreSQL refuses, for
// the metering role, an applied eligibility finish of a dispatched attempt
// without its stored registered set (ME014.applied-without-registered-set)
// or while a registered dimension has no settlement input
// (ME014.applied-with-dimension-uncommitted), an awaited dimension the
// attempt does not register (ME014.await-not-registered) and an empty set
// (ME014.registered-set-empty, a CHECK: 23514). The set and the awaits never
// change, for the superuser either (ME001.attempt-charge-dimensions-insert-only,
// ME001.charge-dimension-awaits-insert-only,
// ME001.attempt-charge-dimensions-no-truncate,
// ME001.charge-dimension-awaits-no-truncate).
func TestGuardClausesME014RegisteredDimensions(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	p := processor(t, b, nil)

	// An attempt waiting for its input tokens: registered set and await stored.
	a := newAttempt(3203)
	b.owners.register(a.attemptID, dimIn, dimOut)
	b.ack(t, a.availability(b.owners, usage, dimOut, 1, contract.AvailabilityAvailable, ""))
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	waiting := claimEligibility(t, b, time.Hour)
	out, err := p.Process(t.Context(), waiting)
	require.NoError(t, err)
	require.Equal(t, []string{dimIn}, out.Awaiting)
	h := waiting.Head
	finish := `INSERT INTO metering.work_finishes (work_ref, attempt_number, fencing_token, finished_ref, finished_digest, outcome_state, finished_body)
		VALUES ($1, $2, $3, 'mwf-forged-' || $1, repeat('f', 64), 'applied', '{}')`
	err = commitAs(t, role, execStep(t, finish, h.Work.Ref, h.AttemptNumber, h.FencingToken))
	require.Equal(t, metering.SQLStateDimensionsUncommitted, db.SQLState(err), "%v", err)
	require.ErrorContains(t, err, "have no settlement input")
	err = commitAs(t, role, execStep(t, `INSERT INTO metering.charge_dimension_awaits (execution_attempt_id, charge_dimension_key, work_ref, attempt_number, fencing_token)
		VALUES ($1, 'tools.calls', $2, $3, $4)`, a.attemptID, h.Work.Ref, h.AttemptNumber, h.FencingToken))
	require.Equal(t, metering.SQLStateDimensionsUncommitted, db.SQLState(err), "%v", err)

	// A dispatched attempt whose registered set was never stored.
	c := newAttempt(3204)
	b.ack(t, c.availability(b.owners, usage, dimOut, 1, contract.AvailabilityAvailable, ""))
	b.ack(t, c.eligibility(b.owners, contract.DispositionDispatched))
	bare := claimEligibility(t, b, time.Hour)
	require.Equal(t, c.attemptID, bare.Head.ExecutionAttemptID)
	err = commitAs(t, role, execStep(t, finish, bare.Head.Work.Ref, bare.Head.AttemptNumber, bare.Head.FencingToken))
	require.Equal(t, metering.SQLStateDimensionsUncommitted, db.SQLState(err), "%v", err)
	require.ErrorContains(t, err, "without its registered charge dimension set")
	err = commitAs(t, role, execStep(t, `INSERT INTO metering.attempt_charge_dimensions (execution_attempt_id, attempt_execution_manifest_ref,
		attempt_execution_manifest_digest, charge_dimension_registry_version, charge_dimension_keys)
		VALUES ($1, 'aem-x', repeat('a', 64), 'oceanway-charge-dimension-registry@1', '{}')`, c.attemptID))
	require.Equal(t, pgerrcode.CheckViolation, db.SQLState(err), "%v", err)

	// The set and the awaits never change (superuser pool).
	for _, stmt := range []string{
		`UPDATE metering.attempt_charge_dimensions SET charge_dimension_keys = '{text.input_tokens}'`,
		`DELETE FROM metering.attempt_charge_dimensions`,
		`UPDATE metering.charge_dimension_awaits SET recorded_at = recorded_at`,
		`DELETE FROM metering.charge_dimension_awaits`,
	} {
		err := commitAs(t, b.pool, execStep(t, stmt))
		require.Equal(t, metering.SQLStateInsertOnly, db.SQLState(err), "%s: %v", stmt, err)
	}
	// TRUNCATE ... CASCADE also fires the referencing table's truncate
	// trigger: each refusal must name the table truncated.
	for _, tbl := range []string{"charge_dimension_awaits", "attempt_charge_dimensions"} {
		err := commitAs(t, b.pool, execStep(t, `TRUNCATE metering.`+tbl+` CASCADE`))
		require.Equal(t, metering.SQLStateInsertOnly, db.SQLState(err), "TRUNCATE %s: %v", tbl, err)
		require.ErrorContains(t, err, "TRUNCATE on metering."+tbl+" is forbidden")
	}
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.charge_dimension_awaits`))
}

// TestME1RegisteredSetMustBeFrozenSorted (ME-1, guard
// ME-1.registered-set-frozen, ME-1.dimension-not-registered): a manifest
// answer whose dimension set is empty, unsorted or duplicated is a local
// conflict (Blocked@1): the Work neither waits on nor settles a set it
// cannot trust.
func TestME1RegisteredSetMustBeFrozenSorted(t *testing.T) {
	t.Parallel()
	for i, keys := range [][]string{{dimOut, dimIn}, {dimOut, dimOut}, {}} {
		b := workerSetup(t)
		a := newAttempt(3210 + i)
		b.owners.register(a.attemptID, keys...)
		b.ack(t, a.availability(b.owners, usage, dimOut, 1, contract.AvailabilityAvailable, ""))
		b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
		out, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, time.Hour))
		require.NoError(t, err, "%v", keys)
		require.NotNil(t, out.Blocked, "%v", keys)
		require.Empty(t, out.Awaiting)
		require.Zero(t, factCount(t, b.pool, ""))
		require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.attempt_charge_dimensions`))
	}
}
