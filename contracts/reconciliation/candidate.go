package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Candidate is AdminCommandCandidate@1: the admin command gateway's frozen
// command, ready for Operations' decision. It binds the request, preview,
// approval and activation by quadruple and repeats the case identity, the
// action and the evidence set in full, so the decision and the grant can
// compare them without a read. It names the gateway workload that will
// present the grant (boundWorkload), not Billing's worker.
//
//	adminCommandCandidateRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	commandAudience = billing_finalization_reconciliation_resolution_command
//	finalizationReconciliationResolutionCommandRequest, adminCommandImpactPreview,
//	adminCommandApproval, adminCommandJitActivation quadruples
//	actorWorkforcePrincipalId (the requester, who executes), boundWorkload
//	case identity (ref, generation, identity reservation, account, reservation, run, fence)
//	action = reevaluate_current_owner_state
//	investigationEvidenceReferences (the request's set)
//	createdAt                           excluded from the digest candidate
type Candidate struct {
	Candidate                 strict.Quadruple
	CommandRequest            strict.Quadruple
	ImpactPreview             strict.Quadruple
	Approval                  strict.Quadruple
	JitActivation             strict.Quadruple
	ActorWorkforcePrincipalID string
	BoundWorkload             string
	Case                      Case
	Evidence                  []EvidenceReference
	CreatedAt                 time.Time
}

func (*Candidate) Kind() string              { return KindCandidate }
func (c *Candidate) Quad() *strict.Quadruple { return &c.Candidate }

// ToJSON returns the full JSON form.
func (c *Candidate) ToJSON() map[string]any {
	m := map[string]any{
		"commandAudience": AudienceResolutionCommand, "actorWorkforcePrincipalId": c.ActorWorkforcePrincipalID,
		"boundWorkload": c.BoundWorkload, "action": ActionReevaluateCurrentOwnerState, fieldEvidence: evidenceJSON(c.Evidence),
		"createdAt": strict.FormatTimestamp(c.CreatedAt),
	}
	c.CommandRequest.Put(m, PrefixCommandRequest)
	c.ImpactPreview.Put(m, PrefixImpactPreview)
	c.Approval.Put(m, PrefixApproval)
	c.JitActivation.Put(m, PrefixJitActivation)
	c.Case.put(m)
	c.Candidate.Put(m, PrefixCandidate)
	return m
}

// DecodeCandidate strictly decodes a candidate, checks its evidence set and
// verifies its digest.
func DecodeCandidate(doc []byte) (*Candidate, error) {
	m, err := decodeMap(KindCandidate, doc)
	if err != nil {
		return nil, err
	}
	return &Candidate{
		Candidate: quad(m, PrefixCandidate), CommandRequest: quad(m, PrefixCommandRequest), ImpactPreview: quad(m, PrefixImpactPreview),
		Approval: quad(m, PrefixApproval), JitActivation: quad(m, PrefixJitActivation),
		ActorWorkforcePrincipalID: str(m, "actorWorkforcePrincipalId"), BoundWorkload: str(m, "boundWorkload"),
		Case: caseOf(m), Evidence: evidenceOf(m), CreatedAt: tm(m, "createdAt"),
	}, nil
}

// CandidateDef describes AdminCommandCandidate@1.
var CandidateDef = &schema.Def{Name: "AdminCommandCandidateV1",
	Doc: "AdminCommandCandidate@1: the frozen resolution command (request, preview, approval, JIT activation, actor, gateway workload, case identity, action, evidence) Operations decides on.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixCandidate, "assigned by the admin command gateway; excluded from the digest candidate"),
		audienceField(),
		schema.Quad(PrefixCommandRequest, "FinalizationReconciliationResolutionCommandRequest@1"),
		schema.Quad(PrefixImpactPreview, "AdminCommandImpactPreview@1"),
		schema.Quad(PrefixApproval, "AdminCommandApproval@1"),
		schema.Quad(PrefixJitActivation, "AdminCommandJitActivation@1"),
		principal("actorWorkforcePrincipalId", "the requester, who executes; equals the JIT actor"),
		schema.F("boundWorkload", WorkloadText, "the admin command gateway workload that presents the grant (= its caller JWT sub)"),
		caseFields(),
		actionField(),
		evidenceField(),
		schema.F("createdAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
