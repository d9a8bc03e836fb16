package projector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/operations/projector/dbsqlc"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

// Projection effects of the two Finalization reconciliation pairs
// (projected_events.projection_effect).
const (
	// EffectCaseOpened: the request materialised its case, open.
	EffectCaseOpened = "finalization_case_opened"
	// EffectCaseMaterializedResolved: the request materialised its case
	// closed at once by its waiting verified resolution.
	EffectCaseMaterializedResolved = "finalization_case_materialized_resolved"
	// EffectCaseSuccessorPending: the request waits as a pending successor
	// (its direct predecessor is not closed yet).
	EffectCaseSuccessorPending = "finalization_case_successor_pending"
	// EffectCaseResolved: the resolution closed its open case.
	EffectCaseResolved = "finalization_case_resolved"
	// EffectCaseResolutionPending: the resolution waits for its request.
	EffectCaseResolutionPending = "finalization_case_resolution_pending"
)

// Finalization case states (operations.finalization_cases.state).
const (
	CaseOpen     = "open"
	CaseResolved = "resolved"
)

// SQLStateCaseTransition: the database refused a finalization case or
// pending case row moving other than forward (migration 00009).
const SQLStateCaseTransition = "OP006"

// Error codes of the two pairs.
const (
	// CodeCaseIdentityConflict: the event disagrees with the case identity
	// Operations reserved (or names one it never reserved).
	CodeCaseIdentityConflict = "finalization_case_identity_conflict"
	// CodeCaseConflict: the event disagrees with the projected cases of its
	// fence (another identity for the generation, a case closed twice).
	CodeCaseConflict = "finalization_case_conflict"
)

// Typed reasons of the two pairs.
var (
	ErrCaseIdentityConflict = errors.New("projector: event disagrees with the reserved finalization case identity")
	ErrCaseConflict         = errors.New("projector: event disagrees with the projected finalization cases of its fence")
)

// casePredecessor is the direct predecessor a later case generation names.
type casePredecessor struct {
	CaseRef    string
	Generation int64
	Identity   strict.Quadruple
}

// caseRequest is a case-requested event, or the pending successor frozen
// from one: everything the case row needs.
type caseRequest struct {
	EventID                 string
	EnvelopeDigest          digest.Digest
	RequestedAt             time.Time
	FenceID, CaseRef        string
	Generation              int64
	Identity                strict.Quadruple
	CaseRequestOperationID  string
	Predecessor             *casePredecessor
	ReservationID           string
	AccountID, RunID        string
	Tenant                  tenant
	Decision, Work          strict.Quadruple
	WorkGeneration          int64
	FinalizationOperationID string
	ReasonCode              string
}

// caseResolution is a resolution-applied event, or the pending resolution
// frozen from one.
type caseResolution struct {
	EventID          string
	EnvelopeDigest   digest.Digest
	ResolvedAt       time.Time
	FenceID, CaseRef string
	Generation       int64
	Identity         strict.Quadruple
	ReservationID    string
	AccountID, RunID string
	OperationID      string
	Applied          strict.Quadruple
	Actor            string
}

func caseRequestFrom(e *envelope.Envelope, d digest.Digest) caseRequest {
	p := mustPayload(envelope.PayloadOf[envelope.BillingFinalizationReconciliationCaseRequestedV1Payload](e))
	r := caseRequest{
		EventID: e.EventID, EnvelopeDigest: d, RequestedAt: e.OccurredAt,
		FenceID: p.BillingFinalizationFenceID, CaseRef: p.ReconciliationCaseRef, Generation: p.ReconciliationGeneration,
		Identity: p.FinalizationCaseIdentityReservation(), CaseRequestOperationID: p.CaseRequestOperationID,
		ReservationID: p.BillingReservationID, AccountID: p.BillingAccountID, RunID: p.RunID, Tenant: tenantOf(e),
		Decision: p.BillingFinalizationDecision(), Work: p.TriggeringBillingFinalizationWork(),
		WorkGeneration: p.TriggeringBillingFinalizationWorkGeneration, FinalizationOperationID: p.BillingFinalizationOperationID,
		ReasonCode: p.ReconciliationReasonCode,
	}
	if pc := p.PredecessorCase; pc.State == "present" {
		r.Predecessor = &casePredecessor{CaseRef: pc.PredecessorReconciliationCaseRef, Generation: pc.PredecessorReconciliationGeneration,
			Identity: pc.PredecessorFinalizationCaseIdentityReservation()}
	}
	return r
}

