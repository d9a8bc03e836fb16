package execution_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/gateway/simprovider"
)

// Issue 37: every refusal clause of the Execution guards (docs/guard-clauses.md)
// has a test that fails when only that clause is disabled. The tests here
// cover the clauses that finality_guards_test.go does not already tell apart
// from their absence; each names its clause ID at its assertion.

// forgeMsg is forge that also returns the refusal's message, for the
// clauses that share a SQLSTATE with another clause of the same write.
func forgeMsg(t *testing.T, pool *pgxpool.Pool, stmts func(ctx context.Context, tx pgx.Tx) error) (string, string) {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	err = stmts(ctx, tx)
	if err == nil {
		err = tx.Commit(ctx)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, pgErr.Message
	}
	require.NoError(t, err)
	return "", ""
}

func sqls(stmts ...string) func(ctx context.Context, tx pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
}

func steps(fs ...func(ctx context.Context, tx pgx.Tx) error) func(ctx context.Context, tx pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		for _, f := range fs {
			if err := f(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	}
}

// The producer's insert grants on the outbox (an attacker replays the
// captured closure event through them).
var (
	eventCols = "event_id, event_type, schema_version, delivery_set_version, delivery_set_definition_schema_version, " +
		"delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest, aggregate_type, aggregate_id, " +
		"aggregate_revision, tenant_kind, tenant_id, workspace_id, project_id, correlation_id, causation_id, operation_id, " +
		"event_envelope, event_payload, event_envelope_digest_algorithm_version, event_envelope_sha256, occurred_at"
	deliveryCols = "event_id, delivery_set_version, destination, consumer_name, expected_receipt_type, " +
		"expected_receipt_schema_version, required_projection_name, required_projection_version, mandatory"
)

// attemptOn creates an attempt of run and dispatches it through the real
// Gateway (bound, or rejected before binding).
func (g *guardEnv) attemptOn(t *testing.T, run execution.RunState, reject bool) *contract.AttemptExecutionManifest {
	t.Helper()
	a, err := g.svc.CreateAttempt(t.Context(), attemptReq(run.RunID, uuid.NewString()))
	require.NoError(t, err)
	p := simprovider.New(simprovider.Config{Seed: 1, ForceReject: reject})
	_, err = g.gw.Dispatch(t.Context(), gateway.DispatchRequest{Tenant: run.Tenant, ManifestBody: a.Body, Decision: p.Route(a.Manifest)})
	require.NoError(t, err)
	return a.Manifest
}

// Issue 37, EX-2, EX004 (execution migration 00007, the live prove_closure):
// at COMMIT a closed run has every attempt with its eligibility fact
// (EX004.attempt-without-eligibility), its attempt set counting exactly its
// attempts (EX004.set-count) and its finalization fact counting exactly its
// attempts (EX004.fact-count). Each forgery, as oceanway_execution, is the
// captured closure replayed with only that rule broken: with the clause
// disabled the first and the third commit, the second is refused by another
// code (EX006, the fact no longer matching the set).
func TestEX004ClosedRunClauses(t *testing.T) {
	t.Parallel()
	g := setupGuards(t)
	ctx := t.Context()
	run := g.run.RunID
	a := g.attempt(t, false)
	_, err := g.svc.FinalizeEligibility(ctx, a.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)

	// The rows of the real closure of the run (one attempt, with its
	// eligibility), after its event was appended (rolled back).
	svc := execution.New(g.exec, admission.Reads{DB: g.core})
	svc.SetGatewayReads(g.reads)
	captured := map[string]string{}
	queries := map[string]string{
		"set":        "SELECT to_jsonb(t)::text FROM execution.attempt_set_manifests t WHERE run_id = $1::uuid",
		"fact":       "SELECT to_jsonb(t)::text FROM execution.run_finalizations t WHERE run_id = $1::uuid",
		"event":      "SELECT to_jsonb(o)::text FROM outbox.outbox_events o JOIN execution.run_finalizations f ON f.event_id = o.event_id WHERE f.run_id = $1::uuid",
		"deliveries": "SELECT jsonb_agg(to_jsonb(d))::text FROM outbox.outbox_deliveries d JOIN execution.run_finalizations f ON f.event_id = d.event_id WHERE f.run_id = $1::uuid",
	}
	svc.SetHooks(execution.Hooks{AfterStep: func(ctx context.Context, tx pgx.Tx, s string) error {
		if s != "append" {
			return nil
		}
		for name, q := range queries {
			var row string
			if err := tx.QueryRow(ctx, q, run).Scan(&row); err != nil {
				return err
			}
			captured[name] = row
		}
		return errCaptured
	}})
	_, err = svc.CloseRun(ctx, run)
	require.ErrorIs(t, err, errCaptured)

	cas := sqls("UPDATE execution.run_execution_states SET state = 'attempts_closed', state_version = 2, closed_at = now() WHERE run_id = '" + run + "'")
	// row inserts a captured row image; sqlExpr, if not empty, is an SQL
	// expression of the image r (jsonb) to insert instead.
	row := func(table, image, sqlExpr string) func(ctx context.Context, tx pgx.Tx) error {
		if sqlExpr == "" {
			sqlExpr = "r"
		}
		return func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO "+table+" SELECT * FROM jsonb_populate_record(NULL::"+table+", (SELECT "+sqlExpr+" FROM (SELECT $1::jsonb AS r) x))", image)
			return err
		}
	}
	event := func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO outbox.outbox_events ("+eventCols+") SELECT "+eventCols+" FROM jsonb_populate_record(NULL::outbox.outbox_events, $1::jsonb)", captured["event"]); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO outbox.outbox_deliveries ("+deliveryCols+") SELECT "+deliveryCols+" FROM jsonb_populate_recordset(NULL::outbox.outbox_deliveries, $1::jsonb)", captured["deliveries"])
		return err
	}
	// The set and the fact with the run's attempts as the database sees
	// them now (execution.closure_items), counting them.
	recount := func(bodyCol string) string {
		n := "(SELECT count(*) FROM execution.attempts WHERE run_id = (r->>'run_id')::uuid)"
		return "jsonb_set(jsonb_set(r, '{attempt_count}', to_jsonb(" + n + ")), '{" + bodyCol + "}', to_jsonb(" +
			"jsonb_set(jsonb_set((r->>'" + bodyCol + "')::jsonb, '{attempts}', execution.closure_items((r->>'run_id')::uuid)), '{attemptCount}', to_jsonb(" + n + "))::text))"
	}
	set, fact := row(tAttemptSet, captured["set"], ""), row(tFinalization, captured["fact"], "")

	// Control: the captured closure replayed whole commits... in a
	// transaction rolled back at the end, so the run stays open.
	rolledBack := func(stmts func(ctx context.Context, tx pgx.Tx) error) {
		tx, err := g.role.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		require.NoError(t, stmts(ctx, tx))
		_, err = tx.Exec(ctx, "SET CONSTRAINTS ALL IMMEDIATE")
		require.NoError(t, err, "the captured closure replayed whole passes every guard")
	}
	rolledBack(steps(set, cas, fact, event))

	// EX004.fact-count: the set and the CAS without the finalization fact.
	code, msg := forgeMsg(t, g.role, steps(set, cas))
	require.Equal(t, execution.CodeClosureIncomplete, code)
	require.Contains(t, msg, "set 1, fact <NULL>")

	// EX004.set-count: a set that says 5 attempts (its body too, so EX006
	// passes) with the real fact: the run has 1.
	five := row(tAttemptSet, captured["set"], `jsonb_set(jsonb_set(r, '{attempt_count}', '5'), '{manifest_body}', to_jsonb(jsonb_set((r->>'manifest_body')::jsonb, '{attemptCount}', '5')::text))`)
	code, msg = forgeMsg(t, g.role, steps(five, cas, fact, event))
	require.Equal(t, execution.CodeClosureIncomplete, code)
	require.Contains(t, msg, "set 5, fact 1")

	// EX004.attempt-without-eligibility (the case): a second attempt
	// without its eligibility fact, and a closure that is complete in every
	// other way: set and fact naming both attempts (the second without
	// eligibility, as execution.closure_items lists it), CAS, event.
	_, err = g.svc.CreateAttempt(ctx, attemptReq(run, uuid.NewString()))
	require.NoError(t, err)
	set2 := row(tAttemptSet, captured["set"], recount("manifest_body"))
	fact2 := row(tFinalization, captured["fact"], recount("fact_body"))
	code, msg = forgeMsg(t, g.role, steps(set2, cas, fact2, event))
	require.Equal(t, execution.CodeClosureIncomplete, code)
	require.Contains(t, msg, "attempts 2, without eligibility 1, set 2, fact 2")
}

