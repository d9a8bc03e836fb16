// Package cases is Operations' side of the Finalization reconciliation
// cases (issue 31, ADR-031): the case identity reservation Billing calls
// before its first reconciliation_required decision of a generation
// (Identities, operationsread.CaseIdentities). The identity is
// content-addressed and allocated once per (fence, generation); it creates
// no visible case.
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

// SQLSTATEs of the cases' tables (operations migrations 00008, 00010).
const (
	CodeInsertOnly   = "OP001" // an update or delete of an identity or a chain row
	CodeSelfApproval = "OP007" // an approval by the requester
)

// RefPrefixIdentity prefixes an identity's content-derived ref.
const RefPrefixIdentity = "fcir-"

// Identities reserves case identities in schema operations of the core
// database (pool: as oceanway_operations). Each call is its own
// transaction, independent of the caller's: a Billing transaction that
// rolls back (its Work lost the fence) leaves the identity for the winner.
type Identities struct {
	Pool db.Beginner
	// Now is the clock of reservedAt (default time.Now).
	Now func() time.Time
}

var _ operationsread.CaseIdentities = Identities{}

// ReserveFinalizationCaseIdentity implements operationsread.CaseIdentities:
// it builds the scope's identity, inserts it unless the generation is
// already reserved, and returns the stored one when its content is the
// same (ErrIdentityConflict otherwise).
func (i Identities) ReserveFinalizationCaseIdentity(ctx context.Context, s operationsread.CaseScope) (operationsread.CaseIdentity, error) {
	if err := validScope(s); err != nil {
		return operationsread.CaseIdentity{}, err
	}
	now := time.Now
	if i.Now != nil {
		now = i.Now
	}
	r := identityOf(s, now().UTC().Truncate(time.Microsecond))
	body, err := reconciliation.SealAddressed(r, RefPrefixIdentity)
	if err != nil {
		return operationsread.CaseIdentity{}, fmt.Errorf("%w: %w", operationsread.ErrInvalidScope, err)
	}
	return db.WithTxV(ctx, i.Pool, func(ctx context.Context, tx pgx.Tx) (operationsread.CaseIdentity, error) {
		if s.Predecessor != nil {
			var stored string
			err := tx.QueryRow(ctx, `SELECT case_identity_digest FROM operations.finalization_case_identities
				WHERE billing_finalization_fence_id = $1 AND reconciliation_generation = $2 AND case_identity_ref = $3`,
				s.FenceID, s.Predecessor.Generation, s.Predecessor.Identity.Ref).Scan(&stored)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && stored != s.Predecessor.Identity.Digest) {
				return operationsread.CaseIdentity{}, fmt.Errorf("%w: predecessor %s is not generation %d of fence %s",
					operationsread.ErrInvalidScope, s.Predecessor.Identity.Ref, s.Predecessor.Generation, s.FenceID)
			}
			if err != nil {
				return operationsread.CaseIdentity{}, fmt.Errorf("read predecessor identity: %w", err)
			}
		}
		q := r.Reservation
		var pred *int64
		if r.Predecessor != nil {
			pred = &r.Predecessor.ReconciliationGeneration
		}
		tag, err := tx.Exec(ctx, `INSERT INTO operations.finalization_case_identities (case_identity_ref, case_identity_schema_version,
			    case_identity_digest_algorithm_version, case_identity_digest, source_kind, billing_finalization_fence_id,
			    reconciliation_generation, reconciliation_case_ref, case_request_operation_id, predecessor_generation,
			    billing_reservation_id, billing_account_id, run_id, tenant_id, identity_body, reserved_at)
			VALUES ($1, $2, $3, $4, 'billing_finalization', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT (billing_finalization_fence_id, reconciliation_generation) DO NOTHING`,
			q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest, r.FenceID, r.ReconciliationGeneration,
			r.ReconciliationCaseRef, r.CaseRequestOperationID, pred, r.BillingReservationID, r.BillingAccountID, r.RunID,
			r.Tenant.TenantID, string(body), r.ReservedAt)
		if err != nil {
			return operationsread.CaseIdentity{}, fmt.Errorf("reserve case identity: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return answerOf(r), nil
		}
		stored, err := identityByGeneration(ctx, tx, s.FenceID, s.Generation)
		if err != nil {
			return operationsread.CaseIdentity{}, err
		}
		if stored.Reservation != r.Reservation {
			return operationsread.CaseIdentity{}, fmt.Errorf("%w: fence %s generation %d is %s",
				operationsread.ErrIdentityConflict, s.FenceID, s.Generation, stored.Reservation.Ref)
		}
		return answerOf(stored), nil
	})
}

