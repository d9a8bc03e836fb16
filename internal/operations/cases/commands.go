package cases

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// Command chain errors (none writes anything).
var (
	// ErrCaseNotOpen: no open case with that ref in the active projection.
	ErrCaseNotOpen = errors.New("operations: no open finalization case with that ref")
	// ErrRequestNotFound: no resolution command request with that ref.
	ErrRequestNotFound = errors.New("operations: no resolution command request with that ref")
	// ErrNotApproved: the request has no approval yet.
	ErrNotApproved = errors.New("operations: the request is not approved")
	// ErrAlreadyApproved: another principal approved the request.
	ErrAlreadyApproved = errors.New("operations: the request was approved by another principal")
	// ErrNotRequester: only the requester runs their approved request.
	ErrNotRequester = errors.New("operations: only the requester runs the request")
	// ErrCaseDecided: the case generation already has a decision (another request's).
	ErrCaseDecided = errors.New("operations: the case generation already has a resolution decision")
	// ErrRequestConflict: the command request operation was used with other content.
	ErrRequestConflict = errors.New("operations: command request operation used with other content")
)

// JITWindow is how long an operator's JIT activation lasts.
const JITWindow = 15 * time.Minute

// Commands is Operations' side of the resolution command chain (pool: the
// core database as oceanway_operations): requests with their impact
// preview, approvals by a second principal, and — for the requester, once
// approved — the JIT activation, the candidate and the Operations decision
// Core exchanges for a grant. Actors are principals the caller has already
// authenticated (an actor assertion).
type Commands struct {
	Pool db.Beginner
	// Workload is the admin command gateway every candidate binds (the
	// workload that presents the grant exchange).
	Workload string
	Now      func() time.Time
}

// RequestInput is an operator's request to re-evaluate an open case.
type RequestInput struct {
	CaseRef string
	// OperationID is the requester's idempotency key for the request (a UUID).
	OperationID   string
	Evidence      []reconciliation.EvidenceReference
	Justification string
}

// Chain is a request and whatever of its chain exists.
type Chain struct {
	Request   *reconciliation.CommandRequest
	Preview   *reconciliation.ImpactPreview
	Approval  *reconciliation.Approval
	JIT       *reconciliation.JitActivation
	Candidate *reconciliation.Candidate
	Decision  *reconciliation.Decision
}