// Issue 37, EX-2: the run state guard (execution migration 00001,
// execution.guard_run_state) and the attempt guard of a run's acceptance
// (00006, execution.lock_accepting_run_of), driven as oceanway_execution
// where its grants reach them.
func TestEX002RunStateClauses(t *testing.T) {
	t.Parallel()
	g := setupGuards(t)
	ctx := t.Context()
	open := g.run.RunID
	closed := g.open(t)
	bound := g.attemptOn(t, closed, false)
	_, err := g.svc.FinalizeEligibility(ctx, bound.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)
	_, err = g.svc.CloseRun(ctx, closed.RunID)
	require.NoError(t, err)

	// EX002.run-born-accepting: a run state inserted closed (a copy of the
	// open run under new identities).
	code, msg := forgeMsg(t, g.role, sqls(`INSERT INTO execution.run_execution_states
		SELECT * FROM jsonb_populate_record(NULL::execution.run_execution_states, (
		  SELECT to_jsonb(r) || jsonb_build_object('run_id', gen_random_uuid(), 'billing_reservation_id', gen_random_uuid(),
		    'run_admission_manifest_ref', 'ram-' || gen_random_uuid(), 'run_execution_token_ref', 'ret-' || gen_random_uuid(),
		    'state', 'attempts_closed', 'state_version', 2, 'closed_at', now())
		  FROM execution.run_execution_states r WHERE run_id = '`+open+`'))`))
	require.Equal(t, execution.CodeIllegalState, code)
	require.Contains(t, msg, "starts as accepting_attempts")

	// EX002.run-only-closes: the closed run reopened.
	code, msg = forgeMsg(t, g.role, sqls("UPDATE execution.run_execution_states SET state = 'accepting_attempts', state_version = 1, closed_at = NULL WHERE run_id = '"+closed.RunID+"'"))
	require.Equal(t, execution.CodeIllegalState, code)
	require.Contains(t, msg, "cannot move attempts_closed")

	// EX002.run-identity-immutable: the legal CAS that also changes the
	// run's workspace. oceanway_execution may update only state,
	// state_version and closed_at (its grant refuses this write first, 42501),
	// so the superuser drives it.
	code, msg = forgeMsg(t, g.exec, sqls("UPDATE execution.run_execution_states SET state = 'attempts_closed', state_version = 2, closed_at = now(), workspace_id = gen_random_uuid() WHERE run_id = '"+open+"'"))
	require.Equal(t, execution.CodeIllegalState, code)
	require.Contains(t, msg, "is immutable")

	// EX003.evidence-run-not-accepting: Gateway rejection evidence (naming
	// the attempt's own slot) for an attempt of the closed run.
	f, body := sealedRejection(t, bound, "gpr-late-"+bound.ExecutionAttemptID)
	code, msg = forgeMsg(t, g.role, inserts([2]string{tEvidence, evidenceRow(t, bound.ExecutionAttemptID, f, body)}))
	require.Equal(t, execution.CodeRunNotAccepting, code)
	require.Contains(t, msg, "is not accepting attempts")
}

