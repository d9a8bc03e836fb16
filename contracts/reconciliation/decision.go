package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Decision is FinalizationReconciliationResolutionDecision@1, Operations-
// owned: Operations authorizes exactly one candidate for exactly one case
// generation. It carries no resolution operation: that is derived from the
// decision's own quadruple (ResolutionOperationID), so nothing in the
// decision can depend on what follows it.
//
//	finalizationReconciliationResolutionDecisionRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	adminCommandCandidate, finalizationReconciliationResolutionCommandRequest quadruples
//	case identity (ref, generation, identity reservation, account, reservation, run, fence)
//	expectedResolutionRevision = 1, action = reevaluate_current_owner_state
//	actorWorkforcePrincipalId, investigationEvidenceReferences
//	decidedAt                           excluded from the digest candidate
type Decision struct {
	Decision                  strict.Quadruple
	Candidate                 strict.Quadruple
	CommandRequest            strict.Quadruple
	Case                      Case
	ActorWorkforcePrincipalID string
	Evidence                  []EvidenceReference
	DecidedAt                 time.Time
}

func (*Decision) Kind() string              { return KindDecision }
func (d *Decision) Quad() *strict.Quadruple { return &d.Decision }

// ResolutionOperationID is the operation of the resolution this (sealed)
// decision authorizes.
func (d *Decision) ResolutionOperationID() string { return ResolutionOperationID(d.Decision) }

// ToJSON returns the full JSON form.
func (d *Decision) ToJSON() map[string]any {
	m := map[string]any{
		"expectedResolutionRevision": int64(ResolutionRevision1), "action": ActionReevaluateCurrentOwnerState,
		"actorWorkforcePrincipalId": d.ActorWorkforcePrincipalID, fieldEvidence: evidenceJSON(d.Evidence),
		"decidedAt": strict.FormatTimestamp(d.DecidedAt),
	}
	d.Candidate.Put(m, PrefixCandidate)
	d.CommandRequest.Put(m, PrefixCommandRequest)
	d.Case.put(m)
	d.Decision.Put(m, PrefixDecision)
	return m
}

// DecodeDecision strictly decodes a decision, checks its evidence set and
// verifies its digest.
func DecodeDecision(doc []byte) (*Decision, error) {
	m, err := decodeMap(KindDecision, doc)
	if err != nil {
		return nil, err
	}
	return &Decision{
		Decision: quad(m, PrefixDecision), Candidate: quad(m, PrefixCandidate), CommandRequest: quad(m, PrefixCommandRequest),
		Case: caseOf(m), ActorWorkforcePrincipalID: str(m, "actorWorkforcePrincipalId"), Evidence: evidenceOf(m),
		DecidedAt: tm(m, "decidedAt"),
	}, nil
}

// DecisionDef describes FinalizationReconciliationResolutionDecision@1.
var DecisionDef = &schema.Def{Name: "FinalizationReconciliationResolutionDecisionV1",
	Doc: "FinalizationReconciliationResolutionDecision@1: Operations authorizes one candidate for one case generation; the resolution operation derives from this decision's quadruple.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixDecision, "assigned by Operations; excluded from the digest candidate"),
		schema.Quad(PrefixCandidate, "the decided AdminCommandCandidate@1"),
		schema.Quad(PrefixCommandRequest, "FinalizationReconciliationResolutionCommandRequest@1"),
		caseFields(),
		schema.F("expectedResolutionRevision", schema.Int{Min: ResolutionRevision1, Max: ResolutionRevision1}, "always 1"),
		actionField(),
		principal("actorWorkforcePrincipalId", "equals the candidate's actor"),
		evidenceField(),
		schema.F("decidedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
