package metering_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/metering"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

const (
	dimIn  = "text.input_tokens"
	dimOut = "text.output_tokens"
)

var errInjected = errors.New("injected failure")

// workerSetup is setup plus the metering outbox's release (the worker
// appends metering.settlement-input.current-changed@1 with its delivery).
func workerSetup(t *testing.T) *bundle {
	t.Helper()
	b := setup(t)
	_, err := release.Bootstrap(t.Context(), b.pool, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	return b
}

func processor(t *testing.T, b *bundle, failAt func(string) error) *metering.Processor {
	t.Helper()
	p, err := metering.NewProcessor(b.pool, metering.ProcessorConfig{Reads: b.owners, FailAt: failAt})
	require.NoError(t, err)
	return p
}

func claimEligibility(t *testing.T, b *bundle, lease time.Duration) *metering.Attempt {
	t.Helper()
	a, err := metering.ClaimLane(t.Context(), b.pool, receipt.LaneEligibility, lease)
	require.NoError(t, err)
	return a
}

// dispatched delivers usage revision 1 of two dimensions, then the
// attempt's eligibility: one usage Work (generation 1) with both inputs.
func dispatched(t *testing.T, b *bundle, a attemptFixture) {
	t.Helper()
	b.ack(t, a.availability(b.owners, usage, dimOut, 1, contract.AvailabilityAvailable, ""))
	b.ack(t, a.availability(b.owners, usage, dimIn, 1, contract.AvailabilityPending, ""))
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
}

func dimensionOf(a attemptFixture, key string) string {
	return envelope.SettlementDimensionID(id("reservation", a.n), a.runID, id("step", a.n), a.attemptID, key)
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

// factCount counts the business facts written with a token (empty: any token).
func factCount(t *testing.T, pool *pgxpool.Pool, token string) int {
	t.Helper()
	n := 0
	for _, table := range []string{"eligibility_decisions", "meter_events", "settlement_input_snapshots"} {
		n += count(t, pool, fmt.Sprintf(`SELECT count(*) FROM metering.%s WHERE $1 = '' OR fencing_token::text = $1`, table), token)
	}
	return n
}

// requireDenseChains: every dimension's versions are 1..n, each v > 1
// pointing at the exact v - 1 (ref and version), the pointer at n, and one
// event per version with revision = version and the same predecessor.
func requireDenseChains(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	require.Zero(t, count(t, pool, `
		SELECT count(*) FROM (
		  SELECT settlement_dimension_id, max(state_version) AS top, count(*) AS n
		  FROM metering.settlement_input_snapshots GROUP BY settlement_dimension_id) c
		LEFT JOIN metering.settlement_input_current p USING (settlement_dimension_id)
		WHERE c.top <> c.n OR p.state_version IS DISTINCT FROM c.top`), "dense from 1, pointer at the top")
	require.Zero(t, count(t, pool, `
		SELECT count(*) FROM metering.settlement_input_snapshots s
		LEFT JOIN metering.settlement_input_snapshots p
		  ON p.settlement_dimension_id = s.settlement_dimension_id AND p.state_version = s.state_version - 1
		WHERE s.state_version > 1 AND (p.snapshot_ref IS DISTINCT FROM s.predecessor_snapshot_ref)`), "exact predecessors")
	rows, err := pool.Query(context.Background(), `
		SELECT s.snapshot_body, e.event_envelope
		FROM metering.settlement_input_snapshots s
		LEFT JOIN outbox.outbox_events e ON e.aggregate_id = s.settlement_dimension_id::text AND e.aggregate_revision = s.state_version
		  AND e.event_type = 'metering.settlement-input.current-changed@1'`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var body string
		var env *string
		require.NoError(t, rows.Scan(&body, &env))
		require.NotNil(t, env, "every snapshot version has its event")
		s, err := settlement.Decode([]byte(body))
		require.NoError(t, err)
		e, err := envelope.DecodeEnvelope([]byte(*env))
		require.NoError(t, err)
		p, err := envelope.PayloadOf[envelope.MeteringSettlementInputCurrentChangedV1Payload](e)
		require.NoError(t, err)
		require.Equal(t, s.Snapshot, p.SettlementInputSnapshot())
		require.Equal(t, s.StateVersion, p.SettlementInputStateVersion)
		if s.Predecessor == nil {
			require.Equal(t, "none", p.PredecessorSettlementInput.State)
		} else {
			require.Equal(t, s.Predecessor.Snapshot.Ref, p.PredecessorSettlementInput.SettlementInputSnapshotRef)
			require.Equal(t, s.Predecessor.Snapshot.Digest, p.PredecessorSettlementInput.SettlementInputSnapshotDigest)
			require.Equal(t, s.Predecessor.StateVersion, p.PredecessorSettlementInput.SettlementInputStateVersion)
		}
	}
	require.NoError(t, rows.Err())
	require.Zero(t, count(t, pool, `
		SELECT count(*) FROM outbox.outbox_events e
		WHERE e.event_type = 'metering.settlement-input.current-changed@1'
		  AND NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d WHERE d.event_id = e.event_id AND d.destination = 'billing_settlement_catch_up')`),
		"every settlement input event has its billing delivery")
}

// TestME1SettlementInputChainsAndEvents (ME-1): usage Work applies one Current
// chain per attempt × charge dimension (decision, MeterEvent when measured,
// snapshot, pointer, event + billing delivery); a corrected usage revision
// appends version 2 of that dimension only, with its exact predecessor.
func TestME1SettlementInputChainsAndEvents(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(1)
	dispatched(t, b, a)
	out, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, 2, out.NewSnapshots)
	require.Equal(t, int64(2), out.Finished.Outcome.Snapshots.Count)

	measured, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dimensionOf(a, dimOut))
	require.NoError(t, err)
	require.Equal(t, int64(1), measured.Ref.StateVersion)
	s := measured.Snapshot
	require.Equal(t, "1000", s.Quantity)
	require.Equal(t, "3", s.TargetNetAmount, "1000 tokens × 0.003 credits, exact")
	require.Equal(t, settlement.DecisionEligible, s.Decision.Decision)
	require.NotNil(t, s.MeterEvent)
	require.Equal(t, settlement.ReconciliationNotRequired, s.ReconciliationState)
	pending, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dimensionOf(a, dimIn))
	require.NoError(t, err)
	require.Nil(t, pending.Snapshot.MeterEvent, "pending usage has no MeterEvent")
	require.Equal(t, "0", pending.Snapshot.TargetNetAmount)
	require.Equal(t, settlement.ReconciliationAwaitingEvidence, pending.Snapshot.ReconciliationState)
	// The quantity is the strict union measured | none (issue 32 part 4):
	// the unmeasured dimension says none, never a measured 0.
	require.False(t, pending.Snapshot.Measured())
	require.Contains(t, string(pending.Body), `"quantity":{"kind":"none"}`)
	require.True(t, measured.Snapshot.Measured())
	require.Contains(t, string(measured.Body), `"quantity":{"kind":"measured","quantity":"1000"}`)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.eligibility_decisions`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.meter_events`))

	// The pending dimension becomes available: generation 2, version 2 of it only.
	b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, ""))
	out, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, 1, out.NewSnapshots, "the unchanged dimension gets no new version")
	v2, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dimensionOf(a, dimIn))
	require.NoError(t, err)
	require.Equal(t, int64(2), v2.Ref.StateVersion)
	require.Equal(t, pending.Ref, *v2.Snapshot.Predecessor, "exact predecessor five-tuple")
	require.Equal(t, "2", v2.Snapshot.TargetNetAmount, "2000 × 0.001")
	v1, err := metering.ReadSettlementInputAt(t.Context(), b.pool, dimensionOf(a, dimIn), 1)
	require.NoError(t, err)
	require.Equal(t, pending.Ref, v1.Ref, "version 1 is immutable")
	_, err = metering.ReadCurrentSettlementInput(t.Context(), b.pool, dimensionOf(a, "text.other"))
	require.ErrorIs(t, err, metering.ErrNoSettlementInput)

	require.Equal(t, 3, count(t, b.pool, `SELECT count(*) FROM outbox.outbox_events WHERE event_type = 'metering.settlement-input.current-changed@1'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`), "every Work finished")
	requireDenseChains(t, b.pool)
}

