package cases_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
)

// openLateCase reserves dimension n's first late case identity and
// materialises its open case in the active projection with one exposure per
// revision, as the projector would (its own tests prove that path). It
// returns the identity and the exposure ids by revision.
func (f fixture) openLateCase(t *testing.T, n int, revisions ...int64) (operationsread.CaseIdentity, map[int64]string) {
	t.Helper()
	_, err := release.Bootstrap(t.Context(), f.b.Core(), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	s := lateScope(n, 1, nil)
	id, err := f.identities.ReserveLateSettlementCaseIdentity(t.Context(), s)
	require.NoError(t, err)
	d, q := s.Dimension, id.Identity
	dimID := d.SettlementDimensionID()
	_, err = f.b.Core().Exec(t.Context(), `INSERT INTO operations.late_settlement_cases (reconciliation_case_ref, projection_name,
		    projection_version, settlement_dimension_id, case_generation, case_identity_ref, case_identity_schema_version,
		    case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id, billing_reservation_id,
		    billing_account_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key, tenant_kind, tenant_id,
		    workspace_id, state, opened_by_event_id, opened_at)
		VALUES ($1, 'operations_read_model', 1, $2, 1, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'organization', $14, $15,
		    'open', gen_random_uuid(), now())`,
		id.CaseRef, dimID, q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest, id.CaseRequestOperationID,
		d.BillingReservationID, d.BillingAccountID, d.RunID, d.RunStepID, d.ExecutionAttemptID, d.ChargeDimensionKey,
		s.Tenant.ID, s.Tenant.WorkspaceID)
	require.NoError(t, err)
	ids := map[int64]string{}
	for _, rev := range revisions {
		ids[rev] = billingc.LateSettlementExposureID(dimID, rev)
		_, err = f.b.Core().Exec(t.Context(), `INSERT INTO operations.late_settlement_case_exposures (late_settlement_exposure_id,
			    projection_name, projection_version, reconciliation_case_ref, exposure_ref, exposure_schema_version,
			    exposure_digest_algorithm_version, exposure_digest, exposure_amount, request_event_id, request_event_envelope_sha256,
			    requested_at)
			VALUES ($1, 'operations_read_model', 1, $2, $3, '1', 'jcs-sha256-v1', repeat('d', 64), 5, gen_random_uuid(),
			    repeat('e', 64), now())`, ids[rev], id.CaseRef, fmt.Sprintf("lse-%d-%d", n, rev))
		require.NoError(t, err)
	}
	return id, ids
}

func lateEvidence(id operationsread.CaseIdentity) []reconciliation.EvidenceReference {
	return []reconciliation.EvidenceReference{{EvidenceKind: "late_settlement_case", Object: id.Identity}}
}

// OP-1, BI-2 (issue 32; OP-1.late-one-decision-per-generation): the late
// chain in its fixed
// order. A request is idempotent by its operation (other content refused);
// the requester cannot approve it; only the requester runs it, once
// approved; running it stores the JIT activation (late operator role), the
// candidate and the decision, which CheckLateAuthorization accepts and the
// decision read confirms to Core. A second request of the same generation
// can no longer be decided.
func TestOP1LateCommandChain(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id, exposures := f.openLateCase(t, 1, 2)
	cmds := cases.Commands{Pool: f.ops, Workload: gateway}
	in := cases.LateRequestInput{CaseRef: id.CaseRef, LateSettlementExposureID: exposures[2], Evidence: lateEvidence(id),
		Justification: "customer agreed to the usage", CommandRequestOperationID: uuid.NewString()}

	req, err := cmds.RequestLate(t.Context(), alice, in)
	require.NoError(t, err)
	require.EqualValues(t, 2, req.Request.Exposure.SettlementStateRevision, "the revision recomputes from the exposure id")
	again, err := cmds.RequestLate(t.Context(), alice, in)
	require.NoError(t, err)
	require.Equal(t, req.Request.Request, again.Request.Request, "a lost response returns the stored request")
	changed := in
	changed.Justification = "something else"
	_, err = cmds.RequestLate(t.Context(), alice, changed)
	require.ErrorIs(t, err, cases.ErrRequestConflict)

	ref := req.Request.Request.Ref
	_, err = cmds.DecideLate(t.Context(), alice, ref)
	require.ErrorIs(t, err, cases.ErrNotApproved)
	_, err = cmds.ApproveLate(t.Context(), alice, ref)
	require.ErrorIs(t, err, reconciliation.ErrSelfApproval, "the requester cannot approve (Go)")
	_, err = cmds.ApproveLate(t.Context(), bob, ref)
	require.NoError(t, err)
	_, err = cmds.ApproveLate(t.Context(), "workforce:carol@example.org", ref)
	require.ErrorIs(t, err, cases.ErrAlreadyApproved)
	_, err = cmds.DecideLate(t.Context(), bob, ref)
	require.ErrorIs(t, err, cases.ErrNotRequester)

	ch, err := cmds.DecideLate(t.Context(), alice, ref)
	require.NoError(t, err)
	require.NoError(t, reconciliation.CheckLateAuthorization(ch.Request, ch.Preview, ch.Approval, ch.JIT, ch.Candidate, ch.Decision, ch.JIT.NotBefore))
	require.Equal(t, gateway, ch.Candidate.BoundWorkload)
	replay, err := cmds.DecideLate(t.Context(), alice, ref)
	require.NoError(t, err)
	require.Equal(t, ch.Decision.Decision, replay.Decision.Decision, "the stored decision")

	read := operationsread.LateDecisionRead{Decision: ch.Decision.Decision, Candidate: ch.Candidate.Candidate, CaseRef: id.CaseRef, Generation: 1}
	ans, err := cmds.ReadLateSettlementCommandDecision(t.Context(), read)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)
	other := read
	other.Candidate = ch.Request.Request
	ans, err = cmds.ReadLateSettlementCommandDecision(t.Context(), other)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, ans)
	other = read
	other.Generation = 2
	ans, err = cmds.ReadLateSettlementCommandDecision(t.Context(), other)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, ans)
	other = read
	other.CaseRef = "lcase-none"
	ans, err = cmds.ReadLateSettlementCommandDecision(t.Context(), other)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans)
	// A finalization decision read never finds a late decision.
	ans, err = cmds.ReadFinalizationResolutionDecision(t.Context(), operationsread.ResolutionDecisionRead(read))
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans)

	second := in
	second.CommandRequestOperationID = uuid.NewString()
	req2, err := cmds.RequestLate(t.Context(), "workforce:carol@example.org", second)
	require.NoError(t, err)
	_, err = cmds.ApproveLate(t.Context(), bob, req2.Request.Request.Ref)
	require.NoError(t, err)
	_, err = cmds.DecideLate(t.Context(), "workforce:carol@example.org", req2.Request.Request.Ref)
	require.ErrorIs(t, err, cases.ErrLateCaseDecided, "one decision per case generation")

	// The case closed: Core's read answers conflicting.
	_, err = f.b.Core().Exec(t.Context(), `UPDATE operations.late_settlement_cases SET state = 'resolved',
		resolution_event_id = gen_random_uuid(), resolved_at = now() WHERE reconciliation_case_ref = $1`, id.CaseRef)
	require.NoError(t, err)
	ans, err = cmds.ReadLateSettlementCommandDecision(t.Context(), read)
	require.NoError(t, err)
	require.Equal(t, ownerread.Conflicting, ans)
}

