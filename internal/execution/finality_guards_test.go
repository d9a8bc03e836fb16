package execution_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/execution"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/gateway/simprovider"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/release"
)

// Issue 30 (finality safety), Execution half: an attacker with a psql
// session as oceanway_execution tries forged writes against a state the captured
// code built (admission → token → attempts → captured Gateway dispatch →
// eligibility → closure), each in its own transaction ending in COMMIT, and
// PostgreSQL refuses each with its own SQLSTATE.

type guardEnv struct {
	*env
	b     *dbtest.Bundle
	gw    *gateway.Service
	reads gateway.Reads
	role  *pgxpool.Pool // oceanway_execution
	run   execution.RunState
}

func setupGuards(t *testing.T) *guardEnv {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{
		Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway},
		Lines:      []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), executionschema.Line(), gatewayschema.Line()},
		MaxConns:   4,
	})
	for _, bd := range []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway} {
		_, err := release.Bootstrap(t.Context(), b.Pool(bd), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
		require.NoError(t, err)
	}
	g := &guardEnv{env: &env{core: b.Core(), exec: b.Execution(), adm: admission.New(b.Core()),
		svc: execution.New(b.Execution(), admission.Reads{DB: b.Core()})},
		b: b, gw: gateway.New(b.Gateway()), reads: gateway.Reads{DB: b.Gateway()},
		role: dbtest.RolePool(t, b.DSNs[boundary.Execution], executionschema.RoleExecution)}
	g.svc.SetGatewayReads(g.reads)
	g.run = g.open(t)
	return g
}

// attempt creates an attempt of the run and dispatches it through the captured
// Gateway (rejected before binding, or bound).
func (g *guardEnv) attempt(t *testing.T, reject bool) *contract.AttemptExecutionManifest {
	t.Helper()
	a, err := g.svc.CreateAttempt(t.Context(), attemptReq(g.run.RunID, uuid.NewString()))
	require.NoError(t, err)
	p := simprovider.New(simprovider.Config{Seed: 1, ForceReject: reject})
	r, err := g.gw.Dispatch(t.Context(), gateway.DispatchRequest{Tenant: g.run.Tenant, ManifestBody: a.Body, Decision: p.Route(a.Manifest)})
	require.NoError(t, err)
	if reject {
		require.Equal(t, gatewayread.SlotTerminalRejected, r.State)
	} else {
		require.Equal(t, gatewayread.SlotBound, r.State)
	}
	return a.Manifest
}

var errCaptured = errors.New("captured, rolled back")

// capture runs fn on a service whose hook, at step, copies the rows of the
// given tables (as jsonb, filtered by where with the one argument arg) out of
// the captured transaction and rolls it back: the exact rows the captured code
// writes, for an attacker to replay in pieces.
func (g *guardEnv) capture(t *testing.T, step string, tables map[string]string, arg string, fn func(*execution.Service) error) map[string]string {
	t.Helper()
	svc := execution.New(g.exec, admission.Reads{DB: g.core})
	svc.SetGatewayReads(g.reads)
	out := map[string]string{}
	svc.SetHooks(execution.Hooks{AfterStep: func(ctx context.Context, tx pgx.Tx, s string) error {
		if s != step {
			return nil
		}
		for table, where := range tables {
			var row string
			if err := tx.QueryRow(ctx, "SELECT to_jsonb(t)::text FROM "+table+" t WHERE "+where, arg).Scan(&row); err != nil {
				return err
			}
			out[table] = row
		}
		return errCaptured
	}})
	require.ErrorIs(t, fn(svc), errCaptured)
	return out
}

// insertRow inserts a jsonb row image into table.
func insertRow(ctx context.Context, tx pgx.Tx, table, row string) error {
	_, err := tx.Exec(ctx, "INSERT INTO "+table+" SELECT * FROM jsonb_populate_record(NULL::"+table+", $1::jsonb)", row)
	return err
}

