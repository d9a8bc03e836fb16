package metering_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/release"
)

// Issue 37 (guard clauses, docs/guard-clauses.md): each refusal clause of
// the metering guards is proven by a write that only this clause refuses,
// so the test fails when the clause alone is disabled (`go run
// ./scripts/guards mutate -run ME`). The writes are the least-privileged
// role's (guardSetup's pool is oceanway_metering) unless a missing grant
// refuses that role first; each such case says so. State comes from the
// real consumer and worker.

// requireRefused asserts the SQLSTATE and a message fragment unique to the
// clause among those that raise the same code.
func requireRefused(t *testing.T, err error, state, fragment, what string) {
	t.Helper()
	require.Equal(t, state, db.SQLState(err), "%s: %v", what, err)
	require.ErrorContains(t, err, fragment, what)
}

// TestGuardClausesME002LanesForwardOnly (ME002, docs/metering.md "Finality
// guards": lanes are monotonic; an observed eligibility fact and source
// never change). As the role, each UPDATE breaks exactly one rule and moves
// everything else forward: ME002.fence-generation-backwards,
// ME002.fence-fact-ref-changed, ME002.fence-fact-digest-changed,
// ME002.eligibility-source-changed, ME002.cost-lane-state-not-advanced,
// ME002.cost-lane-fence-not-advanced, ME002.cost-lane-generation-not-advanced,
// ME002.lane-identity-changed (a watermark moved to another attempt's fence).
// (ME002.fence-revision-backwards and ME002.watermark-not-advanced:
// TestMETDatabaseGuards.)
func TestGuardClausesME002LanesForwardOnly(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	a := newAttempt(3701)
	dispatched(t, b, a)
	b.ack(t, a.availability(b.owners, cost, costDim, 1, contract.AvailabilityPending, ""))
	other := newAttempt(3702)
	b.ack(t, other.eligibility(b.owners, contract.DispositionNotDispatched))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.input_fences WHERE execution_attempt_id = $1
		AND eligibility_fence_revision >= 1 AND latest_eligibility_work_generation >= 1 AND eligibility_fact_ref IS NOT NULL
		AND eligibility_fact_digest IS NOT NULL AND eligibility_source IS NOT NULL`, a.attemptID), "an observed fence")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.cost_lanes WHERE execution_attempt_id = $1`, a.attemptID))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.usage_watermarks WHERE execution_attempt_id = $1`, other.attemptID))

	const fenceMsg = "moved backwards or changed its eligibility fact"
	fence := func(set string) string {
		return `UPDATE metering.input_fences SET ` + set + ` WHERE execution_attempt_id = $1`
	}
	lane := func(set string) string {
		return `UPDATE metering.cost_lanes SET ` + set + ` WHERE execution_attempt_id = $1`
	}
	for _, c := range []struct {
		clause, sql, fragment string
		args                  []any
	}{
		{"ME002.fence-generation-backwards", fence(`latest_eligibility_work_generation = latest_eligibility_work_generation - 1`), fenceMsg, []any{a.attemptID}},
		{"ME002.fence-fact-ref-changed", fence(`eligibility_fact_ref = eligibility_fact_ref || '-other'`), fenceMsg, []any{a.attemptID}},
		{"ME002.fence-fact-digest-changed", fence(`eligibility_fact_digest = repeat('0', 64)`), fenceMsg, []any{a.attemptID}},
		{"ME002.eligibility-source-changed", fence(`eligibility_source = '{"forged":true}'`), "the eligibility source of", []any{a.attemptID}},
		{"ME002.cost-lane-state-not-advanced", lane(`fence_revision = fence_revision + 1, latest_work_generation = latest_work_generation + 1`),
			"cost lane of", []any{a.attemptID}},
		{"ME002.cost-lane-fence-not-advanced", lane(`state_version = state_version + 1, latest_work_generation = latest_work_generation + 1`),
			"cost lane of", []any{a.attemptID}},
		{"ME002.cost-lane-generation-not-advanced", lane(`state_version = state_version + 1, fence_revision = fence_revision + 1`),
			"cost lane of", []any{a.attemptID}},
		{"ME002.lane-identity-changed", `UPDATE metering.usage_watermarks SET execution_attempt_id = $2, state_version = state_version + 1
			WHERE execution_attempt_id = $1`, "lane identity is immutable", []any{a.attemptID, other.attemptID}},
	} {
		err := commitAs(t, role, execStep(t, c.sql, c.args...))
		requireRefused(t, err, metering.SQLStateBackwards, c.fragment, c.clause)
	}
	// The same rows move forward as the role.
	require.NoError(t, commitAs(t, role,
		execStep(t, fence(`eligibility_fence_revision = eligibility_fence_revision + 1`), a.attemptID),
		execStep(t, lane(`state_version = state_version + 1, fence_revision = fence_revision + 1, latest_work_generation = latest_work_generation + 1`), a.attemptID),
		execStep(t, `UPDATE metering.usage_watermarks SET state_version = state_version + 1 WHERE execution_attempt_id = $1`, a.attemptID)))
}

// TestGuardClausesME003WrongLane (ME003.wrong-lane; docs/metering.md ME003
// "only its own execution attempt and lane"): a provider-cost Work's live,
// latest, unfinished attempt writes a MeterEvent (an eligibility-lane fact)
// of its own execution attempt as the role: only the lane clause refuses.
func TestGuardClausesME003WrongLane(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	a := newAttempt(3711)
	b.ack(t, a.availability(b.owners, cost, costDim, 1, contract.AvailabilityPending, ""))
	h := claimOne(t, b, time.Hour).Head
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.input_works WHERE work_ref = $1 AND lane_kind = 'provider_cost'`, h.Work.Ref))
	err := commitAs(t, role, execStep(t, `INSERT INTO metering.meter_events (meter_event_ref, meter_event_digest, settlement_dimension_id,
		execution_attempt_id, charge_dimension_key, quantity, unit, work_ref, attempt_number, fencing_token, meter_event_body)
		VALUES ('mev-wrong-lane', repeat('e', 64), gen_random_uuid(), $4::uuid, 'text.output_tokens', 0, 'token', $1, $2, $3::uuid, '{}')`,
		h.Work.Ref, h.AttemptNumber, h.FencingToken, h.ExecutionAttemptID))
	requireRefused(t, err, metering.SQLStateFenced, "cannot write a eligibility_and_settlement_input fact", "ME003.wrong-lane")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.meter_events`))
}

// chainFixture is a dimension at version 2 (the real worker) and the live
// token of the usage Work generation 3 (claimed, unfinished), with
// hand-built next versions and the steps that write them as one
// transaction would.
type chainFixture struct {
	t    *testing.T
	b    *bundle
	dim  string
	v1   settlement.Ref
	head receipt.WorkAttemptHead
}

type builtVersion struct {
	s             *settlement.Snapshot
	body, content string
}

// next builds the version after prev (ref given); mutate edits it before sealing.
func (f *chainFixture) next(prev *settlement.Snapshot, ref string, mutate func(*settlement.Snapshot)) builtVersion {
	f.t.Helper()
	v := *prev
	pred := prev.Current()
	v.Snapshot = strict.Quadruple{Ref: ref}
	v.StateVersion, v.Predecessor = prev.StateVersion+1, &pred
	if mutate != nil {
		mutate(&v)
	}
	body, err := settlement.Seal(&v)
	require.NoError(f.t, err)
	content, err := settlement.ContentDigest(&v)
	require.NoError(f.t, err)
	return builtVersion{s: &v, body: string(body), content: content.Value}
}

func (f *chainFixture) insert(v builtVersion) func(pgx.Tx) error {
	s := v.s
	return execStep(f.t, `INSERT INTO metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref,
		snapshot_schema_version, snapshot_digest_algorithm_version, snapshot_digest, content_digest, predecessor_state_version,
		predecessor_snapshot_ref, billing_reservation_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key,
		target_net_amount, reconciliation_state, work_ref, attempt_number, fencing_token, snapshot_body, event_id)
		VALUES ($1, $2, $3, '1', 'jcs-sha256-v1', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::numeric, $14, $15, $16, $17, $18, $19)`,
		f.dim, s.StateVersion, s.Snapshot.Ref, s.Snapshot.Digest, v.content, s.Predecessor.StateVersion, s.Predecessor.Snapshot.Ref,
		s.BillingReservationID, s.RunID, s.RunStepID, s.ExecutionAttemptID, s.ChargeDimensionKey, s.TargetNetAmount,
		s.ReconciliationState, f.head.Work.Ref, f.head.AttemptNumber, f.head.FencingToken, v.body, metering.SettlementEvent(s).EventID)
}

func (f *chainFixture) pointer(v builtVersion) func(pgx.Tx) error {
	return execStep(f.t, `UPDATE metering.settlement_input_current SET state_version = $2, snapshot_ref = $3
		WHERE settlement_dimension_id = $1`, f.dim, v.s.StateVersion, v.s.Snapshot.Ref)
}

func (f *chainFixture) event(v builtVersion) func(pgx.Tx) error {
	return func(tx pgx.Tx) error {
		_, err := release.ForProducer(boundary.Metering).AppendTx(f.t.Context(), tx, *metering.SettlementEvent(v.s))
		return err
	}
}

// eventWithoutDelivery inserts v's event row as the appender would, but
// not its delivery rows (the columns oceanway_producer may insert; the row
// is read from an append the admin pool rolls back).
func (f *chainFixture) eventWithoutDelivery(v builtVersion) func(pgx.Tx) error {
	f.t.Helper()
	const cols = `event_id, event_type, schema_version, delivery_set_version, delivery_set_definition_schema_version,
		delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest, aggregate_type, aggregate_id,
		aggregate_revision, tenant_kind, tenant_id, workspace_id, project_id, correlation_id, causation_id, operation_id,
		event_envelope, event_payload, event_envelope_digest_algorithm_version, event_envelope_sha256, occurred_at`
	e := metering.SettlementEvent(v.s)
	var row string
	errRollback := errors.New("rollback")
	err := pgx.BeginFunc(f.t.Context(), f.b.pool, func(tx pgx.Tx) error {
		if _, err := release.ForProducer(boundary.Metering).AppendTx(f.t.Context(), tx, *e); err != nil {
			return err
		}
		if err := tx.QueryRow(f.t.Context(), `SELECT to_jsonb(e)::text FROM outbox.outbox_events e WHERE e.event_id = $1`, e.EventID).Scan(&row); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(f.t, err, errRollback)
	return execStep(f.t, `INSERT INTO outbox.outbox_events (`+cols+`)
		SELECT `+cols+` FROM jsonb_populate_record(NULL::outbox.outbox_events, $1::jsonb)`, row)
}

func newChainFixture(t *testing.T, b *bundle, n int) (*chainFixture, *settlement.Snapshot) {
	t.Helper()
	a := newAttempt(n)
	dim := appliedTwice(t, b, a)
	b.ack(t, a.availability(b.owners, usage, dimOut, 3, contract.AvailabilityAvailable, ""))
	h := claimEligibility(t, b, time.Hour).Head
	require.Equal(t, int64(3), h.WorkGeneration)
	return &chainFixture{t: t, b: b, dim: dim, v1: snapshotAt(t, b, dim, 1).Current(), head: h}, snapshotAt(t, b, dim, 2)
}

// TestGuardClausesME004SettlementChain (ME004, ME-1: a version is the
// pointer's version + 1, the pointer starts at 1 and moves by exactly one
// onto its own chain). The dimension is at version 2 and generation 3's
// token is live, so ME003 passes every write below; each transaction is a
// whole version (snapshot, pointer, event with its delivery) that commits
// once its one clause is gone. As the role: ME004.not-next-version
// (versions 3 and 4 inserted before the pointer moves), ME004.pointer-
// starts-at-one (the pointer moved by an INSERT ... ON CONFLICT DO UPDATE),
// ME004.pointer-not-plus-one (the pointer moved back to version 1). As the
// owner (the role has no UPDATE grant on execution_attempt_id or
// charge_dimension_key, 42501 first): ME004.pointer-identity-changed. The
// faithful version 3 commits as the role.
func TestGuardClausesME004SettlementChain(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	f, v2 := newChainFixture(t, b, 3721)
	v3 := f.next(v2, "sis-by-hand-v3", nil)
	v4 := f.next(v3.s, "sis-by-hand-v4", nil)

	err := commitAs(t, role, f.insert(v3), f.insert(v4), f.pointer(v3), f.pointer(v4), f.event(v3), f.event(v4))
	requireRefused(t, err, metering.SQLStateSettlementChain, "version 4 is not the next (current 2)", "ME004.not-next-version")

	upsert := execStep(t, `INSERT INTO metering.settlement_input_current (settlement_dimension_id, state_version, snapshot_ref,
		execution_attempt_id, charge_dimension_key) VALUES ($1, 3, $2, $3, $4)
		ON CONFLICT (settlement_dimension_id) DO UPDATE SET state_version = EXCLUDED.state_version, snapshot_ref = EXCLUDED.snapshot_ref`,
		f.dim, v3.s.Snapshot.Ref, v3.s.ExecutionAttemptID, v3.s.ChargeDimensionKey)
	err = commitAs(t, role, f.insert(v3), upsert, f.event(v3))
	requireRefused(t, err, metering.SQLStateSettlementChain, "starts at version 1", "ME004.pointer-starts-at-one")

	err = commitAs(t, role, execStep(t, `UPDATE metering.settlement_input_current SET state_version = 1, snapshot_ref = $2
		WHERE settlement_dimension_id = $1`, f.dim, f.v1.Snapshot.Ref))
	requireRefused(t, err, metering.SQLStateSettlementChain, "must advance by exactly one version (2 -> 1)", "ME004.pointer-not-plus-one")

	for _, set := range []string{"execution_attempt_id = gen_random_uuid()", "charge_dimension_key = 'text.other_tokens'"} {
		moved := execStep(t, `UPDATE metering.settlement_input_current SET state_version = 3, snapshot_ref = $2, `+set+`
			WHERE settlement_dimension_id = $1`, f.dim, v3.s.Snapshot.Ref)
		err = commitAs(t, role, f.insert(v3), moved, f.event(v3))
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err), "the role may not change the pointer's identity: %v", err)
		err = commitAs(t, b.pool, f.insert(v3), moved, f.event(v3))
		requireRefused(t, err, metering.SQLStateSettlementChain, "must advance by exactly one version (2 -> 3)", "ME004.pointer-identity-changed: "+set)
	}

	require.Equal(t, 2, count(t, b.pool, `SELECT state_version FROM metering.settlement_input_current WHERE settlement_dimension_id = $1`, f.dim))
	require.NoError(t, commitAs(t, role, f.insert(v3), f.pointer(v3), f.event(v3)), "the faithful version 3 commits")
	requireDenseChains(t, b.pool)
}

// TestGuardClausesME005SettlementAtomic (ME005, ME-1: a version commits
// with its pointer move, its event and the event's billing delivery, and
// names the stored predecessor digest). Generation 3's live token writes
// version 3 as the role, each transaction lacking exactly one part:
// ME005.pointer-not-moved (no pointer move), ME005.event-missing (no event;
// disabled, the delivery clause answers with its own message),
// ME005.delivery-missing (the event row without its delivery rows; the
// snapshot's check runs first at COMMIT, the outbox's delivery-set proof
// OW004 after it), ME005.predecessor-digest-not-stored (snapshot and event
// agree on a predecessor digest that is not version 2's).
func TestGuardClausesME005SettlementAtomic(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	f, v2 := newChainFixture(t, b, 3731)
	v3 := f.next(v2, "sis-by-hand-v3", nil)
	lying := f.next(v2, "sis-lying-v3", func(s *settlement.Snapshot) {
		p := *s.Predecessor
		p.Snapshot.Digest = strings.Repeat("0", 64)
		s.Predecessor = &p
	})
	for _, c := range []struct {
		clause, fragment string
		steps            []func(pgx.Tx) error
	}{
		{"ME005.pointer-not-moved", "committed without its Current pointer move", []func(pgx.Tx) error{f.insert(v3), f.event(v3)}},
		{"ME005.event-missing", "committed without its metering.settlement-input.current-changed@1 event",
			[]func(pgx.Tx) error{f.insert(v3), f.pointer(v3)}},
		{"ME005.delivery-missing", "has no billing_settlement_catch_up delivery",
			[]func(pgx.Tx) error{f.insert(v3), f.pointer(v3), f.eventWithoutDelivery(v3)}},
		{"ME005.predecessor-digest-not-stored", "names a predecessor digest that is not stored",
			[]func(pgx.Tx) error{f.insert(lying), f.pointer(lying), f.event(lying)}},
	} {
		err := commitAs(t, role, c.steps...)
		requireRefused(t, err, metering.SQLStateSettlementAtomic, c.fragment, c.clause)
	}
	require.NoError(t, commitAs(t, role, f.insert(v3), f.pointer(v3), f.event(v3)), "the whole version 3 commits")
	requireDenseChains(t, b.pool)
}

// TestGuardClausesME009AttemptOnlyForQueuedWork (ME009.attempt-not-queued;
// docs/metering.md ME009 "an attempt's Work must be queued"): as the role,
// one transaction inserts a Work without its queue row (the role holds
// INSERT on input_works) and starts an attempt of it; refused at COMMIT.
// The Work is not finished, so only this clause refuses. (Deleting a
// claimed Work's queue row first is no longer a way here: ME012 refuses
// that DELETE, guard_pending_delete_test.go.)
func TestGuardClausesME009AttemptOnlyForQueuedWork(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	a := newAttempt(3741)
	dispatched(t, b, a)
	const ref = "miw-unqueued-3741"
	err := commitAs(t, role,
		execStep(t, `INSERT INTO metering.input_works (work_ref, work_schema_version, work_digest_algorithm_version,
			work_digest, execution_attempt_id, lane_kind, gateway_deployment_id, source_evidence_dimension_key, work_generation,
			operation_id, trigger_digest, work_body)
			VALUES ($1, '1', 'jcs-sha256-v1', repeat('f', 64), $2::uuid, 'provider_cost', $3, 'cost.unqueued', 1,
			gen_random_uuid(), repeat('f', 64), '{}')`, ref, a.attemptID, a.deployment),
		execStep(t, `INSERT INTO metering.work_attempts (work_ref, attempt_number, fencing_token, lease_until)
			VALUES ($1, 1, gen_random_uuid(), now() + interval '1 hour')`, ref))
	requireRefused(t, err, metering.SQLStateWorkFinished, "started for a Work that is not queued", "ME009.attempt-not-queued")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.input_works WHERE work_ref = $1`, ref))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_attempts WHERE work_ref = $1`, ref))
}

// TestGuardClausesME010CostCoordination (ME010; docs/metering.md: a
// finished generation's cost result never changes, generations never go
// back, never deleted). The real cost worker processed generations 1 and
// 2 of a lane. As the role: ME010.older-generation (back to generation 1,
// a CHECK-valid row), ME010.finished-generation-changed (generation 2's
// row touched). As the owner (the role has no DELETE grant, 42501 first):
// ME010.coordination-delete.
func TestGuardClausesME010CostCoordination(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	a := newAttempt(3751)
	reads := newCostReads(b.owners, a)
	for sv := int64(1); sv <= 2; sv++ {
		b.ack(t, a.availability(b.owners, cost, costDim, sv, contract.AvailabilityAvailable, ""))
		res, err := metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, claimOne(t, b, time.Hour))
		require.NoError(t, err)
		require.Equal(t, receipt.StateAvailabilityProcessed, res.State)
		require.EqualValues(t, sv, res.Processing.WorkGeneration)
	}
	coordination := func(set string) func(pgx.Tx) error {
		return execStep(t, `UPDATE metering.cost_lane_coordination SET `+set+` WHERE execution_attempt_id = $1`, a.attemptID)
	}
	err := commitAs(t, role, coordination(`work_generation = 1`))
	requireRefused(t, err, metering.SQLStateCostCoordination, "moved to an older generation", "ME010.older-generation")
	err = commitAs(t, role, coordination(`updated_at = now()`))
	requireRefused(t, err, metering.SQLStateCostCoordination, "is finished (availability_processed)", "ME010.finished-generation-changed")
	del := execStep(t, `DELETE FROM metering.cost_lane_coordination WHERE execution_attempt_id = $1`, a.attemptID)
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(commitAs(t, role, del)))
	requireRefused(t, commitAs(t, b.pool, del), metering.SQLStateCostCoordination, "is never deleted", "ME010.coordination-delete")
	require.Equal(t, 2, count(t, b.pool, `SELECT work_generation FROM metering.cost_lane_coordination WHERE execution_attempt_id = $1`, a.attemptID))
}
