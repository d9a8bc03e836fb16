package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// LateDecision is LateSettlementCommandDecision@1, Operations-owned:
// Operations authorizes exactly one late candidate for exactly one case
// generation and exposure. It carries no command operation: that is
// derived from the decision's own quadruple
// (LateSettlementCommandOperationID), so nothing in it depends on what
// follows (grant, funding decision, receipt, result).
//
//	lateSettlementCommandDecisionRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	lateSettlementCommandCandidate, lateSettlementCommandRequest quadruples
//	late case (ref, generation, identity reservation, dimension in full), exposure (id, revision, quadruple)
//	expectedResolutionRevision = 1, action = fund_late_settlement_exposure
//	actorWorkforcePrincipalId, investigationEvidenceReferences
//	decidedAt                           excluded from the digest candidate
type LateDecision struct {
	Decision                  strict.Quadruple
	Candidate                 strict.Quadruple
	CommandRequest            strict.Quadruple
	Case                      LateCase
	Exposure                  LateExposureRef
	ActorWorkforcePrincipalID string
	Evidence                  []EvidenceReference
	DecidedAt                 time.Time
}

func (*LateDecision) Kind() string              { return KindLateDecision }
func (d *LateDecision) Quad() *strict.Quadruple { return &d.Decision }

// CommandOperationID is the lateSettlementCommandOperationId this (sealed)
// decision authorizes.
func (d *LateDecision) CommandOperationID() string {
	return LateSettlementCommandOperationID(d.Decision)
}

// ToJSON returns the full JSON form.
func (d *LateDecision) ToJSON() map[string]any {
	m := map[string]any{
		"expectedResolutionRevision": int64(ResolutionRevision1), "action": ActionFundLateSettlementExposure,
		"actorWorkforcePrincipalId": d.ActorWorkforcePrincipalID, fieldEvidence: evidenceJSON(d.Evidence),
		"decidedAt": strict.FormatTimestamp(d.DecidedAt),
	}
	d.Candidate.Put(m, PrefixLateCandidate)
	d.CommandRequest.Put(m, PrefixLateCommandRequest)
	d.Case.put(m)
	d.Exposure.put(m)
	d.Decision.Put(m, PrefixLateDecision)
	return m
}

// DecodeLateDecision strictly decodes a decision, checks its rules and
// verifies its digest.
func DecodeLateDecision(doc []byte) (*LateDecision, error) {
	m, err := decodeMap(KindLateDecision, doc)
	if err != nil {
		return nil, err
	}
	return &LateDecision{
		Decision: quad(m, PrefixLateDecision), Candidate: quad(m, PrefixLateCandidate), CommandRequest: quad(m, PrefixLateCommandRequest),
		Case: lateCaseOf(m), Exposure: exposureRefOf(m), ActorWorkforcePrincipalID: str(m, "actorWorkforcePrincipalId"),
		Evidence: evidenceOf(m), DecidedAt: tm(m, "decidedAt"),
	}, nil
}

// LateDecisionDef describes LateSettlementCommandDecision@1.
var LateDecisionDef = &schema.Def{Name: "LateSettlementCommandDecisionV1",
	Doc: "LateSettlementCommandDecision@1: Operations authorizes one late candidate for one case generation and exposure; the command operation derives from this decision's quadruple.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixLateDecision, "assigned by Operations; excluded from the digest candidate"),
		schema.Quad(PrefixLateCandidate, "the decided LateSettlementCommandCandidate@1"),
		schema.Quad(PrefixLateCommandRequest, "LateSettlementCommandRequest@1"),
		lateCaseFields(),
		exposureRefFields(),
		schema.F("expectedResolutionRevision", schema.Int{Min: ResolutionRevision1, Max: ResolutionRevision1}, "always 1"),
		lateActionField(),
		principal("actorWorkforcePrincipalId", "equals the candidate's actor"),
		evidenceField(),
		schema.F("decidedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