// edit changes fields of a jsonb row image (and of its body column, if body
// names one and bodyEdits is not nil).
func edit(t *testing.T, row string, fields map[string]any, body string, bodyEdits func(map[string]any)) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(row), &m))
	for k, v := range fields {
		m[k] = v
	}
	if bodyEdits != nil {
		var bm map[string]any
		require.NoError(t, json.Unmarshal([]byte(m[body].(string)), &bm))
		bodyEdits(bm)
		out, err := json.Marshal(bm)
		require.NoError(t, err)
		m[body] = string(out)
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

// forge runs stmts as pool's role in one transaction ending in COMMIT and
// returns the SQLSTATE of the refusal ("" when it committed).
func forge(t *testing.T, pool *pgxpool.Pool, stmts func(ctx context.Context, tx pgx.Tx) error) string {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := stmts(ctx, tx); err != nil {
		return db.SQLState(err)
	}
	return db.SQLState(tx.Commit(ctx))
}

func inserts(rows ...[2]string) func(ctx context.Context, tx pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		for _, r := range rows {
			if err := insertRow(ctx, tx, r[0], r[1]); err != nil {
				return err
			}
		}
		return nil
	}
}

func sealedRejection(t *testing.T, m *contract.AttemptExecutionManifest, ref string) (*contract.GatewayPreBindingRejectionFact, []byte) {
	t.Helper()
	f := &contract.GatewayPreBindingRejectionFact{Fact: strict.Quadruple{Ref: ref},
		SlotKey:    contract.SlotKey{ExecutionAttemptID: m.ExecutionAttemptID, GatewayDeploymentID: m.GatewayDeploymentID, AttemptManifest: m.Manifest},
		ReasonCode: "no_capacity", RejectedAt: time.Now().UTC().Truncate(time.Microsecond)}
	body, err := contract.Seal(f)
	require.NoError(t, err)
	return f, body
}

func evidenceRow(t *testing.T, attemptID string, f *contract.GatewayPreBindingRejectionFact, body []byte) string {
	t.Helper()
	out, err := json.Marshal(map[string]any{
		"execution_attempt_id": attemptID, "read_contract_version": gatewayread.ReadDispatchSlotV1, "slot_state": gatewayread.SlotTerminalRejected,
		"gateway_pre_binding_rejection_fact_ref": f.Fact.Ref, "gateway_pre_binding_rejection_fact_schema_version": f.Fact.SchemaVersion,
		"gateway_pre_binding_rejection_fact_digest_algorithm_version": string(f.Fact.DigestAlgorithmVersion), "gateway_pre_binding_rejection_fact_digest": f.Fact.Digest,
		"rejection_reason_code": f.ReasonCode, "rejection_fact_body": string(body), "received_at": time.Now().UTC(),
	})
	require.NoError(t, err)
	return string(out)
}

func notDispatchedRow(t *testing.T, m *contract.AttemptExecutionManifest, rejection strict.Quadruple) string {
	t.Helper()
	nd := &contract.AttemptNotDispatchedFact{Fact: strict.Quadruple{Ref: "and-" + m.ExecutionAttemptID}, RunID: m.RunID, RunStepID: m.RunStepID,
		ExecutionAttemptID: m.ExecutionAttemptID, AttemptManifest: m.Manifest, GatewayDeploymentID: m.GatewayDeploymentID,
		Rejection: rejection, RejectionReasonCode: "no_capacity", RecordedAt: time.Now().UTC().Truncate(time.Microsecond)}
	body, err := contract.Seal(nd)
	require.NoError(t, err)
	q := nd.Fact
	out, err := json.Marshal(map[string]any{
		"execution_attempt_id": m.ExecutionAttemptID, "attempt_not_dispatched_fact_ref": q.Ref,
		"attempt_not_dispatched_fact_schema_version": q.SchemaVersion, "attempt_not_dispatched_fact_digest_algorithm_version": string(q.DigestAlgorithmVersion),
		"attempt_not_dispatched_fact_digest": q.Digest, "gateway_pre_binding_rejection_fact_ref": rejection.Ref,
		"fact_body": string(body), "recorded_at": time.Now().UTC(),
	})
	require.NoError(t, err)
	return string(out)
}

const (
	tEvidence      = "execution.gateway_rejection_evidence"
	tNotDispatched = "execution.attempt_not_dispatched_facts"
	tEligibility   = "execution.eligibility_facts"
	tAttemptSet    = "execution.attempt_set_manifests"
	tFinalization  = "execution.run_finalizations"
	tAttempts      = "execution.attempts"
)

