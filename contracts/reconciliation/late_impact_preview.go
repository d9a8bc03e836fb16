package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// LateImpactPreview is LateSettlementCommandImpactPreview@1: what the
// approver is shown before approving a late command. Unlike the
// finalization chain's preview this command does move money, so the
// effect is stated, but only as literals: one post-release adjustment of
// exactly the exposure's amount, funded under Billing's FundingDecision,
// the exposure open → resolved, the dimension's settlement state one
// revision on; no reservation or owner-fact effect. The preview names the
// exposure (whose quadruple fixes the amount) and carries no amount of its
// own (OP-1): a preview that claims anything else does not decode.
//
//	lateSettlementCommandImpactPreviewRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	commandAudience = billing_late_settlement_command
//	lateSettlementCommandRequest quadruple
//	lateSettlementExposureId, exposureSettlementStateRevision, lateSettlementExposure quadruple
//	effects = {ledger: post_release_adjustment_of_exposure_amount, funding: billing_funding_decision,
//	           exposure: open_to_resolved, settlementState: advance_one_revision,
//	           reservation: none, ownerFacts: none}
//	statement = LateImpactStatement
//	previewedAt                         excluded from the digest candidate
type LateImpactPreview struct {
	Preview        strict.Quadruple
	CommandRequest strict.Quadruple
	Exposure       LateExposureRef
	PreviewedAt    time.Time
}

func (*LateImpactPreview) Kind() string              { return KindLateImpactPreview }
func (p *LateImpactPreview) Quad() *strict.Quadruple { return &p.Preview }

// ToJSON returns the full JSON form.
func (p *LateImpactPreview) ToJSON() map[string]any {
	m := map[string]any{
		"commandAudience": AudienceLateSettlementCommand,
		"effects": map[string]any{"ledger": LateEffectLedger, "funding": LateEffectFunding, "exposure": LateEffectExposure,
			"settlementState": LateEffectSettlementState, "reservation": EffectNone, "ownerFacts": EffectNone},
		"statement": LateImpactStatement, "previewedAt": strict.FormatTimestamp(p.PreviewedAt),
	}
	p.CommandRequest.Put(m, PrefixLateCommandRequest)
	p.Exposure.put(m)
	p.Preview.Put(m, PrefixLateImpactPreview)
	return m
}

// DecodeLateImpactPreview strictly decodes a preview and verifies its digest.
func DecodeLateImpactPreview(doc []byte) (*LateImpactPreview, error) {
	m, err := decodeMap(KindLateImpactPreview, doc)
	if err != nil {
		return nil, err
	}
	return &LateImpactPreview{Preview: quad(m, PrefixLateImpactPreview), CommandRequest: quad(m, PrefixLateCommandRequest),
		Exposure: exposureRefOf(m), PreviewedAt: tm(m, "previewedAt")}, nil
}

var lateEffectsDef = &schema.Def{Name: "LateSettlementCommandEffectsV1",
	Doc: "The effects of a late settlement command: one post-release adjustment of exactly the exposure amount under Billing's FundingDecision, the exposure resolved, the settlement state one revision on; nothing else.",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("ledger", schema.Literal{Value: LateEffectLedger}, "one post-release adjustment, exactly the exposure amount"),
		schema.F("funding", schema.Literal{Value: LateEffectFunding}, "funded only under Billing's FundingDecision@1"),
		schema.F("exposure", schema.Literal{Value: LateEffectExposure}, ""),
		schema.F("settlementState", schema.Literal{Value: LateEffectSettlementState}, "from → from + 1"),
		schema.F("reservation", schema.Literal{Value: EffectNone}, "the released reservation is not reopened"),
		schema.F("ownerFacts", schema.Literal{Value: EffectNone}, "no owner fact is overwritten"),
	)}}

// LateImpactPreviewDef describes LateSettlementCommandImpactPreview@1.
var LateImpactPreviewDef = &schema.Def{Name: "LateSettlementCommandImpactPreviewV1",
	Doc: "LateSettlementCommandImpactPreview@1: the impact shown to the approver of a late settlement command, as literals; no amount of its own.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixLateImpactPreview, "assigned by the admin command gateway; excluded from the digest candidate"),
		lateAudienceField(),
		schema.Quad(PrefixLateCommandRequest, "the previewed LateSettlementCommandRequest@1"),
		exposureRefFields(),
		schema.F("effects", schema.Ref{Def: lateEffectsDef}, ""),
		schema.F("statement", schema.Literal{Value: LateImpactStatement}, "said plainly to the approver"),
		schema.F("previewedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