func caseResolutionFrom(e *envelope.Envelope, d digest.Digest) caseResolution {
	p := mustPayload(envelope.PayloadOf[envelope.BillingFinalizationReconciliationResolutionAppliedV1Payload](e))
	return caseResolution{
		EventID: e.EventID, EnvelopeDigest: d, ResolvedAt: e.OccurredAt,
		FenceID: p.BillingFinalizationFenceID, CaseRef: p.ReconciliationCaseRef, Generation: p.ReconciliationGeneration,
		Identity: p.FinalizationCaseIdentityReservation(), ReservationID: p.BillingReservationID,
		AccountID: p.BillingAccountID, RunID: p.RunID, OperationID: p.ResolutionOperationID,
		Applied: p.FinalizationReconciliationResolutionApplied(), Actor: p.ActorWorkforcePrincipalID,
	}
}

// reservedIdentity reads the case identity Operations reserved for the
// case request operation. None reserved is a conflict: Billing reserves
// before it can decide, so an event without one names an identity
// Operations never allocated.
func reservedIdentity(ctx context.Context, tx pgx.Tx, caseRequestOperationID, eventID string) (*reconciliation.CaseIdentityReservation, error) {
	id, err := cases.IdentityByCaseRequestTx(ctx, tx, caseRequestOperationID)
	if errors.Is(err, cases.ErrIdentityNotReserved) {
		return nil, transport.NonRetryable(CodeCaseIdentityConflict, fmt.Errorf("%w: event %s: %w", ErrCaseIdentityConflict, eventID, err))
	}
	return id, err
}

// identityMismatches lists what of an event differs from the reserved
// identity (the exact quadruple, case ref, generation, fence, reservation,
// run, account and tenant).
func identityMismatches(id *reconciliation.CaseIdentityReservation, quad strict.Quadruple, caseRef string, generation int64,
	fenceID, reservationID, accountID, runID string, t tenant) []string {
	var bad []string
	check := func(name string, ok bool) {
		if !ok {
			bad = append(bad, name)
		}
	}
	check("finalizationCaseIdentityReservation", id.Reservation == quad)
	check("reconciliationCaseRef", id.ReconciliationCaseRef == caseRef)
	check("reconciliationGeneration", id.ReconciliationGeneration == generation)
	check("billingFinalizationFenceId", id.FenceID == fenceID)
	check("billingReservationId", id.BillingReservationID == reservationID)
	check("billingAccountId", id.BillingAccountID == accountID)
	check("runId", id.RunID == runID)
	check("tenant", id.Tenant.Kind == t.Kind && id.Tenant.TenantID == t.ID && id.Tenant.WorkspaceID == t.WorkspaceID &&
		id.Tenant.ProjectID == t.ProjectID)
	return bad
}

func identityConflict(eventID string, id *reconciliation.CaseIdentityReservation, bad []string) error {
	return transport.NonRetryable(CodeCaseIdentityConflict, fmt.Errorf("%w: event %s and identity %s differ in %s",
		ErrCaseIdentityConflict, eventID, id.Reservation.Ref, strings.Join(bad, ", ")))
}

// verifyCaseRequest verifies a case-requested event before any projection
// lock (ADR-031: the local identity first, then the event-bound Billing
// read readBillingFinalizationDecisionForOperations). A mismatch with the
// identity is non_retryable; the Billing read is classified like every
// owner read (CON-2).
func (p *Projector) verifyCaseRequest(ctx context.Context, tx pgx.Tx, r caseRequest) error {
	id, err := reservedIdentity(ctx, tx, r.CaseRequestOperationID, r.EventID)
	if err != nil {
		return err
	}
	bad := identityMismatches(id, r.Identity, r.CaseRef, r.Generation, r.FenceID, r.ReservationID, r.AccountID, r.RunID, r.Tenant)
	if id.CaseRequestOperationID != r.CaseRequestOperationID {
		bad = append(bad, "caseRequestOperationId")
	}
	switch ip, rp := id.Predecessor, r.Predecessor; {
	case (ip == nil) != (rp == nil):
		bad = append(bad, "predecessorCase")
	case ip != nil && (ip.ReconciliationCaseRef != rp.CaseRef || ip.ReconciliationGeneration != rp.Generation || ip.Identity != rp.Identity):
		bad = append(bad, "predecessorCase")
	}
	// guard OP-1.case-request-identity-mismatch
	if len(bad) > 0 {
		return identityConflict(r.EventID, id, bad)
	}
	if p.cfg.FinalizationDecisionReads == nil {
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: readBillingFinalizationDecisionForOperations is not wired", ErrOwnerRead))
	}
	req := coreread.FinalizationDecisionForOperationsRead{
		EventID: r.EventID, EventEnvelopeDigest: r.EnvelopeDigest, BillingReservationID: r.ReservationID,
		BillingAccountID: r.AccountID, RunID: r.RunID, FenceID: r.FenceID, CaseRef: r.CaseRef, Generation: r.Generation,
		CaseRequestOperationID: r.CaseRequestOperationID, CaseIdentity: r.Identity, Decision: r.Decision,
		TriggeringWork: r.Work, TriggeringWorkGeneration: r.WorkGeneration, FinalizationOperationID: r.FinalizationOperationID,
		ReasonCode: r.ReasonCode,
	}
	if r.Predecessor != nil {
		req.PredecessorGeneration = r.Predecessor.Generation
	}
	ans, err := p.cfg.FinalizationDecisionReads.ReadBillingFinalizationDecisionForOperations(ctx, req)
	return ownerAnswer(ans, err, "readBillingFinalizationDecisionForOperations", "case request "+r.CaseRef, r.EventID)
}