// Request records requester's FinalizationReconciliationResolutionCommandRequest@1
// for the open case and its impact preview (no direct ledger or
// reservation effect). The same operation with the same content returns
// the stored request; other content is ErrRequestConflict.
func (c Commands) Request(ctx context.Context, requester string, in RequestInput) (*Chain, error) {
	return db.WithTxV(ctx, c.Pool, func(ctx context.Context, tx pgx.Tx) (*Chain, error) {
		if stored, err := chainByOperation(ctx, tx, in.OperationID); err == nil {
			r := stored.Request
			if r.Case.ReconciliationCaseRef != in.CaseRef || r.RequesterWorkforcePrincipalID != requester ||
				r.Justification != in.Justification || !reconciliation.EvidenceEqual(r.Evidence, sorted(in.Evidence)) {
				return nil, fmt.Errorf("%w: %s", ErrRequestConflict, in.OperationID)
			}
			return stored, nil
		} else if !errors.Is(err, ErrRequestNotFound) {
			return nil, err
		}
		kase, err := openCase(ctx, tx, in.CaseRef)
		if err != nil {
			return nil, err
		}
		now := c.now()
		ch := &Chain{Request: &reconciliation.CommandRequest{CommandRequestOperationID: in.OperationID, Case: kase,
			RequesterWorkforcePrincipalID: requester, Evidence: sorted(in.Evidence), Justification: in.Justification, RequestedAt: now}}
		body, err := reconciliation.SealAddressed(ch.Request, "frcr-")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", reconciliation.ErrInvalidObject, err)
		}
		ch.Preview = &reconciliation.ImpactPreview{CommandRequest: ch.Request.Request, PreviewedAt: now}
		preview, err := reconciliation.SealAddressed(ch.Preview, "acip-")
		if err != nil {
			return nil, err
		}
		_, err = tx.Exec(ctx, `INSERT INTO operations.resolution_command_requests (command_request_operation_id, request_ref,
			    request_digest, reconciliation_case_ref, reconciliation_generation, requester_workforce_principal_id, request_body,
			    preview_ref, preview_digest, preview_body, requested_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			in.OperationID, ch.Request.Request.Ref, ch.Request.Request.Digest, kase.ReconciliationCaseRef, kase.ReconciliationGeneration,
			requester, string(body), ch.Preview.Preview.Ref, ch.Preview.Preview.Digest, string(preview), now)
		if err != nil {
			return nil, fmt.Errorf("store request: %w", err)
		}
		return ch, nil
	})
}

// Approve records approver's AdminCommandApproval@1 of the request. The
// requester cannot approve (reconciliation.ErrSelfApproval; PostgreSQL
// refuses it too, OP007). The same approver again gets the stored
// approval; another is ErrAlreadyApproved.
func (c Commands) Approve(ctx context.Context, approver, requestRef string) (*Chain, error) {
	return db.WithTxV(ctx, c.Pool, func(ctx context.Context, tx pgx.Tx) (*Chain, error) {
		ch, err := chainByRef(ctx, tx, requestRef)
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
		if _, err := openCase(ctx, tx, ch.Request.Case.ReconciliationCaseRef); err != nil {
			return nil, err
		}
		ch.Approval = &reconciliation.Approval{CommandRequest: ch.Request.Request, ImpactPreview: ch.Preview.Preview,
			RequesterWorkforcePrincipalID: ch.Request.RequesterWorkforcePrincipalID, ApproverWorkforcePrincipalID: approver, ApprovedAt: c.now()}
		body, err := reconciliation.SealAddressed(ch.Approval, "acap-")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", reconciliation.ErrInvalidObject, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO operations.resolution_command_approvals (request_ref, approval_ref, approval_digest,
			    approver_workforce_principal_id, approval_body, approved_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			requestRef, ch.Approval.Approval.Ref, ch.Approval.Approval.Digest, approver, string(body), ch.Approval.ApprovedAt); err != nil {
			return nil, fmt.Errorf("store approval: %w", err)
		}
		return ch, nil
	})
}

// Decide is the requester running their approved request: a JIT activation
// of JITWindow, the AdminCommandCandidate@1 bound to the gateway workload
// and the Operations FinalizationReconciliationResolutionDecision@1, stored
// together, one per case generation. Called again, it returns the stored
// chain (whose JIT may have expired since: Core then refuses the grant).
func (c Commands) Decide(ctx context.Context, actor, requestRef string) (*Chain, error) {
	return db.WithTxV(ctx, c.Pool, func(ctx context.Context, tx pgx.Tx) (*Chain, error) {
		ch, err := chainByRef(ctx, tx, requestRef)
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
		kase, err := openCase(ctx, tx, ch.Request.Case.ReconciliationCaseRef)
		if err != nil {
			return nil, err
		}
		if kase != ch.Request.Case {
			return nil, fmt.Errorf("%w: the case moved to another generation", ErrCaseNotOpen)
		}
		now := c.now()
		ch.JIT = &reconciliation.JitActivation{ActorWorkforcePrincipalID: actor, CommandRequest: ch.Request.Request,
			NotBefore: now, ExpiresAt: now.Add(JITWindow), ActivatedAt: now}
		jit, err := reconciliation.SealAddressed(ch.JIT, "acja-")
		if err != nil {
			return nil, err
		}
		ch.Candidate = &reconciliation.Candidate{CommandRequest: ch.Request.Request, ImpactPreview: ch.Preview.Preview,
			Approval: ch.Approval.Approval, JitActivation: ch.JIT.Activation, ActorWorkforcePrincipalID: actor,
			BoundWorkload: c.Workload, Case: kase, Evidence: ch.Request.Evidence, CreatedAt: now}
		cand, err := reconciliation.SealAddressed(ch.Candidate, "acc-")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", reconciliation.ErrInvalidObject, err)
		}
		ch.Decision = &reconciliation.Decision{Candidate: ch.Candidate.Candidate, CommandRequest: ch.Request.Request, Case: kase,
			ActorWorkforcePrincipalID: actor, Evidence: ch.Request.Evidence, DecidedAt: now}
		dec, err := reconciliation.SealAddressed(ch.Decision, "frcd-")
		if err != nil {
			return nil, err
		}
		if err := reconciliation.CheckChain(ch.Request, ch.Preview, ch.Approval, ch.JIT, ch.Candidate, ch.Decision, now); err != nil {
			return nil, err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO operations.resolution_decisions (request_ref, reconciliation_case_ref,
			    reconciliation_generation, actor_workforce_principal_id, jit_ref, jit_digest, jit_body, candidate_ref, candidate_digest,
			    candidate_body, decision_ref, decision_digest, decision_body, decided_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (reconciliation_case_ref) DO NOTHING`,
			requestRef, kase.ReconciliationCaseRef, kase.ReconciliationGeneration, actor, ch.JIT.Activation.Ref, ch.JIT.Activation.Digest, string(jit),
			ch.Candidate.Candidate.Ref, ch.Candidate.Candidate.Digest, string(cand), ch.Decision.Decision.Ref,
			ch.Decision.Decision.Digest, string(dec), now)
		if err != nil {
			return nil, fmt.Errorf("store decision: %w", err)
		}
		if tag.RowsAffected() != 1 {
			return nil, fmt.Errorf("%w: %s", ErrCaseDecided, kase.ReconciliationCaseRef)
		}
		return ch, nil
	})
}

