package execution_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/execution"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

type env struct {
	core, exec *pgxpool.Pool
	adm        *admission.Service
	svc        *execution.Service
}

func setup(t *testing.T) *env {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{
		Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution},
		Lines:      []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), executionschema.Line()},
		MaxConns:   6,
	})
	for _, p := range []*pgxpool.Pool{b.Core(), b.Execution()} {
		_, err := release.Bootstrap(t.Context(), p, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
		require.NoError(t, err)
	}
	return &env{core: b.Core(), exec: b.Execution(), adm: admission.New(b.Core()),
		svc: execution.New(b.Execution(), admission.Reads{DB: b.Core()})}
}

func (e *env) admit(t *testing.T) (admission.Result, []byte) {
	t.Helper()
	res, err := e.adm.Admit(t.Context(), admission.Request{
		AdmissionOperationID: uuid.NewString(), TenantKind: "organization", TenantID: uuid.NewString(),
		WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 100,
	})
	require.NoError(t, err)
	_, body, err := admission.IssueRunExecutionToken(t.Context(), e.core, res.RunID, "ret-"+res.RunID, time.Now())
	require.NoError(t, err)
	return res, body
}

func (e *env) open(t *testing.T) execution.RunState {
	t.Helper()
	_, body := e.admit(t)
	st, err := e.svc.OpenRun(t.Context(), body)
	require.NoError(t, err)
	return st
}

var outputContract = strict.Quadruple{Ref: "output-contract/text@1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
	Digest: "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"}

func attemptReq(runID, step string) execution.AttemptRequest {
	return execution.AttemptRequest{RunID: runID, RunStepID: step, ExecutionAttemptID: uuid.NewString(),
		ModelDeploymentID: "model-deploy/text-large", GatewayDeploymentID: "gw-eu-1", RoutingPolicyRevision: 1, OutputContract: outputContract}
}

// EX-2 (ADR-031 execution identity): a run's execution state is entered only
// with Core's token verified against readRunAdmissionManifest; it starts
// accepting_attempts at version 1; the same token reopens nothing; a token
// whose manifest Core cannot find or that conflicts is refused with nothing
// written.
func TestEX2OpenRunOnlyThroughVerifiedToken(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	res, body := e.admit(t)

	st, err := e.svc.OpenRun(ctx, body)
	require.NoError(t, err)
	require.Equal(t, execution.StateAcceptingAttempts, st.State)
	require.EqualValues(t, 1, st.StateVersion)
	require.Equal(t, res.Manifest, st.Manifest)
	require.Equal(t, res.BillingReservationID, st.BillingReservationID)
	again, err := e.svc.OpenRun(ctx, body)
	require.NoError(t, err)
	require.True(t, again.Reopened)
	require.Equal(t, st.Token, again.Token)

	// Another token (another ref, same run) is refused.
	_, other, err := admission.IssueRunExecutionToken(ctx, e.core, res.RunID, "ret-other-"+res.RunID, time.Now())
	require.NoError(t, err)
	_, err = e.svc.OpenRun(ctx, other)
	require.ErrorIs(t, err, execution.ErrTokenConflict) // EX-2.run-token-conflict

	// A forged token: resealed with another reservation → Core's manifest conflicts.
	tok, err := contract.DecodeRunExecutionToken(body)
	require.NoError(t, err)
	forged := *tok
	forged.BillingReservationID = uuid.NewString()
	forged.Token.Ref = "ret-forged"
	forgedBody, err := contract.Seal(&forged)
	require.NoError(t, err)
	_, err = e.svc.OpenRun(ctx, forgedBody)
	require.ErrorIs(t, err, execution.ErrManifestConflict)

	// A token for a run Core never admitted: not readable.
	ghost := *tok
	ghost.RunID = uuid.NewString()
	ghost.Manifest.Ref = "ram-" + uuid.NewString()
	ghost.Token.Ref = "ret-ghost"
	ghostBody, err := contract.Seal(&ghost)
	require.NoError(t, err)
	_, err = e.svc.OpenRun(ctx, ghostBody)
	require.ErrorIs(t, err, execution.ErrManifestNotReadable)

	// A tampered token whose digest does not recompute.
	tampered := []byte(string(body[:len(body)-2]) + "}")
	_, err = e.svc.OpenRun(ctx, tampered)
	require.ErrorIs(t, err, execution.ErrInvalidToken)
	var n int
	require.NoError(t, e.exec.QueryRow(ctx, "SELECT count(*) FROM execution.run_execution_states").Scan(&n))
	require.Equal(t, 1, n)
}