// TestME1NotDispatchedTerminalNone (ME-1, GW-1): not_dispatched needs no gateway usage;
// its Work writes an ineligible decision and a terminal-none snapshot
// (target amount 0) on the not-dispatched dimension.
func TestME1NotDispatchedTerminalNone(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(2)
	b.ack(t, a.eligibility(b.owners, contract.DispositionNotDispatched))
	out, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	cur, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dimensionOf(a, settlement.ChargeDimensionNotDispatched))
	require.NoError(t, err)
	s := cur.Snapshot
	require.Equal(t, settlement.DecisionIneligible, s.Decision.Decision)
	require.Equal(t, settlement.BasisNotDispatched, s.Basis.Kind)
	require.Equal(t, quad("and-2"), s.Basis.NotDispatchedFact)
	require.Nil(t, s.MeterEvent)
	require.Equal(t, "0", s.TargetNetAmount)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.eligibility_decisions WHERE decision = 'ineligible'`))
	requireDenseChains(t, b.pool)
}

// TestME1SnapshotEventAtomic (ME-1): a failure injected at any point of the
// processing transaction (after the decision, the snapshot, the pointer
// CAS, the event append, before the finish) leaves nothing: no fact, no
// event, no delivery, no finish, the Work still queued; the retry applies.
func TestME1SnapshotEventAtomic(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(3)
	dispatched(t, b, a)
	for _, stage := range []string{"decision", "snapshot", "pointer", "append", "finish"} {
		p := processor(t, b, func(s string) error {
			if s == stage {
				return errInjected
			}
			return nil
		})
		att := claimEligibility(t, b, 0)
		_, err := p.Process(t.Context(), att)
		require.ErrorIs(t, err, errInjected, stage)
		require.Zero(t, factCount(t, b.pool, ""), stage)
		require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.settlement_input_current`), stage)
		require.Zero(t, count(t, b.pool, `SELECT count(*) FROM outbox.outbox_events WHERE event_type = 'metering.settlement-input.current-changed@1'`), stage)
		require.Zero(t, count(t, b.pool, `SELECT count(*) FROM outbox.outbox_deliveries WHERE destination = 'billing_settlement_catch_up'`), stage)
		require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes`), stage)
		require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`), stage)
	}
	out, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM outbox.outbox_deliveries WHERE destination = 'billing_settlement_catch_up'`))
	requireDenseChains(t, b.pool)
}

// TestMET8EligibilityLateFinish: A1 running → A2 event → A1 late finish on
// the eligibility lane: the input processor writes the one superseded
// finish bound to A1's token; A1's late processing returns that same body
// and writes no business fact; generation 2 then applies.
func TestMET8EligibilityLateFinish(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(4)
	dispatched(t, b, a)
	a1 := claimEligibility(t, b, time.Hour)
	b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, ""))
	out, err := p.Process(t.Context(), a1)
	require.NoError(t, err)
	require.Equal(t, receipt.FinishSuperseded, out.Finished.Outcome.State)
	require.Equal(t, a1.Head.FencingToken, out.Finished.FencingToken)
	rows, digests := finishes(t, b)
	require.Equal(t, 1, rows)
	require.Equal(t, 1, digests)
	var stored string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT finished_digest FROM metering.work_finishes WHERE work_ref = $1`, a1.Head.Work.Ref).Scan(&stored))
	require.Equal(t, stored, out.Finished.Finished.Digest, "the late worker gets the stored body")
	require.Zero(t, factCount(t, b.pool, a1.Head.FencingToken), "the old token writes no business fact")

	out, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	requireDenseChains(t, b.pool)
}

