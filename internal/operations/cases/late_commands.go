package cases

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// Ref prefixes of the late settlement command chain's objects.
const (
	RefPrefixLateRequest   = "lscr-"
	RefPrefixLatePreview   = "lscp-"
	RefPrefixLateApproval  = "lsca-"
	RefPrefixLateJit       = "lscj-"
	RefPrefixLateCandidate = "lscc-"
	RefPrefixLateDecision  = "lscd-"
)

// Late command chain errors (none writes anything). The finalization
// chain's ErrNotApproved, ErrAlreadyApproved, ErrNotRequester and
// ErrRequestConflict apply to it as well.
var (
	// ErrLateCaseNotOpen: no open late settlement case with that ref in the
	// active projection.
	ErrLateCaseNotOpen = errors.New("operations: no open late settlement case with that ref")
	// ErrLateExposureNotInCase: the exposure is not one of the case's.
	ErrLateExposureNotInCase = errors.New("operations: the exposure is not in the late settlement case")
	// ErrLateExposureNotCurrent: the exposure is resolved, or a later
	// unresolved exposure of the case superseded it.
	ErrLateExposureNotCurrent = errors.New("operations: the exposure is not the case's latest unresolved exposure")
	// ErrLateRequestNotFound: no late settlement command request with that ref.
	ErrLateRequestNotFound = errors.New("operations: no late settlement command request with that ref")
	// ErrLateCaseDecided: the case generation already has a late decision.
	ErrLateCaseDecided = errors.New("operations: the late settlement case generation already has a decision")
)

// MaxExposureRevision bounds the settlement state revisions RequestLate
// tries when it recovers an exposure's revision from its derived id (the
// projection stores the id, which late_settlement_exposure@1 derives from
// the dimension and the revision). A dimension beyond it fails closed.
const MaxExposureRevision = 1 << 14

// LateRequestInput is an operator's request to fund one exposure of an
// open late settlement case.
type LateRequestInput struct {
	CaseRef                  string
	LateSettlementExposureID string
	Evidence                 []reconciliation.EvidenceReference
	Justification            string
	// CommandRequestOperationID is the requester's idempotency key (a UUID).
	CommandRequestOperationID string
}

// LateChain is a late request and whatever of its chain exists.
type LateChain struct {
	Request   *reconciliation.LateCommandRequest
	Preview   *reconciliation.LateImpactPreview
	Approval  *reconciliation.LateApproval
	JIT       *reconciliation.LateJitActivation
	Candidate *reconciliation.LateCandidate
	Decision  *reconciliation.LateDecision
}

var _ operationsread.LateDecisions = Commands{}

// RequestLate records requester's LateSettlementCommandRequest@1 and its
// LateSettlementCommandImpactPreview@1 for an exposure of an open late
// settlement case (active projection): the exposure must be in the case and
// be its latest unresolved exposure. The same operation with the same
// content returns the stored request; other content is ErrRequestConflict.
func (c Commands) RequestLate(ctx context.Context, requester string, in LateRequestInput) (*LateChain, error) {
	return db.WithTxV(ctx, c.Pool, func(ctx context.Context, tx pgx.Tx) (*LateChain, error) {
		if stored, err := lateChainByOperation(ctx, tx, in.CommandRequestOperationID); err == nil {
			r := stored.Request
			if r.Case.ReconciliationCaseRef != in.CaseRef || r.Exposure.LateSettlementExposureID != in.LateSettlementExposureID ||
				r.RequesterWorkforcePrincipalID != requester || r.Justification != in.Justification ||
				!reconciliation.EvidenceEqual(r.Evidence, sorted(in.Evidence)) {
				return nil, fmt.Errorf("%w: %s", ErrRequestConflict, in.CommandRequestOperationID)
			}
			return stored, nil
		} else if !errors.Is(err, ErrLateRequestNotFound) {
			return nil, err
		}
		kase, err := openLateCase(ctx, tx, in.CaseRef)
		if err != nil {
			return nil, err
		}
		exposure, err := currentLateExposure(ctx, tx, kase, in.LateSettlementExposureID)
		if err != nil {
			return nil, err
		}
		now := c.now()
		ch := &LateChain{Request: &reconciliation.LateCommandRequest{CommandRequestOperationID: in.CommandRequestOperationID, Case: kase,
			Exposure: exposure, RequesterWorkforcePrincipalID: requester, Evidence: sorted(in.Evidence), Justification: in.Justification,
			RequestedAt: now}}
		body, err := reconciliation.SealAddressed(ch.Request, RefPrefixLateRequest)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", reconciliation.ErrInvalidObject, err)
		}
		ch.Preview = &reconciliation.LateImpactPreview{CommandRequest: ch.Request.Request, Exposure: exposure, PreviewedAt: now}
		preview, err := reconciliation.SealAddressed(ch.Preview, RefPrefixLatePreview)
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO operations.late_command_requests (command_request_operation_id, request_ref,
			    request_digest, reconciliation_case_ref, case_generation, late_settlement_exposure_id, requester_workforce_principal_id,
			    request_body, preview_ref, preview_digest, preview_body, requested_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			in.CommandRequestOperationID, ch.Request.Request.Ref, ch.Request.Request.Digest, kase.ReconciliationCaseRef, kase.CaseGeneration,
			exposure.LateSettlementExposureID, requester, string(body), ch.Preview.Preview.Ref, ch.Preview.Preview.Digest, string(preview),
			now); err != nil {
			return nil, fmt.Errorf("store late request: %w", err)
		}
		return ch, nil
	})
}

