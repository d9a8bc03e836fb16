package metering_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/metering"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread/meteringread"
	"github.com/oceanway/core/internal/release"
)

// Issue 30 (finality safety, Metering): PostgreSQL itself refuses the
// forged writes an attacker with a session as oceanway_metering could
// commit. Every test builds its state with the real consumer, worker and
// validation code, then tries each forged write as the least-privileged
// role (dbtest.RolePool) in its own transaction ending in COMMIT and
// expects the refusal's SQLSTATE (migration 00013, docs/metering.md
// "Finality guards").

// guardSetup is workerSetup plus a pool that is the least-privileged role.
func guardSetup(t *testing.T) (*bundle, *pgxpool.Pool) {
	t.Helper()
	dbs := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering},
		Lines: []migrate.Line{outboxschema.Line(), meteringschema.Line()}, MaxConns: 10})
	pool := dbs.Metering()
	o := newOwners()
	c, err := metering.New(pool, metering.Config{Inbox: inbox.Config{LockTimeout: time.Second}, Reads: o})
	require.NoError(t, err)
	_, err = release.Bootstrap(t.Context(), pool, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	return &bundle{pool: pool, c: c, owners: o}, dbtest.RolePool(t, dbs.DSNs[boundary.Metering], meteringschema.RoleMetering)
}

// commitAs runs steps in one transaction on pool and COMMITs it; the
// error is the first step's or the commit's (deferred checks).
func commitAs(t *testing.T, pool *pgxpool.Pool, steps ...func(tx pgx.Tx) error) error {
	t.Helper()
	return db.WithTx(t.Context(), pool, func(_ context.Context, tx pgx.Tx) error {
		for _, s := range steps {
			if err := s(tx); err != nil {
				return err
			}
		}
		return nil
	})
}

func execStep(t *testing.T, sql string, args ...any) func(tx pgx.Tx) error {
	return func(tx pgx.Tx) error {
		_, err := tx.Exec(t.Context(), sql, args...)
		return err
	}
}

