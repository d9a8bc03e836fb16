package cases

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// RefPrefixLateIdentity prefixes a late settlement case identity's
// content-derived ref.
const RefPrefixLateIdentity = "lcir-"

var _ operationsread.LateCaseIdentities = Identities{}

// ReserveLateSettlementCaseIdentity implements
// operationsread.LateCaseIdentities: it builds the scope's
// LateSettlementCaseIdentityReservation@1, inserts it unless the
// dimension's generation is already reserved, and returns the stored one
// when its content is the same (ErrIdentityConflict otherwise). Its own
// transaction, like ReserveFinalizationCaseIdentity: a Billing transaction
// that rolls back leaves the identity for its retry.
func (i Identities) ReserveLateSettlementCaseIdentity(ctx context.Context, s operationsread.LateCaseScope) (operationsread.CaseIdentity, error) {
	if err := validLateScope(s); err != nil {
		return operationsread.CaseIdentity{}, err
	}
	now := time.Now
	if i.Now != nil {
		now = i.Now
	}
	r := lateIdentityOf(s, now().UTC().Truncate(time.Microsecond))
	body, err := reconciliation.SealAddressed(r, RefPrefixLateIdentity)
	if err != nil {
		return operationsread.CaseIdentity{}, fmt.Errorf("%w: %w", operationsread.ErrInvalidScope, err)
	}
	dimID := s.Dimension.SettlementDimensionID()
	return db.WithTxV(ctx, i.Pool, func(ctx context.Context, tx pgx.Tx) (operationsread.CaseIdentity, error) {
		if p := s.Predecessor; p != nil {
			var stored string
			err := tx.QueryRow(ctx, `SELECT case_identity_digest FROM operations.late_settlement_case_identities
				WHERE settlement_dimension_id = $1 AND case_generation = $2 AND case_identity_ref = $3`,
				dimID, p.Generation, p.Identity.Ref).Scan(&stored)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && stored != p.Identity.Digest) {
				return operationsread.CaseIdentity{}, fmt.Errorf("%w: predecessor %s is not generation %d of dimension %s",
					operationsread.ErrInvalidScope, p.Identity.Ref, p.Generation, dimID)
			}
			if err != nil {
				return operationsread.CaseIdentity{}, fmt.Errorf("read predecessor identity: %w", err)
			}
		}
		q := r.Reservation
		var pred *int64
		if r.Predecessor != nil {
			pred = &r.Predecessor.CaseGeneration
		}
		d := r.Dimension
		tag, err := tx.Exec(ctx, `INSERT INTO operations.late_settlement_case_identities (case_identity_ref, case_identity_schema_version,
			    case_identity_digest_algorithm_version, case_identity_digest, source_kind, settlement_dimension_id, case_generation,
			    reconciliation_case_ref, case_request_operation_id, predecessor_generation, billing_reservation_id,
			    billing_account_id, run_id, tenant_id, identity_body, reserved_at)
			VALUES ($1, $2, $3, $4, 'late_settlement_exposure', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT (settlement_dimension_id, case_generation) DO NOTHING`,
			q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest, dimID, r.CaseGeneration, r.ReconciliationCaseRef,
			r.CaseRequestOperationID, pred, d.BillingReservationID, d.BillingAccountID, d.RunID, r.Tenant.TenantID, string(body), r.ReservedAt)
		if err != nil {
			return operationsread.CaseIdentity{}, fmt.Errorf("reserve late settlement case identity: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return lateAnswerOf(r), nil
		}
		var storedBody string
		if err := tx.QueryRow(ctx, `SELECT identity_body FROM operations.late_settlement_case_identities
			WHERE settlement_dimension_id = $1 AND case_generation = $2`, dimID, s.Generation).Scan(&storedBody); err != nil {
			return operationsread.CaseIdentity{}, fmt.Errorf("read late settlement case identity: %w", err)
		}
		stored, err := decodeStoredLate(storedBody)
		if err != nil {
			return operationsread.CaseIdentity{}, err
		}
		if stored.Reservation != r.Reservation {
			return operationsread.CaseIdentity{}, fmt.Errorf("%w: dimension %s generation %d is %s",
				operationsread.ErrIdentityConflict, dimID, s.Generation, stored.Reservation.Ref)
		}
		return lateAnswerOf(stored), nil
	})
}

