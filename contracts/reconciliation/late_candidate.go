package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// LateCandidate is LateSettlementCommandCandidate@1: the admin command
// gateway's frozen late command, ready for Operations' decision. It binds
// the late request, preview, approval and activation by quadruple and
// repeats the late case (with the dimension), the exposure, the action and
// the evidence set in full, so the decision, the grant and Billing compare
// them without a read. It names the gateway workload that presents the
// grant (boundWorkload); the actor is the requester, who executes.
//
//	lateSettlementCommandCandidateRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	commandAudience = billing_late_settlement_command
//	lateSettlementCommandRequest, lateSettlementCommandImpactPreview,
//	lateSettlementCommandApproval, lateSettlementCommandJitActivation quadruples
//	actorWorkforcePrincipalId (the requester), boundWorkload
//	late case (ref, generation, identity reservation, dimension in full), exposure (id, revision, quadruple)
//	action = fund_late_settlement_exposure
//	investigationEvidenceReferences (the request's set)
//	createdAt                           excluded from the digest candidate
type LateCandidate struct {
	Candidate                 strict.Quadruple
	CommandRequest            strict.Quadruple
	ImpactPreview             strict.Quadruple
	Approval                  strict.Quadruple
	JitActivation             strict.Quadruple
	ActorWorkforcePrincipalID string
	BoundWorkload             string
	Case                      LateCase
	Exposure                  LateExposureRef
	Evidence                  []EvidenceReference
	CreatedAt                 time.Time
}

func (*LateCandidate) Kind() string              { return KindLateCandidate }
func (c *LateCandidate) Quad() *strict.Quadruple { return &c.Candidate }

// ToJSON returns the full JSON form.
func (c *LateCandidate) ToJSON() map[string]any {
	m := map[string]any{
		"commandAudience": AudienceLateSettlementCommand, "actorWorkforcePrincipalId": c.ActorWorkforcePrincipalID,
		"boundWorkload": c.BoundWorkload, "action": ActionFundLateSettlementExposure, fieldEvidence: evidenceJSON(c.Evidence),
		"createdAt": strict.FormatTimestamp(c.CreatedAt),
	}
	c.CommandRequest.Put(m, PrefixLateCommandRequest)
	c.ImpactPreview.Put(m, PrefixLateImpactPreview)
	c.Approval.Put(m, PrefixLateApproval)
	c.JitActivation.Put(m, PrefixLateJitActivation)
	c.Case.put(m)
	c.Exposure.put(m)
	c.Candidate.Put(m, PrefixLateCandidate)
	return m
}

// DecodeLateCandidate strictly decodes a candidate, checks its rules and
// verifies its digest.
func DecodeLateCandidate(doc []byte) (*LateCandidate, error) {
	m, err := decodeMap(KindLateCandidate, doc)
	if err != nil {
		return nil, err
	}
	return &LateCandidate{
		Candidate: quad(m, PrefixLateCandidate), CommandRequest: quad(m, PrefixLateCommandRequest), ImpactPreview: quad(m, PrefixLateImpactPreview),
		Approval: quad(m, PrefixLateApproval), JitActivation: quad(m, PrefixLateJitActivation),
		ActorWorkforcePrincipalID: str(m, "actorWorkforcePrincipalId"), BoundWorkload: str(m, "boundWorkload"),
		Case: lateCaseOf(m), Exposure: exposureRefOf(m), Evidence: evidenceOf(m), CreatedAt: tm(m, "createdAt"),
	}, nil
}

// LateCandidateDef describes LateSettlementCommandCandidate@1.
var LateCandidateDef = &schema.Def{Name: "LateSettlementCommandCandidateV1",
	Doc: "LateSettlementCommandCandidate@1: the frozen late settlement command (request, preview, approval, JIT activation, actor, gateway workload, late case, exposure, action, evidence) Operations decides on.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixLateCandidate, "assigned by the admin command gateway; excluded from the digest candidate"),
		lateAudienceField(),
		schema.Quad(PrefixLateCommandRequest, "LateSettlementCommandRequest@1"),
		schema.Quad(PrefixLateImpactPreview, "LateSettlementCommandImpactPreview@1"),
		schema.Quad(PrefixLateApproval, "LateSettlementCommandApproval@1"),
		schema.Quad(PrefixLateJitActivation, "LateSettlementCommandJitActivation@1"),
		principal("actorWorkforcePrincipalId", "the requester, who executes; equals the JIT actor"),
		schema.F("boundWorkload", WorkloadText, "the admin command gateway workload that presents the grant (= its caller JWT sub)"),
		lateCaseFields(),
		exposureRefFields(),
		lateActionField(),
		evidenceField(),
		schema.F("createdAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