// snapshotAt decodes the stored version v of a dimension.
func snapshotAt(t *testing.T, b *bundle, dim string, v int64) *settlement.Snapshot {
	t.Helper()
	var body string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT snapshot_body FROM metering.settlement_input_snapshots
		WHERE settlement_dimension_id = $1 AND state_version = $2`, dim, v).Scan(&body))
	s, err := settlement.Decode([]byte(body))
	require.NoError(t, err)
	return s
}

// appliedTwice applies a dispatched attempt's usage Work (version 1 of both
// dimensions), then a corrected output usage (version 2 of that dimension),
// with the real consumer and worker. It returns the output dimension.
func appliedTwice(t *testing.T, b *bundle, a attemptFixture) string {
	t.Helper()
	dispatched(t, b, a)
	p := processor(t, b, nil)
	_, err := p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	b.ack(t, a.availability(b.owners, usage, dimOut, 2, contract.AvailabilityAvailable, ""))
	_, err = p.Process(t.Context(), claimEligibility(t, b, time.Hour))
	require.NoError(t, err)
	dim := dimensionOf(a, dimOut)
	require.Equal(t, 2, count(t, b.pool, `SELECT state_version FROM metering.settlement_input_current WHERE settlement_dimension_id = $1`, dim))
	return dim
}

// TestIssue30Class10ValidationReceiptCurrentOnlyForHead (issue 30 class 10;
// ADR-031 validateSettlementInputCurrent: a receipt's `current` only for
// the head; ME-1). The pointer is at version 2. The real validation commits
// not_current for version 1 and current for version 2 as the role; a
// hand-written receipt that says the truth commits too. Refused: `current`
// for version 1 (ME006), a row that says not_current under a body that says
// current, and a not_current body naming a Current that is not the head
// (ME007). Clauses (issue 37): ME006.not-head, ME007.body-mismatch.
func TestIssue30Class10ValidationReceiptCurrentOnlyForHead(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	dim := appliedTwice(t, b, newAttempt(3001))
	v1, v2 := snapshotAt(t, b, dim, 1).Current(), snapshotAt(t, b, dim, 2).Current()

	req := func(ref settlement.Ref) meteringread.SettlementValidationRequest {
		op := uuid.NewString()
		return meteringread.SettlementValidationRequest{Purpose: meterfacts.PurposeFinalization, OperationID: op,
			SettlementDimensionID: dim, Snapshot: ref, InputManifestDigest: manifestDigest(op)}
	}
	old, err := metering.ValidateSettlementInputCurrent(t.Context(), role, req(v1))
	require.NoError(t, err, "the real not_current answer commits as the role")
	require.False(t, old.Receipt.Current)
	require.Equal(t, v2, old.Current)
	head, err := metering.ValidateSettlementInputCurrent(t.Context(), role, req(v2))
	require.NoError(t, err, "the real current answer commits as the role")
	require.True(t, head.Receipt.Current)

	// forge writes a sealed receipt row: the body says (bodyCurrent,
	// bodyHead), the columns say (result, currentVersion).
	forge := func(validated settlement.Ref, bodyCurrent bool, bodyHead settlement.Ref, result string, currentVersion int64) func(tx pgx.Tx) error {
		r := &meterfacts.SettlementInputCurrentValidationReceipt{
			Receipt: strict.Quadruple{Ref: "sicvr-forged-" + uuid.NewString()}, Purpose: meterfacts.PurposeFinalization,
			OperationID: uuid.NewString(), InputManifestDigest: manifestDigest("forged"), SettlementDimensionID: dim,
			Validated: validated.Snapshot, ValidatedStateVersion: validated.StateVersion, Current: bodyCurrent,
			ValidatedAt: time.Now().UTC().Truncate(time.Microsecond),
		}
		if !bodyCurrent {
			r.CurrentSnapshot, r.CurrentStateVersion = bodyHead.Snapshot, bodyHead.StateVersion
		}
		_, err := meterfacts.Seal(r)
		require.NoError(t, err)
		body, err := jcs.Marshal(r.ToJSON())
		require.NoError(t, err)
		return execStep(t, `INSERT INTO metering.settlement_validation_receipts (validation_operation_id, request_digest, purpose,
			settlement_dimension_id, validated_state_version, validated_snapshot_ref, result_state, current_state_version,
			receipt_ref, receipt_digest, receipt_body) VALUES ($1, repeat('d', 64), $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			r.OperationID, r.Purpose, dim, validated.StateVersion, validated.Snapshot.Ref, result, currentVersion,
			r.Receipt.Ref, r.Receipt.Digest, string(body))
	}
	require.NoError(t, commitAs(t, role, forge(v2, true, settlement.Ref{}, "current", 2)), "a true receipt commits")
	for _, c := range []struct {
		name  string
		step  func(pgx.Tx) error
		state string
	}{
		{"class 10: current for version 1 while the pointer is at 2", forge(v1, true, settlement.Ref{}, "current", 1), metering.SQLStateValidationNotHead},
		{"not_current answering for version 1 as the Current", forge(v1, false, v2, "not_current", 1), metering.SQLStateValidationNotHead},
		{"row not_current, body current", forge(v1, true, settlement.Ref{}, "not_current", 2), metering.SQLStateValidationBody},
		{"body names version 1's snapshot as the Current", forge(v1, false, settlement.Ref{Snapshot: v1.Snapshot, StateVersion: 2}, "not_current", 2),
			metering.SQLStateValidationBody},
	} {
		err := commitAs(t, role, c.step)
		require.Equal(t, c.state, db.SQLState(err), "%s: %v", c.name, err)
	}
	require.Equal(t, 3, count(t, b.pool, `SELECT count(*) FROM metering.settlement_validation_receipts`))
}