// ReadFinalizationResolutionDecision implements
// operationsread.ResolutionDecisions for Core's grant issuer.
func (c Commands) ReadFinalizationResolutionDecision(ctx context.Context, req operationsread.ResolutionDecisionRead) (ownerread.Answer, error) {
	if req.Decision.Validate() != nil || req.Candidate.Validate() != nil || req.CaseRef == "" || req.Generation < 1 {
		return "", fmt.Errorf("%w: the decision read needs both quadruples and the case generation", ownerread.ErrInvalidRequest)
	}
	return db.WithTxV(ctx, c.Pool, func(ctx context.Context, tx pgx.Tx) (ownerread.Answer, error) {
		var decision, candidate string
		var generation int64
		err := tx.QueryRow(ctx, `SELECT decision_body, candidate_body, reconciliation_generation FROM operations.resolution_decisions
			WHERE reconciliation_case_ref = $1`, req.CaseRef).Scan(&decision, &candidate, &generation)
		if errors.Is(err, pgx.ErrNoRows) {
			return ownerread.NotFound, nil
		}
		if err != nil {
			return "", fmt.Errorf("read decision: %w", err)
		}
		d, err := reconciliation.DecodeDecision([]byte(decision))
		if err != nil {
			return ownerread.Conflicting, nil
		}
		cand, err := reconciliation.DecodeCandidate([]byte(candidate))
		if err != nil {
			return ownerread.Conflicting, nil
		}
		if d.Decision != req.Decision || cand.Candidate != req.Candidate || generation != req.Generation {
			return ownerread.Conflicting, nil
		}
		if _, err := openCase(ctx, tx, req.CaseRef); errors.Is(err, ErrCaseNotOpen) {
			return ownerread.Conflicting, nil
		} else if err != nil {
			return "", err
		}
		return ownerread.Found, nil
	})
}

