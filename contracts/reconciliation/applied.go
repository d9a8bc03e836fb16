package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Applied is FinalizationReconciliationResolutionApplied@1, Billing-owned:
// the one resolution of a case generation, appended in the transaction that
// consumes the grant's jti and writes
// billing.finalization-reconciliation-resolution.applied@1. It is the
// command's stable result: a replay finds it by resolutionOperationId and
// compares it in full. It only re-opens evaluation; it carries no amount,
// ledger or reservation effect.
//
//	finalizationReconciliationResolutionAppliedRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	resolutionOperationId = ResolutionOperationID(decision quadruple), resolutionRevision = 1
//	case identity, action = reevaluate_current_owner_state, actorWorkforcePrincipalId
//	finalizationReconciliationResolutionCommandRequest, adminCommandCandidate,
//	finalizationReconciliationResolutionDecision quadruples
//	grantJti, grantSha256, investigationEvidenceReferences
//	finalizationFenceRevision ≥ 1        the fence revision the fact was applied at
//	appliedAt                            excluded from the digest candidate
type Applied struct {
	Applied                   strict.Quadruple
	ResolutionOperationID     string
	Case                      Case
	ActorWorkforcePrincipalID string
	CommandRequest            strict.Quadruple
	Candidate                 strict.Quadruple
	Decision                  strict.Quadruple
	GrantJTI                  string
	GrantSHA256               string
	Evidence                  []EvidenceReference
	FinalizationFenceRevision int64
	AppliedAt                 time.Time
}

func (*Applied) Kind() string              { return KindApplied }
func (a *Applied) Quad() *strict.Quadruple { return &a.Applied }

// ToJSON returns the full JSON form.
func (a *Applied) ToJSON() map[string]any {
	m := map[string]any{
		fieldResolutionOperationID: a.ResolutionOperationID, "resolutionRevision": int64(ResolutionRevision1),
		"action": ActionReevaluateCurrentOwnerState, "actorWorkforcePrincipalId": a.ActorWorkforcePrincipalID,
		"grantJti": a.GrantJTI, "grantSha256": a.GrantSHA256, fieldEvidence: evidenceJSON(a.Evidence),
		"finalizationFenceRevision": a.FinalizationFenceRevision, "appliedAt": strict.FormatTimestamp(a.AppliedAt),
	}
	a.Case.put(m)
	a.CommandRequest.Put(m, PrefixCommandRequest)
	a.Candidate.Put(m, PrefixCandidate)
	a.Decision.Put(m, PrefixDecision)
	a.Applied.Put(m, PrefixApplied)
	return m
}

// DecodeApplied strictly decodes an applied fact, checks its derived
// operation and evidence set and verifies its digest.
func DecodeApplied(doc []byte) (*Applied, error) {
	m, err := decodeMap(KindApplied, doc)
	if err != nil {
		return nil, err
	}
	return &Applied{
		Applied: quad(m, PrefixApplied), ResolutionOperationID: str(m, fieldResolutionOperationID), Case: caseOf(m),
		ActorWorkforcePrincipalID: str(m, "actorWorkforcePrincipalId"), CommandRequest: quad(m, PrefixCommandRequest),
		Candidate: quad(m, PrefixCandidate), Decision: quad(m, PrefixDecision), GrantJTI: str(m, "grantJti"),
		GrantSHA256: str(m, "grantSha256"), Evidence: evidenceOf(m), FinalizationFenceRevision: i64(m, "finalizationFenceRevision"),
		AppliedAt: tm(m, "appliedAt"),
	}, nil
}

// AppliedDef describes FinalizationReconciliationResolutionApplied@1.
var AppliedDef = &schema.Def{Name: "FinalizationReconciliationResolutionAppliedV1",
	Doc: "FinalizationReconciliationResolutionApplied@1: Billing's one resolution of a case generation; it re-opens evaluation only, with no amount, ledger or reservation effect.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixApplied, "assigned by Billing; excluded from the digest candidate"),
		schema.F(fieldResolutionOperationID, uuid, "ResolutionOperationID(decision quadruple)"),
		schema.F("resolutionRevision", schema.Int{Min: ResolutionRevision1, Max: ResolutionRevision1}, "always 1"),
		caseFields(),
		actionField(),
		principal("actorWorkforcePrincipalId", "equals the decision actor, the grant's sub and the event envelope actor"),
		schema.Quad(PrefixCommandRequest, "FinalizationReconciliationResolutionCommandRequest@1"),
		schema.Quad(PrefixCandidate, "AdminCommandCandidate@1"),
		schema.Quad(PrefixDecision, "FinalizationReconciliationResolutionDecision@1"),
		schema.F("grantJti", uuid, "the consumed grant's jti"),
		schema.F("grantSha256", SHA256Text, "SHA-256 of the consumed compact JWS"),
		evidenceField(),
		schema.F("finalizationFenceRevision", schema.Int{Min: 1}, "the fence revision the fact was applied at"),
		schema.F("appliedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// appliedRules: the resolution operation derives from the decision and the
// evidence set is sorted.
func appliedRules(m map[string]any) error {
	if err := checkResolutionOperation(m); err != nil {
		return err
	}
	return evidenceRules(m)
}