// verifyCaseResolution verifies a resolution-applied event before any
// projection lock: the local identity of its generation, then the
// event-bound Billing read
// readFinalizationReconciliationResolutionAppliedForOperations.
func (p *Projector) verifyCaseResolution(ctx context.Context, tx pgx.Tx, r caseResolution, t tenant) error {
	id, err := reservedIdentity(ctx, tx, reconciliation.CaseRequestOperationID(r.FenceID, r.Generation), r.EventID)
	if err != nil {
		return err
	}
	// guard OP-1.case-resolution-identity-mismatch
	if bad := identityMismatches(id, r.Identity, r.CaseRef, r.Generation, r.FenceID, r.ReservationID, r.AccountID, r.RunID, t); len(bad) > 0 {
		return identityConflict(r.EventID, id, bad)
	}
	if p.cfg.ResolutionAppliedReads == nil {
		return transport.Retryable(CodeOwnerReadUnavailable,
			fmt.Errorf("%w: readFinalizationReconciliationResolutionAppliedForOperations is not wired", ErrOwnerRead))
	}
	ans, err := p.cfg.ResolutionAppliedReads.ReadFinalizationReconciliationResolutionAppliedForOperations(ctx, coreread.ResolutionAppliedForOperationsRead{
		EventID: r.EventID, EventEnvelopeDigest: r.EnvelopeDigest, BillingReservationID: r.ReservationID,
		BillingAccountID: r.AccountID, RunID: r.RunID, FenceID: r.FenceID, CaseRef: r.CaseRef, Generation: r.Generation,
		ResolutionRevision: 1, ResolutionOperationID: r.OperationID, CaseIdentity: r.Identity, Applied: r.Applied, Actor: r.Actor,
	})
	return ownerAnswer(ans, err, "readFinalizationReconciliationResolutionAppliedForOperations", "resolution "+r.Applied.Ref, r.EventID)
}

// ownerAnswer classifies an owner read's answer (CON-2): an error or
// not_found is retryable with nothing written, conflicting non_retryable.
func ownerAnswer(ans OwnerAnswer, err error, read, fact, eventID string) error {
	switch {
	case err != nil:
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: %s: %w", ErrOwnerRead, read, err))
	case ans == OwnerFound:
		return nil
	case ans == OwnerNotFound:
		return transport.Retryable(CodeOwnerFactNotReadable, fmt.Errorf("%w: %s: %s not readable yet", ErrOwnerRead, read, fact))
	case ans == OwnerConflicting:
		return transport.NonRetryable(CodeOwnerFactConflicting, fmt.Errorf("%w: %s: %s conflicts with event %s", ErrOwnerRead, read, fact, eventID))
	default:
		return transport.Retryable(CodeOwnerReadUnavailable, fmt.Errorf("%w: %s: unknown answer %q", ErrOwnerRead, read, ans))
	}
}

// fenceCases is what one projection holds of a fence's cases, read under
// the fence's case lock.
type fenceCases struct {
	cases       map[int64]dbsqlc.FinalizationCasesByFenceRow
	resolutions map[int64]dbsqlc.OperationsPendingFinalizationCaseResolution
	successors  map[int64]dbsqlc.OperationsPendingFinalizationCaseSuccessor
}

