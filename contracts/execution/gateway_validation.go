package execution

import (
	"errors"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// KindAvailabilityCurrentValidationReceipt is the receipt of the Gateway's
// operation-bound current validation of an availability snapshot.
const KindAvailabilityCurrentValidationReceipt = "GatewayAvailabilityCurrentValidationReceipt@1"

// PurposeMeteringEligibilityBasis is the one purpose built: the metering
// worker validates the availability its Eligibility Basis uses (outbox
// "Gateway Event的Source读取与Current验证必须分阶段"). There is no generic
// purpose; the provider-cost candidate purpose is not built yet.
const PurposeMeteringEligibilityBasis = "metering_eligibility_basis"

// Validation results and prefixes of the receipt.
const (
	AvailabilityValidationCurrent    = "current"
	AvailabilityValidationNotCurrent = "not_current"

	PrefixAvailabilityValidationReceipt = "availabilityCurrentValidationReceipt"
	PrefixValidatedAvailability         = "validatedAvailability"
	PrefixCurrentAvailabilityAtValidate = "currentAvailabilitySnapshot"
)

// ErrAvailabilityValidationRule marks a not_current receipt whose current
// state version is not later than the validated one.
var ErrAvailabilityValidationRule = errors.New("execution: not_current names a current availability that is not later")

var availabilityValidationSelf = strict.SelfAddressed{Prefix: PrefixAvailabilityValidationReceipt, TimeFields: []string{"validatedAt"}}

// AvailabilityCurrentValidationReceipt is
// GatewayAvailabilityCurrentValidationReceipt@1 — our definition of the
// "Current Receipt" the spec asks for after the bootstrap read:
//
//	availabilityCurrentValidationReceipt quadruple   self (ref owned by the Gateway)
//	purpose                                          why it was asked (no generic purpose)
//	validationOperationId                            the caller's operation: one receipt per operation
//	basisDigest (with algorithm)                     the caller's basis (Eligibility Basis) the answer serves
//	slot key, evidence kind, dimension               the availability chain
//	validatedAvailability quadruple + state version  the five-tuple that was validated
//	result = { state=current }
//	       | { state=not_current; currentAvailabilitySnapshot quadruple + state version }
//	validatedAt                                      excluded from the digest
//
// No expiry: it states what was Current at its linearization point.
type AvailabilityCurrentValidationReceipt struct {
	Receipt     strict.Quadruple
	Purpose     string
	OperationID string
	BasisDigest digest.Digest
	SlotKey
	EvidenceKind          string
	DimensionKey          string
	Validated             strict.Quadruple
	ValidatedStateVersion int64
	// Current is result.state=current; otherwise CurrentSnapshot and
	// CurrentStateVersion are the chain's current five-tuple.
	Current             bool
	CurrentSnapshot     strict.Quadruple
	CurrentStateVersion int64
	ValidatedAt         time.Time
}

func (*AvailabilityCurrentValidationReceipt) Kind() string {
	return KindAvailabilityCurrentValidationReceipt
}
func (r *AvailabilityCurrentValidationReceipt) Quad() *strict.Quadruple { return &r.Receipt }

// ToJSON returns the full JSON form.
func (r *AvailabilityCurrentValidationReceipt) ToJSON() map[string]any {
	m := map[string]any{"purpose": r.Purpose, "validationOperationId": r.OperationID,
		"basisDigestAlgorithmVersion": string(r.BasisDigest.Algorithm), "basisDigest": r.BasisDigest.Value,
		"providerEvidenceKind": r.EvidenceKind, "evidenceDimensionKey": r.DimensionKey,
		"validatedStateVersion": r.ValidatedStateVersion, "validatedAt": strict.FormatTimestamp(r.ValidatedAt)}
	r.SlotKey.put(m)
	r.Receipt.Put(m, PrefixAvailabilityValidationReceipt)
	r.Validated.Put(m, PrefixValidatedAvailability)
	res := map[string]any{"state": AvailabilityValidationCurrent}
	if !r.Current {
		res["state"] = AvailabilityValidationNotCurrent
		r.CurrentSnapshot.Put(res, PrefixCurrentAvailabilityAtValidate)
		res["currentStateVersion"] = r.CurrentStateVersion
	}
	m["result"] = res
	return m
}

// DecodeAvailabilityCurrentValidationReceipt strictly decodes a receipt and verifies its digest.
func DecodeAvailabilityCurrentValidationReceipt(doc []byte) (*AvailabilityCurrentValidationReceipt, error) {
	m, err := decodeMap(KindAvailabilityCurrentValidationReceipt, doc)
	if err != nil {
		return nil, err
	}
	res, _ := m["result"].(map[string]any)
	r := &AvailabilityCurrentValidationReceipt{Receipt: quad(m, PrefixAvailabilityValidationReceipt),
		Purpose: str(m, "purpose"), OperationID: str(m, "validationOperationId"),
		BasisDigest: digest.Digest{Algorithm: digest.Algorithm(str(m, "basisDigestAlgorithmVersion")), Value: str(m, "basisDigest")},
		SlotKey:     readSlotKey(m), EvidenceKind: str(m, "providerEvidenceKind"), DimensionKey: str(m, "evidenceDimensionKey"),
		Validated: quad(m, PrefixValidatedAvailability), ValidatedStateVersion: i64(m, "validatedStateVersion"),
		Current: str(res, "state") == AvailabilityValidationCurrent, ValidatedAt: timeOf(m, "validatedAt")}
	if !r.Current {
		r.CurrentSnapshot, r.CurrentStateVersion = quad(res, PrefixCurrentAvailabilityAtValidate), i64(res, "currentStateVersion")
	}
	return r, nil
}

// availabilityValidationRules: not_current names a later state version.
func availabilityValidationRules(m map[string]any) error {
	res, _ := m["result"].(map[string]any)
	if str(res, "state") == AvailabilityValidationNotCurrent && i64(res, "currentStateVersion") <= i64(m, "validatedStateVersion") {
		return fmt.Errorf("%w: current %d, validated %d", ErrAvailabilityValidationRule, i64(res, "currentStateVersion"), i64(m, "validatedStateVersion"))
	}
	return nil
}

var availabilityValidationResultDef = &schema.Def{Name: "GatewayAvailabilityValidationResultV1", Doc: "current, or not_current with the chain's current five-tuple.",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: AvailabilityValidationCurrent, Doc: "the validated snapshot is the chain's Current at the linearization point"},
		{Value: AvailabilityValidationNotCurrent, Doc: "a later snapshot is Current (a newer Gateway event follows)",
			Fields: schema.Fields(refQuad(PrefixCurrentAvailabilityAtValidate, "the Current availability snapshot"),
				schema.F("currentStateVersion", schema.Int{Min: 2}, "later than the validated state version"))},
	}}}