// TestMET8EligibilityLateFinishRace: the A2 event and A1's processing race
// on real sessions (run with -race -count=50). Whichever commits first, the
// generation-1 Work has exactly one finish; if it is superseded, A1's token
// wrote no business fact; generation 2 applies and the chains stay dense.
func TestMET8EligibilityLateFinishRace(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(5)
	dispatched(t, b, a)
	a1 := claimEligibility(t, b, time.Hour)
	ev := a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, "")
	var wg sync.WaitGroup
	start := make(chan struct{})
	var evErr, procErr error
	var out metering.Outcome
	wg.Add(2)
	go func() { defer wg.Done(); <-start; _, evErr = b.c.Consume(context.Background(), delivery(ev)) }()
	go func() { defer wg.Done(); <-start; out, procErr = p.Process(context.Background(), a1) }()
	close(start)
	wg.Wait()
	require.NoError(t, evErr)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes WHERE work_ref = $1`, a1.Head.Work.Ref), "one finish")
	var state string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT outcome_state FROM metering.work_finishes WHERE work_ref = $1`, a1.Head.Work.Ref).Scan(&state))
	if errors.Is(procErr, metering.ErrAvailabilityNotCurrent) {
		// Finding 5: the Gateway's Current Receipt already named v2 before
		// the event moved the lane; A1 wrote nothing and the event's
		// scheduling wrote the superseded finish.
		require.True(t, errors.Is(procErr, metering.ErrRetryable))
		require.Equal(t, receipt.FinishSuperseded, state)
		require.Zero(t, factCount(t, b.pool, a1.Head.FencingToken))
	} else {
		require.NoError(t, procErr)
		require.Equal(t, state, out.Finished.Outcome.State, "the worker reports the stored finish")
	}
	if state == receipt.FinishSuperseded {
		require.Zero(t, factCount(t, b.pool, a1.Head.FencingToken), "a superseded attempt wrote no business fact")
	} else {
		require.Equal(t, receipt.FinishApplied, state)
	}
	out, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	v, err := metering.ReadCurrentSettlementInput(t.Context(), b.pool, dimensionOf(a, dimIn))
	require.NoError(t, err)
	require.Equal(t, "2000", v.Snapshot.Quantity, "the new lane state wins")
	requireDenseChains(t, b.pool)
}

// TestMET9FencingTokenBoundInDatabase: claims are lease-aware (a live lease
// is not claimable, an expired one is, with a new token); the old token's
// processing is ErrFenced with nothing written, and PostgreSQL itself
// refuses a fact or finish carrying it (ME003) as the metering role.
// Clause (issue 37): ME003.not-latest-attempt (the Work is unfinished, of
// the lane's latest generation, and each row names its own attempt).
func TestMET9FencingTokenBoundInDatabase(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(6)
	dispatched(t, b, a)
	live := claimEligibility(t, b, time.Hour)
	_, err := metering.ClaimLane(t.Context(), b.pool, receipt.LaneEligibility, time.Hour)
	require.ErrorIs(t, err, metering.ErrNoWork, "a started attempt under a live lease is not claimable")
	require.NoError(t, metering.Release(t.Context(), b.pool, live, 0))
	a2 := claimEligibility(t, b, time.Hour)
	require.Equal(t, live.Head.Work, a2.Head.Work)
	require.Equal(t, live.Head.AttemptNumber+1, a2.Head.AttemptNumber)
	require.NotEqual(t, live.Head.FencingToken, a2.Head.FencingToken)

	_, err = p.Process(t.Context(), live)
	require.ErrorIs(t, err, metering.ErrFenced)
	require.Zero(t, factCount(t, b.pool, ""))

	old := live.Head
	for _, c := range []struct{ name, sql string }{
		{"decision", `INSERT INTO metering.eligibility_decisions (decision_ref, decision_digest, execution_attempt_id, decision,
			decision_rule_version, work_ref, attempt_number, fencing_token, decision_body)
			VALUES ('med-x', repeat('a', 64), $3::uuid, 'eligible', 'r', $1, $2, $4::uuid, '{}')`},
		{"finish", `INSERT INTO metering.work_finishes (work_ref, attempt_number, fencing_token, finished_ref, finished_digest, outcome_state, finished_body)
			VALUES ($1, $2, $4::uuid, 'miwf-x', repeat('a', 64), 'applied', '{}') RETURNING $3::text`},
		{"snapshot", `INSERT INTO metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref,
			snapshot_schema_version, snapshot_digest_algorithm_version, snapshot_digest, content_digest, billing_reservation_id,
			run_id, run_step_id, execution_attempt_id, charge_dimension_key, target_net_amount, reconciliation_state,
			work_ref, attempt_number, fencing_token, snapshot_body)
			VALUES ($3::uuid, 1, 'sis-x', '1', 'jcs-sha256-v1', repeat('a', 64), repeat('b', 64), $3::uuid, $3::uuid, $3::uuid, $3::uuid,
			'text.input_tokens', 0, 'not_required', $1, $2, $4::uuid, '{}')`},
	} {
		err := pgx.BeginFunc(t.Context(), b.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_metering"); err != nil {
				return err
			}
			_, err := tx.Exec(t.Context(), c.sql, old.Work.Ref, old.AttemptNumber, old.ExecutionAttemptID, old.FencingToken)
			return err
		})
		require.Equal(t, metering.SQLStateFenced, db.SQLState(err), "%s: %v", c.name, err)
		require.ErrorContains(t, err, "is not its latest attempt", c.name)
	}
	out, err := p.Process(t.Context(), a2)
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Zero(t, factCount(t, b.pool, old.FencingToken))
	require.Equal(t, 4, factCount(t, b.pool, a2.Head.FencingToken), "decision, meter event, two snapshots")
}