// ApproveLate records approver's LateSettlementCommandApproval@1. The
// requester cannot approve (reconciliation.ErrSelfApproval; PostgreSQL
// refuses it too, OP007.late-self-approval). The same approver again gets
// the stored approval; another is ErrAlreadyApproved.
func (c Commands) ApproveLate(ctx context.Context, approver, requestRef string) (*LateChain, error) {
	return db.WithTxV(ctx, c.Pool, func(ctx context.Context, tx pgx.Tx) (*LateChain, error) {
		ch, err := lateChainByRef(ctx, tx, requestRef)
		if err != nil {
			return nil, err
		}
		if ch.Approval != nil {
			if ch.Approval.ApproverWorkforcePrincipalID != approver {
				return nil, fmt.Errorf("%w: %s", ErrAlreadyApproved, ch.Approval.ApproverWorkforcePrincipalID)
			}
			return ch, nil
		}
		if approver == ch.Request.RequesterWorkforcePrincipalID {
			return nil, fmt.Errorf("%w: %s requested %s", reconciliation.ErrSelfApproval, approver, requestRef)
		}
		if _, err := openLateCase(ctx, tx, ch.Request.Case.ReconciliationCaseRef); err != nil {
			return nil, err
		}
		ch.Approval = &reconciliation.LateApproval{CommandRequest: ch.Request.Request, ImpactPreview: ch.Preview.Preview,
			RequesterWorkforcePrincipalID: ch.Request.RequesterWorkforcePrincipalID, ApproverWorkforcePrincipalID: approver, ApprovedAt: c.now()}
		body, err := reconciliation.SealAddressed(ch.Approval, RefPrefixLateApproval)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", reconciliation.ErrInvalidObject, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO operations.late_command_approvals (request_ref, approval_ref, approval_digest,
			    approver_workforce_principal_id, approval_body, approved_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			requestRef, ch.Approval.Approval.Ref, ch.Approval.Approval.Digest, approver, string(body), ch.Approval.ApprovedAt); err != nil {
			return nil, fmt.Errorf("store late approval: %w", err)
		}
		return ch, nil
	})
}