// OP-1, BI-2 (issue 32; OP-1.late-exposure-latest-unresolved): a late
// request names an exposure of an open case that is its latest unresolved
// one: a closed or unknown case, an exposure of another case, an exposure
// superseded by a later one and a resolved exposure are refused, nothing
// written.
func TestOP1LateRequestRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id, exposures := f.openLateCase(t, 1, 2, 3)
	otherID, otherExposures := f.openLateCase(t, 2, 2)
	cmds := cases.Commands{Pool: f.ops, Workload: gateway}
	request := func(caseRef, exposure string) error {
		_, err := cmds.RequestLate(t.Context(), alice, cases.LateRequestInput{CaseRef: caseRef, LateSettlementExposureID: exposure,
			Evidence: lateEvidence(id), Justification: "x", CommandRequestOperationID: uuid.NewString()})
		return err
	}
	require.ErrorIs(t, request("lcase-none", exposures[3]), cases.ErrLateCaseNotOpen)
	require.ErrorIs(t, request(id.CaseRef, otherExposures[2]), cases.ErrLateExposureNotInCase)
	require.ErrorIs(t, request(id.CaseRef, uuid.NewString()), cases.ErrLateExposureNotInCase)
	require.ErrorIs(t, request(id.CaseRef, exposures[2]), cases.ErrLateExposureNotCurrent, "superseded by revision 3")

	_, err := f.b.Core().Exec(t.Context(), `UPDATE operations.late_settlement_case_exposures SET resolution_event_id = gen_random_uuid(),
		resolution_event_envelope_sha256 = repeat('f', 64), resolution_operation_id = gen_random_uuid(),
		resolution_source = 'late_settlement_command', resolution_applied_ref = 'bcra-x', resolution_applied_digest = repeat('f', 64),
		resolved_at = now() WHERE late_settlement_exposure_id = $1`, exposures[3])
	require.NoError(t, err)
	require.ErrorIs(t, request(id.CaseRef, exposures[3]), cases.ErrLateExposureNotCurrent, "resolved")
	require.NoError(t, request(id.CaseRef, exposures[2]), "revision 2 is now the latest unresolved exposure")

	_, err = f.b.Core().Exec(t.Context(), `UPDATE operations.late_settlement_cases SET state = 'resolved',
		resolution_event_id = gen_random_uuid(), resolved_at = now() WHERE reconciliation_case_ref = $1`, otherID.CaseRef)
	require.NoError(t, err)
	require.ErrorIs(t, request(otherID.CaseRef, otherExposures[2]), cases.ErrLateCaseNotOpen, "a closed case")
	var n int
	require.NoError(t, f.b.Core().QueryRow(t.Context(), `SELECT count(*) FROM operations.late_command_requests`).Scan(&n))
	require.Equal(t, 1, n)
}