// Issue 37: the immutability triggers of the attempts and the eligibility
// facts, driven as oceanway_execution (its UPDATE grant on the key column,
// migration 00005, reaches them), and TRUNCATE of each execution table with
// only that table's statement trigger left to refuse it.
func TestEX001ImmutabilityClauses(t *testing.T) {
	t.Parallel()
	g := setupGuards(t)
	ctx := t.Context()
	for _, reject := range []bool{false, true} {
		m := g.attempt(t, reject)
		disposition := contract.DispositionDispatched
		if reject {
			disposition = contract.DispositionNotDispatched
		}
		_, err := g.svc.FinalizeEligibility(ctx, m.ExecutionAttemptID, disposition)
		require.NoError(t, err)
	}
	_, err := g.svc.CloseRun(ctx, g.run.RunID)
	require.NoError(t, err)

	// EX001.attempts-immutable
	require.Equal(t, execution.CodeImmutable, forge(t, g.role, sqls("UPDATE execution.attempts SET execution_attempt_id = execution_attempt_id")))
	// EX001.eligibility-facts-immutable
	require.Equal(t, execution.CodeImmutable, forge(t, g.role, sqls("UPDATE execution.eligibility_facts SET execution_attempt_id = execution_attempt_id")))

	// TRUNCATE: oceanway_execution has no TRUNCATE grant (42501 first), so
	// the superuser drives it. TRUNCATE … CASCADE also truncates the tables
	// that reference the table, whose own triggers would refuse it too: the
	// transaction disables the other tables' statement triggers first, so
	// the table's own trigger is the only refusal left.
	noTruncate := map[string]string{ // table → its trigger
		"execution.run_execution_states": "run_execution_states_no_truncate",         // EX001.run-states-no-truncate
		tAttempts:                        "attempts_no_truncate",                     // EX001.attempts-no-truncate
		tEvidence:                        "gateway_rejection_evidence_no_truncate",   // EX001.rejection-evidence-no-truncate
		tNotDispatched:                   "attempt_not_dispatched_facts_no_truncate", // EX001.not-dispatched-facts-no-truncate
		tEligibility:                     "eligibility_facts_no_truncate",            // EX001.eligibility-facts-no-truncate
		tAttemptSet:                      "attempt_set_manifests_no_truncate",        // EX001.attempt-sets-no-truncate
		tFinalization:                    "run_finalizations_no_truncate",            // EX001.finalizations-no-truncate
	}
	for table := range noTruncate {
		var stmts []string
		for other, trigger := range noTruncate {
			if other != table {
				stmts = append(stmts, "ALTER TABLE "+other+" DISABLE TRIGGER "+trigger)
			}
		}
		stmts = append(stmts, "TRUNCATE "+table+" CASCADE")
		code, msg := forgeMsg(t, g.exec, sqls(stmts...))
		require.Equal(t, execution.CodeImmutable, code, "TRUNCATE %s", table)
		require.Contains(t, msg, "TRUNCATE on "+table, "TRUNCATE %s", table)
	}
}

