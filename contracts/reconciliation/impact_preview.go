package reconciliation

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// ImpactPreview is AdminCommandImpactPreview@1: what the approver is shown
// before approving. For this audience every effect is a literal: no ledger,
// reservation or owner-fact effect, only a re-evaluation; a preview that
// claims anything else does not decode.
//
//	adminCommandImpactPreviewRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	commandAudience = billing_finalization_reconciliation_resolution_command
//	finalizationReconciliationResolutionCommandRequest quadruple
//	effects = {ledger: none, reservation: none, ownerFacts: none, evaluation: reevaluate_current_owner_state}
//	statement = ImpactStatement
//	previewedAt                         excluded from the digest candidate
type ImpactPreview struct {
	Preview        strict.Quadruple
	CommandRequest strict.Quadruple
	PreviewedAt    time.Time
}

func (*ImpactPreview) Kind() string              { return KindImpactPreview }
func (p *ImpactPreview) Quad() *strict.Quadruple { return &p.Preview }

// ToJSON returns the full JSON form.
func (p *ImpactPreview) ToJSON() map[string]any {
	m := map[string]any{
		"commandAudience": AudienceResolutionCommand,
		"effects": map[string]any{"ledger": EffectNone, "reservation": EffectNone, "ownerFacts": EffectNone,
			"evaluation": ActionReevaluateCurrentOwnerState},
		"statement": ImpactStatement, "previewedAt": strict.FormatTimestamp(p.PreviewedAt),
	}
	p.CommandRequest.Put(m, PrefixCommandRequest)
	p.Preview.Put(m, PrefixImpactPreview)
	return m
}

// DecodeImpactPreview strictly decodes a preview and verifies its digest.
func DecodeImpactPreview(doc []byte) (*ImpactPreview, error) {
	m, err := decodeMap(KindImpactPreview, doc)
	if err != nil {
		return nil, err
	}
	return &ImpactPreview{Preview: quad(m, PrefixImpactPreview), CommandRequest: quad(m, PrefixCommandRequest), PreviewedAt: tm(m, "previewedAt")}, nil
}

var effectsDef = &schema.Def{Name: "AdminCommandEffectsV1",
	Doc: "The effects of a finalization reconciliation resolution command: none on the ledger, the reservation or any owner's facts; it only re-evaluates.",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("ledger", schema.Literal{Value: EffectNone}, "no posting"),
		schema.F("reservation", schema.Literal{Value: EffectNone}, "no release, settlement or terminal state"),
		schema.F("ownerFacts", schema.Literal{Value: EffectNone}, "no owner fact is overwritten"),
		schema.F("evaluation", schema.Literal{Value: ActionReevaluateCurrentOwnerState}, ""),
	)}}

// ImpactPreviewDef describes AdminCommandImpactPreview@1.
var ImpactPreviewDef = &schema.Def{Name: "AdminCommandImpactPreviewV1",
	Doc: "AdminCommandImpactPreview@1: the impact shown to the approver; for this audience no direct ledger or reservation effect.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixImpactPreview, "assigned by the admin command gateway; excluded from the digest candidate"),
		audienceField(),
		schema.Quad(PrefixCommandRequest, "the previewed FinalizationReconciliationResolutionCommandRequest@1"),
		schema.F("effects", schema.Ref{Def: effectsDef}, ""),
		schema.F("statement", schema.Literal{Value: ImpactStatement}, "said plainly to the approver"),
		schema.F("previewedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
