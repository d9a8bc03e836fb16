package operationstest

import (
	"context"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/ownerread/operationsread"
)

// CaseFence is sample fence n in reconciliation: the case identities of its
// generations, reserved in operations.finalization_case_identities as
// Billing reserves them, and the deterministic case-requested and
// resolution-applied events of each generation.
type CaseFence struct {
	N                               int
	FenceID, RunID                  string
	AccountID, ReservationID        string
	CorrelationID                   string
	Actor                           string
	identities                      []operationsread.CaseIdentity // generation g at g-1
	reservedAt, requested, resolved time.Time
}

// NewCaseFence reserves the case identities of generations 1..generations of
// sample fence n (each naming its direct predecessor) through the Operations
// primitive (cases.Identities over pool, with a fixed clock: same n, same
// identities and events).
func NewCaseFence(ctx context.Context, pool db.Beginner, n, generations int) (*CaseFence, error) {
	at := occurred.Add(time.Duration(n) * time.Second)
	f := &CaseFence{N: n, FenceID: ID(n, 21), RunID: ID(n, 22), AccountID: ID(n, 23), ReservationID: ID(n, 24),
		CorrelationID: ID(n, 25), Actor: fmt.Sprintf("workforce:operator-%d", n),
		reservedAt: at.Add(2 * time.Hour), requested: at.Add(3 * time.Hour), resolved: at.Add(4 * time.Hour)}
	ids := cases.Identities{Pool: pool, Now: func() time.Time { return f.reservedAt }}
	for g := int64(1); g <= int64(generations); g++ {
		s := operationsread.CaseScope{
			Tenant:           operationsread.Tenant{Kind: envelope.TenantOrganization, ID: TenantID, WorkspaceID: WorkspaceID, ProjectID: ProjectID},
			BillingAccountID: f.AccountID, ReservationID: f.ReservationID, RunID: f.RunID, FenceID: f.FenceID, Generation: g,
		}
		if g > 1 {
			prev := f.identities[g-2]
			s.Predecessor = &prev
		}
		id, err := ids.ReserveFinalizationCaseIdentity(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("operationstest: reserve case identity %d/%d: %w", n, g, err)
		}
		f.identities = append(f.identities, id)
	}
	return f, nil
}

// Identity returns the reserved identity of generation g.
func (f *CaseFence) Identity(g int64) operationsread.CaseIdentity { return f.identities[g-1] }

// RequestEventID and ResolutionEventID are the event ids of generation g's events.
func (f *CaseFence) RequestEventID(g int64) string    { return ID(f.N, 300+int(g)) }
func (f *CaseFence) ResolutionEventID(g int64) string { return ID(f.N, 400+int(g)) }

func (f *CaseFence) build(e envelope.Envelope) *envelope.Envelope {
	e.TenantKind, e.TenantID, e.WorkspaceID, e.ProjectID = envelope.TenantOrganization, TenantID, WorkspaceID, ProjectID
	e.CorrelationID = f.CorrelationID
	out, err := envelope.Build(e)
	if err != nil {
		panic(fmt.Sprintf("operationstest: case fence %d %s: %v", f.N, e.EventType, err))
	}
	return out
}