// Issue 37, EX-2: the finalization fact's own COMMIT check that its run is
// closed (EX005.fact-run-not-closed, execution.prove_finalization) is
// defence in depth: the insert guard (EX005.closure-insert-state) refuses
// the fact of a run that is not closed first, and the run never reopens
// (EX002.run-only-closes), so no write of oceanway_execution reaches it.
// The superuser reaches it by disabling, in the transaction, the insert
// guard of the fact and the COMMIT check of the set (which would refuse the
// set of a run still accepting attempts first).
func TestEX005FactOfOpenRunAtCommit(t *testing.T) {
	t.Parallel()
	g := setupGuards(t)
	ctx := t.Context()
	m := g.attempt(t, false)
	_, err := g.svc.FinalizeEligibility(ctx, m.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)
	captured := g.capture(t, "finalization", map[string]string{tAttemptSet: "run_id = $1::uuid", tFinalization: "run_id = $1::uuid"}, g.run.RunID,
		func(s *execution.Service) error { _, err := s.CloseRun(ctx, g.run.RunID); return err })
	code, msg := forgeMsg(t, g.exec, steps(
		sqls("ALTER TABLE execution.run_finalizations DISABLE TRIGGER run_finalizations_guard_insert",
			"ALTER TABLE execution.attempt_set_manifests DISABLE TRIGGER attempt_set_manifests_prove_closure"),
		inserts([2]string{tAttemptSet, captured[tAttemptSet]}, [2]string{tFinalization, captured[tFinalization]})))
	// EX005.fact-run-not-closed
	require.Equal(t, execution.CodeClosureOutsideCAS, code)
	require.Contains(t, msg, "finalization fact of run "+g.run.RunID+" committed while the run is accepting_attempts")
}