// OP-1 (issue 32; OP007.late-self-approval, OP001.late-command-requests-insert-only,
// OP001.late-command-approvals-insert-only, OP001.late-command-decisions-insert-only):
// PostgreSQL is the second guard of the late chain. The Operations role
// cannot insert an approval by the requester, and the chain's rows are
// insert-only even for the owner.
func TestOP1LateCommandChainRowsAreGuarded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id, exposures := f.openLateCase(t, 1, 2)
	cmds := cases.Commands{Pool: f.ops, Workload: gateway}
	req, err := cmds.RequestLate(t.Context(), alice, cases.LateRequestInput{CaseRef: id.CaseRef, LateSettlementExposureID: exposures[2],
		Evidence: lateEvidence(id), Justification: "x", CommandRequestOperationID: uuid.NewString()})
	require.NoError(t, err)
	_, err = f.ops.Exec(t.Context(), `INSERT INTO operations.late_command_approvals VALUES ($1, 'lsca-forged', repeat('a', 64), $2, '{}', now())`,
		req.Request.Request.Ref, alice)
	var pg *pgconn.PgError
	require.True(t, errors.As(err, &pg), "%v", err)
	require.Equal(t, cases.CodeSelfApproval, pg.Code)

	_, err = cmds.ApproveLate(t.Context(), bob, req.Request.Request.Ref)
	require.NoError(t, err)
	_, err = cmds.DecideLate(t.Context(), alice, req.Request.Request.Ref)
	require.NoError(t, err)
	for _, table := range []string{"late_command_requests", "late_command_approvals", "late_command_decisions"} {
		for _, stmt := range []string{"UPDATE operations." + table + " SET request_ref = request_ref", "DELETE FROM operations." + table} {
			_, err := f.b.Core().Exec(t.Context(), stmt)
			require.True(t, errors.As(err, &pg), "%s: %v", stmt, err)
			require.Equal(t, cases.CodeInsertOnly, pg.Code, "the trigger refuses even the owner: %s", stmt)
		}
	}
}

// OP-1 (issue 32): an operator lists and shows late cases with their
// exposures and late requests.
func TestOP1LateCaseViews(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id, exposures := f.openLateCase(t, 1, 2, 3)
	cmds := cases.Commands{Pool: f.ops, Workload: gateway}
	_, err := cmds.RequestLate(t.Context(), alice, cases.LateRequestInput{CaseRef: id.CaseRef, LateSettlementExposureID: exposures[3],
		Evidence: lateEvidence(id), Justification: "agreed", CommandRequestOperationID: uuid.NewString()})
	require.NoError(t, err)
	list, err := cases.ListLate(t.Context(), f.ops, "open", 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, id.CaseRef, list[0].CaseRef)
	require.Len(t, list[0].Exposures, 2)
	require.Len(t, list[0].Requests, 1)
	require.Equal(t, "agreed", list[0].Requests[0].Justification)
	v, err := cases.ShowLate(t.Context(), f.ops, id.CaseRef)
	require.NoError(t, err)
	require.Equal(t, list[0], v)
	_, err = cases.ShowLate(t.Context(), f.ops, "lcase-none")
	require.ErrorIs(t, err, cases.ErrLateCaseNotFound)
	resolved, err := cases.ListLate(t.Context(), f.ops, "resolved", 10)
	require.NoError(t, err)
	require.Empty(t, resolved)
}
