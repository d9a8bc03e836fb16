package cases

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/db"
)

// LateCaseView is a late settlement case as an operator sees it (the
// active projection): its exposures and its late command requests.
type LateCaseView struct {
	CaseRef               string             `json:"reconciliationCaseRef"`
	Generation            int64              `json:"caseGeneration"`
	State                 string             `json:"state"`
	SettlementDimensionID string             `json:"settlementDimensionId"`
	ReservationID         string             `json:"billingReservationId"`
	AccountID             string             `json:"billingAccountId"`
	RunID                 string             `json:"runId"`
	ChargeDimensionKey    string             `json:"chargeDimensionKey"`
	OpenedAt              time.Time          `json:"openedAt"`
	ResolvedAt            *time.Time         `json:"resolvedAt,omitempty"`
	Exposures             []LateExposureView `json:"exposures"`
	Requests              []RequestView      `json:"requests"`
}

// LateExposureView is one exposure of a late case.
type LateExposureView struct {
	ExposureID       string     `json:"lateSettlementExposureId"`
	Amount           string     `json:"exposureAmount"`
	RequestedAt      time.Time  `json:"requestedAt"`
	ResolvedAt       *time.Time `json:"resolvedAt,omitempty"`
	ResolutionSource *string    `json:"resolutionSource,omitempty"`
}

// ErrLateCaseNotFound: no late settlement case with that ref in the active
// projection.
var ErrLateCaseNotFound = errors.New("operations: no late settlement case with that ref")

const qLateCases = `SELECT c.reconciliation_case_ref, c.case_generation, c.state, c.settlement_dimension_id::text,
       c.billing_reservation_id::text, c.billing_account_id::text, c.run_id::text, c.charge_dimension_key, c.opened_at, c.resolved_at
  FROM operations.late_settlement_cases c
  JOIN outbox.active_projections p ON p.projection_name = c.projection_name AND p.projection_version = c.projection_version`

// ListLate returns the late settlement cases of the active projection in
// state ("open", "resolved", or "" for all), oldest first, at most limit.
func ListLate(ctx context.Context, pool db.Beginner, state string, limit int) ([]LateCaseView, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) ([]LateCaseView, error) {
		rows, err := tx.Query(ctx, qLateCases+` WHERE ($1 = '' OR c.state = $1) ORDER BY c.opened_at, c.reconciliation_case_ref LIMIT $2`, state, limit)
		if err != nil {
			return nil, fmt.Errorf("list late cases: %w", err)
		}
		out, err := pgx.CollectRows(rows, scanLateCase)
		if err != nil {
			return nil, fmt.Errorf("list late cases: %w", err)
		}
		for i := range out {
			if err := lateDetails(ctx, tx, &out[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
}

// ShowLate returns one late settlement case of the active projection.
func ShowLate(ctx context.Context, pool db.Beginner, ref string) (LateCaseView, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (LateCaseView, error) {
		rows, err := tx.Query(ctx, qLateCases+` WHERE c.reconciliation_case_ref = $1`, ref)
		if err != nil {
			return LateCaseView{}, fmt.Errorf("read late case: %w", err)
		}
		v, err := pgx.CollectExactlyOneRow(rows, scanLateCase)
		if errors.Is(err, pgx.ErrNoRows) {
			return LateCaseView{}, fmt.Errorf("%w: %s", ErrLateCaseNotFound, ref)
		}
		if err != nil {
			return LateCaseView{}, fmt.Errorf("read late case: %w", err)
		}
		return v, lateDetails(ctx, tx, &v)
	})
}

func scanLateCase(row pgx.CollectableRow) (LateCaseView, error) {
	var v LateCaseView
	err := row.Scan(&v.CaseRef, &v.Generation, &v.State, &v.SettlementDimensionID, &v.ReservationID, &v.AccountID, &v.RunID,
		&v.ChargeDimensionKey, &v.OpenedAt, &v.ResolvedAt)
	return v, err
}

func lateDetails(ctx context.Context, tx pgx.Tx, v *LateCaseView) error {
	rows, err := tx.Query(ctx, `SELECT e.late_settlement_exposure_id::text, e.exposure_amount::text, e.requested_at, e.resolved_at,
		    e.resolution_source
		  FROM operations.late_settlement_case_exposures e
		  JOIN outbox.active_projections p ON p.projection_name = e.projection_name AND p.projection_version = e.projection_version
		 WHERE e.reconciliation_case_ref = $1 ORDER BY e.requested_at, e.late_settlement_exposure_id`, v.CaseRef)
	if err != nil {
		return fmt.Errorf("read exposures of %s: %w", v.CaseRef, err)
	}
	v.Exposures, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (LateExposureView, error) {
		var x LateExposureView
		err := row.Scan(&x.ExposureID, &x.Amount, &x.RequestedAt, &x.ResolvedAt, &x.ResolutionSource)
		return x, err
	})
	if err != nil {
		return fmt.Errorf("read exposures of %s: %w", v.CaseRef, err)
	}
	rows, err = tx.Query(ctx, `SELECT r.request_ref, r.requester_workforce_principal_id, r.request_body::jsonb->>'justification',
		    r.requested_at, a.approver_workforce_principal_id, a.approved_at, d.decision_ref, d.decided_at
		  FROM operations.late_command_requests r
		  LEFT JOIN operations.late_command_approvals a ON a.request_ref = r.request_ref
		  LEFT JOIN operations.late_command_decisions d ON d.request_ref = r.request_ref
		 WHERE r.reconciliation_case_ref = $1 ORDER BY r.requested_at, r.request_ref`, v.CaseRef)
	if err != nil {
		return fmt.Errorf("read late requests of %s: %w", v.CaseRef, err)
	}
	v.Requests, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (RequestView, error) {
		var r RequestView
		err := row.Scan(&r.Ref, &r.Requester, &r.Justification, &r.RequestedAt, &r.Approver, &r.ApprovedAt, &r.DecisionRef, &r.DecidedAt)
		return r, err
	})
	if err != nil {
		return fmt.Errorf("read late requests of %s: %w", v.CaseRef, err)
	}
	if v.Exposures == nil {
		v.Exposures = []LateExposureView{}
	}
	if v.Requests == nil {
		v.Requests = []RequestView{}
	}
	return nil
}