// TestIssue30Class11OneEventPerChainRevision (issue 30 class 11; ME-1: one
// metering.settlement-input.current-changed@1 per snapshot chain revision,
// each backed by its snapshot/pointer CAS). After the real worker applied
// versions 1 and 2, as the role: a second event for version 1 (valid
// digest, with its billing delivery) and an event for a revision no
// snapshot has are refused at COMMIT (ME008). With a live Work token, a new
// version whose snapshot, pointer and event are all written but whose event
// names another predecessor digest is refused (ME008); the faithful version
// commits. Clauses (issue 37): ME008.event-unnamed (the two events no
// snapshot names; disabled, the carry check answers with its own message),
// ME008.event-not-carrying (the lying predecessor).
func TestIssue30Class11OneEventPerChainRevision(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	a := newAttempt(3002)
	dim := appliedTwice(t, b, a)
	appendEvent := func(e *envelope.Envelope) func(tx pgx.Tx) error {
		return func(tx pgx.Tx) error {
			_, err := release.ForProducer(boundary.Metering).AppendTx(t.Context(), tx, *e)
			return err
		}
	}
	s1 := snapshotAt(t, b, dim, 1)
	second := metering.SettlementEvent(s1)
	second.EventID = uuid.NewString()
	s3 := *snapshotAt(t, b, dim, 2)
	pred := s3.Current()
	s3.StateVersion, s3.Predecessor = 3, &pred
	unbacked := metering.SettlementEvent(&s3)
	for _, c := range []struct {
		name string
		e    *envelope.Envelope
	}{
		{"class 11: a second event for the same dimension and revision", second},
		{"an event for a revision no snapshot has", unbacked},
	} {
		err := commitAs(t, role, appendEvent(c.e))
		require.Equal(t, metering.SQLStateSettlementEventUnbacked, db.SQLState(err), "%s: %v", c.name, err)
		require.ErrorContains(t, err, "is named by no snapshot version", "ME008.event-unnamed: %s", c.name)
	}

	// A live token (generation 3, claimed, unfinished) writes version 3 by hand.
	b.ack(t, a.availability(b.owners, usage, dimOut, 3, contract.AvailabilityAvailable, ""))
	h := claimEligibility(t, b, time.Hour).Head
	v3 := s3
	v3.Snapshot = strict.Quadruple{Ref: "sis-by-hand-v3"}
	body, err := settlement.Seal(&v3)
	require.NoError(t, err)
	content, err := settlement.ContentDigest(&v3)
	require.NoError(t, err)
	faithful := metering.SettlementEvent(&v3)
	snapshot := execStep(t, `INSERT INTO metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref,
		snapshot_schema_version, snapshot_digest_algorithm_version, snapshot_digest, content_digest, predecessor_state_version,
		predecessor_snapshot_ref, billing_reservation_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key,
		target_net_amount, reconciliation_state, work_ref, attempt_number, fencing_token, snapshot_body, event_id)
		VALUES ($1, 3, $2, '1', 'jcs-sha256-v1', $3, $4, 2, $5, $6, $7, $8, $9, $10, $11::numeric, $12, $13, $14, $15, $16, $17)`,
		dim, v3.Snapshot.Ref, v3.Snapshot.Digest, content.Value, pred.Snapshot.Ref, v3.BillingReservationID, v3.RunID, v3.RunStepID,
		v3.ExecutionAttemptID, v3.ChargeDimensionKey, v3.TargetNetAmount, v3.ReconciliationState, h.Work.Ref, h.AttemptNumber,
		h.FencingToken, body, faithful.EventID)
	pointer := execStep(t, `UPDATE metering.settlement_input_current SET state_version = 3, snapshot_ref = $2
		WHERE settlement_dimension_id = $1 AND state_version = 2`, dim, v3.Snapshot.Ref)
	// The envelope contract recomputes the dimension id from the identities,
	// so the lie that still builds is the predecessor: another digest.
	lying, lyingPred := v3, pred
	lyingPred.Snapshot.Digest = strings.Repeat("0", 64)
	lying.Predecessor = &lyingPred
	err = commitAs(t, role, snapshot, pointer, appendEvent(metering.SettlementEvent(&lying)))
	require.Equal(t, metering.SQLStateSettlementEventUnbacked, db.SQLState(err), "an event that does not carry its snapshot: %v", err)
	require.ErrorContains(t, err, "does not carry its snapshot", "ME008.event-not-carrying")
	require.NoError(t, commitAs(t, role, snapshot, pointer, appendEvent(faithful)), "the faithful version commits")
	require.Equal(t, 3, count(t, b.pool, `SELECT count(*) FROM outbox.outbox_events WHERE aggregate_id = $1`, dim), "one event per revision")
	requireDenseChains(t, b.pool)
}