// LateIdentityByCaseRequestTx reads, in the caller's transaction, the late
// settlement case identity reserved for a case request operation (the
// projector's local check of a case-requested event).
// ErrIdentityNotReserved when there is none.
func LateIdentityByCaseRequestTx(ctx context.Context, tx pgx.Tx, caseRequestOperationID string) (*reconciliation.LateCaseIdentityReservation, error) {
	var body string
	err := tx.QueryRow(ctx, `SELECT identity_body FROM operations.late_settlement_case_identities WHERE case_request_operation_id = $1`,
		caseRequestOperationID).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: case request operation %s", ErrIdentityNotReserved, caseRequestOperationID)
	}
	if err != nil {
		return nil, fmt.Errorf("read late settlement case identity: %w", err)
	}
	return decodeStoredLate(body)
}

func decodeStoredLate(body string) (*reconciliation.LateCaseIdentityReservation, error) {
	r, err := reconciliation.DecodeLateCaseIdentityReservation([]byte(body))
	if err != nil {
		return nil, fmt.Errorf("stored late settlement case identity: %w", err)
	}
	return r, nil
}

func lateIdentityOf(s operationsread.LateCaseScope, at time.Time) *reconciliation.LateCaseIdentityReservation {
	dimID := s.Dimension.SettlementDimensionID()
	r := &reconciliation.LateCaseIdentityReservation{
		Tenant:                billingc.Tenant{Kind: s.Tenant.Kind, TenantID: s.Tenant.ID, WorkspaceID: s.Tenant.WorkspaceID, ProjectID: s.Tenant.ProjectID},
		Dimension:             s.Dimension,
		ReconciliationCaseRef: reconciliation.LateSettlementCaseRef(dimID, s.Generation), CaseGeneration: s.Generation,
		CaseRequestOperationID: reconciliation.LateSettlementCaseRequestOperationID(dimID, s.Generation),
		ReservedAt:             at,
	}
	if p := s.Predecessor; p != nil {
		r.Predecessor = &reconciliation.LatePredecessor{ReconciliationCaseRef: p.CaseRef, CaseGeneration: p.Generation, Identity: p.Identity}
	}
	return r
}

func lateAnswerOf(r *reconciliation.LateCaseIdentityReservation) operationsread.CaseIdentity {
	return operationsread.CaseIdentity{Identity: r.Reservation, CaseRef: r.ReconciliationCaseRef,
		Generation: r.CaseGeneration, CaseRequestOperationID: r.CaseRequestOperationID}
}

// validLateScope refuses a scope that is not exactly one dimension's
// generation with its direct predecessor (whose ref and operation are the
// contracts' derivations for generation N-1).
func validLateScope(s operationsread.LateCaseScope) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", operationsread.ErrInvalidScope, fmt.Sprintf(format, args...))
	}
	d := s.Dimension
	for name, v := range map[string]string{"tenant": s.Tenant.ID, "workspace": s.Tenant.WorkspaceID, "account": d.BillingAccountID,
		"reservation": d.BillingReservationID, "run": d.RunID, "step": d.RunStepID, "attempt": d.ExecutionAttemptID} {
		if u, err := uuid.Parse(v); err != nil || u.String() != v {
			return bad("%s id %q is not a canonical UUID", name, v)
		}
	}
	dimID := d.SettlementDimensionID()
	switch p := s.Predecessor; {
	case s.Generation < 1:
		return bad("generation %d", s.Generation)
	case (s.Generation == 1) != (p == nil):
		return bad("generation %d with predecessor %v", s.Generation, p != nil)
	case p != nil && (p.Generation != s.Generation-1 || p.CaseRef != reconciliation.LateSettlementCaseRef(dimID, p.Generation) ||
		p.CaseRequestOperationID != reconciliation.LateSettlementCaseRequestOperationID(dimID, p.Generation)):
		return bad("predecessor %s (generation %d) is not generation %d of dimension %s", p.CaseRef, p.Generation, s.Generation-1, dimID)
	}
	return nil
}