// Issue 30 class 12, GW-1 / EX-3: an AttemptNotDispatchedFact@1 needs the
// Gateway's rejection fact as Execution stored it from readDispatchSlot@1,
// naming this attempt's slot; its content must equal that evidence; it
// exists only with the attempt's not_dispatched eligibility fact; every
// eligibility fact describes its attempt and run and comes with its event.
func TestGW1ForgedNotDispatchedFactsAreRefused(t *testing.T) {
	t.Parallel()
	g := setupGuards(t)
	ctx := t.Context()
	rejected := g.attempt(t, true)
	bound := g.attempt(t, false) // bound, eligibility dispatched
	_, err := g.svc.FinalizeEligibility(ctx, bound.ExecutionAttemptID, contract.DispositionDispatched)
	require.NoError(t, err)
	inFlight := g.attempt(t, false) // bound, no eligibility yet

	// The rows the captured code writes for the rejected attempt (rolled back).
	where := "execution_attempt_id = $1::uuid"
	captured := g.capture(t, "eligibility", map[string]string{tEvidence: where, tNotDispatched: where, tEligibility: where}, rejected.ExecutionAttemptID,
		func(s *execution.Service) error {
			_, err := s.FinalizeEligibility(ctx, rejected.ExecutionAttemptID, contract.DispositionNotDispatched)
			return err
		})

	t.Run("EX007 a not-dispatched fact of a bound attempt with an invented rejection and no stored evidence", func(t *testing.T) {
		invented := strict.Quadruple{Ref: "gpr-invented", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
			Digest: "abababababababababababababababababababababababababababababababab"}
		// EX007.fact-without-evidence (the message tells it from EX007.fact-differs-from-evidence)
		code, msg := forgeMsg(t, g.role, inserts([2]string{tNotDispatched, notDispatchedRow(t, inFlight, invented)}))
		require.Equal(t, execution.CodeNotDispatchedEvidence, code)
		require.Contains(t, msg, "names no stored Gateway rejection evidence")
	})
	t.Run("EX007 evidence that is another attempt's rejection", func(t *testing.T) {
		row := edit(t, captured[tEvidence], map[string]any{"execution_attempt_id": inFlight.ExecutionAttemptID}, "", nil)
		// EX007.evidence-names-slot
		require.Equal(t, execution.CodeNotDispatchedEvidence, forge(t, g.role, inserts([2]string{tEvidence, row})))
	})
	t.Run("EX007 a not-dispatched fact whose rejection differs from the stored evidence", func(t *testing.T) {
		f, body := sealedRejection(t, inFlight, "gpr-forged-"+inFlight.ExecutionAttemptID)
		other, _ := sealedRejection(t, inFlight, "gpr-other-"+inFlight.ExecutionAttemptID)
		// EX007.fact-differs-from-evidence
		code, msg := forgeMsg(t, g.role, inserts(
			[2]string{tEvidence, evidenceRow(t, inFlight.ExecutionAttemptID, f, body)},
			[2]string{tNotDispatched, notDispatchedRow(t, inFlight, other.Fact)}))
		require.Equal(t, execution.CodeNotDispatchedEvidence, code)
		require.Contains(t, msg, "does not describe its attempt or its stored Gateway rejection evidence")
	})
	t.Run("EX008 consistent forged evidence and fact for an attempt that is dispatched", func(t *testing.T) {
		f, body := sealedRejection(t, bound, "gpr-forged-"+bound.ExecutionAttemptID)
		// EX008.without-not-dispatched-eligibility
		require.Equal(t, execution.CodeNotDispatchedOrphan, forge(t, g.role, inserts(
			[2]string{tEvidence, evidenceRow(t, bound.ExecutionAttemptID, f, body)},
			[2]string{tNotDispatched, notDispatchedRow(t, bound, f.Fact)})))
	})
	t.Run("EX008 the captured evidence and fact without the not_dispatched eligibility fact", func(t *testing.T) {
		// EX008.without-not-dispatched-eligibility
		require.Equal(t, execution.CodeNotDispatchedOrphan, forge(t, g.role, inserts(
			[2]string{tEvidence, captured[tEvidence]}, [2]string{tNotDispatched, captured[tNotDispatched]})))
	})
	t.Run("EX009 another attempt's eligibility fact body under this attempt", func(t *testing.T) {
		var row string
		require.NoError(t, g.exec.QueryRow(ctx, "SELECT to_jsonb(t)::text FROM execution.eligibility_facts t WHERE execution_attempt_id = $1", bound.ExecutionAttemptID).Scan(&row))
		row = edit(t, row, map[string]any{"execution_attempt_id": inFlight.ExecutionAttemptID, "event_id": uuid.NewString(),
			"execution_eligibility_fact_ref": "eef-" + inFlight.ExecutionAttemptID}, "", nil)
		// EX009.eligibility-content
		require.Equal(t, execution.CodeEligibilityContent, forge(t, g.role, inserts([2]string{tEligibility, row})))
	})
	t.Run("EX009 an eligibility fact whose columns say dispatched while its body says not_dispatched", func(t *testing.T) {
		row := edit(t, captured[tEligibility], map[string]any{"dispatch_disposition": "dispatched", "not_dispatched_execution_attempt_id": nil}, "", nil)
		// EX009.eligibility-content
		require.Equal(t, execution.CodeEligibilityContent, forge(t, g.role, inserts(
			[2]string{tEvidence, captured[tEvidence]}, [2]string{tNotDispatched, captured[tNotDispatched]}, [2]string{tEligibility, row})))
	})
	t.Run("EX010 the captured not_dispatched eligibility without its event", func(t *testing.T) {
		// EX010.eligibility-without-event
		require.Equal(t, execution.CodeFactWithoutEvent, forge(t, g.role, inserts(
			[2]string{tEvidence, captured[tEvidence]}, [2]string{tNotDispatched, captured[tNotDispatched]}, [2]string{tEligibility, captured[tEligibility]})))
	})

	// The legitimate path still commits, and the stored evidence is the
	// Gateway's rejection fact.
	el, err := g.svc.FinalizeEligibility(ctx, rejected.ExecutionAttemptID, contract.DispositionNotDispatched)
	require.NoError(t, err)
	var evidenceBody string
	require.NoError(t, g.exec.QueryRow(ctx, "SELECT rejection_fact_body FROM execution.gateway_rejection_evidence WHERE execution_attempt_id = $1", rejected.ExecutionAttemptID).Scan(&evidenceBody))
	f, err := contract.DecodeGatewayPreBindingRejectionFact([]byte(evidenceBody))
	require.NoError(t, err)
	require.Equal(t, el.NotDispatched.Rejection, f.Fact)
}

