package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// CommandRequest is FinalizationReconciliationResolutionCommandRequest@1:
// the frozen request an operator makes to re-evaluate one case generation.
// Every later object of the chain binds it by quadruple and runs only it
// (never a re-typed copy). It has no amount, replacement snapshot,
// "ignore conflict" flag or free-form parameters, and nothing of its
// successors: the decoder refuses every field it does not list.
//
//	finalizationReconciliationResolutionCommandRequestRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	commandRequestOperationId          the requester's idempotency key
//	action = reevaluate_current_owner_state
//	reconciliationCaseRef, reconciliationGeneration, finalizationCaseIdentityReservation quadruple,
//	billingAccountId, billingReservationId, runId, billingFinalizationFenceId
//	expectedResolutionRevision = 1
//	requesterWorkforcePrincipalId
//	investigationEvidenceReferences[1..32] sorted by (evidenceKind, ref, digest), no duplicate
//	justification (1..1000 characters)
//	requestedAt                        excluded from the digest candidate
type CommandRequest struct {
	Request                       strict.Quadruple
	CommandRequestOperationID     string
	Case                          Case
	RequesterWorkforcePrincipalID string
	Evidence                      []EvidenceReference
	Justification                 string
	RequestedAt                   time.Time
}

func (*CommandRequest) Kind() string              { return KindCommandRequest }
func (r *CommandRequest) Quad() *strict.Quadruple { return &r.Request }

// ToJSON returns the full JSON form.
func (r *CommandRequest) ToJSON() map[string]any {
	m := map[string]any{
		"commandRequestOperationId": r.CommandRequestOperationID, "action": ActionReevaluateCurrentOwnerState,
		"expectedResolutionRevision": int64(ResolutionRevision1), "requesterWorkforcePrincipalId": r.RequesterWorkforcePrincipalID,
		fieldEvidence: evidenceJSON(r.Evidence), "justification": r.Justification, "requestedAt": strict.FormatTimestamp(r.RequestedAt),
	}
	r.Case.put(m)
	r.Request.Put(m, PrefixCommandRequest)
	return m
}

// DecodeCommandRequest strictly decodes a request, checks its rules and
// verifies its digest.
func DecodeCommandRequest(doc []byte) (*CommandRequest, error) {
	m, err := decodeMap(KindCommandRequest, doc)
	if err != nil {
		return nil, err
	}
	return &CommandRequest{
		Request: quad(m, PrefixCommandRequest), CommandRequestOperationID: str(m, "commandRequestOperationId"), Case: caseOf(m),
		RequesterWorkforcePrincipalID: str(m, "requesterWorkforcePrincipalId"), Evidence: evidenceOf(m),
		Justification: str(m, "justification"), RequestedAt: tm(m, "requestedAt"),
	}, nil
}

// CommandRequestDef describes FinalizationReconciliationResolutionCommandRequest@1.
var CommandRequestDef = &schema.Def{Name: "FinalizationReconciliationResolutionCommandRequestV1",
	Doc: "FinalizationReconciliationResolutionCommandRequest@1: the frozen request to re-evaluate the current owner state of one case generation; no amount, snapshot, override or free map.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixCommandRequest, "assigned by the admin command gateway; excluded from the digest candidate"),
		schema.F("commandRequestOperationId", uuid, "the requester's idempotency key"),
		actionField(),
		caseFields(),
		schema.F("expectedResolutionRevision", schema.Int{Min: ResolutionRevision1, Max: ResolutionRevision1}, "always 1"),
		principal("requesterWorkforcePrincipalId", "the workforce principal who asks"),
		evidenceField(),
		schema.F("justification", schema.Text{MaxLength: 1000}, "why, in the requester's words"),
		schema.F("requestedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
