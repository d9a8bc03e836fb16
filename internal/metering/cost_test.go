package metering_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

const costDim = "cost.usd_micros"

// sqlStateFenced is 00004's refusal of a token that is not the Work's latest
// attempt (or of a fact for a finished Work).
const sqlStateFenced = "ME003"

// costReads answers the cost bootstrap read from the snapshots the fixtures
// registered with fakeOwners, filled in as the Gateway stores them (slot
// key, binding, route, reason, evidence). unavailable fails every read;
// evidenceConflict makes the Gateway answer conflicting for the evidence.
type costReads struct {
	owners           *fakeOwners
	mu               sync.Mutex
	attempts         map[string]attemptFixture
	quantity         string
	unavailable      atomic.Bool
	evidenceConflict atomic.Bool
}

func newCostReads(o *fakeOwners, attempts ...attemptFixture) *costReads {
	r := &costReads{owners: o, attempts: map[string]attemptFixture{}, quantity: "1234500"}
	for _, a := range attempts {
		r.attempts[a.attemptID] = a
	}
	return r
}

func (r *costReads) ReadCostSource(_ context.Context, req metering.CostSourceRead) (metering.CostSource, error) {
	if r.unavailable.Load() {
		return metering.CostSource{}, errUnavailable
	}
	r.owners.mu.Lock()
	s, ok := r.owners.snaps[req.Availability]
	r.owners.mu.Unlock()
	if !ok {
		return metering.CostSource{Availability: ownerread.Missing[*contract.AvailabilitySnapshot]()}, nil
	}
	r.mu.Lock()
	a := r.attempts[req.ExecutionAttemptID]
	r.mu.Unlock()
	snap := *s
	snap.SlotKey = contract.SlotKey{ExecutionAttemptID: a.attemptID, GatewayDeploymentID: a.deployment, AttemptManifest: a.manifest}
	snap.Binding, snap.RouteSnapshot = quad(fmt.Sprintf("arb-%d", a.n)), quad(fmt.Sprintf("grs-%d", a.n))
	snap.ReasonCode = "provider_" + snap.State
	var src metering.CostSource
	src.Manifest = ownerread.FoundWith(&contract.AttemptExecutionManifest{Manifest: a.manifest, RunID: a.runID,
		RunStepID: id("step", a.n), ExecutionAttemptID: a.attemptID, GatewayDeploymentID: a.deployment}, nil)
	if snap.State == contract.AvailabilityAvailable {
		snap.Evidence = quad("gpe-" + strings.TrimPrefix(snap.Snapshot.Ref, "gas-"))
		ev := &contract.ProviderEvidence{Evidence: snap.Evidence, ExecutionAttemptID: a.attemptID, GatewayDeploymentID: a.deployment,
			Binding: snap.Binding, EvidenceKind: cost, DimensionKey: snap.DimensionKey, Quantity: r.quantity}
		src.Evidence = gatewayread.ProviderEvidenceResult{Result: ownerread.FoundWith(ev, nil)}
		if r.evidenceConflict.Load() {
			src.Evidence = gatewayread.ProviderEvidenceResult{Result: ownerread.Conflict[*contract.ProviderEvidence]("stored evidence does not recompute")}
		}
	}
	src.Availability = ownerread.FoundWith(&snap, nil)
	return src, nil
}

func claimOne(t *testing.T, b *bundle, lease time.Duration) *metering.Attempt {
	t.Helper()
	a, err := metering.Claim(t.Context(), b.pool, lease)
	require.NoError(t, err)
	return a
}