// Issue 30 class 13, EX-2: the attempt set and the finalization fact exist
// only with the closure CAS (accepting_attempts → attempts_closed) in the
// same transaction, describe exactly the run's attempts, and come with the
// closure event; no attempt joins a closed run.
func TestEX2ForgedClosuresAreRefused(t *testing.T) {
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
	captured := g.capture(t, "finalization", map[string]string{tAttemptSet: "run_id = $1::uuid", tFinalization: "run_id = $1::uuid"}, g.run.RunID,
		func(s *execution.Service) error { _, err := s.CloseRun(ctx, g.run.RunID); return err })
	cas := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE execution.run_execution_states SET state = 'attempts_closed', state_version = 2, closed_at = now() WHERE run_id = $1", g.run.RunID)
		return err
	}
	then := func(fs ...func(ctx context.Context, tx pgx.Tx) error) func(ctx context.Context, tx pgx.Tx) error {
		return func(ctx context.Context, tx pgx.Tx) error {
			for _, f := range fs {
				if err := f(ctx, tx); err != nil {
					return err
				}
			}
			return nil
		}
	}
	set, fact := [2]string{tAttemptSet, captured[tAttemptSet]}, [2]string{tFinalization, captured[tFinalization]}

	t.Run("EX005 the attempt set while the run still accepts attempts (no CAS)", func(t *testing.T) {
		// EX005.set-without-cas
		code, msg := forgeMsg(t, g.role, inserts(set))
		require.Equal(t, execution.CodeClosureOutsideCAS, code)
		require.Contains(t, msg, "attempt set of run "+g.run.RunID+" committed while the run is accepting_attempts")
	})
	t.Run("EX005 the attempt set and the finalization fact without the CAS", func(t *testing.T) {
		// EX005.closure-insert-state: the fact's insert is refused (the
		// message tells it from EX005.set-without-cas at COMMIT)
		code, msg := forgeMsg(t, g.role, inserts(set, fact))
		require.Equal(t, execution.CodeClosureOutsideCAS, code)
		require.Contains(t, msg, "run_finalizations of run "+g.run.RunID+" written while the run is accepting_attempts")
	})
	t.Run("EX005 the attempt set after the CAS", func(t *testing.T) {
		// EX005.closure-insert-state: the set's insert is refused
		code, msg := forgeMsg(t, g.role, then(cas, inserts(set)))
		require.Equal(t, execution.CodeClosureOutsideCAS, code)
		require.Contains(t, msg, "attempt_set_manifests of run "+g.run.RunID+" written while the run is attempts_closed")
	})
	t.Run("EX006 an attempt set that leaves out an attempt", func(t *testing.T) {
		row := edit(t, captured[tAttemptSet], map[string]any{"attempt_count": 1}, "manifest_body", func(b map[string]any) {
			b["attempts"] = b["attempts"].([]any)[:1]
			b["attemptCount"] = 1
		})
		// EX006.set-content
		require.Equal(t, execution.CodeClosureContent, forge(t, g.role, then(inserts([2]string{tAttemptSet, row}), cas)))
	})
	t.Run("EX006 a finalization fact naming another token", func(t *testing.T) {
		row := edit(t, captured[tFinalization], nil, "fact_body", func(b map[string]any) { b["runExecutionTokenRef"] = "ret-forged" })
		// EX006.fact-content
		require.Equal(t, execution.CodeClosureContent, forge(t, g.role, then(inserts(set), cas, inserts([2]string{tFinalization, row}))))
	})
	t.Run("EX010 set, CAS and fact without the closure event", func(t *testing.T) {
		// EX010.fact-without-event
		require.Equal(t, execution.CodeFactWithoutEvent, forge(t, g.role, then(inserts(set), cas, inserts(fact))))
	})

	// The captured closure commits; afterwards no attempt joins the run.
	_, err := g.svc.CloseRun(ctx, g.run.RunID)
	require.NoError(t, err)
	var attempt string
	require.NoError(t, g.exec.QueryRow(ctx, "SELECT to_jsonb(t)::text FROM execution.attempts t WHERE run_id = $1 LIMIT 1", g.run.RunID).Scan(&attempt))
	id := uuid.NewString()
	attempt = edit(t, attempt, map[string]any{"execution_attempt_id": id, "attempt_execution_manifest_ref": "aem-" + id}, "", nil)
	// EX003.attempt-run-not-accepting
	require.Equal(t, execution.CodeRunNotAccepting, forge(t, g.role, inserts([2]string{tAttempts, attempt})))
}