// TestMETTwoWritersSameWork: two attempts of the same Work process at once
// on two real sessions (the first's lease expired); exactly one applies,
// with the latest token; the other writes nothing.
func TestMETTwoWritersSameWork(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(7)
	dispatched(t, b, a)
	first := claimEligibility(t, b, 0)
	second := claimEligibility(t, b, time.Hour)
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, 2)
	for i, att := range []*metering.Attempt{first, second} {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; _, errs[i] = p.Process(context.Background(), att) }()
	}
	close(start)
	wg.Wait()
	require.ErrorIs(t, errs[0], metering.ErrFenced)
	require.NoError(t, errs[1])
	require.Zero(t, factCount(t, b.pool, first.Head.FencingToken))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes WHERE fencing_token::text = $1 AND outcome_state = 'applied'`, second.Head.FencingToken))
	requireDenseChains(t, b.pool)
}

// TestMETBlockedThenFixed: a local deterministic conflict (Metering's own
// check: the owner's fact says another disposition than the accepted event)
// writes Blocked@1 with EligibilityProcessingConflictEvidence@1 whose
// candidate digest is the JCS digest of the actual candidate, and no fact;
// the same Work stays active and a later attempt applies once the cause is
// fixed. A retryable owner failure writes nothing at all.
func TestMETBlockedThenFixed(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(8)
	dispatched(t, b, a)

	b.owners.blocked.Store(true)
	att := claimEligibility(t, b, 0)
	_, err := p.Process(t.Context(), att)
	require.ErrorIs(t, err, metering.ErrRetryable)
	require.Zero(t, factCount(t, b.pool, ""))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`), "retryable: no Blocked")
	b.owners.blocked.Store(false)

	b.owners.mu.Lock()
	var fact *contract.ExecutionEligibilityFact
	for _, f := range b.owners.facts {
		fact = f
	}
	fact.Disposition = contract.DispositionNotDispatched
	b.owners.mu.Unlock()
	att = claimEligibility(t, b, 0)
	out, err := p.Process(t.Context(), att)
	require.NoError(t, err)
	require.NotNil(t, out.Blocked)
	require.Nil(t, out.Finished)
	require.NoError(t, out.Blocked.VerifyDigest())
	require.Equal(t, receipt.CauseEligibilityProcessingConflict, out.Blocked.BlockingCause.Kind)
	require.Equal(t, att.Head.FencingToken, out.Blocked.FencingToken)
	var evBody string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT evidence_body FROM metering.work_blocks WHERE work_ref = $1`, att.Head.Work.Ref).Scan(&evBody))
	ev, err := receipt.DecodeEligibilityProcessingConflictEvidence([]byte(evBody))
	require.NoError(t, err)
	require.Equal(t, out.Blocked.BlockingCause.Fact, ev.Evidence)
	require.Equal(t, "eligibility_basis", ev.ValidationStage)
	require.Equal(t, "disposition_differs", ev.ReasonCode)
	b.owners.mu.Lock()
	want, err := digest.Of(digest.JCSSHA256V1, fact.ToJSON())
	fact.Disposition = contract.DispositionDispatched
	b.owners.mu.Unlock()
	require.NoError(t, err)
	require.Equal(t, want, ev.ConflictingCandidateDigest, "the digest of the candidate's JCS form")
	require.Zero(t, factCount(t, b.pool, ""))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`), "the Work stays active")

	fixed := claimEligibility(t, b, time.Hour)
	require.Equal(t, att.Head.Work, fixed.Head.Work, "the same Work and generation")
	out, err = p.Process(t.Context(), fixed)
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	requireDenseChains(t, b.pool)
}

// TestMETOwnerConflictNotForged (review finding 4; outbox-publisher
// blocked_on_owner_conflict): an owner read that answers conflicting is the
// owner's conflict, never Metering's eligibility_processing_conflict with a
// made-up candidate. The reads return no owner conflict fact to bind
// Blocked@1 to, so the attempt writes nothing (no Blocked, no evidence, no
// fact, no finish) and the Work stays queued.
func TestMETOwnerConflictNotForged(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(15)
	dispatched(t, b, a)
	b.owners.conflict.Store(true)
	_, err := p.Process(t.Context(), claimEligibility(t, b, 0))
	require.ErrorIs(t, err, metering.ErrOwnerConflictUnbound)
	require.ErrorIs(t, err, metering.ErrOwnerConflict)
	require.ErrorContains(t, err, receipt.CauseExecutionEligibilityOwnerConflict)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`))
	require.Zero(t, factCount(t, b.pool, ""))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works`), "the Work stays active")
	b.owners.conflict.Store(false)
	out, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
}