// EX-2: attempts carry a content-addressed AttemptExecutionManifest@1 with
// the run manifest quadruple and the route; the same request replays the
// original; another route under the same attempt id is refused (rerouting
// is a new attempt); attempt rows are immutable in the database.
func TestEX2AttemptsCarryImmutableManifests(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	req := attemptReq(st.RunID, uuid.NewString())
	a, err := e.svc.CreateAttempt(ctx, req)
	require.NoError(t, err)
	require.Equal(t, st.Manifest, a.Manifest.RunAdmissionManifest)
	back, err := contract.DecodeAttemptExecutionManifest(a.Body)
	require.NoError(t, err, "the stored manifest decodes and its digest recomputes")
	require.Equal(t, a.Manifest, back)

	replay, err := e.svc.CreateAttempt(ctx, req)
	require.NoError(t, err)
	require.True(t, replay.Replayed)
	require.Equal(t, a.Body, replay.Body)

	for name, mutate := range map[string]func(r *execution.AttemptRequest){
		"other gateway deployment": func(r *execution.AttemptRequest) { r.GatewayDeploymentID = "gw-us-2" },
		"other model deployment":   func(r *execution.AttemptRequest) { r.ModelDeploymentID = "model-deploy/other" },
		"other routing revision":   func(r *execution.AttemptRequest) { r.RoutingPolicyRevision = 2 },
		"other step":               func(r *execution.AttemptRequest) { r.RunStepID = uuid.NewString() },
	} {
		r := req
		mutate(&r)
		_, err := e.svc.CreateAttempt(ctx, r)
		require.ErrorIs(t, err, execution.ErrAttemptConflict, name) // EX-2.attempt-route-conflict
	}

	// The database refuses any change of an attempt.
	for _, stmt := range []string{
		"UPDATE execution.attempts SET gateway_deployment_id = 'gw-us-2'",
		"DELETE FROM execution.attempts",
	} {
		_, err := e.exec.Exec(ctx, stmt)
		require.Error(t, err, stmt)
		require.Contains(t, err.Error(), execution.CodeImmutable, stmt)
	}

	// Unknown run, bad ids.
	_, err = e.svc.CreateAttempt(ctx, attemptReq(uuid.NewString(), uuid.NewString()))
	require.ErrorIs(t, err, execution.ErrRunNotFound)
	bad := attemptReq(st.RunID, "step-1")
	_, err = e.svc.CreateAttempt(ctx, bad)
	require.ErrorIs(t, err, execution.ErrInvalidAttempt)
}

// EX-2: the database allows only accepting_attempts → attempts_closed
// (version +1), never a reopen or an identity change, and refuses an
// attempt for a closed run even when the service check is bypassed.
func TestEX2RunStateTransitionsGuardedByDatabase(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	st := e.open(t)
	exec := func(stmt string, args ...any) error {
		_, err := e.exec.Exec(ctx, stmt, args...)
		return err
	}
	require.ErrorContains(t, exec("UPDATE execution.run_execution_states SET billing_account_id = $1 WHERE run_id = $2", uuid.NewString(), st.RunID), execution.CodeIllegalState)
	require.ErrorContains(t, exec("UPDATE execution.run_execution_states SET state_version = 2 WHERE run_id = $1", st.RunID), execution.CodeIllegalState)
	_, err := e.svc.CloseRun(ctx, st.RunID)
	require.NoError(t, err)
	require.ErrorContains(t, exec("UPDATE execution.run_execution_states SET state = 'accepting_attempts', state_version = 3, closed_at = NULL WHERE run_id = $1", st.RunID), execution.CodeIllegalState)
	require.ErrorContains(t, exec("DELETE FROM execution.run_execution_states WHERE run_id = $1", st.RunID), execution.CodeImmutable)
	require.ErrorContains(t, exec(fmt.Sprintf(`INSERT INTO execution.attempts (execution_attempt_id, run_id, run_step_id,
		attempt_execution_manifest_ref, attempt_execution_manifest_schema_version, attempt_execution_manifest_digest_algorithm_version,
		attempt_execution_manifest_digest, manifest_body, model_deployment_id, gateway_deployment_id, routing_policy_revision, created_at)
		VALUES ('%s', '%s', '%s', 'aem-x', '1', 'jcs-sha256-v1', repeat('a', 64), '{}', 'm', 'g', 1, now())`,
		uuid.NewString(), st.RunID, uuid.NewString())), execution.CodeRunNotAccepting)
	_, err = e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
	require.ErrorIs(t, err, execution.ErrRunClosed)
}

// EX-2: a failure after the write of OpenRun or CreateAttempt leaves no row.
func TestEX2OpenAndCreateRollBackOnFailure(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	injected := errors.New("injected")
	e.svc.SetHooks(execution.Hooks{AfterStep: func(context.Context, pgx.Tx, string) error { return injected }})
	_, body := e.admit(t)
	_, err := e.svc.OpenRun(ctx, body)
	require.ErrorIs(t, err, injected)
	require.Zero(t, e.count(t, "execution.run_execution_states"))
	e.svc.SetHooks(execution.Hooks{})
	st, err := e.svc.OpenRun(ctx, body)
	require.NoError(t, err)
	e.svc.SetHooks(execution.Hooks{AfterStep: func(context.Context, pgx.Tx, string) error { return injected }})
	_, err = e.svc.CreateAttempt(ctx, attemptReq(st.RunID, uuid.NewString()))
	require.ErrorIs(t, err, injected)
	require.Zero(t, e.count(t, "execution.attempts"))
}

// EX-2: concurrent OpenRun with one token and concurrent CreateAttempt with
// one request converge on one row and the same answer.
func TestEX2ConcurrentOpenAndCreateConverge(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	_, body := e.admit(t)
	const n = 6
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			_, err := e.svc.OpenRun(ctx, body)
			errs <- err
		}()
	}
	close(start)
	for i := 0; i < n; i++ {
		require.NoError(t, <-errs)
	}
	tok, err := contract.DecodeRunExecutionToken(body)
	require.NoError(t, err)
	req := attemptReq(tok.RunID, uuid.NewString())
	bodies := make(chan []byte, n)
	start = make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			a, err := e.svc.CreateAttempt(ctx, req)
			errs <- err
			bodies <- a.Body
		}()
	}
	close(start)
	var first []byte
	for i := 0; i < n; i++ {
		require.NoError(t, <-errs)
		b := <-bodies
		if first == nil {
			first = b
		}
		require.Equal(t, string(first), string(b))
	}
	require.Equal(t, 1, e.count(t, "execution.attempts"))
}