// DecideLate is the requester running their approved late request: a
// LateSettlementCommandJitActivation@1 (role billing_late_settlement_operator)
// of JITWindow, the LateSettlementCommandCandidate@1 bound to the gateway
// workload and the LateSettlementCommandDecision@1, stored together, one
// per case generation. The exposure must still be the case's latest
// unresolved one. Called again, it returns the stored chain.
func (c Commands) DecideLate(ctx context.Context, actor, requestRef string) (*LateChain, error) {
	return db.WithTxV(ctx, c.Pool, func(ctx context.Context, tx pgx.Tx) (*LateChain, error) {
		ch, err := lateChainByRef(ctx, tx, requestRef)
		if err != nil {
			return nil, err
		}
		switch {
		case actor != ch.Request.RequesterWorkforcePrincipalID:
			return nil, fmt.Errorf("%w: %s requested %s", ErrNotRequester, ch.Request.RequesterWorkforcePrincipalID, requestRef)
		case ch.Approval == nil:
			return nil, fmt.Errorf("%w: %s", ErrNotApproved, requestRef)
		case ch.Decision != nil:
			return ch, nil
		}
		kase, err := openLateCase(ctx, tx, ch.Request.Case.ReconciliationCaseRef)
		if err != nil {
			return nil, err
		}
		if kase.CaseGeneration != ch.Request.Case.CaseGeneration || kase.Identity != ch.Request.Case.Identity {
			return nil, fmt.Errorf("%w: the case moved to another generation", ErrLateCaseNotOpen)
		}
		exposure, err := currentLateExposure(ctx, tx, kase, ch.Request.Exposure.LateSettlementExposureID)
		if err != nil {
			return nil, err
		}
		if exposure != ch.Request.Exposure {
			return nil, fmt.Errorf("%w: %s", ErrLateExposureNotCurrent, exposure.LateSettlementExposureID)
		}
		now := c.now()
		ch.JIT = &reconciliation.LateJitActivation{ActorWorkforcePrincipalID: actor, CommandRequest: ch.Request.Request,
			NotBefore: now, ExpiresAt: now.Add(JITWindow), ActivatedAt: now}
		jit, err := reconciliation.SealAddressed(ch.JIT, RefPrefixLateJit)
		if err != nil {
			return nil, err
		}
		ch.Candidate = &reconciliation.LateCandidate{CommandRequest: ch.Request.Request, ImpactPreview: ch.Preview.Preview,
			Approval: ch.Approval.Approval, JitActivation: ch.JIT.Activation, ActorWorkforcePrincipalID: actor,
			BoundWorkload: c.Workload, Case: ch.Request.Case, Exposure: ch.Request.Exposure, Evidence: ch.Request.Evidence, CreatedAt: now}
		cand, err := reconciliation.SealAddressed(ch.Candidate, RefPrefixLateCandidate)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", reconciliation.ErrInvalidObject, err)
		}
		ch.Decision = &reconciliation.LateDecision{Candidate: ch.Candidate.Candidate, CommandRequest: ch.Request.Request,
			Case: ch.Request.Case, Exposure: ch.Request.Exposure, ActorWorkforcePrincipalID: actor, Evidence: ch.Request.Evidence, DecidedAt: now}
		dec, err := reconciliation.SealAddressed(ch.Decision, RefPrefixLateDecision)
		if err != nil {
			return nil, err
		}
		if err := reconciliation.CheckLateAuthorization(ch.Request, ch.Preview, ch.Approval, ch.JIT, ch.Candidate, ch.Decision, now); err != nil {
			return nil, err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO operations.late_command_decisions (request_ref, reconciliation_case_ref,
			    case_generation, actor_workforce_principal_id, jit_ref, jit_digest, jit_body, candidate_ref, candidate_digest,
			    candidate_body, decision_ref, decision_digest, decision_body, decided_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (reconciliation_case_ref) DO NOTHING`,
			requestRef, kase.ReconciliationCaseRef, kase.CaseGeneration, actor, ch.JIT.Activation.Ref, ch.JIT.Activation.Digest, string(jit),
			ch.Candidate.Candidate.Ref, ch.Candidate.Candidate.Digest, string(cand), ch.Decision.Decision.Ref,
			ch.Decision.Decision.Digest, string(dec), now)
		if err != nil {
			return nil, fmt.Errorf("store late decision: %w", err)
		}
		// guard OP-1.late-one-decision-per-generation
		if tag.RowsAffected() != 1 {
			return nil, fmt.Errorf("%w: %s", ErrLateCaseDecided, kase.ReconciliationCaseRef)
		}
		return ch, nil
	})
}

// ReadLateSettlementCommandDecision implements operationsread.LateDecisions
// for Core's grant issuer: Found only for exactly the stored decision and
// candidate of the case generation while the case is open; NotFound when
// the case has no decision; Conflicting otherwise.
func (c Commands) ReadLateSettlementCommandDecision(ctx context.Context, req operationsread.LateDecisionRead) (ownerread.Answer, error) {
	if req.Decision.Validate() != nil || req.Candidate.Validate() != nil || req.CaseRef == "" || req.Generation < 1 {
		return "", fmt.Errorf("%w: the late decision read needs both quadruples and the case generation", ownerread.ErrInvalidRequest)
	}
	return db.WithTxV(ctx, c.Pool, func(ctx context.Context, tx pgx.Tx) (ownerread.Answer, error) {
		var decision, candidate string
		var generation int64
		err := tx.QueryRow(ctx, `SELECT decision_body, candidate_body, case_generation FROM operations.late_command_decisions
			WHERE reconciliation_case_ref = $1`, req.CaseRef).Scan(&decision, &candidate, &generation)
		if errors.Is(err, pgx.ErrNoRows) {
			return ownerread.NotFound, nil
		}
		if err != nil {
			return "", fmt.Errorf("read late decision: %w", err)
		}
		d, err := reconciliation.DecodeLateDecision([]byte(decision))
		if err != nil {
			return ownerread.Conflicting, nil
		}
		cand, err := reconciliation.DecodeLateCandidate([]byte(candidate))
		if err != nil {
			return ownerread.Conflicting, nil
		}
		if d.Decision != req.Decision || cand.Candidate != req.Candidate || generation != req.Generation {
			return ownerread.Conflicting, nil
		}
		if _, err := openLateCase(ctx, tx, req.CaseRef); errors.Is(err, ErrLateCaseNotOpen) {
			return ownerread.Conflicting, nil
		} else if err != nil {
			return "", err
		}
		return ownerread.Found, nil
	})
}

// LateChainByRef reads a late request's chain (for case show).
func (c Commands) LateChainByRef(ctx context.Context, requestRef string) (*LateChain, error) {
	return db.WithTxV(ctx, c.Pool, func(ctx context.Context, tx pgx.Tx) (*LateChain, error) {
		return lateChainByRef(ctx, tx, requestRef)
	})
}

// openLateCase reads the open late settlement case with ref in the active
// projection, with its generation's identity reservation (which carries the
// dimension in full).
func openLateCase(ctx context.Context, tx pgx.Tx, ref string) (reconciliation.LateCase, error) {
	var body string
	err := tx.QueryRow(ctx, `SELECT i.identity_body
		  FROM operations.late_settlement_cases c
		  JOIN outbox.active_projections p ON p.projection_name = c.projection_name AND p.projection_version = c.projection_version
		  JOIN operations.late_settlement_case_identities i ON i.case_identity_ref = c.case_identity_ref
		 WHERE c.reconciliation_case_ref = $1 AND c.state = 'open'`, ref).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return reconciliation.LateCase{}, fmt.Errorf("%w: %s", ErrLateCaseNotOpen, ref)
	}
	if err != nil {
		return reconciliation.LateCase{}, fmt.Errorf("read late case %s: %w", ref, err)
	}
	id, err := decodeStoredLate(body)
	if err != nil {
		return reconciliation.LateCase{}, err
	}
	return id.Case(), nil
}

// currentLateExposure returns the reference of exposureID when it is the
// case's latest unresolved exposure (active projection):
// ErrLateExposureNotInCase when the case does not hold it,
// ErrLateExposureNotCurrent when it is resolved or a later unresolved
// exposure supersedes it. The revision is recovered from the derived id.
func currentLateExposure(ctx context.Context, tx pgx.Tx, kase reconciliation.LateCase, exposureID string) (reconciliation.LateExposureRef, error) {
	rows, err := tx.Query(ctx, `SELECT e.late_settlement_exposure_id::text, e.exposure_ref, e.exposure_schema_version,
		    e.exposure_digest_algorithm_version, e.exposure_digest, e.resolved_at IS NOT NULL
		  FROM operations.late_settlement_case_exposures e
		  JOIN outbox.active_projections p ON p.projection_name = e.projection_name AND p.projection_version = e.projection_version
		 WHERE e.reconciliation_case_ref = $1`, kase.ReconciliationCaseRef)
	if err != nil {
		return reconciliation.LateExposureRef{}, fmt.Errorf("read late case exposures: %w", err)
	}
	type row struct {
		ref      reconciliation.LateExposureRef
		resolved bool
	}
	var all []row
	for rows.Next() {
		var r row
		var alg string
		q := &r.ref.Exposure
		if err := rows.Scan(&r.ref.LateSettlementExposureID, &q.Ref, &q.SchemaVersion, &alg, &q.Digest, &r.resolved); err != nil {
			rows.Close()
			return reconciliation.LateExposureRef{}, fmt.Errorf("read late case exposures: %w", err)
		}
		q.DigestAlgorithmVersion = digest.Algorithm(alg)
		all = append(all, r)
	}
	if err := rows.Err(); err != nil {
		return reconciliation.LateExposureRef{}, fmt.Errorf("read late case exposures: %w", err)
	}
	want := map[string]int{}
	for i, r := range all {
		want[r.ref.LateSettlementExposureID] = i
	}
	if _, ok := want[exposureID]; !ok {
		return reconciliation.LateExposureRef{}, fmt.Errorf("%w: %s in %s", ErrLateExposureNotInCase, exposureID, kase.ReconciliationCaseRef)
	}
	dimID := kase.Dimension.SettlementDimensionID()
	found := 0
	for rev := int64(2); rev <= MaxExposureRevision && found < len(all); rev++ {
		if i, ok := want[billing.LateSettlementExposureID(dimID, rev)]; ok {
			all[i].ref.SettlementStateRevision = rev
			found++
		}
	}
	var latest *row
	for i := range all {
		r := &all[i]
		if r.ref.SettlementStateRevision == 0 {
			return reconciliation.LateExposureRef{}, fmt.Errorf("%w: exposure %s is not of dimension %s", ErrLateExposureNotInCase,
				r.ref.LateSettlementExposureID, dimID)
		}
		if !r.resolved && (latest == nil || r.ref.SettlementStateRevision > latest.ref.SettlementStateRevision) {
			latest = r
		}
	}
	// guard OP-1.late-exposure-latest-unresolved
	if latest == nil || latest.ref.LateSettlementExposureID != exposureID {
		return reconciliation.LateExposureRef{}, fmt.Errorf("%w: %s", ErrLateExposureNotCurrent, exposureID)
	}
	return latest.ref, nil
}

const qLateChain = `SELECT r.request_body, r.preview_body, a.approval_body, d.jit_body, d.candidate_body, d.decision_body
  FROM operations.late_command_requests r
  LEFT JOIN operations.late_command_approvals a ON a.request_ref = r.request_ref
  LEFT JOIN operations.late_command_decisions d ON d.request_ref = r.request_ref
 WHERE `

func lateChainByRef(ctx context.Context, tx pgx.Tx, ref string) (*LateChain, error) {
	return scanLateChain(tx.QueryRow(ctx, qLateChain+"r.request_ref = $1", ref), ref)
}

func lateChainByOperation(ctx context.Context, tx pgx.Tx, op string) (*LateChain, error) {
	return scanLateChain(tx.QueryRow(ctx, qLateChain+"r.command_request_operation_id = $1", op), op)
}

// LateChainTx reads a late request's chain in the caller's transaction.
func LateChainTx(ctx context.Context, tx pgx.Tx, requestRef string) (*LateChain, error) {
	return lateChainByRef(ctx, tx, requestRef)
}

func scanLateChain(row pgx.Row, key string) (*LateChain, error) {
	var req, preview string
	var approval, jit, cand, dec *string
	if err := row.Scan(&req, &preview, &approval, &jit, &cand, &dec); errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrLateRequestNotFound, key)
	} else if err != nil {
		return nil, fmt.Errorf("read late request %s: %w", key, err)
	}
	ch := &LateChain{}
	var err error
	decode := func(body *string, f func([]byte) error) {
		if err == nil && body != nil {
			err = f([]byte(*body))
		}
	}
	decode(&req, func(b []byte) (e error) { ch.Request, e = reconciliation.DecodeLateCommandRequest(b); return })
	decode(&preview, func(b []byte) (e error) { ch.Preview, e = reconciliation.DecodeLateImpactPreview(b); return })
	decode(approval, func(b []byte) (e error) { ch.Approval, e = reconciliation.DecodeLateApproval(b); return })
	decode(jit, func(b []byte) (e error) { ch.JIT, e = reconciliation.DecodeLateJitActivation(b); return })
	decode(cand, func(b []byte) (e error) { ch.Candidate, e = reconciliation.DecodeLateCandidate(b); return })
	decode(dec, func(b []byte) (e error) { ch.Decision, e = reconciliation.DecodeLateDecision(b); return })
	if err != nil {
		return nil, fmt.Errorf("stored late chain of %s: %w", key, err)
	}
	return ch, nil
}