// TestMETUnregisteredDimensionBlocks: a usage dimension the price book does
// not register is a mapping conflict (Blocked at meter_event), never a zero charge.
func TestMETUnregisteredDimensionBlocks(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(9)
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	b.ack(t, a.availability(b.owners, usage, "tokens.unpriced", 1, contract.AvailabilityAvailable, ""))
	out, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.NotNil(t, out.Blocked)
	require.Equal(t, receipt.CauseEligibilityProcessingConflict, out.Blocked.BlockingCause.Kind)
	var evBody string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT evidence_body FROM metering.work_blocks`).Scan(&evBody))
	ev, err := receipt.DecodeEligibilityProcessingConflictEvidence([]byte(evBody))
	require.NoError(t, err)
	require.Equal(t, "meter_event", ev.ValidationStage)
	require.Equal(t, "charge_dimension_not_registered", ev.ReasonCode)
	require.Zero(t, factCount(t, b.pool, ""))
}

// TestME1SettlementInputDatabaseGuards (ME-1): PostgreSQL refuses snapshot edits,
// deletes, gaps, forks and pointer jumps, as the metering role and (for the
// triggers) as the owner. The gap, fork and jump below are refused by
// other guards too (the finished token's ME003, the primary key, the
// foreign keys); TestGuardClausesME004SettlementChain gives each ME004
// clause a write that only it refuses (issue 37).
func TestME1SettlementInputDatabaseGuards(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(10)
	dispatched(t, b, a)
	_, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	dim := dimensionOf(a, dimOut)
	insertV := func(v int, pred string) string {
		return fmt.Sprintf(`INSERT INTO metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref,
			snapshot_schema_version, snapshot_digest_algorithm_version, snapshot_digest, content_digest, predecessor_state_version,
			predecessor_snapshot_ref, billing_reservation_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key,
			target_net_amount, reconciliation_state, work_ref, attempt_number, fencing_token, snapshot_body)
			SELECT settlement_dimension_id, %d, 'sis-forged-%d', '1', 'jcs-sha256-v1', snapshot_digest, content_digest, %d, %s,
			  billing_reservation_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key, target_net_amount,
			  reconciliation_state, work_ref, attempt_number, fencing_token, snapshot_body
			FROM metering.settlement_input_snapshots WHERE settlement_dimension_id = '%s' AND state_version = 1`, v, v, v-1, pred, dim)
	}
	for _, c := range []struct {
		name, sql, state string
		asRole           bool
	}{
		{"update as role", "UPDATE metering.settlement_input_snapshots SET target_net_amount = 0", pgerrcode.InsufficientPrivilege, true},
		{"delete as role", "DELETE FROM metering.settlement_input_snapshots", pgerrcode.InsufficientPrivilege, true},
		{"delete pointer as role", "DELETE FROM metering.settlement_input_current", pgerrcode.InsufficientPrivilege, true},
		{"update as owner", "UPDATE metering.settlement_input_snapshots SET target_net_amount = 0", metering.SQLStateInsertOnly, false},
		{"delete as owner", "DELETE FROM metering.settlement_input_snapshots", metering.SQLStateInsertOnly, false},
		{"delete decision as owner", "DELETE FROM metering.eligibility_decisions", metering.SQLStateInsertOnly, false},
		{"gap v3", insertV(3, "'sis-none'"), metering.SQLStateSettlementChain, false},
		{"fork v1", insertV(1, "NULL"), metering.SQLStateSettlementChain, false},
		{"pointer jump", fmt.Sprintf("UPDATE metering.settlement_input_current SET state_version = 3 WHERE settlement_dimension_id = '%s'", dim), metering.SQLStateSettlementChain, true},
		{"pointer into another chain", fmt.Sprintf(`UPDATE metering.settlement_input_current SET snapshot_ref = (SELECT snapshot_ref FROM metering.settlement_input_snapshots WHERE settlement_dimension_id <> '%s' LIMIT 1), state_version = 2 WHERE settlement_dimension_id = '%s'`, dim, dim), pgerrcode.ForeignKeyViolation, true},
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
		require.Equal(t, c.state, db.SQLState(err), "%s: %v", c.name, err)
	}
	requireDenseChains(t, b.pool)
}

// BenchmarkWorker measures the worker's throughput: per iteration one
// dispatched attempt's usage Work (two measured dimensions: decision, two
// meter events, two snapshots, two pointer CAS, two events with their
// billing deliveries, the applied finish, in one transaction). The input
// processor's events are consumed before the timer starts. Sub-benchmarks:
// one loop, and four loops of one Worker (claims with SKIP LOCKED).
func BenchmarkWorker(bm *testing.B) {
	for _, loops := range []int{1, 4} {
		bm.Run(fmt.Sprintf("loops=%d", loops), func(bm *testing.B) { benchmarkWorker(bm, loops) })
	}
}

func benchmarkWorker(bm *testing.B, loops int) {
	pool := dbtest.New(bm, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering},
		Lines: []migrate.Line{outboxschema.Line(), meteringschema.Line()}, MaxConns: int32(2 * loops)}).Metering()
	_, err := release.Bootstrap(context.Background(), pool, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "bench"})
	require.NoError(bm, err)
	o := newOwners()
	c, err := metering.New(pool, metering.Config{Inbox: inbox.Config{LockTimeout: time.Second}, Reads: o})
	require.NoError(bm, err)
	w, err := metering.NewWorker(pool, metering.WorkerConfig{Processor: metering.ProcessorConfig{Reads: o}, Lease: time.Hour})
	require.NoError(bm, err)
	for i := range bm.N {
		a := newAttempt(200000 + i)
		for _, e := range []*envelope.Envelope{a.availability(o, usage, dimOut, 1, contract.AvailabilityAvailable, ""),
			a.availability(o, usage, dimIn, 1, contract.AvailabilityAvailable, ""), a.eligibility(o, contract.DispositionDispatched)} {
			if _, err := c.Consume(context.Background(), delivery(e)); err != nil {
				bm.Fatal(err)
			}
		}
	}
	bm.ResetTimer()
	var wg sync.WaitGroup
	errs := make([]error, loops)
	for i := range loops {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w.RunOnce(context.Background()) }()
	}
	wg.Wait()
	bm.StopTimer()
	for _, err := range errs {
		require.NoError(bm, err)
	}
	require.Equal(bm, int64(bm.N), w.Stats().Applied)
	bm.ReportMetric(float64(bm.N)/bm.Elapsed().Seconds(), "works/s")
}

// TestME1WorkerAsMeteringRole (ME-1): claim, processing (facts, pointer CAS, the
// outbox append) and the finish all run as the least-privileged
// oceanway_metering role, with only the pg_catalog search path.
func TestME1WorkerAsMeteringRole(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(11)
	dispatched(t, b, a)
	role := dbtest.RolePool(t, b.pool.Config().ConnString(), meteringschema.RoleMetering)
	p, err := metering.NewProcessor(role, metering.ProcessorConfig{Reads: b.owners})
	require.NoError(t, err)
	att, err := metering.ClaimLane(t.Context(), role, receipt.LaneEligibility, time.Hour)
	require.NoError(t, err)
	out, err := p.Process(t.Context(), att)
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	cur, err := metering.ReadCurrentSettlementInput(t.Context(), role, dimensionOf(a, dimOut))
	require.NoError(t, err)
	require.Equal(t, int64(1), cur.Ref.StateVersion)
	requireDenseChains(t, b.pool)
}

// TestMETInTxConflictBlocks (review finding 1; issue 14 Deliver 4, "a local
// deterministic conflict → conflict evidence + Blocked"): a conflict found
// inside the processing transaction (evidence quantity "1e3" is not an exact
// decimal the price book multiplies) writes Blocked@1 at stage
// settlement_input with no business fact; the Work stays queued.
func TestMETInTxConflictBlocks(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(11)
	dispatched(t, b, a)
	b.owners.mu.Lock()
	for _, e := range b.owners.evidence {
		e.Quantity = "1e3"
	}
	b.owners.mu.Unlock()
	att := claimEligibility(t, b, time.Hour)
	out, err := processor(t, b, nil).Process(t.Context(), att)
	require.NoError(t, err)
	require.NotNil(t, out.Blocked)
	require.Nil(t, out.Finished)
	require.Equal(t, receipt.CauseEligibilityProcessingConflict, out.Blocked.BlockingCause.Kind)
	var evBody string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT evidence_body FROM metering.work_blocks WHERE work_ref = $1`, att.Head.Work.Ref).Scan(&evBody))
	ev, err := receipt.DecodeEligibilityProcessingConflictEvidence([]byte(evBody))
	require.NoError(t, err)
	require.Equal(t, "settlement_input", ev.ValidationStage)
	require.Equal(t, "amount_not_computable", ev.ReasonCode)
	require.Zero(t, factCount(t, b.pool, ""))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.pending_works WHERE work_ref = $1`, att.Head.Work.Ref), "the Work stays active")
}

// asMetering runs sql as the least-privileged metering role and returns its error.
func asMetering(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) error {
	t.Helper()
	return pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_metering"); err != nil {
			return err
		}
		_, err := tx.Exec(t.Context(), sql, args...)
		return err
	})
}

// TestMET9OldGenerationFencedInDatabase (review finding 2; outbox-publisher
// "旧Token不能写任何业务Fact或推进新Lane"): a generation-1 Work claimed
// after generation 2 was scheduled holds its Work's latest token, yet
// PostgreSQL refuses its decision and its applied finish (ME003) as the
// metering role; it may write only the superseded finish. A fact naming
// another execution attempt than its Work's is refused too. Clauses
// (issue 37): ME003.not-latest-generation, ME003.other-execution-attempt.
func TestMET9OldGenerationFencedInDatabase(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(12)
	dispatched(t, b, a)
	b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, ""))
	old := claimEligibility(t, b, time.Hour).Head
	require.Equal(t, int64(1), old.WorkGeneration, "the oldest queued Work is claimed first")
	decision := `INSERT INTO metering.eligibility_decisions (decision_ref, decision_digest, execution_attempt_id, decision,
		decision_rule_version, work_ref, attempt_number, fencing_token, decision_body)
		VALUES ('med-x', repeat('a', 64), $3::uuid, 'eligible', 'r', $1, $2, $4::uuid, '{}')`
	finish := `INSERT INTO metering.work_finishes (work_ref, attempt_number, fencing_token, finished_ref, finished_digest, outcome_state, finished_body)
		VALUES ($1, $2, $4::uuid, 'miwf-x', repeat('a', 64), $3, '{}')`
	err := asMetering(t, b.pool, decision, old.Work.Ref, old.AttemptNumber, old.ExecutionAttemptID, old.FencingToken)
	require.Equal(t, metering.SQLStateFenced, db.SQLState(err), "old generation decision: %v", err)
	require.ErrorContains(t, err, "is generation 1 of its lane, the latest is 2")
	err = asMetering(t, b.pool, finish, old.Work.Ref, old.AttemptNumber, receipt.FinishApplied, old.FencingToken)
	require.Equal(t, metering.SQLStateFenced, db.SQLState(err), "old generation applied finish: %v", err)
	require.ErrorContains(t, err, "is generation 1 of its lane, the latest is 2")
	require.NoError(t, asMetering(t, b.pool, finish, old.Work.Ref, old.AttemptNumber, receipt.FinishSuperseded, old.FencingToken),
		"the old generation's superseded finish")

	cur := claimEligibility(t, b, time.Hour).Head
	require.Equal(t, int64(2), cur.WorkGeneration)
	err = asMetering(t, b.pool, decision, cur.Work.Ref, cur.AttemptNumber, newAttempt(13).attemptID, cur.FencingToken)
	require.Equal(t, metering.SQLStateFenced, db.SQLState(err), "a fact of another attempt: %v", err)
	require.ErrorContains(t, err, "written by work")
	require.NoError(t, asMetering(t, b.pool, decision, cur.Work.Ref, cur.AttemptNumber, cur.ExecutionAttemptID, cur.FencingToken),
		"the latest generation's own fact")
}

// TestME1SettlementInputAtomicInDatabase (ME-1, review finding 3): as the
// metering role, a snapshot version commits only with its pointer move, its
// metering.settlement-input.current-changed@1 event and the event's billing
// delivery (deferred check, ME005 at COMMIT), and its body must say what its
// columns say (CHECK, 23514): a forged body, a body with another amount or
// another predecessor is refused. The complete set commits.
func TestME1SettlementInputAtomicInDatabase(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(14)
	dispatched(t, b, a)
	p := processor(t, b, nil)
	_, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	// Generation 2 is unfinished: its token may write facts, so only the
	// atomicity guards stand between it and a partial version.
	b.ack(t, a.availability(b.owners, usage, dimOut, 2, contract.AvailabilityAvailable, ""))
	h := claimEligibility(t, b, time.Hour).Head
	dim := dimensionOf(a, dimOut)
	var v1Body, content string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT snapshot_body, content_digest FROM metering.settlement_input_snapshots
		WHERE settlement_dimension_id = $1 AND state_version = 1`, dim).Scan(&v1Body, &content))
	v1, err := settlement.Decode([]byte(v1Body))
	require.NoError(t, err)
	v2 := *v1
	pred := v1.Current()
	v2.Snapshot, v2.StateVersion, v2.Predecessor = v1.Snapshot, 2, &pred
	v2.Snapshot.Ref = "sis-by-hand-v2"
	body, err := settlement.Seal(&v2)
	require.NoError(t, err)

	insert := func(tx pgx.Tx, body, amount string, predRef string) error {
		_, err := tx.Exec(t.Context(), `INSERT INTO metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref,
			snapshot_schema_version, snapshot_digest_algorithm_version, snapshot_digest, content_digest, predecessor_state_version,
			predecessor_snapshot_ref, billing_reservation_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key,
			target_net_amount, reconciliation_state, work_ref, attempt_number, fencing_token, snapshot_body, event_id)
			VALUES ($1, 2, $2, '1', 'jcs-sha256-v1', $3, $4, 1, $5, $6, $7, $8, $9, $10, $11::numeric, $12, $13, $14, $15, $16, $17)`,
			dim, v2.Snapshot.Ref, v2.Snapshot.Digest, content, predRef, v2.BillingReservationID, v2.RunID, v2.RunStepID,
			v2.ExecutionAttemptID, v2.ChargeDimensionKey, amount, v2.ReconciliationState, h.Work.Ref, h.AttemptNumber, h.FencingToken, body,
			metering.SettlementEvent(&v2).EventID)
		return err
	}
	movePointer := func(tx pgx.Tx) error {
		_, err := tx.Exec(t.Context(), `UPDATE metering.settlement_input_current SET state_version = 2, snapshot_ref = $2
			WHERE settlement_dimension_id = $1 AND state_version = 1`, dim, v2.Snapshot.Ref)
		return err
	}
	appendEvent := func(tx pgx.Tx) error {
		_, err := release.ForProducer(boundary.Metering).AppendTx(t.Context(), tx, *metering.SettlementEvent(&v2))
		return err
	}
	run := func(steps ...func(pgx.Tx) error) error {
		return pgx.BeginFunc(t.Context(), b.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_metering"); err != nil {
				return err
			}
			for _, s := range steps {
				if err := s(tx); err != nil {
					return err
				}
			}
			return nil
		})
	}
	good := func(tx pgx.Tx) error { return insert(tx, string(body), v2.TargetNetAmount, pred.Snapshot.Ref) }
	for _, c := range []struct {
		name  string
		steps []func(pgx.Tx) error
		state string
	}{
		{"snapshot alone", []func(pgx.Tx) error{good}, metering.SQLStateSettlementAtomic},
		{"snapshot and pointer, no event", []func(pgx.Tx) error{good, movePointer}, metering.SQLStateSettlementAtomic},
		{"snapshot and event, no pointer", []func(pgx.Tx) error{good, appendEvent}, metering.SQLStateSettlementAtomic},
		{"forged body", []func(pgx.Tx) error{func(tx pgx.Tx) error { return insert(tx, `{"forged":true}`, v2.TargetNetAmount, pred.Snapshot.Ref) },
			movePointer, appendEvent}, pgerrcode.CheckViolation},
		{"amount column differs from body", []func(pgx.Tx) error{func(tx pgx.Tx) error { return insert(tx, string(body), "0", pred.Snapshot.Ref) },
			movePointer, appendEvent}, pgerrcode.CheckViolation},
	} {
		err := run(c.steps...)
		require.Equal(t, c.state, db.SQLState(err), "%s: %v", c.name, err)
	}
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.settlement_input_snapshots WHERE settlement_dimension_id = $1`, dim))
	require.NoError(t, run(good, movePointer, appendEvent), "the complete version commits")
	requireDenseChains(t, b.pool)
}

// queueWorkWithSource stores, as the owner, a dispatched attempt's input
// fence with the given eligibility source (nil: none, as a fence from
// before sources were stored) and its queued generation-1 usage Work.
func queueWorkWithSource(t *testing.T, b *bundle, a attemptFixture, source *string) {
	t.Helper()
	_, err := b.pool.Exec(t.Context(), `
		INSERT INTO metering.input_fences (execution_attempt_id, eligibility_fence_revision, eligibility_fact_ref,
		  eligibility_fact_schema_version, eligibility_fact_digest_algorithm_version, eligibility_fact_digest,
		  dispatch_disposition, latest_eligibility_work_generation, eligibility_trigger_digest, eligibility_source)
		VALUES ($1, 1, 'eef-x', '1', 'jcs-sha256-v1', repeat('e', 64), 'dispatched', 1, repeat('f', 64), $2)`, a.attemptID, source)
	require.NoError(t, err)
	_, err = b.pool.Exec(t.Context(), `
		WITH w AS (
		  INSERT INTO metering.input_works (work_ref, work_schema_version, work_digest_algorithm_version, work_digest,
		    execution_attempt_id, lane_kind, work_generation, operation_id, trigger_digest, work_body)
		  VALUES ('miw-src-' || $1, '1', 'jcs-sha256-v1', repeat('a', 64), $1::uuid, 'eligibility_and_settlement_input', 1,
		    gen_random_uuid(), repeat('f', 64), '{}') RETURNING work_ref)
		INSERT INTO metering.pending_works (work_ref, lane_kind) SELECT work_ref, 'eligibility_and_settlement_input' FROM w`, a.attemptID)
	require.NoError(t, err)
}

// TestMETMissingSourceNeverForged (review finding 12): a usage Work whose
// input fence has no eligibility source is an operator error
// (ErrEligibilitySource): no Blocked@1 and no conflict evidence with the
// attempt id standing in for run, step and quadruples; nothing is written.
func TestMETMissingSourceNeverForged(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	queueWorkWithSource(t, b, newAttempt(17), nil)
	_, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.ErrorIs(t, err, metering.ErrEligibilitySource)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`), "no evidence with forged identities")
	require.Zero(t, factCount(t, b.pool, ""))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes`))
}

// TestMETSourceDecodedStrictly (review finding 13; strict decoding, fail
// closed): a stored eligibility source with an unknown field, a missing
// required field or trailing data is not read leniently: the Work fails
// with ErrEligibilitySource and nothing is written.
func TestMETSourceDecodedStrictly(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	good := newAttempt(18)
	dispatched(t, b, good)
	out, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	var stored string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT eligibility_source FROM metering.input_fences WHERE execution_attempt_id = $1`,
		good.attemptID).Scan(&stored))
	for i, bad := range []string{
		strings.Replace(stored, `{`, `{"unexpected":true,`, 1),
		strings.Replace(stored, `"runId":`, `"runIdentity":`, 1),
		strings.Replace(stored, `"runId":"`+good.runID+`"`, `"runId":""`, 1),
		stored + ` {}`,
	} {
		require.NotEqual(t, stored, bad)
		a := newAttempt(100 + i)
		queueWorkWithSource(t, b, a, &bad)
		before := factCount(t, b.pool, "")
		_, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
		require.ErrorIs(t, err, metering.ErrEligibilitySource, "source %d: %s", i, bad)
		require.Equal(t, before, factCount(t, b.pool, ""))
		require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`))
	}
}

// TestMETReceiptReportsAppliedLane (review finding 6; outbox-publisher
// MeteringInputProcessorConsumerReceipt@1: pending binds only the lane's
// active Work, applied binds the finished generation, operation, Work and
// Finish quadruples and the snapshot set): an event processed after the
// latest generation applied reports applied, not pending.
func TestMETReceiptReportsAppliedLane(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(19)
	b.ack(t, a.availability(b.owners, usage, dimOut, 2, contract.AvailabilityAvailable, ""))
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	out, err := processor(t, b, nil).Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)

	late := b.ack(t, a.availability(b.owners, usage, dimOut, 1, contract.AvailabilityPending, ""))
	require.Equal(t, receipt.OutcomeAlreadyObserved, late.Outcome)
	c := late.Lane.Eligibility.Coordination
	require.Equal(t, receipt.StateApplied, c.State)
	require.Nil(t, c.ActiveWork)
	require.NotNil(t, c.Applied)
	require.Equal(t, int64(1), c.Applied.Work.Generation)
	require.Equal(t, out.Finished.Work, c.Applied.Work.Work)
	require.Equal(t, out.Finished.OperationID, c.Applied.Work.OperationID)
	require.Equal(t, out.Finished.Finished, c.Applied.Finished)
	require.Equal(t, *out.Finished.Outcome.Snapshots, c.Applied.Snapshots)

	// A new generation is pending again, bound to the new active Work.
	next := b.ack(t, a.availability(b.owners, usage, dimOut, 3, contract.AvailabilityAvailable, ""))
	require.Equal(t, receipt.StatePending, next.Lane.Eligibility.Coordination.State)
	require.Equal(t, int64(2), next.Lane.Eligibility.Coordination.ActiveWork.Generation)
}

// holdAt returns a FailAt hook that holds the processing transaction at
// stage (once) on g.
func holdAt(stage string, g *gate) func(string) error {
	var once sync.Once
	return func(s string) error {
		if s == stage {
			once.Do(g.pass)
		}
		return nil
	}
}

// waitLockWaiter waits until some session of this database waits on a lock.
func waitLockWaiter(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	require.Eventually(t, func() bool {
		return count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	}, 5*time.Second, 2*time.Millisecond, "a session waits on the lock")
}

// TestMET8LateFinishEachOrder (review finding 14; issue 14 "A1 running → A2
// event → A1 late finish"): each order forced, not left to the scheduler.
//   - A1 inside its processing transaction (holding the input fence) when
//     the A2 event is consumed: the event waits for the fence, A1 applies
//     generation 1 and generation 2 follows;
//   - the A2 event committed while A1 sits between its bootstrap reads and
//     its transaction: A1 writes the one superseded finish and no business
//     fact; a second late run of A1 returns the same finish (one digest).
func TestMET8LateFinishEachOrder(t *testing.T) {
	t.Parallel()
	t.Run("A1 in transaction first", func(t *testing.T) {
		t.Parallel()
		b := workerSetup(t)
		a := newAttempt(20)
		dispatched(t, b, a)
		a1 := claimEligibility(t, b, time.Hour)
		g := newGate()
		var out metering.Outcome
		var procErr, evErr error
		var wg sync.WaitGroup
		wg.Add(1)
		p := processor(t, b, holdAt("decision", g))
		go func() { defer wg.Done(); out, procErr = p.Process(context.Background(), a1) }()
		<-g.reached
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, evErr = b.c.Consume(context.Background(), delivery(a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, "")))
		}()
		waitLockWaiter(t, b.pool)
		close(g.release)
		wg.Wait()
		require.NoError(t, procErr)
		require.NoError(t, evErr)
		require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
		require.Equal(t, 4, factCount(t, b.pool, a1.Head.FencingToken))
		next := claimEligibility(t, b, time.Hour)
		require.Equal(t, int64(2), next.Head.WorkGeneration)
		out, err := processor(t, b, nil).Process(t.Context(), next)
		require.NoError(t, err)
		require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
		requireDenseChains(t, b.pool)
	})
	t.Run("A2 event first", func(t *testing.T) {
		t.Parallel()
		b := workerSetup(t)
		a := newAttempt(21)
		dispatched(t, b, a)
		a1 := claimEligibility(t, b, time.Hour)
		g := newGate()
		b.owners.gate.Store(g)
		var out metering.Outcome
		var procErr error
		done := make(chan struct{})
		p := processor(t, b, nil)
		go func() { defer close(done); out, procErr = p.Process(context.Background(), a1) }()
		<-g.reached
		b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, ""))
		close(g.release)
		<-done
		require.NoError(t, procErr)
		require.Equal(t, receipt.FinishSuperseded, out.Finished.Outcome.State)
		require.Zero(t, factCount(t, b.pool, a1.Head.FencingToken), "the old token wrote no business fact")
		again, err := processor(t, b, nil).Process(t.Context(), a1)
		require.NoError(t, err)
		require.Equal(t, out.Finished.Finished, again.Finished.Finished, "one superseded finish, one digest")
		require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes WHERE work_ref = $1`, a1.Head.Work.Ref))
	})
}