// Requested returns billing.finalization-reconciliation.case-requested@1 of
// generation g, as Billing writes it over the reserved identity.
func (f *CaseFence) Requested(g int64) *envelope.Envelope {
	id := f.Identity(g)
	p := envelope.BillingFinalizationReconciliationCaseRequestedV1Payload{
		BillingReservationID: f.ReservationID, BillingAccountID: f.AccountID, RunID: f.RunID, BillingFinalizationFenceID: f.FenceID,
		ReconciliationCaseRef: id.CaseRef, ReconciliationGeneration: g, ExpectedResolutionRevision: 1,
		CaseRequestOperationID: id.CaseRequestOperationID, TriggeringBillingFinalizationWorkGeneration: 2 * g,
		BillingFinalizationOperationID: ID(f.N, 500+int(g)), ReconciliationReasonCode: "usage_conflicting",
		PredecessorCase: envelope.FinalizationCasePredecessorV1{State: "none"},
	}
	setQuad(&p.FinalizationCaseIdentityReservationRef, &p.FinalizationCaseIdentityReservationSchemaVersion,
		&p.FinalizationCaseIdentityReservationDigestAlgorithmVersion, &p.FinalizationCaseIdentityReservationDigest, id.Identity)
	dec, work := quad(fmt.Sprintf("billing-finalization-decision-%d-%d", f.N, g)), quad(fmt.Sprintf("billing-finalization-work-%d-%d", f.N, g))
	setQuad(&p.BillingFinalizationDecisionRef, &p.BillingFinalizationDecisionSchemaVersion,
		&p.BillingFinalizationDecisionDigestAlgorithmVersion, &p.BillingFinalizationDecisionDigest, dec)
	setQuad(&p.TriggeringBillingFinalizationWorkRef, &p.TriggeringBillingFinalizationWorkSchemaVersion,
		&p.TriggeringBillingFinalizationWorkDigestAlgorithmVersion, &p.TriggeringBillingFinalizationWorkDigest, work)
	if g > 1 {
		prev := f.Identity(g - 1)
		p.PredecessorCase = envelope.FinalizationCasePredecessorV1{State: "present",
			PredecessorReconciliationCaseRef: prev.CaseRef, PredecessorReconciliationGeneration: prev.Generation}
		setQuad(&p.PredecessorCase.PredecessorFinalizationCaseIdentityReservationRef,
			&p.PredecessorCase.PredecessorFinalizationCaseIdentityReservationSchemaVersion,
			&p.PredecessorCase.PredecessorFinalizationCaseIdentityReservationDigestAlgorithmVersion,
			&p.PredecessorCase.PredecessorFinalizationCaseIdentityReservationDigest, prev.Identity)
	}
	return f.build(envelope.Envelope{
		EventID: f.RequestEventID(g), EventType: envelope.BillingFinalizationCaseRequestedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateFinalizationCaseRequest, AggregateID: envelope.FinalizationCaseRequestAggregateID(f.FenceID, g),
		AggregateRevision: 1, OperationID: id.CaseRequestOperationID,
		OccurredAt: f.requested.Add(time.Duration(g) * 10 * time.Minute), Payload: p.Map(),
	})
}

// Resolved returns billing.finalization-reconciliation-resolution.applied@1
// of generation g.
func (f *CaseFence) Resolved(g int64) *envelope.Envelope {
	id := f.Identity(g)
	op := ID(f.N, 600+int(g))
	p := envelope.BillingFinalizationReconciliationResolutionAppliedV1Payload{
		BillingReservationID: f.ReservationID, BillingAccountID: f.AccountID, RunID: f.RunID, BillingFinalizationFenceID: f.FenceID,
		ReconciliationCaseRef: id.CaseRef, ReconciliationGeneration: g, ResolutionRevision: 1, ResolutionOperationID: op,
		ActorWorkforcePrincipalID: f.Actor,
	}
	setQuad(&p.FinalizationCaseIdentityReservationRef, &p.FinalizationCaseIdentityReservationSchemaVersion,
		&p.FinalizationCaseIdentityReservationDigestAlgorithmVersion, &p.FinalizationCaseIdentityReservationDigest, id.Identity)
	setQuad(&p.FinalizationReconciliationResolutionAppliedRef, &p.FinalizationReconciliationResolutionAppliedSchemaVersion,
		&p.FinalizationReconciliationResolutionAppliedDigestAlgorithmVersion, &p.FinalizationReconciliationResolutionAppliedDigest,
		quad(fmt.Sprintf("finalization-reconciliation-resolution-applied-%d-%d", f.N, g)))
	return f.build(envelope.Envelope{
		EventID: f.ResolutionEventID(g), EventType: envelope.BillingFinalizationResolutionAppliedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateFinalizationResolution, AggregateID: envelope.FinalizationResolutionAggregateID(f.FenceID, g),
		AggregateRevision: 1, OperationID: op,
		Actor:      &envelope.Actor{Kind: envelope.ActorWorkforcePrincipal, WorkforcePrincipalID: f.Actor},
		OccurredAt: f.resolved.Add(time.Duration(g) * 10 * time.Minute), Payload: p.Map(),
	})
}

func setQuad(ref, version, alg, d *string, q strict.Quadruple) {
	*ref, *version, *alg, *d = q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest
}
