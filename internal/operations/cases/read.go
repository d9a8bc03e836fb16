package cases

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

// CaseView is a Finalization reconciliation case as an operator sees it
// (the active projection), with its resolution command requests.
type CaseView struct {
	CaseRef               string           `json:"reconciliationCaseRef"`
	Generation            int64            `json:"reconciliationGeneration"`
	State                 string           `json:"state"`
	FenceID               string           `json:"billingFinalizationFenceId"`
	ReservationID         string           `json:"billingReservationId"`
	AccountID             string           `json:"billingAccountId"`
	RunID                 string           `json:"runId"`
	ReasonCode            string           `json:"reconciliationReasonCode"`
	Identity              strict.Quadruple `json:"finalizationCaseIdentityReservation"`
	PredecessorCaseRef    *string          `json:"predecessorReconciliationCaseRef,omitempty"`
	RequestedAt           time.Time        `json:"requestedAt"`
	ResolvedAt            *time.Time       `json:"resolvedAt,omitempty"`
	ResolutionOperationID *string          `json:"resolutionOperationId,omitempty"`
	ResolvedBy            *string          `json:"resolvedBy,omitempty"`
	Requests              []RequestView    `json:"requests"`
}

// RequestView is one resolution command request and how far its chain got.
type RequestView struct {
	Ref           string     `json:"requestRef"`
	Requester     string     `json:"requester"`
	Justification string     `json:"justification"`
	RequestedAt   time.Time  `json:"requestedAt"`
	Approver      *string    `json:"approver,omitempty"`
	ApprovedAt    *time.Time `json:"approvedAt,omitempty"`
	DecisionRef   *string    `json:"decisionRef,omitempty"`
	DecidedAt     *time.Time `json:"decidedAt,omitempty"`
}

// ErrCaseNotFound: no case with that ref in the active projection.
var ErrCaseNotFound = errors.New("operations: no finalization case with that ref")

const qCases = `SELECT c.reconciliation_case_ref, c.reconciliation_generation, c.state, c.billing_finalization_fence_id,
       c.billing_reservation_id, c.billing_account_id, c.run_id, c.reconciliation_reason_code,
       c.predecessor_reconciliation_case_ref, c.requested_at, c.resolved_at, c.resolution_operation_id,
       c.resolution_actor_workforce_principal_id, c.case_identity_ref, c.case_identity_schema_version,
       c.case_identity_digest_algorithm_version, c.case_identity_digest
  FROM operations.finalization_cases c
  JOIN outbox.active_projections p ON p.projection_name = c.projection_name AND p.projection_version = c.projection_version`

// List returns the cases of the active projection in state ("open",
// "resolved", or "" for all), oldest first, at most limit.
func List(ctx context.Context, pool db.Beginner, state string, limit int) ([]CaseView, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) ([]CaseView, error) {
		rows, err := tx.Query(ctx, qCases+` WHERE ($1 = '' OR c.state = $1) ORDER BY c.requested_at, c.reconciliation_case_ref LIMIT $2`, state, limit)
		if err != nil {
			return nil, fmt.Errorf("list cases: %w", err)
		}
		out, err := pgx.CollectRows(rows, scanCase)
		if err != nil {
			return nil, fmt.Errorf("list cases: %w", err)
		}
		for i := range out {
			if out[i].Requests, err = requestsOf(ctx, tx, out[i].CaseRef); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
}

// Show returns one case of the active projection with its requests.
func Show(ctx context.Context, pool db.Beginner, ref string) (CaseView, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (CaseView, error) {
		rows, err := tx.Query(ctx, qCases+` WHERE c.reconciliation_case_ref = $1`, ref)
		if err != nil {
			return CaseView{}, fmt.Errorf("read case: %w", err)
		}
		v, err := pgx.CollectExactlyOneRow(rows, scanCase)
		if errors.Is(err, pgx.ErrNoRows) {
			return CaseView{}, fmt.Errorf("%w: %s", ErrCaseNotFound, ref)
		}
		if err != nil {
			return CaseView{}, fmt.Errorf("read case: %w", err)
		}
		v.Requests, err = requestsOf(ctx, tx, ref)
		return v, err
	})
}

func scanCase(row pgx.CollectableRow) (CaseView, error) {
	var v CaseView
	var alg string
	err := row.Scan(&v.CaseRef, &v.Generation, &v.State, &v.FenceID, &v.ReservationID, &v.AccountID, &v.RunID, &v.ReasonCode,
		&v.PredecessorCaseRef, &v.RequestedAt, &v.ResolvedAt, &v.ResolutionOperationID, &v.ResolvedBy,
		&v.Identity.Ref, &v.Identity.SchemaVersion, &alg, &v.Identity.Digest)
	v.Identity.DigestAlgorithmVersion = digest.Algorithm(alg)
	return v, err
}

func requestsOf(ctx context.Context, tx pgx.Tx, caseRef string) ([]RequestView, error) {
	rows, err := tx.Query(ctx, `SELECT r.request_ref, r.requester_workforce_principal_id, r.request_body::jsonb->>'justification',
		    r.requested_at, a.approver_workforce_principal_id, a.approved_at, d.decision_ref, d.decided_at
		  FROM operations.resolution_command_requests r
		  LEFT JOIN operations.resolution_command_approvals a ON a.request_ref = r.request_ref
		  LEFT JOIN operations.resolution_decisions d ON d.request_ref = r.request_ref
		 WHERE r.reconciliation_case_ref = $1 ORDER BY r.requested_at, r.request_ref`, caseRef)
	if err != nil {
		return nil, fmt.Errorf("read requests of %s: %w", caseRef, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RequestView, error) {
		var r RequestView
		err := row.Scan(&r.Ref, &r.Requester, &r.Justification, &r.RequestedAt, &r.Approver, &r.ApprovedAt, &r.DecisionRef, &r.DecidedAt)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read requests of %s: %w", caseRef, err)
	}
	if out == nil {
		out = []RequestView{}
	}
	return out, nil
}