// AvailabilityCurrentValidationReceiptDef describes GatewayAvailabilityCurrentValidationReceipt@1.
var AvailabilityCurrentValidationReceiptDef = &schema.Def{Name: "GatewayAvailabilityCurrentValidationReceiptV1", Doc: "GatewayAvailabilityCurrentValidationReceipt@1: the Gateway's operation-bound answer whether an availability snapshot is its chain's Current; no expiry.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixAvailabilityValidationReceipt, "assigned by the Gateway; excluded from the digest candidate"),
		schema.F("purpose", schema.Enum{Values: []string{PurposeMeteringEligibilityBasis}}, "the caller's purpose"),
		schema.F("validationOperationId", schema.UUID{}, "the caller's operation; one receipt per operation"),
		schema.DigestPairFields("basisDigestAlgorithmVersion", "basisDigest", "the caller's basis the validation serves"),
		slotKeyFields(),
		schema.F("providerEvidenceKind", schema.Enum{Values: []string{EvidenceProviderUsage, EvidenceProviderCost}}, ""),
		schema.F("evidenceDimensionKey", schema.KeyText, ""),
		refQuad(PrefixValidatedAvailability, "the validated GatewayEvidenceAvailabilitySnapshot@1"),
		schema.F("validatedStateVersion", schema.Int{Min: 1}, ""),
		schema.F("result", schema.Ref{Def: availabilityValidationResultDef}, ""),
		schema.F("validatedAt", schema.Timestamp{}, "the linearization point; excluded from the digest candidate (no expiry)"),
	)}}