// TestMET9LeaseExpiresDuringApply (review finding 14): A1's lease expires
// while it is inside its processing transaction; a claim meanwhile finds
// nothing (the queue row is locked by A1, SKIP LOCKED), A1 applies, and the
// finished Work is never claimable again.
func TestMET9LeaseExpiresDuringApply(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(22)
	dispatched(t, b, a)
	a1 := claimEligibility(t, b, 0) // lease already expired
	g := newGate()
	var out metering.Outcome
	var procErr error
	done := make(chan struct{})
	p := processor(t, b, holdAt("decision", g))
	go func() { defer close(done); out, procErr = p.Process(context.Background(), a1) }()
	<-g.reached
	_, err := metering.ClaimLane(t.Context(), b.pool, receipt.LaneEligibility, time.Hour)
	require.ErrorIs(t, err, metering.ErrNoWork, "the expired lease's row is held by the running attempt")
	close(g.release)
	<-done
	require.NoError(t, procErr)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	_, err = metering.ClaimLane(t.Context(), b.pool, receipt.LaneEligibility, time.Hour)
	require.ErrorIs(t, err, metering.ErrNoWork)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_attempts WHERE work_ref = $1`, a1.Head.Work.Ref))
	requireDenseChains(t, b.pool)
}

// TestMETDecisionContentAddressed (review finding 9; ADR-031 the snapshot
// fixes the Current Eligibility Decision and its rule version): a second
// generation with the same eligibility fact and decision finds the stored
// EligibilityDecision (one row, one ref derived from its digest); its body
// carries no Work operation id.
func TestMETDecisionContentAddressed(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	p := processor(t, b, nil)
	a := newAttempt(23)
	dispatched(t, b, a)
	_, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	b.ack(t, a.availability(b.owners, usage, dimIn, 2, contract.AvailabilityAvailable, ""))
	out, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	require.Equal(t, int64(2), out.Finished.WorkGeneration)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.eligibility_decisions WHERE execution_attempt_id = $1`, a.attemptID))
	var body string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT decision_body FROM metering.eligibility_decisions`).Scan(&body))
	require.NotContains(t, body, "meteringInputWorkOperationId")
	requireDenseChains(t, b.pool)
}