// lockFenceCases takes the fence's case lock (a transaction-scoped
// advisory lock per projection and fence, taken after the event's own
// aggregate lock by both pairs) and reads the fence's cases and pending
// rows. Both pairs of one fence serialise on it, so a resolution and a
// successor request delivered concurrently from two sessions see each
// other's commit: never two open cases, never an unwoken pending row.
func lockFenceCases(ctx context.Context, tx pgx.Tx, t route.ProjectionTarget, fenceID string) (fenceCases, error) {
	key := fmt.Sprintf("operations|finalization-case|%s|%d|%s", t.Name, t.Version, fenceID)
	if _, err := tx.Exec(ctx, qLinkLock, pgx.NamedArgs{"keys": []string{key}}); err != nil {
		return fenceCases{}, fmt.Errorf("lock finalization cases of fence %s: %w", fenceID, err)
	}
	f := fenceCases{cases: map[int64]dbsqlc.FinalizationCasesByFenceRow{},
		resolutions: map[int64]dbsqlc.OperationsPendingFinalizationCaseResolution{},
		successors:  map[int64]dbsqlc.OperationsPendingFinalizationCaseSuccessor{}}
	cs, err := queries.FinalizationCasesByFence(ctx, tx, dbsqlc.FinalizationCasesByFenceParams{
		BillingFinalizationFenceID: fenceID, ProjectionName: t.Name, ProjectionVersion: t.Version})
	if err != nil {
		return fenceCases{}, fmt.Errorf("read finalization cases: %w", err)
	}
	for _, c := range cs {
		f.cases[c.ReconciliationGeneration] = c
	}
	rs, err := queries.PendingCaseResolutionsByFence(ctx, tx, dbsqlc.PendingCaseResolutionsByFenceParams{
		BillingFinalizationFenceID: fenceID, ProjectionName: t.Name, ProjectionVersion: t.Version})
	if err != nil {
		return fenceCases{}, fmt.Errorf("read pending case resolutions: %w", err)
	}
	for _, r := range rs {
		f.resolutions[r.ReconciliationGeneration] = r
	}
	ss, err := queries.PendingCaseSuccessorsByFence(ctx, tx, dbsqlc.PendingCaseSuccessorsByFenceParams{
		BillingFinalizationFenceID: fenceID, ProjectionName: t.Name, ProjectionVersion: t.Version})
	if err != nil {
		return fenceCases{}, fmt.Errorf("read pending case successors: %w", err)
	}
	for _, s := range ss {
		f.successors[s.ReconciliationGeneration] = s
	}
	return f, nil
}

func caseQuad(ref, version, alg, d string) strict.Quadruple {
	return strict.Quadruple{Ref: ref, SchemaVersion: version, DigestAlgorithmVersion: digest.Algorithm(alg), Digest: d}
}

func caseConflict(format string, args ...any) error {
	return transport.NonRetryable(CodeCaseConflict, fmt.Errorf("%w: %s", ErrCaseConflict, fmt.Sprintf(format, args...)))
}

// caseMutation is the log and index entry of a case event.
func caseMutation(effect, eventID, runID, reservationID string) mutation {
	return mutation{effect: effect, runID: runID, reservationID: reservationID, index: []indexEntry{{IDEventID, eventID}}}
}

// applyCaseRequest projects a verified case-requested event (its own
// aggregate already at revision 1 under lock): the case is materialised
// when it is the first generation or its direct predecessor is closed,
// else the request waits as a pending successor. A materialised case that
// is closed at once (its resolution was waiting) wakes the chain after it.
func applyCaseRequest(ctx context.Context, tx pgx.Tx, ev *inbox.Event, r caseRequest) (mutation, error) {
	t := ev.Key.Projection
	f, err := lockFenceCases(ctx, tx, t, r.FenceID)
	if err != nil {
		return mutation{}, err
	}
	if _, ok := f.cases[r.Generation]; ok {
		return mutation{}, caseConflict("fence %s generation %d already has its case", r.FenceID, r.Generation)
	}
	if _, ok := f.successors[r.Generation]; ok {
		return mutation{}, caseConflict("fence %s generation %d already waits as a pending successor", r.FenceID, r.Generation)
	}
	if r.Generation > 1 {
		pred, ok := f.cases[r.Generation-1]
		if ok && caseQuad(pred.CaseIdentityRef, pred.CaseIdentitySchemaVersion, pred.CaseIdentityDigestAlgorithmVersion, pred.CaseIdentityDigest) != r.Predecessor.Identity {
			return mutation{}, caseConflict("case %s names predecessor identity %s, the projected generation %d is %s",
				r.CaseRef, r.Predecessor.Identity.Ref, r.Generation-1, pred.CaseIdentityRef)
		}
		if !ok || pred.State != CaseResolved {
			if err := insertPendingSuccessor(ctx, tx, ev, r); err != nil {
				return mutation{}, err
			}
			return caseMutation(EffectCaseSuccessorPending, r.EventID, r.RunID, r.ReservationID), nil
		}
	}
	resolved, err := materializeCase(ctx, tx, ev, f, r)
	if err != nil {
		return mutation{}, err
	}
	effect := EffectCaseOpened
	if resolved {
		effect = EffectCaseMaterializedResolved
		if err := consumeSuccessorChain(ctx, tx, ev, f, r.Generation+1); err != nil {
			return mutation{}, err
		}
	}
	return caseMutation(effect, r.EventID, r.RunID, r.ReservationID), nil
}

