// Package operationsread is what Operations answers the owners: the
// Finalization case identity reservation Billing calls before its first
// reconciliation_required decision of a case generation (ADR-031), and the
// requests and answers of that call, with no database behind them.
// Operations implements CaseIdentities (internal/operations/cases, in
// process); Billing depends only on this package.
//
// The primitive is deliberately narrow: it reserves or re-reads exactly one
// fence's exact case generation, as the Billing finalization worker asks
// for it. There is no list, no "latest", no lookup by a bare ref and no
// other source kind.
package operationsread

import (
	"context"
	"errors"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/ownerread"
)

// Tenant is the normalized tenant of the reservation.
type Tenant struct {
	Kind, ID, WorkspaceID, ProjectID string
}

// CaseScope is the exact case generation Billing asks for: one fence's
// generation N, with its direct predecessor's identity for N > 1. It names
// no Work and no finalization operation, so a generation that loses the
// fence to a newer Work leaves the same identity for the winner.
type CaseScope struct {
	Tenant           Tenant
	BillingAccountID string
	ReservationID    string
	RunID            string
	FenceID          string
	Generation       int64
	// Predecessor is generation N-1's identity (nil for generation 1).
	Predecessor *CaseIdentity
}

// CaseIdentity is a reserved FinalizationReconciliationCaseIdentityReservation@1
// as Billing binds it.
type CaseIdentity struct {
	Identity               strict.Quadruple
	CaseRef                string
	Generation             int64
	CaseRequestOperationID string
}

// CaseIdentities is Operations' case identity primitive.
type CaseIdentities interface {
	// ReserveFinalizationCaseIdentity reserves (or, after a lost
	// response, returns the already reserved) identity of the scope's case
	// generation. It allocates a stable ref and creates no visible case.
	ReserveFinalizationCaseIdentity(ctx context.Context, scope CaseScope) (CaseIdentity, error)
}

var (
	// ErrInvalidScope: the scope is malformed, skips a generation or names
	// a predecessor that is not this fence's generation N-1 (nothing is
	// reserved; not retryable).
	ErrInvalidScope = errors.New("operations: invalid finalization case scope")
	// ErrIdentityConflict: the generation is already reserved with another
	// identity (another tenant, reservation, run or predecessor).
	ErrIdentityConflict = errors.New("operations: finalization case identity conflicts with the reserved one")
)

// LateCaseScope is the exact late settlement case generation Billing asks
// for (issue 32): one settlement dimension's generation N, with its direct
// predecessor's identity for N > 1. It names no exposure: every exposure
// Billing records while the generation is opening | open joins that case.
type LateCaseScope struct {
	Tenant     Tenant
	Dimension  billingc.SettlementDimension
	Generation int64
	// Predecessor is generation N-1's identity (nil for generation 1).
	Predecessor *CaseIdentity
}

// LateCaseIdentities is Operations' late settlement case identity
// primitive: ReserveLateSettlementCaseIdentity reserves (or, after a lost
// response, returns the already reserved) LateSettlementCaseIdentityReservation@1
// of the scope's generation. It allocates a stable ref and creates no
// visible case. Errors: ErrInvalidScope, ErrIdentityConflict.
type LateCaseIdentities interface {
	ReserveLateSettlementCaseIdentity(ctx context.Context, scope LateCaseScope) (CaseIdentity, error)
}

// ResolutionDecisionRead is what Core's grant issuer asks Operations at the
// issuing boundary: is this resolution decision, with this candidate,
// Operations' own decision for this case generation, and is that case
// still open?
type ResolutionDecisionRead struct {
	Decision   strict.Quadruple
	Candidate  strict.Quadruple
	CaseRef    string
	Generation int64
}

// ResolutionDecisions is Operations' read of its resolution decisions.
// Found only when Operations stored exactly this decision (and candidate)
// for the case generation and the case is open; NotFound when it stored
// none; Conflicting otherwise (another decision, or the case is closed).
type ResolutionDecisions interface {
	ReadFinalizationResolutionDecision(ctx context.Context, req ResolutionDecisionRead) (ownerread.Answer, error)
}

// LateDecisionRead is what Core's grant issuer asks Operations at the
// issuing boundary of a late settlement command: is this
// LateSettlementCommandDecision@1, with this candidate, Operations' own
// decision for this late case generation, and is that case still open?
type LateDecisionRead struct {
	Decision   strict.Quadruple
	Candidate  strict.Quadruple
	CaseRef    string
	Generation int64
}

// LateDecisions is Operations' read of its late settlement command
// decisions: Found only when Operations stored exactly this decision (and
// candidate) for the case generation and the case is open; NotFound when it
// stored none; Conflicting otherwise.
type LateDecisions interface {
	ReadLateSettlementCommandDecision(ctx context.Context, req LateDecisionRead) (ownerread.Answer, error)
}