// TestIssue30FinishedAttemptTokenWritesNothing (issue 30 "a finished
// attempt's token can no longer write anything", metering Work; DESIGN §9;
// ME-1, MET-*). The real worker applied a Work; with that finished
// attempt's (work, number, token), as the role: every fact is refused
// (ME003, 00005), a second finish by the primary key, a new attempt and a
// new queue row for the finished Work at COMMIT (ME009), and a lease
// renewal finds no queue row. Clauses (issue 37): ME003.work-finished (the
// Blocked@1, MeterEvent and cost fact rows are refused by it alone),
// ME009.attempt-not-queued (the finish deleted the queue row; disabled,
// ME009.work-finished answers with its own message), ME009.work-finished
// (the queue row).
func TestIssue30FinishedAttemptTokenWritesNothing(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	a := newAttempt(3003)
	dispatched(t, b, a)
	att := claimEligibility(t, b, time.Hour)
	out, err := processor(t, b, nil).Process(t.Context(), att)
	require.NoError(t, err)
	require.Equal(t, receipt.FinishApplied, out.Finished.Outcome.State)
	h := att.Head
	dim := dimensionOf(a, dimOut)
	w, n, tok, attemptID := h.Work.Ref, h.AttemptNumber, h.FencingToken, h.ExecutionAttemptID
	facts := factCount(t, b.pool, tok)
	require.Positive(t, facts)
	for _, c := range []struct {
		name, sql string
		args      []any
		state     string
		fragment  string // unique to the refusing clause among its SQLSTATE's
	}{
		{"eligibility decision", `INSERT INTO metering.eligibility_decisions (decision_ref, decision_digest, execution_attempt_id, decision,
			decision_rule_version, work_ref, attempt_number, fencing_token, decision_body)
			VALUES ('med-forged', repeat('e', 64), $4::uuid, 'ineligible', 'r', $1, $2, $3::uuid, '{}')`,
			[]any{w, n, tok, attemptID}, metering.SQLStateFenced, "is already finished"},
		{"meter event", `INSERT INTO metering.meter_events (meter_event_ref, meter_event_digest, settlement_dimension_id, execution_attempt_id,
			charge_dimension_key, quantity, unit, work_ref, attempt_number, fencing_token, meter_event_body)
			VALUES ('mev-forged', repeat('e', 64), $5::uuid, $4::uuid, 'text.output_tokens', 0, 'token', $1, $2, $3::uuid, '{}')`,
			[]any{w, n, tok, attemptID, dim}, metering.SQLStateFenced, "is already finished"},
		{"settlement input version 2", `INSERT INTO metering.settlement_input_snapshots (settlement_dimension_id, state_version, snapshot_ref,
			snapshot_schema_version, snapshot_digest_algorithm_version, snapshot_digest, content_digest, predecessor_state_version,
			predecessor_snapshot_ref, billing_reservation_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key,
			target_net_amount, reconciliation_state, work_ref, attempt_number, fencing_token, snapshot_body)
			SELECT settlement_dimension_id, 2, 'sis-forged', '1', 'jcs-sha256-v1', snapshot_digest, content_digest, 1, snapshot_ref,
			  billing_reservation_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key, 0, reconciliation_state,
			  $1, $2, $3::uuid, snapshot_body
			FROM metering.settlement_input_snapshots WHERE settlement_dimension_id = $4::uuid`,
			[]any{w, n, tok, dim}, metering.SQLStateFenced, "is already finished"},
		{"Blocked@1", `INSERT INTO metering.work_blocks (work_ref, attempt_number, fencing_token, blocked_ref, blocked_digest, blocked_body,
			evidence_ref, evidence_digest, evidence_body)
			VALUES ($1, $2, $3::uuid, 'miwb-forged', repeat('e', 64), '{}', 'ev-forged', repeat('e', 64), '{}')`,
			[]any{w, n, tok}, metering.SQLStateFenced, "is already finished"},
		{"provider cost fact", `INSERT INTO metering.provider_cost_facts (provider_cost_fact_ref, provider_cost_fact_digest, work_ref,
			attempt_number, fencing_token, execution_attempt_id, gateway_deployment_id, source_evidence_dimension_key, currency, amount, fact_body)
			VALUES ('pcf-forged', repeat('e', 64), $1, $2, $3::uuid, $4::uuid, 'gw', 'cost', 'USD', 0, '{}')`,
			[]any{w, n, tok, attemptID}, metering.SQLStateFenced, "is already finished"},
		{"second finish", `INSERT INTO metering.work_finishes (work_ref, attempt_number, fencing_token, finished_ref, finished_digest,
			outcome_state, finished_body) VALUES ($1, $2, $3::uuid, 'miwf-forged', repeat('e', 64), 'superseded', '{}')`,
			[]any{w, n, tok}, pgerrcode.UniqueViolation, ""},
		{"new attempt of the finished Work", `INSERT INTO metering.work_attempts (work_ref, attempt_number, fencing_token, lease_until)
			VALUES ($1, $2::bigint + 1, gen_random_uuid(), now() + interval '1 hour')`, []any{w, n}, metering.SQLStateWorkFinished,
			"started for a Work that is not queued"},
		{"the finished Work queued again", `INSERT INTO metering.pending_works (work_ref, lane_kind)
			VALUES ($1, 'eligibility_and_settlement_input')`, []any{w}, metering.SQLStateWorkFinished, "is finished: no new attempt"},
	} {
		err := commitAs(t, role, execStep(t, c.sql, c.args...))
		require.Equal(t, c.state, db.SQLState(err), "%s: %v", c.name, err)
		require.ErrorContains(t, err, c.fragment, c.name)
	}
	var renewed int64
	require.NoError(t, commitAs(t, role, func(tx pgx.Tx) error {
		tag, err := tx.Exec(t.Context(), `UPDATE metering.pending_works SET lease_until = now() + interval '1 hour'
			WHERE work_ref = $1 AND (SELECT a.fencing_token FROM metering.work_attempts a WHERE a.work_ref = $1
			  ORDER BY a.attempt_number DESC LIMIT 1) = $2::uuid`, w, tok)
		renewed = tag.RowsAffected()
		return err
	}))
	require.Zero(t, renewed, "a finished Work has no queue row to renew")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_attempts WHERE work_ref = $1`, w))
	require.Equal(t, facts, factCount(t, b.pool, tok), "the finished token wrote nothing")
	_, err = metering.Claim(t.Context(), role, time.Hour)
	require.ErrorIs(t, err, metering.ErrNoWork, "nothing of the finished Work is claimable")
}

// TestIssue30SupersededOnlyWhenLaneMoved (issue 30, "facts only for the
// state they describe"; outbox-publisher superseded finish; MET-8). A
// superseded finish says a newer generation exists: as the role, the
// latest generation's Started Work cannot be finished `superseded` (ME011
// at COMMIT). When the next event schedules generation 2, the input
// processor's own superseded finish of generation 1 commits. Clause
// (issue 37): ME011.superseded-lane-not-moved.
func TestIssue30SupersededOnlyWhenLaneMoved(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	a := newAttempt(3004)
	dispatched(t, b, a)
	h := claimEligibility(t, b, time.Hour).Head
	require.Equal(t, int64(1), h.WorkGeneration)
	err := commitAs(t, role, execStep(t, `INSERT INTO metering.work_finishes (work_ref, attempt_number, fencing_token, finished_ref,
		finished_digest, outcome_state, finished_body) VALUES ($1, $2, $3::uuid, 'miwf-forged', repeat('f', 64), 'superseded', '{}')`,
		h.Work.Ref, h.AttemptNumber, h.FencingToken))
	require.Equal(t, metering.SQLStateSupersededNotMoved, db.SQLState(err), "superseded while the lane has not moved: %v", err)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes`))

	b.ack(t, a.availability(b.owners, usage, dimOut, 2, contract.AvailabilityAvailable, ""))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_finishes WHERE work_ref = $1 AND outcome_state = 'superseded'`, h.Work.Ref),
		"the input processor's superseded finish commits with generation 2")
}

// immutable lists the metering tables that refuse UPDATE (insert-only) and
// those that refuse DELETE, with the SQLSTATE PostgreSQL raises for them.
var (
	insertOnlyTables = []string{"input_receipts", "input_works", "work_attempts", "work_finishes", "eligibility_decisions",
		"meter_events", "settlement_input_snapshots", "work_blocks", "provider_cost_facts", "cost_processing_facts",
		"settlement_validation_receipts"}
	noDeleteTables = map[string]string{"input_fences": metering.SQLStateInsertOnly, "usage_watermarks": metering.SQLStateInsertOnly,
		"cost_lanes": metering.SQLStateInsertOnly, "settlement_input_current": metering.SQLStateInsertOnly,
		"cost_lane_coordination": metering.SQLStateCostCoordination}
)

// TestIssue30ImmutableTablesRefuseTruncateUpdateDeleteForEveryone (issue
// 30: immutable and append-only tables refuse UPDATE, DELETE and TRUNCATE
// for every role, the superuser included). State from the real code: both
// lanes applied (a cost Work blocked once), a validation receipt. As the
// admin pool (the test server's superuser): every metering table refuses
// TRUNCATE (ME001; the catalog proves each has the statement trigger), every
// insert-only table refuses UPDATE and DELETE, the never-deleted tables
// refuse DELETE; nothing changed.
//
// Clauses (issue 37), each trigger of metering.reject_change: the
// superuser is the least-privileged role these triggers are the refusal
// for, because oceanway_metering holds no TRUNCATE grant anywhere and no
// UPDATE or DELETE grant on these tables (42501 first). TRUNCATE ... CASCADE
// also fires the truncate triggers of the referencing tables, so each
// refusal must name the table truncated. ME001.input-receipts-insert-only,
// ME001.input-works-insert-only, ME001.work-attempts-insert-only,
// ME001.work-finishes-insert-only, ME001.eligibility-decisions-insert-only,
// ME001.meter-events-insert-only, ME001.settlement-input-snapshots-insert-only,
// ME001.work-blocks-insert-only, ME001.provider-cost-facts-insert-only,
// ME001.cost-processing-facts-insert-only,
// ME001.settlement-validation-receipts-insert-only (UPDATE, then DELETE);
// ME001.input-fences-no-delete, ME001.usage-watermarks-no-delete,
// ME001.cost-lanes-no-delete, ME001.settlement-input-current-no-delete;
// ME001.input-receipts-no-truncate, ME001.input-fences-no-truncate,
// ME001.usage-watermarks-no-truncate, ME001.cost-lanes-no-truncate,
// ME001.input-works-no-truncate, ME001.work-attempts-no-truncate,
// ME001.work-finishes-no-truncate, ME001.pending-works-no-truncate,
// ME001.eligibility-decisions-no-truncate, ME001.meter-events-no-truncate,
// ME001.settlement-input-snapshots-no-truncate,
// ME001.settlement-input-current-no-truncate, ME001.work-blocks-no-truncate,
// ME001.provider-cost-facts-no-truncate,
// ME001.cost-processing-facts-no-truncate,
// ME001.cost-lane-coordination-no-truncate,
// ME001.settlement-validation-receipts-no-truncate.
func TestIssue30ImmutableTablesRefuseTruncateUpdateDeleteForEveryone(t *testing.T) {
	t.Parallel()
	b, role := guardSetup(t)
	dim := appliedTwice(t, b, newAttempt(3005))
	op := uuid.NewString()
	_, err := metering.ValidateSettlementInputCurrent(t.Context(), role, meteringread.SettlementValidationRequest{Purpose: meterfacts.PurposeFinalization,
		OperationID: op, SettlementDimensionID: dim, Snapshot: snapshotAt(t, b, dim, 2).Current(), InputManifestDigest: manifestDigest(op)})
	require.NoError(t, err)
	c := newAttempt(3006)
	reads := newCostReads(b.owners, c)
	b.ack(t, c.availability(b.owners, cost, costDim, 1, contract.AvailabilityAvailable, ""))
	_, err = metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads, Mappings: map[string]metering.CostUnit{}}, claimOne(t, b, time.Hour))
	require.NoError(t, err, "blocked: no cost mapping")
	res, err := metering.ProcessCostWork(t.Context(), b.pool, metering.CostConfig{Reads: reads}, claimOne(t, b, time.Hour))
	require.NoError(t, err)
	require.Equal(t, receipt.StateAvailabilityProcessed, res.State)
	b.ack(t, c.availability(b.owners, cost, costDim, 2, contract.AvailabilityPending, "")) // a queued Work

	var super bool
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user`).Scan(&super))
	t.Logf("admin pool is superuser: %v", super)

	var tables []string
	rows, err := b.pool.Query(t.Context(), `SELECT c.relname FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'metering' AND c.relkind = 'r' ORDER BY c.relname`)
	require.NoError(t, err)
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	snapshot := func() map[string]int {
		m := map[string]int{}
		for _, tbl := range tables {
			m[tbl] = count(t, b.pool, `SELECT count(*) FROM metering.`+tbl)
		}
		return m
	}
	before := snapshot()
	for _, tbl := range append(insertOnlyTables, "input_fences", "usage_watermarks", "cost_lanes", "settlement_input_current",
		"cost_lane_coordination", "pending_works") {
		require.Positive(t, before[tbl], "%s has rows, so its row triggers fire", tbl)
	}

	// Every table has a BEFORE TRUNCATE statement trigger (tgtype: 32 truncate, 2 before).
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'metering' AND c.relkind = 'r' AND NOT EXISTS (
		  SELECT 1 FROM pg_catalog.pg_trigger g WHERE g.tgrelid = c.oid AND g.tgenabled <> 'D'
		    AND g.tgtype & 32 <> 0 AND g.tgtype & 2 <> 0 AND g.tgfoid = 'metering.reject_change()'::regprocedure)`),
		"a metering table without its truncate guard")
	for _, tbl := range tables {
		err := commitAs(t, b.pool, execStep(t, `TRUNCATE metering.`+tbl+` CASCADE`))
		require.Equal(t, metering.SQLStateInsertOnly, db.SQLState(err), "TRUNCATE %s: %v", tbl, err)
		require.ErrorContains(t, err, "TRUNCATE on metering."+tbl+" is forbidden", "the table's own truncate trigger refuses")
	}
	for _, tbl := range insertOnlyTables {
		column := map[string]string{"input_works": "created_at", "work_attempts": "lease_until"}[tbl]
		if column == "" {
			column = "recorded_at"
		}
		err := commitAs(t, b.pool, execStep(t, `UPDATE metering.`+tbl+` SET `+column+` = `+column))
		require.Equal(t, metering.SQLStateInsertOnly, db.SQLState(err), "UPDATE %s: %v", tbl, err)
		require.ErrorContains(t, err, "UPDATE on metering."+tbl+" is forbidden")
		err = commitAs(t, b.pool, execStep(t, `DELETE FROM metering.`+tbl))
		require.Equal(t, metering.SQLStateInsertOnly, db.SQLState(err), "DELETE %s: %v", tbl, err)
		require.ErrorContains(t, err, "DELETE on metering."+tbl+" is forbidden")
	}
	for tbl, state := range noDeleteTables {
		err := commitAs(t, b.pool, execStep(t, `DELETE FROM metering.`+tbl))
		require.Equal(t, state, db.SQLState(err), "DELETE %s: %v", tbl, err)
		if state == metering.SQLStateInsertOnly {
			require.ErrorContains(t, err, "DELETE on metering."+tbl+" is forbidden")
		}
	}
	require.Equal(t, before, snapshot(), "nothing changed")
}