// applyCaseResolution projects a verified resolution-applied event: it
// closes its open case and wakes the chain after it, or waits as a pending
// resolution until its request is materialised.
func applyCaseResolution(ctx context.Context, tx pgx.Tx, ev *inbox.Event, r caseResolution) (mutation, error) {
	t := ev.Key.Projection
	f, err := lockFenceCases(ctx, tx, t, r.FenceID)
	if err != nil {
		return mutation{}, err
	}
	if _, ok := f.resolutions[r.Generation]; ok {
		return mutation{}, caseConflict("fence %s generation %d already has a waiting resolution", r.FenceID, r.Generation)
	}
	c, ok := f.cases[r.Generation]
	if !ok {
		err := queries.PendingCaseResolutionInsert(ctx, tx, dbsqlc.PendingCaseResolutionInsertParams{
			ReconciliationCaseRef: r.CaseRef, ProjectionName: t.Name, ProjectionVersion: t.Version,
			BillingFinalizationFenceID: r.FenceID, ReconciliationGeneration: r.Generation, CaseIdentityRef: r.Identity.Ref,
			CaseIdentitySchemaVersion: r.Identity.SchemaVersion, CaseIdentityDigestAlgorithmVersion: string(r.Identity.DigestAlgorithmVersion),
			CaseIdentityDigest: r.Identity.Digest, BillingReservationID: r.ReservationID, BillingAccountID: r.AccountID, RunID: r.RunID,
			ResolutionEventID: r.EventID, ResolutionEventEnvelopeDigestAlgorithmVersion: string(r.EnvelopeDigest.Algorithm),
			ResolutionEventEnvelopeSha256: r.EnvelopeDigest.Value, ResolutionOperationID: r.OperationID,
			ResolutionAppliedRef: r.Applied.Ref, ResolutionAppliedSchemaVersion: r.Applied.SchemaVersion,
			ResolutionAppliedDigestAlgorithmVersion: string(r.Applied.DigestAlgorithmVersion), ResolutionAppliedDigest: r.Applied.Digest,
			ResolutionActorWorkforcePrincipalID: r.Actor, ResolvedAt: r.ResolvedAt, Now: ev.Now,
		})
		if err != nil {
			return mutation{}, fmt.Errorf("insert pending case resolution: %w", err)
		}
		return caseMutation(EffectCaseResolutionPending, r.EventID, r.RunID, r.ReservationID), nil
	}
	if q := caseQuad(c.CaseIdentityRef, c.CaseIdentitySchemaVersion, c.CaseIdentityDigestAlgorithmVersion, c.CaseIdentityDigest); q != r.Identity || c.ReconciliationCaseRef != r.CaseRef {
		return mutation{}, caseConflict("resolution %s names case %s (%s), the projected generation %d is %s (%s)",
			r.Applied.Ref, r.CaseRef, r.Identity.Ref, r.Generation, c.ReconciliationCaseRef, c.CaseIdentityRef)
	}
	if c.State != CaseOpen {
		return mutation{}, caseConflict("case %s is %s already", c.ReconciliationCaseRef, c.State)
	}
	n, err := queries.FinalizationCaseResolve(ctx, tx, resolveParams(t, r, ev.Now))
	if err != nil {
		return mutation{}, fmt.Errorf("resolve finalization case: %w", err)
	}
	if n != 1 {
		return mutation{}, errors.New("projector: resolve finalization case: case changed under its lock")
	}
	f.cases[r.Generation] = withState(c, CaseResolved)
	if err := consumeSuccessorChain(ctx, tx, ev, f, r.Generation+1); err != nil {
		return mutation{}, err
	}
	return caseMutation(EffectCaseResolved, r.EventID, r.RunID, r.ReservationID), nil
}

func withState(c dbsqlc.FinalizationCasesByFenceRow, state string) dbsqlc.FinalizationCasesByFenceRow {
	c.State = state
	return c
}

func resolveParams(t route.ProjectionTarget, r caseResolution, now time.Time) dbsqlc.FinalizationCaseResolveParams {
	return dbsqlc.FinalizationCaseResolveParams{
		ResolutionEventID: r.EventID, ResolutionEventEnvelopeDigestAlgorithmVersion: string(r.EnvelopeDigest.Algorithm),
		ResolutionEventEnvelopeSha256: r.EnvelopeDigest.Value, ResolutionOperationID: r.OperationID,
		ResolutionAppliedRef: r.Applied.Ref, ResolutionAppliedSchemaVersion: r.Applied.SchemaVersion,
		ResolutionAppliedDigestAlgorithmVersion: string(r.Applied.DigestAlgorithmVersion), ResolutionAppliedDigest: r.Applied.Digest,
		ResolutionActorWorkforcePrincipalID: r.Actor, ResolvedAt: r.ResolvedAt, Now: now,
		ReconciliationCaseRef: r.CaseRef, ProjectionName: t.Name, ProjectionVersion: t.Version,
	}
}