// openCase reads the open case with ref in the active projection.
func openCase(ctx context.Context, tx pgx.Tx, ref string) (reconciliation.Case, error) {
	var k reconciliation.Case
	var q [4]string
	err := tx.QueryRow(ctx, `SELECT c.reconciliation_case_ref, c.reconciliation_generation, c.case_identity_ref,
		    c.case_identity_schema_version, c.case_identity_digest_algorithm_version, c.case_identity_digest,
		    c.billing_account_id, c.billing_reservation_id, c.run_id, c.billing_finalization_fence_id
		  FROM operations.finalization_cases c
		  JOIN outbox.active_projections p ON p.projection_name = c.projection_name AND p.projection_version = c.projection_version
		 WHERE c.reconciliation_case_ref = $1 AND c.state = 'open'`, ref).Scan(&k.ReconciliationCaseRef, &k.ReconciliationGeneration,
		&q[0], &q[1], &q[2], &q[3], &k.BillingAccountID, &k.BillingReservationID, &k.RunID, &k.FenceID)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, fmt.Errorf("%w: %s", ErrCaseNotOpen, ref)
	}
	if err != nil {
		return k, fmt.Errorf("read case %s: %w", ref, err)
	}
	k.Identity = strict.Quadruple{Ref: q[0], SchemaVersion: q[1], DigestAlgorithmVersion: digest.Algorithm(q[2]), Digest: q[3]}
	return k, nil
}

const qChain = `SELECT r.request_body, r.preview_body, a.approval_body, d.jit_body, d.candidate_body, d.decision_body
  FROM operations.resolution_command_requests r
  LEFT JOIN operations.resolution_command_approvals a ON a.request_ref = r.request_ref
  LEFT JOIN operations.resolution_decisions d ON d.request_ref = r.request_ref
 WHERE `

func chainByRef(ctx context.Context, tx pgx.Tx, ref string) (*Chain, error) {
	return scanChain(tx.QueryRow(ctx, qChain+"r.request_ref = $1", ref), ref)
}

func chainByOperation(ctx context.Context, tx pgx.Tx, op string) (*Chain, error) {
	return scanChain(tx.QueryRow(ctx, qChain+"r.command_request_operation_id = $1", op), op)
}

// ChainTx reads a request's chain in the caller's transaction.
func ChainTx(ctx context.Context, tx pgx.Tx, requestRef string) (*Chain, error) {
	return chainByRef(ctx, tx, requestRef)
}

func scanChain(row pgx.Row, key string) (*Chain, error) {
	var req, preview string
	var approval, jit, cand, dec *string
	if err := row.Scan(&req, &preview, &approval, &jit, &cand, &dec); errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrRequestNotFound, key)
	} else if err != nil {
		return nil, fmt.Errorf("read request %s: %w", key, err)
	}
	ch := &Chain{}
	var err error
	decode := func(body *string, f func([]byte) error) {
		if err == nil && body != nil {
			err = f([]byte(*body))
		}
	}
	decode(&req, func(b []byte) (e error) { ch.Request, e = reconciliation.DecodeCommandRequest(b); return })
	decode(&preview, func(b []byte) (e error) { ch.Preview, e = reconciliation.DecodeImpactPreview(b); return })
	decode(approval, func(b []byte) (e error) { ch.Approval, e = reconciliation.DecodeApproval(b); return })
	decode(jit, func(b []byte) (e error) { ch.JIT, e = reconciliation.DecodeJitActivation(b); return })
	decode(cand, func(b []byte) (e error) { ch.Candidate, e = reconciliation.DecodeCandidate(b); return })
	decode(dec, func(b []byte) (e error) { ch.Decision, e = reconciliation.DecodeDecision(b); return })
	if err != nil {
		return nil, fmt.Errorf("stored chain of %s: %w", key, err)
	}
	return ch, nil
}

func sorted(refs []reconciliation.EvidenceReference) []reconciliation.EvidenceReference {
	out := append([]reconciliation.EvidenceReference(nil), refs...)
	reconciliation.SortEvidence(out)
	return out
}

func (c Commands) now() time.Time {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	return now().UTC().Truncate(time.Microsecond)
}