// IdentityByCaseRequestTx reads, in the caller's transaction, the identity
// reserved for a case request operation (the projector's local check of a
// case-requested event). ErrIdentityNotReserved when there is none.
func IdentityByCaseRequestTx(ctx context.Context, tx pgx.Tx, caseRequestOperationID string) (*reconciliation.CaseIdentityReservation, error) {
	var body string
	err := tx.QueryRow(ctx, `SELECT identity_body FROM operations.finalization_case_identities WHERE case_request_operation_id = $1`,
		caseRequestOperationID).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: case request operation %s", ErrIdentityNotReserved, caseRequestOperationID)
	}
	if err != nil {
		return nil, fmt.Errorf("read case identity: %w", err)
	}
	return decodeStored(body)
}

// ErrIdentityNotReserved: no identity was reserved for the case request.
var ErrIdentityNotReserved = errors.New("operations: no case identity reserved for the case request")

func identityByGeneration(ctx context.Context, tx pgx.Tx, fenceID string, generation int64) (*reconciliation.CaseIdentityReservation, error) {
	var body string
	if err := tx.QueryRow(ctx, `SELECT identity_body FROM operations.finalization_case_identities
		WHERE billing_finalization_fence_id = $1 AND reconciliation_generation = $2`, fenceID, generation).Scan(&body); err != nil {
		return nil, fmt.Errorf("read case identity: %w", err)
	}
	return decodeStored(body)
}

func decodeStored(body string) (*reconciliation.CaseIdentityReservation, error) {
	r, err := reconciliation.DecodeCaseIdentityReservation([]byte(body))
	if err != nil {
		return nil, fmt.Errorf("stored case identity: %w", err)
	}
	return r, nil
}

func identityOf(s operationsread.CaseScope, at time.Time) *reconciliation.CaseIdentityReservation {
	r := &reconciliation.CaseIdentityReservation{
		Tenant:           billingc.Tenant{Kind: s.Tenant.Kind, TenantID: s.Tenant.ID, WorkspaceID: s.Tenant.WorkspaceID, ProjectID: s.Tenant.ProjectID},
		BillingAccountID: s.BillingAccountID, BillingReservationID: s.ReservationID, RunID: s.RunID, FenceID: s.FenceID,
		ReconciliationCaseRef:    reconciliation.ReconciliationCaseRef(s.FenceID, s.Generation),
		ReconciliationGeneration: s.Generation,
		CaseRequestOperationID:   reconciliation.CaseRequestOperationID(s.FenceID, s.Generation),
		ReservedAt:               at,
	}
	if p := s.Predecessor; p != nil {
		r.Predecessor = &reconciliation.Predecessor{ReconciliationCaseRef: p.CaseRef, ReconciliationGeneration: p.Generation, Identity: p.Identity}
	}
	return r
}

func answerOf(r *reconciliation.CaseIdentityReservation) operationsread.CaseIdentity {
	return operationsread.CaseIdentity{Identity: r.Reservation, CaseRef: r.ReconciliationCaseRef,
		Generation: r.ReconciliationGeneration, CaseRequestOperationID: r.CaseRequestOperationID}
}

// validScope refuses a scope that is not exactly one fence's generation
// with its direct predecessor (the predecessor's ref and operation are the
// contracts' derivations for generation N-1).
func validScope(s operationsread.CaseScope) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", operationsread.ErrInvalidScope, fmt.Sprintf(format, args...))
	}
	for name, v := range map[string]string{"tenant": s.Tenant.ID, "workspace": s.Tenant.WorkspaceID, "account": s.BillingAccountID,
		"reservation": s.ReservationID, "run": s.RunID, "fence": s.FenceID} {
		if u, err := uuid.Parse(v); err != nil || u.String() != v {
			return bad("%s id %q is not a canonical UUID", name, v)
		}
	}
	switch p := s.Predecessor; {
	case s.Generation < 1:
		return bad("generation %d", s.Generation)
	case (s.Generation == 1) != (p == nil):
		return bad("generation %d with predecessor %v", s.Generation, p != nil)
	case p != nil && (p.Generation != s.Generation-1 || p.CaseRef != reconciliation.ReconciliationCaseRef(s.FenceID, p.Generation) ||
		p.CaseRequestOperationID != reconciliation.CaseRequestOperationID(s.FenceID, p.Generation)):
		return bad("predecessor %s (generation %d) is not generation %d of fence %s", p.CaseRef, p.Generation, s.Generation-1, s.FenceID)
	}
	return nil
}
