package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// LateCommandRequest is LateSettlementCommandRequest@1, made by Operations
// through the admin command gateway: the frozen request to fund one open
// LateSettlementExposure@1 of one late settlement case generation. Every
// later object binds it by quadruple. It has no amount (OP-1: no command
// carries one; the amount is the exposure's, and Billing's FundingDecision@1
// binds it), no ledger account, no "charge anyway" flag and nothing of its
// successors: the decoder refuses every field it does not list. The
// exposure's settlement state revision is carried so its id recomputes
// here, and the settlement dimension in full so that no hop has to read it.
//
//	lateSettlementCommandRequestRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	commandRequestOperationId          the requester's idempotency key
//	action = fund_late_settlement_exposure
//	reconciliationCaseRef = LateSettlementCaseRef(dimension, generation), caseGeneration,
//	lateSettlementCaseIdentityReservation quadruple, the settlement dimension in full
//	lateSettlementExposureId = late_settlement_exposure@1(dimension, exposureSettlementStateRevision),
//	exposureSettlementStateRevision, lateSettlementExposure quadruple
//	expectedResolutionRevision = 1
//	requesterWorkforcePrincipalId
//	investigationEvidenceReferences[1..32] sorted by (evidenceKind, ref, digest), no duplicate
//	justification (1..1000 characters)
//	requestedAt                        excluded from the digest candidate
type LateCommandRequest struct {
	Request                       strict.Quadruple
	CommandRequestOperationID     string
	Case                          LateCase
	Exposure                      LateExposureRef
	RequesterWorkforcePrincipalID string
	Evidence                      []EvidenceReference
	Justification                 string
	RequestedAt                   time.Time
}

func (*LateCommandRequest) Kind() string              { return KindLateCommandRequest }
func (r *LateCommandRequest) Quad() *strict.Quadruple { return &r.Request }

// ToJSON returns the full JSON form.
func (r *LateCommandRequest) ToJSON() map[string]any {
	m := map[string]any{
		"commandRequestOperationId": r.CommandRequestOperationID, "action": ActionFundLateSettlementExposure,
		"expectedResolutionRevision": int64(ResolutionRevision1), "requesterWorkforcePrincipalId": r.RequesterWorkforcePrincipalID,
		fieldEvidence: evidenceJSON(r.Evidence), "justification": r.Justification, "requestedAt": strict.FormatTimestamp(r.RequestedAt),
	}
	r.Case.put(m)
	r.Exposure.put(m)
	r.Request.Put(m, PrefixLateCommandRequest)
	return m
}

// DecodeLateCommandRequest strictly decodes a request, checks its rules and
// verifies its digest.
func DecodeLateCommandRequest(doc []byte) (*LateCommandRequest, error) {
	m, err := decodeMap(KindLateCommandRequest, doc)
	if err != nil {
		return nil, err
	}
	return &LateCommandRequest{
		Request: quad(m, PrefixLateCommandRequest), CommandRequestOperationID: str(m, "commandRequestOperationId"),
		Case: lateCaseOf(m), Exposure: exposureRefOf(m), RequesterWorkforcePrincipalID: str(m, "requesterWorkforcePrincipalId"),
		Evidence: evidenceOf(m), Justification: str(m, "justification"), RequestedAt: tm(m, "requestedAt"),
	}, nil
}

// LateCommandRequestDef describes LateSettlementCommandRequest@1.
var LateCommandRequestDef = &schema.Def{Name: "LateSettlementCommandRequestV1",
	Doc: "LateSettlementCommandRequest@1: the frozen request to fund one open late settlement exposure of one case generation; no amount (the exposure's amount is bound by Billing's FundingDecision@1), no override, no free map.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixLateCommandRequest, "assigned by the admin command gateway; excluded from the digest candidate"),
		schema.F("commandRequestOperationId", uuid, "the requester's idempotency key"),
		lateActionField(),
		lateCaseFields(),
		exposureRefFields(),
		schema.F("expectedResolutionRevision", schema.Int{Min: ResolutionRevision1, Max: ResolutionRevision1}, "always 1: one resolution per exposure"),
		principal("requesterWorkforcePrincipalId", "the workforce principal who asks"),
		evidenceField(),
		schema.F("justification", schema.Text{MaxLength: 1000}, "why, in the requester's words"),
		schema.F("requestedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