func countRows(t *testing.T, b *bundle, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

type costRows struct {
	costFacts, processing, finishes, blocks, evidence, queued int
	coordination                                              string
}

func costRowsOf(t *testing.T, b *bundle, a attemptFixture) costRows {
	t.Helper()
	var r costRows
	works := `(SELECT work_ref FROM metering.input_works WHERE execution_attempt_id = $1 AND lane_kind = 'provider_cost')`
	r.costFacts = countRows(t, b, `SELECT count(*) FROM metering.provider_cost_facts WHERE work_ref IN `+works, a.attemptID)
	r.processing = countRows(t, b, `SELECT count(*) FROM metering.cost_processing_facts WHERE work_ref IN `+works, a.attemptID)
	r.finishes = countRows(t, b, `SELECT count(*) FROM metering.work_finishes WHERE work_ref IN `+works, a.attemptID)
	r.blocks = countRows(t, b, `SELECT count(*) FROM metering.work_blocks WHERE work_ref IN `+works, a.attemptID)
	r.evidence = countRows(t, b, `SELECT count(DISTINCT evidence_digest) FROM metering.work_blocks WHERE work_ref IN `+works, a.attemptID)
	r.queued = countRows(t, b, `SELECT count(*) FROM metering.pending_works WHERE work_ref IN `+works, a.attemptID)
	err := b.pool.QueryRow(t.Context(), `SELECT state FROM metering.cost_lane_coordination WHERE execution_attempt_id = $1`, a.attemptID).Scan(&r.coordination)
	if !errors.Is(err, pgx.ErrNoRows) {
		require.NoError(t, err)
	}
	return r
}

// costReceiptState redelivers an older cost event of the lane (already
// observed) and returns the coordination its new receipt freezes.
func costReceiptState(t *testing.T, b *bundle, a attemptFixture, state string) receipt.ProviderCostCoordination {
	t.Helper()
	r := b.ack(t, a.availability(b.owners, cost, costDim, 1, state, ""))
	require.Equal(t, receipt.OutcomeAlreadyObserved, r.Outcome)
	require.NoError(t, r.Validate())
	return r.Lane.ProviderCost.Coordination
}

// TestME2ProviderCostFiveStates: each Gateway cost availability state has
// its one strict result (ME-2, ADR-031 "Cost Work对五种Availability都有严格收敛结果"):
// available → ProviderCostFact + processing fact available_applied; pending →
// waiting_for_evidence; not_reported | unavailable → no_cost_evidence and no
// cost fact at all (never a zero cost); conflicting → reconciliation_required.
// Each commits the processing fact, the availability_processed finish and the
// lane CAS; later receipts of the lane freeze that state; nothing reaches the
// eligibility lane (cost never triggers customer charging).
func TestME2ProviderCostFiveStates(t *testing.T) {
	t.Parallel()
	for n, c := range []struct {
		state, laneState, outcome string
		costFacts                 int
	}{
		{contract.AvailabilityAvailable, receipt.StateAvailabilityProcessed, meterfacts.OutcomeAvailableApplied, 1},
		{contract.AvailabilityPending, receipt.StateWaitingForEvidence, meterfacts.OutcomeWaitingForEvidence, 0},
		{contract.AvailabilityNotReported, receipt.StateNoCostEvidence, meterfacts.OutcomeNoCostEvidence, 0},
		{contract.AvailabilityUnavailable, receipt.StateNoCostEvidence, meterfacts.OutcomeNoCostEvidence, 0},
		{contract.AvailabilityConflicting, receipt.StateReconciliationRequired, meterfacts.OutcomeReconciliationNeeded, 0},
	} {
		t.Run(c.state, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			a := newAttempt(300 + n)
			reads := newCostReads(b.owners, a)
			first := b.ack(t, a.availability(b.owners, cost, costDim, 2, c.state, ""))
			require.Equal(t, receipt.StatePending, first.Lane.ProviderCost.Coordination.State)

			res, err := metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, claimOne(t, b, time.Minute))
			require.NoError(t, err)
			require.Equal(t, c.laneState, res.State)
			require.Equal(t, c.outcome, res.Processing.Outcome)
			require.Equal(t, c.state, res.Processing.AvailabilityState)
			require.Equal(t, receipt.FinishAvailabilityProcessed, res.Finished.Outcome.State)
			require.Equal(t, res.Processing.Processing, *res.Finished.Outcome.Processing, "the finish binds the processing fact")
			require.Equal(t, costRows{costFacts: c.costFacts, processing: 1, finishes: 1, coordination: c.laneState}, costRowsOf(t, b, a))
			require.Zero(t, countRows(t, b, `SELECT count(*) FROM metering.provider_cost_facts WHERE amount = 0`), "never a zero cost")
			if c.costFacts == 1 {
				require.Equal(t, "1.2345", res.Cost.Amount)
				require.Equal(t, "USD", res.Cost.Currency)
				require.Equal(t, res.Cost.Fact, *res.Processing.ProviderCostFact)
				var amount string
				require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT amount::text FROM metering.provider_cost_facts`).Scan(&amount))
				require.Equal(t, "1.2345", amount)
			} else {
				require.Nil(t, res.Cost)
				require.Nil(t, res.Processing.ProviderCostFact)
			}

			coord := costReceiptState(t, b, a, c.state)
			require.Equal(t, c.laneState, coord.State)
			require.Nil(t, coord.ActiveWork)
			require.Equal(t, res.Processing.Processing, coord.Processed.Processing)
			require.Equal(t, res.Finished.Finished, coord.Processed.Finished)
			if c.state == contract.AvailabilityConflicting {
				require.Equal(t, contract.AvailabilityConflicting, coord.AvailabilityState)
				require.Equal(t, "provider_conflicting", coord.StateReasonCode)
			}

			// ME-2: cost never reaches the eligibility lane or settlement input.
			require.Zero(t, countRows(t, b, `SELECT count(*) FROM metering.input_works WHERE lane_kind = 'eligibility_and_settlement_input'`))
			require.Zero(t, countRows(t, b, `SELECT eligibility_fence_revision FROM metering.input_fences WHERE execution_attempt_id = $1`, a.attemptID))

			// A newer Gateway head schedules a new generation: pending again.
			next := b.ack(t, a.availability(b.owners, cost, costDim, 3, contract.AvailabilityAvailable, ""))
			require.Equal(t, receipt.StatePending, next.Lane.ProviderCost.Coordination.State)
			require.EqualValues(t, 2, next.Lane.ProviderCost.LatestWorkGeneration)
		})
	}
}

// TestME2LocalConflictBlocksSameWorkThenSucceeds: a proven local
// deterministic conflict (no cost mapping for the source dimension; the
// Gateway's evidence answering conflicting) writes
// ProviderCostProcessingConflictEvidence@1 + MeteringInputWorkAttemptBlocked@1,
// sets blocked_on_processing_conflict and releases the lease — no processing
// fact, cost fact, finish or terminal CAS; the same Work (operation,
// generation) is retried by a new attempt and succeeds after the fix.
func TestME2LocalConflictBlocksSameWorkThenSucceeds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(320)
	reads := newCostReads(b.owners, a)
	b.ack(t, a.availability(b.owners, cost, costDim, 2, contract.AvailabilityAvailable, ""))

	first := claimOne(t, b, time.Hour)
	res, err := metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads, Mappings: map[string]metering.CostUnit{}}, first)
	require.NoError(t, err)
	require.Equal(t, receipt.StateBlockedOnProcessingConflict, res.State)
	require.Equal(t, receipt.CauseProviderCostProcessingConflict, res.Blocked.BlockingCause.Kind)
	require.Equal(t, res.Evidence.Evidence, res.Blocked.BlockingCause.Fact)
	require.Equal(t, receipt.CostCauseMeteringDeterministicValidation, res.Evidence.Cause.Kind)
	require.Equal(t, "provider_cost_mapping", res.Evidence.Cause.ValidationStage)
	require.Equal(t, costDim, res.Evidence.SourceEvidenceDimensionKey, "deployment and dimension are never trimmed")
	require.NoError(t, res.Evidence.VerifyDigest())
	require.NoError(t, res.Blocked.VerifyDigest())
	require.Equal(t, costRows{blocks: 1, evidence: 1, queued: 1, coordination: receipt.StateBlockedOnProcessingConflict}, costRowsOf(t, b, a))

	coord := costReceiptState(t, b, a, contract.AvailabilityAvailable)
	require.Equal(t, receipt.StateBlockedOnProcessingConflict, coord.State)
	require.Equal(t, first.Head.Work, coord.ActiveWork.Work, "the same Work stays active")
	require.Equal(t, res.Blocked.Blocked, *coord.Blocked)

	// The Gateway evidence answering conflicting blocks the next attempt too
	// (source_identity), with its own evidence; still the same Work.
	reads.evidenceConflict.Store(true)
	second := claimOne(t, b, time.Hour) // the lease was released
	require.Equal(t, first.Head.Work, second.Head.Work)
	require.EqualValues(t, 2, second.Head.AttemptNumber)
	res, err = metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, second)
	require.NoError(t, err)
	require.Equal(t, "source_identity", res.Evidence.Cause.ValidationStage)
	require.Equal(t, costRows{blocks: 2, evidence: 2, queued: 1, coordination: receipt.StateBlockedOnProcessingConflict}, costRowsOf(t, b, a))

	// After the fix the same Work, operation and generation succeed.
	reads.evidenceConflict.Store(false)
	third := claimOne(t, b, time.Hour)
	require.Equal(t, first.Head.Work, third.Head.Work)
	require.Equal(t, first.Head.OperationID, third.Head.OperationID)
	res, err = metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, third)
	require.NoError(t, err)
	require.Equal(t, receipt.StateAvailabilityProcessed, res.State)
	require.EqualValues(t, 3, res.Finished.AttemptNumber)
	require.Equal(t, costRows{costFacts: 1, processing: 1, finishes: 1, blocks: 2, evidence: 2, coordination: receipt.StateAvailabilityProcessed}, costRowsOf(t, b, a))

	d, err := metering.ReadCostDiagnostics(t.Context(), b.pool)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{receipt.StateAvailabilityProcessed: 1}, d.ByState)
	require.Equal(t, "incomplete_best_effort", d.Completeness, "diagnostics say they are incomplete")
}

// TestME2CostRetryableWritesNothing: an owner read that fails is retryable
// with no fact, finish, block or CAS (the attempt keeps its lease); an old
// token is fenced; a Work whose lane moved on finishes superseded without
// any business fact.
func TestME2CostRetryableWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(330)
	reads := newCostReads(b.owners, a)
	b.ack(t, a.availability(b.owners, cost, costDim, 1, contract.AvailabilityPending, ""))

	old := claimOne(t, b, 0) // an expired lease: another worker may take over
	reads.unavailable.Store(true)
	_, err := metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, old)
	require.ErrorIs(t, err, metering.ErrCostSourceUnavailable)
	require.Equal(t, costRows{queued: 1}, costRowsOf(t, b, a))
	reads.unavailable.Store(false)

	current := claimOne(t, b, time.Hour)
	_, err = metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, old)
	require.ErrorIs(t, err, metering.ErrFenced, "the old token writes nothing")
	require.Equal(t, costRows{queued: 1}, costRowsOf(t, b, a))

	// A newer head while current runs: the input processor supersedes it; the
	// late worker gets the same superseded finish and writes no cost fact.
	b.ack(t, a.availability(b.owners, cost, costDim, 2, contract.AvailabilityAvailable, ""))
	res, err := metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, current)
	require.NoError(t, err)
	require.Equal(t, receipt.FinishSuperseded, res.State)
	require.EqualValues(t, 2, res.Finished.Outcome.SupersededByWorkGeneration)
	require.Nil(t, res.Processing)
	require.Equal(t, costRows{finishes: 1, queued: 1}, costRowsOf(t, b, a))

	res, err = metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, claimOne(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.StateAvailabilityProcessed, res.State)
	require.EqualValues(t, 2, res.Processing.WorkGeneration)
}

// TestME2CostDatabaseGuards: PostgreSQL refuses edits of the cost facts,
// evidence and blocks to the least-privileged role (no grant) and to
// everyone (ME001), refuses a finished generation changing its result or
// the coordination moving to an older generation (ME003), a processing
// outcome that does not match the availability, and a cost fact on a
// no-cost outcome.
func TestME2CostDatabaseGuards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(340)
	reads := newCostReads(b.owners, a)
	b.ack(t, a.availability(b.owners, cost, costDim, 1, contract.AvailabilityAvailable, ""))
	_, err := metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads, Mappings: map[string]metering.CostUnit{}}, claimOne(t, b, time.Hour))
	require.NoError(t, err)
	res, err := metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, claimOne(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.StateAvailabilityProcessed, res.State)
	// A second lane's Work, claimed and unfinished: the rows below are refused
	// by the constraints, not by the fencing trigger.
	other := newAttempt(341)
	b.ack(t, other.availability(b.owners, cost, costDim, 1, contract.AvailabilityPending, ""))
	claimOne(t, b, time.Hour)

	for _, c := range []struct {
		sql, state string
		asRole     bool
	}{
		{"UPDATE metering.provider_cost_facts SET amount = 0", pgerrcode.InsufficientPrivilege, true},
		{"DELETE FROM metering.cost_processing_facts", pgerrcode.InsufficientPrivilege, true},
		{"UPDATE metering.work_blocks SET evidence_body = '{}'", pgerrcode.InsufficientPrivilege, true},
		{"DELETE FROM metering.cost_lane_coordination", pgerrcode.InsufficientPrivilege, true},
		{"UPDATE metering.provider_cost_facts SET amount = 0", metering.SQLStateInsertOnly, false},
		{"DELETE FROM metering.cost_processing_facts", metering.SQLStateInsertOnly, false},
		{"DELETE FROM metering.work_blocks", metering.SQLStateInsertOnly, false},
		// An old token (attempt 1 was blocked, attempt 2 finished) never writes a cost fact.
		{`INSERT INTO metering.cost_processing_facts (processing_ref, processing_digest, work_ref, attempt_number, fencing_token, availability_state, processing_outcome, processing_body)
		  SELECT 'p-old', repeat('b', 64), work_ref, attempt_number, fencing_token, 'pending', 'waiting_for_evidence', '{}'
		  FROM metering.work_attempts WHERE attempt_number = 1`, sqlStateFenced, true},
		{"DELETE FROM metering.cost_lane_coordination", metering.SQLStateCostCoordination, false},
		// A finished generation never changes its result, even to blocked...
		{"UPDATE metering.cost_lane_coordination SET state = 'no_cost_evidence'", metering.SQLStateCostCoordination, true},
		// ...and the coordination never goes back to an older generation.
		{"UPDATE metering.cost_lane_coordination SET work_generation = 0", metering.SQLStateCostCoordination, true},
		// The outcome is the one the availability fixes; only available_applied names a cost fact.
		{`INSERT INTO metering.cost_processing_facts (processing_ref, processing_digest, work_ref, attempt_number, fencing_token, availability_state, processing_outcome, processing_body)
		  SELECT 'p-x', repeat('a', 64), work_ref, attempt_number, fencing_token, 'not_reported', 'waiting_for_evidence', '{}'
		  FROM metering.work_attempts WHERE work_ref IN (SELECT work_ref FROM metering.pending_works)`, pgerrcode.CheckViolation, true},
		{`INSERT INTO metering.cost_processing_facts (processing_ref, processing_digest, work_ref, attempt_number, fencing_token, availability_state, processing_outcome, provider_cost_fact_ref, processing_body)
		  SELECT 'p-y', repeat('a', 64), work_ref, attempt_number, fencing_token, 'unavailable', 'no_cost_evidence',
		    (SELECT provider_cost_fact_ref FROM metering.provider_cost_facts), '{}'
		  FROM metering.work_attempts WHERE work_ref IN (SELECT work_ref FROM metering.pending_works)`, pgerrcode.CheckViolation, true},
	} {
		err := pgx.BeginFunc(t.Context(), b.pool, func(tx pgx.Tx) error {
			if c.asRole {
				if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_metering"); err != nil {
					return err
				}
			}
			_, err := tx.Exec(t.Context(), c.sql)
			return err
		})
		require.Equal(t, c.state, db.SQLState(err), "%s: %v", c.sql, err)
	}
}

// ownersWithCost serves the worker's owner reads and the cost bootstrap read.
type ownersWithCost struct {
	*fakeOwners
	*costReads
}

// TestME2WorkerRunsTheCostLane: the metering worker claims provider_cost
// Work on its own lane and processes it (processCostWork): a pending head
// then a corrected available head end with one cost fact for the latest
// generation; the older generation is superseded.
func TestME2WorkerRunsTheCostLane(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(350)
	reads := newCostReads(b.owners, a)
	b.ack(t, a.availability(b.owners, cost, costDim, 1, contract.AvailabilityPending, ""))
	b.ack(t, a.availability(b.owners, cost, costDim, 2, contract.AvailabilityAvailable, ""))
	w, err := metering.NewWorker(b.pool, metering.WorkerConfig{Processor: metering.ProcessorConfig{Reads: ownersWithCost{b.owners, reads}},
		Lanes: []string{receipt.LaneProviderCost}})
	require.NoError(t, err)
	require.NoError(t, w.RunOnce(t.Context()))
	s := w.Stats()
	require.EqualValues(t, 1, s.Applied)
	require.EqualValues(t, 1, s.Superseded)
	require.Equal(t, costRows{costFacts: 1, processing: 1, finishes: 2, coordination: receipt.StateAvailabilityProcessed}, costRowsOf(t, b, a))
}
