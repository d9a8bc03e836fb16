package cases_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
)

const (
	alice   = "workforce:alice@example.org"
	bob     = "workforce:bob@example.org"
	gateway = "admin.command-gateway"
)

// openCase reserves n's first case identity and materialises its open case
// in the active projection as the projector would (the projector's own
// tests prove that path).
func (f fixture) openCase(t *testing.T, n int) operationsread.CaseIdentity {
	t.Helper()
	_, err := release.Bootstrap(t.Context(), f.b.Core(), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	s := scope(n, 1, nil)
	id, err := f.identities.ReserveFinalizationCaseIdentity(t.Context(), s)
	require.NoError(t, err)
	q := id.Identity
	_, err = f.b.Core().Exec(t.Context(), `INSERT INTO operations.finalization_cases (reconciliation_case_ref, projection_name,
		    projection_version, billing_finalization_fence_id, reconciliation_generation, case_identity_ref, case_identity_schema_version,
		    case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id, billing_reservation_id,
		    billing_account_id, run_id, tenant_kind, tenant_id, workspace_id, decision_ref, decision_schema_version,
		    decision_digest_algorithm_version, decision_digest, triggering_work_ref, triggering_work_schema_version,
		    triggering_work_digest_algorithm_version, triggering_work_digest, triggering_work_generation,
		    billing_finalization_operation_id, reconciliation_reason_code, request_event_id,
		    request_event_envelope_digest_algorithm_version, request_event_envelope_sha256, requested_at, materialized_by_event_id,
		    materialized_at, state)
		VALUES ($1, 'operations_read_model', 1, $2, 1, $3, $4, $5, $6, $7, $8, $9, $10, 'organization', $11, $12,
		    'bfd-x', '1', 'jcs-sha256-v1', repeat('a', 64), 'bfw-x', '1', 'jcs-sha256-v1', repeat('b', 64), 2,
		    gen_random_uuid(), 'target_above_reservation', $13, 'jcs-sha256-v1', repeat('c', 64), now(), $13, now(), 'open')`,
		id.CaseRef, s.FenceID, q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest, id.CaseRequestOperationID,
		s.ReservationID, s.BillingAccountID, s.RunID, s.Tenant.ID, s.Tenant.WorkspaceID, uuid.NewString())
	require.NoError(t, err)
	return id
}

func evidence(id operationsread.CaseIdentity) []reconciliation.EvidenceReference {
	return []reconciliation.EvidenceReference{{EvidenceKind: "billing_finalization_case", Object: id.Identity}}
}

// OP-1 (issue 31): the Operations chain in its fixed order. A request is
// idempotent by its operation (other content with the same operation is
// refused); the requester cannot approve it; only the requester runs it,
// and only once approved; running it stores the JIT activation, the
// candidate and the Operations decision, which CheckChain accepts and the
// decision read confirms to Core. A second request of the same case
// generation can no longer be decided.
func TestOP1OperationsCommandChain(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.openCase(t, 1)
	cmds := cases.Commands{Pool: f.ops, Workload: gateway}
	in := cases.RequestInput{CaseRef: id.CaseRef, OperationID: uuid.NewString(), Evidence: evidence(id), Justification: "usage corrected"}

	_, err := cmds.Request(t.Context(), alice, cases.RequestInput{CaseRef: "fcase-none", OperationID: uuid.NewString(), Evidence: evidence(id), Justification: "x"})
	require.ErrorIs(t, err, cases.ErrCaseNotOpen)

	req, err := cmds.Request(t.Context(), alice, in)
	require.NoError(t, err)
	again, err := cmds.Request(t.Context(), alice, in)
	require.NoError(t, err)
	require.Equal(t, req.Request.Request, again.Request.Request, "a lost response returns the stored request")
	changed := in
	changed.Justification = "something else"
	_, err = cmds.Request(t.Context(), alice, changed)
	require.ErrorIs(t, err, cases.ErrRequestConflict)
	var statement string
	require.NoError(t, f.b.Core().QueryRow(t.Context(), `SELECT preview_body::jsonb->>'statement' FROM operations.resolution_command_requests
		WHERE request_ref = $1`, req.Request.Request.Ref).Scan(&statement))
	require.Equal(t, "No direct ledger or reservation effect: the command only re-evaluates the current owner state.", statement,
		"the stored impact preview says it plainly")

	ref := req.Request.Request.Ref
	_, err = cmds.Decide(t.Context(), alice, ref)
	require.ErrorIs(t, err, cases.ErrNotApproved)
	_, err = cmds.Approve(t.Context(), alice, ref)
	require.ErrorIs(t, err, reconciliation.ErrSelfApproval)
	approved, err := cmds.Approve(t.Context(), bob, ref)
	require.NoError(t, err)
	require.Equal(t, bob, approved.Approval.ApproverWorkforcePrincipalID)
	_, err = cmds.Approve(t.Context(), "workforce:carol@example.org", ref)
	require.ErrorIs(t, err, cases.ErrAlreadyApproved)
	_, err = cmds.Decide(t.Context(), bob, ref)
	require.ErrorIs(t, err, cases.ErrNotRequester)

	ch, err := cmds.Decide(t.Context(), alice, ref)
	require.NoError(t, err)
	require.NoError(t, reconciliation.CheckChain(ch.Request, ch.Preview, ch.Approval, ch.JIT, ch.Candidate, ch.Decision, time.Now()))
	require.Equal(t, gateway, ch.Candidate.BoundWorkload)
	replay, err := cmds.Decide(t.Context(), alice, ref)
	require.NoError(t, err)
	require.Equal(t, ch.Decision.Decision, replay.Decision.Decision)

	ans, err := cmds.ReadFinalizationResolutionDecision(t.Context(), operationsread.ResolutionDecisionRead{
		Decision: ch.Decision.Decision, Candidate: ch.Candidate.Candidate, CaseRef: id.CaseRef, Generation: 1})
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)
	forged := ch.Decision.Decision
	forged.Digest = ch.Candidate.Candidate.Digest
	ans, err = cmds.ReadFinalizationResolutionDecision(t.Context(), operationsread.ResolutionDecisionRead{
		Decision: forged, Candidate: ch.Candidate.Candidate, CaseRef: id.CaseRef, Generation: 1})
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, ans)

	second, err := cmds.Request(t.Context(), bob, cases.RequestInput{CaseRef: id.CaseRef, OperationID: uuid.NewString(), Evidence: evidence(id), Justification: "me too"})
	require.NoError(t, err)
	_, err = cmds.Approve(t.Context(), alice, second.Request.Request.Ref)
	require.NoError(t, err)
	_, err = cmds.Decide(t.Context(), bob, second.Request.Request.Ref)
	require.ErrorIs(t, err, cases.ErrCaseDecided, "one decision per case generation")
}

