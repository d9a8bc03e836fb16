package reconciliation

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Approval is AdminCommandApproval@1: another workforce principal approves
// exactly this request after seeing exactly this preview. The requester
// never approves their own command (ErrSelfApproval, in the decoder and so
// in Seal).
//
//	adminCommandApprovalRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	finalizationReconciliationResolutionCommandRequest quadruple
//	adminCommandImpactPreview quadruple
//	requesterWorkforcePrincipalId, approverWorkforcePrincipalId (≠ requester)
//	approvedAt                          excluded from the digest candidate
type Approval struct {
	Approval                      strict.Quadruple
	CommandRequest                strict.Quadruple
	ImpactPreview                 strict.Quadruple
	RequesterWorkforcePrincipalID string
	ApproverWorkforcePrincipalID  string
	ApprovedAt                    time.Time
}

func (*Approval) Kind() string              { return KindApproval }
func (a *Approval) Quad() *strict.Quadruple { return &a.Approval }

// ToJSON returns the full JSON form.
func (a *Approval) ToJSON() map[string]any {
	m := map[string]any{
		"requesterWorkforcePrincipalId": a.RequesterWorkforcePrincipalID, "approverWorkforcePrincipalId": a.ApproverWorkforcePrincipalID,
		"approvedAt": strict.FormatTimestamp(a.ApprovedAt),
	}
	a.CommandRequest.Put(m, PrefixCommandRequest)
	a.ImpactPreview.Put(m, PrefixImpactPreview)
	a.Approval.Put(m, PrefixApproval)
	return m
}

// DecodeApproval strictly decodes an approval, refuses a self-approval and
// verifies its digest.
func DecodeApproval(doc []byte) (*Approval, error) {
	m, err := decodeMap(KindApproval, doc)
	if err != nil {
		return nil, err
	}
	return &Approval{
		Approval: quad(m, PrefixApproval), CommandRequest: quad(m, PrefixCommandRequest), ImpactPreview: quad(m, PrefixImpactPreview),
		RequesterWorkforcePrincipalID: str(m, "requesterWorkforcePrincipalId"), ApproverWorkforcePrincipalID: str(m, "approverWorkforcePrincipalId"),
		ApprovedAt: tm(m, "approvedAt"),
	}, nil
}

// ApprovalDef describes AdminCommandApproval@1.
var ApprovalDef = &schema.Def{Name: "AdminCommandApprovalV1",
	Doc: "AdminCommandApproval@1: a principal other than the requester approves exactly one request after exactly one preview.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixApproval, "assigned by the admin command gateway; excluded from the digest candidate"),
		schema.Quad(PrefixCommandRequest, "the approved FinalizationReconciliationResolutionCommandRequest@1"),
		schema.Quad(PrefixImpactPreview, "the AdminCommandImpactPreview@1 the approver saw"),
		principal("requesterWorkforcePrincipalId", "the request's requester"),
		principal("approverWorkforcePrincipalId", "never the requester"),
		schema.F("approvedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// approvalRules: no self-approval.
func approvalRules(m map[string]any) error {
	if str(m, "approverWorkforcePrincipalId") == str(m, "requesterWorkforcePrincipalId") {
		return fmt.Errorf("%w: %s", ErrSelfApproval, str(m, "approverWorkforcePrincipalId"))
	}
	return nil
}