// Issue 30: the immutable Execution tables refuse UPDATE, DELETE and
// TRUNCATE for every role, the superuser (the admin pool) included.
//
// Issue 37: oceanway_execution has no UPDATE or DELETE grant on these
// tables (only UPDATE of the key column of the attempts and eligibility
// facts, TestEX001ImmutabilityClauses), so the superuser is the role for
// which these triggers are the refusal: EX001.rejection-evidence-immutable,
// EX001.not-dispatched-facts-immutable, EX001.attempt-sets-immutable,
// EX001.finalizations-immutable (DELETE and UPDATE of each), and
// EX001.run-state-no-delete (DELETE of the run states). TRUNCATE is proven
// table by table in TestEX001ImmutabilityClauses.
func TestExecutionTablesRefuseChangesEvenForTheSuperuser(t *testing.T) {
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
	var super bool
	require.NoError(t, g.exec.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super))
	require.True(t, super, "the admin pool is the superuser")

	exec := func(sql string) func(ctx context.Context, tx pgx.Tx) error {
		return func(ctx context.Context, tx pgx.Tx) error { _, err := tx.Exec(ctx, sql); return err }
	}
	tables := []string{"execution.run_execution_states", tAttempts, tEvidence, tNotDispatched, tEligibility, tAttemptSet, tFinalization}
	for _, table := range tables {
		var n int
		require.NoError(t, g.exec.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
		require.Positive(t, n, table)
		require.Equal(t, execution.CodeImmutable, forge(t, g.exec, exec("TRUNCATE "+table+" CASCADE")), "TRUNCATE %s", table)
		require.Equal(t, execution.CodeImmutable, forge(t, g.exec, exec("DELETE FROM "+table)), "DELETE %s", table)
	}
	for _, table := range tables[1:] {
		key := "execution_attempt_id"
		if table == tAttemptSet || table == tFinalization {
			key = "run_id"
		}
		require.Equal(t, execution.CodeImmutable, forge(t, g.exec, exec("UPDATE "+table+" SET "+key+" = "+key)), "UPDATE %s", table)
	}
	require.Equal(t, execution.CodeIllegalState, forge(t, g.exec, exec("UPDATE execution.run_execution_states SET state = 'accepting_attempts', state_version = 1, closed_at = NULL")))
}