// OP-1 (issue 31; OP007.self-approval, OP001.command-requests-insert-only,
// OP001.command-approvals-insert-only, OP001.resolution-decisions-insert-only):
// PostgreSQL is the second guard. The Operations role cannot insert an
// approval by the requester, and the chain's rows are insert-only.
func TestOP1CommandChainRowsAreGuarded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.openCase(t, 1)
	cmds := cases.Commands{Pool: f.ops, Workload: gateway}
	req, err := cmds.Request(t.Context(), alice, cases.RequestInput{CaseRef: id.CaseRef, OperationID: uuid.NewString(), Evidence: evidence(id), Justification: "x"})
	require.NoError(t, err)
	_, err = f.ops.Exec(t.Context(), `INSERT INTO operations.resolution_command_approvals VALUES ($1, 'acap-forged', repeat('a', 64), $2, '{}', now())`,
		req.Request.Request.Ref, alice)
	var pg *pgconn.PgError
	require.True(t, errors.As(err, &pg), "%v", err)
	require.Equal(t, cases.CodeSelfApproval, pg.Code)

	_, err = cmds.Approve(t.Context(), bob, req.Request.Request.Ref)
	require.NoError(t, err)
	_, err = cmds.Decide(t.Context(), alice, req.Request.Request.Ref)
	require.NoError(t, err)
	for _, table := range []string{"resolution_command_requests", "resolution_command_approvals", "resolution_decisions"} {
		for _, stmt := range []string{"UPDATE operations." + table + " SET request_ref = request_ref", "DELETE FROM operations." + table} {
			_, err := f.b.Core().Exec(t.Context(), stmt)
			require.True(t, errors.As(err, &pg), "%s: %v", stmt, err)
			require.Equal(t, cases.CodeInsertOnly, pg.Code, "the trigger refuses even the owner: %s", stmt)
		}
	}
}
