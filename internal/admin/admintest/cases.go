package admintest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/release"
)

// The case world's workforce principals and reason.
const (
	Alice = "wfp-alice"
	Bob   = "wfp-bob"
	Carol = "wfp-carol"
	Dave  = "wfp-dave"
	Erin  = "wfp-erin"
	// CaseReason is every case's reconciliation reason code.
	CaseReason = "target_above_reservation"
)

// WorldCase is one case the case world wrote.
type WorldCase struct {
	Ref           string
	FenceID       string
	Generation    int64
	ReservationID string
	RunID         string
	RequestedAt   time.Time
	// Set on a resolved case.
	ResolvedAt            time.Time
	ResolvedBy            string
	ResolutionOperationID string
}

// WorldRequest is one resolution command request the case world wrote.
type WorldRequest struct {
	Ref, Requester, Approver, Justification string
	// ApprovalRef is set when approved; DecisionRef when applied.
	ApprovalRef, DecisionRef string
}

// CaseWorld is a core database (outbox, admin and operations lines, the
// Operations projection operations_read_model@1 active) holding
// Finalization reconciliation cases and their command chain (issue 31
// item 6):
//
//   - fence F: Resolved (generation 1, resolved by Alice), its request
//     Applied (Alice, approved by Bob, decided); Open (generation 2, its
//     successor, open) with Approved (Alice, approved by Bob, not applied;
//     its justification is HostileReason) and Requested (Carol, not
//     approved);
//   - fence G: EarlierResolved (generation 1, resolved by Dave before
//     Resolved) with EarlierApplied (Dave, approved by Erin, decided);
//   - fence H: NewOpen (generation 1, open, requested after Open, no
//     request);
//   - Stale: an open case of operations_read_model@2, a version that is not
//     active: never listed.
//
// Operations' projector writes case rows from verified Billing events, and
// the chain needs workload tokens and signed grants; the fixture writes the
// rows as the table owner, every NOT NULL column filled and every guard on
// (CHECKs, the predecessor foreign key, OP007: no approval by the
// requester).
type CaseWorld struct {
	Bundle *dbtest.Bundle
	Reader *admin.Reader

	Resolved, Open, EarlierResolved, NewOpen, Stale WorldCase

	Applied, Approved, Requested, EarlierApplied WorldRequest
}

// NewCaseWorld builds the case world in a fresh core database.
func NewCaseWorld(t testing.TB) *CaseWorld {
	t.Helper()
	ctx := context.Background()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: Lines()})
	_, err := release.Bootstrap(ctx, b.Core(), release.BootstrapParams{
		ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "admin-test",
	})
	require.NoError(t, err)
	w := &CaseWorld{Bundle: b}
	now := time.Now().UTC().Truncate(time.Microsecond)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }

	fenceF, fenceG, fenceH := uuid.NewString(), uuid.NewString(), uuid.NewString()
	resF, runF := uuid.NewString(), uuid.NewString()
	w.Resolved = WorldCase{FenceID: fenceF, Generation: 1, ReservationID: resF, RunID: runF, RequestedAt: ago(5 * time.Hour),
		ResolvedAt: ago(time.Hour), ResolvedBy: Alice, ResolutionOperationID: uuid.NewString()}
	w.Open = WorldCase{FenceID: fenceF, Generation: 2, ReservationID: resF, RunID: runF, RequestedAt: ago(50 * time.Minute)}
	w.EarlierResolved = WorldCase{FenceID: fenceG, Generation: 1, ReservationID: uuid.NewString(), RunID: uuid.NewString(),
		RequestedAt: ago(6 * time.Hour), ResolvedAt: ago(4 * time.Hour), ResolvedBy: Dave, ResolutionOperationID: uuid.NewString()}
	w.NewOpen = WorldCase{FenceID: fenceH, Generation: 1, ReservationID: uuid.NewString(), RunID: uuid.NewString(),
		RequestedAt: ago(10 * time.Minute)}
	w.Stale = WorldCase{FenceID: uuid.NewString(), Generation: 1, ReservationID: uuid.NewString(), RunID: uuid.NewString(),
		RequestedAt: ago(3 * time.Hour)}

	require.NoError(t, db.WithTx(ctx, b.Core(), func(ctx context.Context, tx pgx.Tx) error {
		for _, c := range []struct {
			c       *WorldCase
			version int64
			pred    *WorldCase
		}{{&w.Resolved, 1, nil}, {&w.Open, 1, &w.Resolved}, {&w.EarlierResolved, 1, nil}, {&w.NewOpen, 1, nil}, {&w.Stale, 2, nil}} {
			c.c.Ref = reconciliation.ReconciliationCaseRef(c.c.FenceID, c.c.Generation)
			insertCase(ctx, t, tx, *c.c, c.version, c.pred)
		}
		w.Applied = insertRequest(ctx, t, tx, w.Resolved, Alice, Bob, "first re-evaluation", true, ago(3*time.Hour))
		w.EarlierApplied = insertRequest(ctx, t, tx, w.EarlierResolved, Dave, Erin, "re-evaluate G", true, ago(5*time.Hour))
		w.Approved = insertRequest(ctx, t, tx, w.Open, Alice, Bob, HostileReason, false, ago(40*time.Minute))
		w.Requested = insertRequest(ctx, t, tx, w.Open, Carol, "", "second opinion", false, ago(20*time.Minute))
		return nil
	}))
	w.Reader = admin.NewReader(w.Boundaries(), admin.Config{})
	return w
}

