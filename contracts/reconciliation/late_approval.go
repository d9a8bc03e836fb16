package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// LateApproval is LateSettlementCommandApproval@1: another workforce
// principal approves exactly this late request after seeing exactly this
// preview. A kind of its own (not AdminCommandApproval@1), so an approval
// of a re-evaluation never counts as an approval to charge. The requester
// never approves their own command (ErrSelfApproval, in the decoder and so
// in Seal).
//
//	lateSettlementCommandApprovalRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	lateSettlementCommandRequest, lateSettlementCommandImpactPreview quadruples
//	requesterWorkforcePrincipalId, approverWorkforcePrincipalId (≠ requester)
//	approvedAt                          excluded from the digest candidate
type LateApproval struct {
	Approval                      strict.Quadruple
	CommandRequest                strict.Quadruple
	ImpactPreview                 strict.Quadruple
	RequesterWorkforcePrincipalID string
	ApproverWorkforcePrincipalID  string
	ApprovedAt                    time.Time
}

func (*LateApproval) Kind() string              { return KindLateApproval }
func (a *LateApproval) Quad() *strict.Quadruple { return &a.Approval }

// ToJSON returns the full JSON form.
func (a *LateApproval) ToJSON() map[string]any {
	m := map[string]any{
		"requesterWorkforcePrincipalId": a.RequesterWorkforcePrincipalID, "approverWorkforcePrincipalId": a.ApproverWorkforcePrincipalID,
		"approvedAt": strict.FormatTimestamp(a.ApprovedAt),
	}
	a.CommandRequest.Put(m, PrefixLateCommandRequest)
	a.ImpactPreview.Put(m, PrefixLateImpactPreview)
	a.Approval.Put(m, PrefixLateApproval)
	return m
}

// DecodeLateApproval strictly decodes an approval, refuses a self-approval
// and verifies its digest.
func DecodeLateApproval(doc []byte) (*LateApproval, error) {
	m, err := decodeMap(KindLateApproval, doc)
	if err != nil {
		return nil, err
	}
	return &LateApproval{
		Approval: quad(m, PrefixLateApproval), CommandRequest: quad(m, PrefixLateCommandRequest), ImpactPreview: quad(m, PrefixLateImpactPreview),
		RequesterWorkforcePrincipalID: str(m, "requesterWorkforcePrincipalId"), ApproverWorkforcePrincipalID: str(m, "approverWorkforcePrincipalId"),
		ApprovedAt: tm(m, "approvedAt"),
	}, nil
}

// LateApprovalDef describes LateSettlementCommandApproval@1.
var LateApprovalDef = &schema.Def{Name: "LateSettlementCommandApprovalV1",
	Doc: "LateSettlementCommandApproval@1: a principal other than the requester approves exactly one late settlement request after exactly one preview.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixLateApproval, "assigned by the admin command gateway; excluded from the digest candidate"),
		schema.Quad(PrefixLateCommandRequest, "the approved LateSettlementCommandRequest@1"),
		schema.Quad(PrefixLateImpactPreview, "the LateSettlementCommandImpactPreview@1 the approver saw"),
		principal("requesterWorkforcePrincipalId", "the request's requester"),
		principal("approverWorkforcePrincipalId", "never the requester"),
		schema.F("approvedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