// consumeSuccessorChain materialises, in the transaction of the event that
// closed generation next-1, the maximal contiguous chain of verified
// pending successors from generation next: each one's case is created
// (closed at once when its resolution was waiting too) and its pending
// row marked materialized, until a case stays open or no successor waits.
func consumeSuccessorChain(ctx context.Context, tx pgx.Tx, ev *inbox.Event, f fenceCases, next int64) error {
	t := ev.Key.Projection
	for ; ; next++ {
		s, ok := f.successors[next]
		if !ok {
			return nil
		}
		r := requestOfSuccessor(s)
		pred := f.cases[next-1]
		if caseQuad(pred.CaseIdentityRef, pred.CaseIdentitySchemaVersion, pred.CaseIdentityDigestAlgorithmVersion, pred.CaseIdentityDigest) != r.Predecessor.Identity {
			return caseConflict("pending successor %s names predecessor identity %s, the projected generation %d is %s",
				r.CaseRef, r.Predecessor.Identity.Ref, next-1, pred.CaseIdentityRef)
		}
		resolved, err := materializeCase(ctx, tx, ev, f, r)
		if err != nil {
			return err
		}
		n, err := queries.PendingCaseSuccessorMaterialize(ctx, tx, dbsqlc.PendingCaseSuccessorMaterializeParams{
			Now: ev.Now, MaterializedByEventID: ev.Envelope.EventID, ReconciliationCaseRef: s.ReconciliationCaseRef,
			ProjectionName: t.Name, ProjectionVersion: t.Version,
		})
		if err != nil {
			return fmt.Errorf("mark pending case successor materialized: %w", err)
		}
		if n != 1 {
			return errors.New("projector: mark pending case successor materialized: row changed under its lock")
		}
		if !resolved {
			return nil
		}
	}
}