// Boundaries are the world's pools by boundary name.
func (w *CaseWorld) Boundaries() admin.Boundaries {
	return admin.Boundaries{"core": w.Bundle.Core()}
}

// Core is the world's core database.
func (w *CaseWorld) Core() *pgxpool.Pool { return w.Bundle.Core() }

// insertCase writes one finalization case of operations_read_model@version;
// a resolved one (ResolvedBy set) carries every resolution column.
func insertCase(ctx context.Context, t testing.TB, tx pgx.Tx, c WorldCase, version int64, pred *WorldCase) {
	t.Helper()
	args := pgx.NamedArgs{"ref": c.Ref, "name": projector.ProjectionName, "version": version, "fence": c.FenceID,
		"gen": c.Generation, "identity": "fcir-" + c.Ref, "digest": hexOf("fcir-" + c.Ref), "reservation": c.ReservationID,
		"account": uuid.NewString(), "run": c.RunID, "tenant": uuid.NewString(), "workspace": uuid.NewString(),
		"reason": CaseReason, "request_event": uuid.NewString(), "requested_at": c.RequestedAt,
		"pred_ref": nil, "pred_gen": nil, "pred_identity": nil, "pred_digest": nil,
		"state": "open", "resolution_event": nil, "resolution_sha": nil, "resolution_op": nil, "applied_ref": nil,
		"applied_digest": nil, "actor": nil, "resolved_at": nil}
	if pred != nil {
		args["pred_ref"], args["pred_gen"] = pred.Ref, pred.Generation
		args["pred_identity"], args["pred_digest"] = "fcir-"+pred.Ref, hexOf("fcir-"+pred.Ref)
	}
	if c.ResolvedBy != "" {
		args["state"], args["resolution_event"], args["resolution_sha"] = "resolved", uuid.NewString(), hexOf("resolution-"+c.Ref)
		args["resolution_op"], args["applied_ref"], args["applied_digest"] = c.ResolutionOperationID, "frra-"+c.Ref, hexOf("frra-"+c.Ref)
		args["actor"], args["resolved_at"] = c.ResolvedBy, c.ResolvedAt
	}
	_, err := tx.Exec(ctx, `INSERT INTO operations.finalization_cases (reconciliation_case_ref, projection_name, projection_version,
		    billing_finalization_fence_id, reconciliation_generation, case_identity_ref, case_identity_schema_version,
		    case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id,
		    predecessor_reconciliation_case_ref, predecessor_generation, predecessor_case_identity_ref,
		    predecessor_case_identity_schema_version, predecessor_case_identity_digest_algorithm_version,
		    predecessor_case_identity_digest, billing_reservation_id, billing_account_id, run_id, tenant_kind, tenant_id,
		    workspace_id, decision_ref, decision_schema_version, decision_digest_algorithm_version, decision_digest,
		    triggering_work_ref, triggering_work_schema_version, triggering_work_digest_algorithm_version,
		    triggering_work_digest, triggering_work_generation, billing_finalization_operation_id, reconciliation_reason_code,
		    request_event_id, request_event_envelope_digest_algorithm_version, request_event_envelope_sha256, requested_at,
		    materialized_by_event_id, materialized_at, state, resolution_event_id,
		    resolution_event_envelope_digest_algorithm_version, resolution_event_envelope_sha256, resolution_operation_id,
		    resolution_applied_ref, resolution_applied_schema_version, resolution_applied_digest_algorithm_version,
		    resolution_applied_digest, resolution_actor_workforce_principal_id, resolved_at, closed_at)
		VALUES (@ref, @name, @version, @fence, @gen, @identity, '1', 'jcs-sha256-v1', @digest, gen_random_uuid(),
		    @pred_ref, @pred_gen, @pred_identity,
		    CASE WHEN @pred_ref::text IS NULL THEN NULL ELSE '1' END,
		    CASE WHEN @pred_ref::text IS NULL THEN NULL ELSE 'jcs-sha256-v1' END,
		    @pred_digest, @reservation, @account, @run, 'organization', @tenant, @workspace,
		    'bfd-' || @ref, '1', 'jcs-sha256-v1', repeat('a', 64), 'bfw-' || @ref, '1', 'jcs-sha256-v1', repeat('b', 64), 1,
		    gen_random_uuid(), @reason, @request_event, 'jcs-sha256-v1', repeat('c', 64), @requested_at,
		    @request_event, @requested_at, @state, @resolution_event,
		    CASE WHEN @resolution_event::uuid IS NULL THEN NULL ELSE 'jcs-sha256-v1' END, @resolution_sha, @resolution_op,
		    @applied_ref, CASE WHEN @applied_ref::text IS NULL THEN NULL ELSE '1' END,
		    CASE WHEN @applied_ref::text IS NULL THEN NULL ELSE 'jcs-sha256-v1' END,
		    @applied_digest, @actor, @resolved_at, @resolved_at)`, args)
	require.NoError(t, err, "insert case %s", c.Ref)
}