// materializeCase inserts the case of a verified request whose predecessor
// (if any) is closed: resolved at once with its waiting verified resolution
// (consumed in the same statement set), else open. It reports whether the
// case is resolved.
func materializeCase(ctx context.Context, tx pgx.Tx, ev *inbox.Event, f fenceCases, r caseRequest) (bool, error) {
	t := ev.Key.Projection
	p := dbsqlc.FinalizationCaseInsertParams{
		ReconciliationCaseRef: r.CaseRef, ProjectionName: t.Name, ProjectionVersion: t.Version,
		BillingFinalizationFenceID: r.FenceID, ReconciliationGeneration: r.Generation, CaseIdentityRef: r.Identity.Ref,
		CaseIdentitySchemaVersion: r.Identity.SchemaVersion, CaseIdentityDigestAlgorithmVersion: string(r.Identity.DigestAlgorithmVersion),
		CaseIdentityDigest: r.Identity.Digest, CaseRequestOperationID: r.CaseRequestOperationID,
		BillingReservationID: r.ReservationID, BillingAccountID: r.AccountID, RunID: r.RunID,
		TenantKind: r.Tenant.Kind, TenantID: r.Tenant.ID, WorkspaceID: r.Tenant.WorkspaceID, ProjectID: nullable(r.Tenant.ProjectID),
		DecisionRef: r.Decision.Ref, DecisionSchemaVersion: r.Decision.SchemaVersion,
		DecisionDigestAlgorithmVersion: string(r.Decision.DigestAlgorithmVersion), DecisionDigest: r.Decision.Digest,
		TriggeringWorkRef: r.Work.Ref, TriggeringWorkSchemaVersion: r.Work.SchemaVersion,
		TriggeringWorkDigestAlgorithmVersion: string(r.Work.DigestAlgorithmVersion), TriggeringWorkDigest: r.Work.Digest,
		TriggeringWorkGeneration: r.WorkGeneration, BillingFinalizationOperationID: r.FinalizationOperationID,
		ReconciliationReasonCode: r.ReasonCode, RequestEventID: r.EventID,
		RequestEventEnvelopeDigestAlgorithmVersion: string(r.EnvelopeDigest.Algorithm), RequestEventEnvelopeSha256: r.EnvelopeDigest.Value,
		RequestedAt: r.RequestedAt, MaterializedByEventID: ev.Envelope.EventID, Now: ev.Now, State: CaseOpen,
	}
	if pr := r.Predecessor; pr != nil {
		alg := string(pr.Identity.DigestAlgorithmVersion)
		p.PredecessorReconciliationCaseRef, p.PredecessorGeneration = &pr.CaseRef, &pr.Generation
		p.PredecessorCaseIdentityRef, p.PredecessorCaseIdentitySchemaVersion = &pr.Identity.Ref, &pr.Identity.SchemaVersion
		p.PredecessorCaseIdentityDigestAlgorithmVersion, p.PredecessorCaseIdentityDigest = &alg, &pr.Identity.Digest
	}
	waiting, resolved := f.resolutions[r.Generation]
	if resolved {
		res := resolutionOfPending(waiting)
		if res.Identity != r.Identity || res.CaseRef != r.CaseRef {
			return false, caseConflict("waiting resolution %s names case %s (%s), the request is %s (%s)",
				res.Applied.Ref, res.CaseRef, res.Identity.Ref, r.CaseRef, r.Identity.Ref)
		}
		rp := resolveParams(t, res, ev.Now)
		p.State = CaseResolved
		p.ResolutionEventID, p.ResolutionEventEnvelopeDigestAlgorithmVersion = &rp.ResolutionEventID, &rp.ResolutionEventEnvelopeDigestAlgorithmVersion
		p.ResolutionEventEnvelopeSha256, p.ResolutionOperationID = &rp.ResolutionEventEnvelopeSha256, &rp.ResolutionOperationID
		p.ResolutionAppliedRef, p.ResolutionAppliedSchemaVersion = &rp.ResolutionAppliedRef, &rp.ResolutionAppliedSchemaVersion
		p.ResolutionAppliedDigestAlgorithmVersion, p.ResolutionAppliedDigest = &rp.ResolutionAppliedDigestAlgorithmVersion, &rp.ResolutionAppliedDigest
		p.ResolutionActorWorkforcePrincipalID, p.ResolvedAt, p.ClosedAt = &rp.ResolutionActorWorkforcePrincipalID, &rp.ResolvedAt, &rp.Now
	}
	if err := queries.FinalizationCaseInsert(ctx, tx, p); err != nil {
		return false, fmt.Errorf("insert finalization case: %w", err)
	}
	f.cases[r.Generation] = dbsqlc.FinalizationCasesByFenceRow{ReconciliationCaseRef: r.CaseRef, ReconciliationGeneration: r.Generation,
		CaseIdentityRef: r.Identity.Ref, CaseIdentitySchemaVersion: r.Identity.SchemaVersion,
		CaseIdentityDigestAlgorithmVersion: string(r.Identity.DigestAlgorithmVersion), CaseIdentityDigest: r.Identity.Digest, State: p.State}
	if !resolved {
		return false, nil
	}
	n, err := queries.PendingCaseResolutionConsume(ctx, tx, dbsqlc.PendingCaseResolutionConsumeParams{
		Now: ev.Now, ConsumedByEventID: ev.Envelope.EventID, ReconciliationCaseRef: waiting.ReconciliationCaseRef,
		ProjectionName: t.Name, ProjectionVersion: t.Version,
	})
	if err != nil {
		return false, fmt.Errorf("consume pending case resolution: %w", err)
	}
	if n != 1 {
		return false, errors.New("projector: consume pending case resolution: row changed under its lock")
	}
	delete(f.resolutions, r.Generation)
	return true, nil
}

func insertPendingSuccessor(ctx context.Context, tx pgx.Tx, ev *inbox.Event, r caseRequest) error {
	t, pr := ev.Key.Projection, r.Predecessor
	err := queries.PendingCaseSuccessorInsert(ctx, tx, dbsqlc.PendingCaseSuccessorInsertParams{
		ReconciliationCaseRef: r.CaseRef, ProjectionName: t.Name, ProjectionVersion: t.Version,
		BillingFinalizationFenceID: r.FenceID, ReconciliationGeneration: r.Generation, CaseIdentityRef: r.Identity.Ref,
		CaseIdentitySchemaVersion: r.Identity.SchemaVersion, CaseIdentityDigestAlgorithmVersion: string(r.Identity.DigestAlgorithmVersion),
		CaseIdentityDigest: r.Identity.Digest, CaseRequestOperationID: r.CaseRequestOperationID,
		PredecessorReconciliationCaseRef: pr.CaseRef, PredecessorGeneration: pr.Generation,
		PredecessorCaseIdentityRef: pr.Identity.Ref, PredecessorCaseIdentitySchemaVersion: pr.Identity.SchemaVersion,
		PredecessorCaseIdentityDigestAlgorithmVersion: string(pr.Identity.DigestAlgorithmVersion), PredecessorCaseIdentityDigest: pr.Identity.Digest,
		BillingReservationID: r.ReservationID, BillingAccountID: r.AccountID, RunID: r.RunID,
		TenantKind: r.Tenant.Kind, TenantID: r.Tenant.ID, WorkspaceID: r.Tenant.WorkspaceID, ProjectID: nullable(r.Tenant.ProjectID),
		DecisionRef: r.Decision.Ref, DecisionSchemaVersion: r.Decision.SchemaVersion,
		DecisionDigestAlgorithmVersion: string(r.Decision.DigestAlgorithmVersion), DecisionDigest: r.Decision.Digest,
		TriggeringWorkRef: r.Work.Ref, TriggeringWorkSchemaVersion: r.Work.SchemaVersion,
		TriggeringWorkDigestAlgorithmVersion: string(r.Work.DigestAlgorithmVersion), TriggeringWorkDigest: r.Work.Digest,
		TriggeringWorkGeneration: r.WorkGeneration, BillingFinalizationOperationID: r.FinalizationOperationID,
		ReconciliationReasonCode: r.ReasonCode, RequestEventID: r.EventID,
		RequestEventEnvelopeDigestAlgorithmVersion: string(r.EnvelopeDigest.Algorithm), RequestEventEnvelopeSha256: r.EnvelopeDigest.Value,
		RequestedAt: r.RequestedAt, Now: ev.Now,
	})
	if err != nil {
		return fmt.Errorf("insert pending case successor: %w", err)
	}
	return nil
}