// insertRequest writes a resolution command request of c by requester,
// approved by approver unless approver is empty, and decided (applied by
// the requester) when decided.
func insertRequest(ctx context.Context, t testing.TB, tx pgx.Tx, c WorldCase, requester, approver, justification string, decided bool, at time.Time) WorldRequest {
	t.Helper()
	r := WorldRequest{Ref: "frcr-" + uuid.NewString(), Requester: requester, Approver: approver, Justification: justification}
	body, err := json.Marshal(map[string]any{"reconciliationCaseRef": c.Ref, "justification": justification})
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO operations.resolution_command_requests (command_request_operation_id, request_ref,
		    request_digest, reconciliation_case_ref, reconciliation_generation, requester_workforce_principal_id, request_body,
		    preview_ref, preview_digest, preview_body, requested_at)
		VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, $8, '{}', $9)`,
		r.Ref, hexOf(r.Ref), c.Ref, c.Generation, requester, string(body), "acip-"+r.Ref, hexOf("acip-"+r.Ref), at)
	require.NoError(t, err)
	if approver == "" {
		return r
	}
	r.ApprovalRef = "acap-" + r.Ref
	_, err = tx.Exec(ctx, `INSERT INTO operations.resolution_command_approvals (request_ref, approval_ref, approval_digest,
		    approver_workforce_principal_id, approval_body, approved_at)
		VALUES ($1, $2, $3, $4, '{}', $5)`,
		r.Ref, r.ApprovalRef, hexOf(r.ApprovalRef), approver, at.Add(5*time.Minute))
	require.NoError(t, err)
	if !decided {
		return r
	}
	r.DecisionRef = "frrd-" + r.Ref
	_, err = tx.Exec(ctx, `INSERT INTO operations.resolution_decisions (request_ref, reconciliation_case_ref,
		    reconciliation_generation, actor_workforce_principal_id, jit_ref, jit_digest, jit_body, candidate_ref,
		    candidate_digest, candidate_body, decision_ref, decision_digest, decision_body, decided_at)
		VALUES ($1, $2, $3, $4, $5, $6, '{}', $7, $8, '{}', $9, $10, '{}', $11)`,
		r.Ref, c.Ref, c.Generation, requester, "acja-"+r.Ref, hexOf("acja-"+r.Ref), "acc-"+r.Ref, hexOf("acc-"+r.Ref),
		r.DecisionRef, hexOf(r.DecisionRef), at.Add(10*time.Minute))
	require.NoError(t, err)
	return r
}