// requestOfSuccessor is the verified request a pending successor froze.
func requestOfSuccessor(s dbsqlc.OperationsPendingFinalizationCaseSuccessor) caseRequest {
	return caseRequest{
		EventID:        s.RequestEventID,
		EnvelopeDigest: digest.Digest{Algorithm: digest.Algorithm(s.RequestEventEnvelopeDigestAlgorithmVersion), Value: s.RequestEventEnvelopeSha256},
		RequestedAt:    s.RequestedAt, FenceID: s.BillingFinalizationFenceID, CaseRef: s.ReconciliationCaseRef,
		Generation:             s.ReconciliationGeneration,
		Identity:               caseQuad(s.CaseIdentityRef, s.CaseIdentitySchemaVersion, s.CaseIdentityDigestAlgorithmVersion, s.CaseIdentityDigest),
		CaseRequestOperationID: s.CaseRequestOperationID,
		Predecessor: &casePredecessor{CaseRef: s.PredecessorReconciliationCaseRef, Generation: s.PredecessorGeneration,
			Identity: caseQuad(s.PredecessorCaseIdentityRef, s.PredecessorCaseIdentitySchemaVersion,
				s.PredecessorCaseIdentityDigestAlgorithmVersion, s.PredecessorCaseIdentityDigest)},
		ReservationID: s.BillingReservationID, AccountID: s.BillingAccountID, RunID: s.RunID,
		Tenant:   tenant{Kind: s.TenantKind, ID: s.TenantID, WorkspaceID: s.WorkspaceID, ProjectID: deref(s.ProjectID)},
		Decision: caseQuad(s.DecisionRef, s.DecisionSchemaVersion, s.DecisionDigestAlgorithmVersion, s.DecisionDigest),
		Work: caseQuad(s.TriggeringWorkRef, s.TriggeringWorkSchemaVersion, s.TriggeringWorkDigestAlgorithmVersion,
			s.TriggeringWorkDigest),
		WorkGeneration: s.TriggeringWorkGeneration, FinalizationOperationID: s.BillingFinalizationOperationID,
		ReasonCode: s.ReconciliationReasonCode,
	}
}

// resolutionOfPending is the verified resolution a pending row froze.
func resolutionOfPending(r dbsqlc.OperationsPendingFinalizationCaseResolution) caseResolution {
	return caseResolution{
		EventID: r.ResolutionEventID,
		EnvelopeDigest: digest.Digest{Algorithm: digest.Algorithm(r.ResolutionEventEnvelopeDigestAlgorithmVersion),
			Value: r.ResolutionEventEnvelopeSha256},
		ResolvedAt: r.ResolvedAt, FenceID: r.BillingFinalizationFenceID, CaseRef: r.ReconciliationCaseRef,
		Generation:    r.ReconciliationGeneration,
		Identity:      caseQuad(r.CaseIdentityRef, r.CaseIdentitySchemaVersion, r.CaseIdentityDigestAlgorithmVersion, r.CaseIdentityDigest),
		ReservationID: r.BillingReservationID, AccountID: r.BillingAccountID, RunID: r.RunID, OperationID: r.ResolutionOperationID,
		Applied: caseQuad(r.ResolutionAppliedRef, r.ResolutionAppliedSchemaVersion, r.ResolutionAppliedDigestAlgorithmVersion,
			r.ResolutionAppliedDigest),
		Actor: r.ResolutionActorWorkforcePrincipalID,
	}
}
