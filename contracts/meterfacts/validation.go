package meterfacts

import (
	"errors"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// KindSettlementInputCurrentValidationReceipt is the contract name of the
// receipt validateSettlementInputCurrent returns.
const KindSettlementInputCurrentValidationReceipt = "SettlementInputCurrentValidationReceipt@1"

// The four purposes of validateSettlementInputCurrent (ADR-031): Billing's
// finalization, the catch-up fence, the late settlement command and the
// post-finalization transition. No other purpose exists.
const (
	PurposeFinalization               = "finalization"
	PurposeBillingCatchUpFence        = "billing_catch_up_fence"
	PurposeLateSettlementCommand      = "late_settlement_command"
	PurposePostFinalizationTransition = "post_finalization_transition"

	ValidationCurrent    = "current"
	ValidationNotCurrent = "not_current"

	PrefixValidationReceipt        = "settlementInputCurrentValidationReceipt"
	PrefixSettlementInputSnapshot  = "settlementInputSnapshot"
	PrefixCurrentSettlementInput   = "currentSettlementInputSnapshot"
	validationReceiptTimeField     = "validatedAt"
	validationStateVersionField    = "settlementInputStateVersion"
	validationCurrentVersionField  = "currentSettlementInputStateVersion"
	validationManifestAlgorithm    = "inputManifestDigestAlgorithmVersion"
	validationManifestDigestField  = "inputManifestDigest"
	validationOperationField       = "validationOperationId"
	validationDimensionField       = "settlementDimensionId"
	validationPurposeField         = "purpose"
	validationResultField          = "result"
	validationResultDiscriminator  = "state"
	validationReceiptSchemaVersion = SchemaVersion1
)

// Purposes lists the four purposes.
var Purposes = []string{PurposeFinalization, PurposeBillingCatchUpFence, PurposeLateSettlementCommand, PurposePostFinalizationTransition}

// ErrNotCurrentRule marks a not_current receipt whose current five-tuple is
// not later than the validated one.
var ErrNotCurrentRule = errors.New("meterfacts: not_current names a current settlement input that is not later")

var validationSelf = strict.SelfAddressed{Prefix: PrefixValidationReceipt, TimeFields: []string{validationReceiptTimeField}}

// SettlementInputCurrentValidationReceipt is
// SettlementInputCurrentValidationReceipt@1, Metering's operation-bound
// answer to validateSettlementInputCurrent (ADR-031 "Receipt 精确绑定
// Snapshot 四元组、Purpose、Finalization Operation 与 Input Manifest Digest"):
//
//	settlementInputCurrentValidationReceipt quadruple   self (ref repository-owned)
//	purpose                                             one of the four purposes
//	validationOperationId                               the caller's operation: one receipt per operation
//	inputManifestDigest (with algorithm)                the caller's input manifest (or basis) the validation serves
//	settlementDimensionId                               the settlement dimension
//	settlementInputSnapshot quadruple + state version   the five-tuple that was validated
//	result = { state=current }
//	       | { state=not_current; currentSettlementInputSnapshot quadruple + state version }
//	validatedAt                                         excluded from the digest
//
// For purpose late_settlement_command (contracts/reconciliation, issue 32)
// validationOperationId is the lateSettlementCommandOperationId, the
// inputManifestDigest is the LateSettlementExposure@1's digest (the command's
// basis), the validated five-tuple is the exposure's settlement input, and
// only result current lets the command commit (reconciliation.CheckLateReceipt).
//
// There is no expiry: the receipt states what was current at its
// linearization point; a later head is a post-boundary correction, never a
// retroactive invalidation (no TTL field exists to misuse).
type SettlementInputCurrentValidationReceipt struct {
	Receipt               strict.Quadruple
	Purpose               string
	OperationID           string
	InputManifestDigest   digest.Digest
	SettlementDimensionID string
	Validated             strict.Quadruple
	ValidatedStateVersion int64
	// Current is result.state=current; otherwise CurrentSnapshot and
	// CurrentStateVersion are the dimension's current five-tuple.
	Current             bool
	CurrentSnapshot     strict.Quadruple
	CurrentStateVersion int64
	ValidatedAt         time.Time
}

func (*SettlementInputCurrentValidationReceipt) Kind() string {
	return KindSettlementInputCurrentValidationReceipt
}
func (r *SettlementInputCurrentValidationReceipt) Quad() *strict.Quadruple { return &r.Receipt }

// ToJSON returns the full JSON form.
func (r *SettlementInputCurrentValidationReceipt) ToJSON() map[string]any {
	m := map[string]any{
		validationPurposeField: r.Purpose, validationOperationField: r.OperationID,
		validationManifestAlgorithm: string(r.InputManifestDigest.Algorithm), validationManifestDigestField: r.InputManifestDigest.Value,
		validationDimensionField: r.SettlementDimensionID, validationStateVersionField: r.ValidatedStateVersion,
		validationReceiptTimeField: strict.FormatTimestamp(r.ValidatedAt),
	}
	r.Receipt.Put(m, PrefixValidationReceipt)
	r.Validated.Put(m, PrefixSettlementInputSnapshot)
	res := map[string]any{validationResultDiscriminator: ValidationCurrent}
	if !r.Current {
		res[validationResultDiscriminator] = ValidationNotCurrent
		r.CurrentSnapshot.Put(res, PrefixCurrentSettlementInput)
		res[validationCurrentVersionField] = r.CurrentStateVersion
	}
	m[validationResultField] = res
	return m
}

// DecodeSettlementInputCurrentValidationReceipt strictly decodes a receipt and verifies its digest.
func DecodeSettlementInputCurrentValidationReceipt(doc []byte) (*SettlementInputCurrentValidationReceipt, error) {
	m, err := decodeMap(KindSettlementInputCurrentValidationReceipt, doc)
	if err != nil {
		return nil, err
	}
	res := obj(m, validationResultField)
	r := &SettlementInputCurrentValidationReceipt{
		Receipt: quad(m, PrefixValidationReceipt), Purpose: str(m, validationPurposeField), OperationID: str(m, validationOperationField),
		InputManifestDigest:   digestOf(m, validationManifestAlgorithm, validationManifestDigestField),
		SettlementDimensionID: str(m, validationDimensionField), Validated: quad(m, PrefixSettlementInputSnapshot),
		ValidatedStateVersion: i64(m, validationStateVersionField), Current: str(res, validationResultDiscriminator) == ValidationCurrent,
		ValidatedAt: timeOf(m, validationReceiptTimeField),
	}
	if !r.Current {
		r.CurrentSnapshot, r.CurrentStateVersion = quad(res, PrefixCurrentSettlementInput), i64(res, validationCurrentVersionField)
	}
	return r, nil
}

// validationRules: a not_current answer names a later current five-tuple.
func validationRules(m map[string]any) error {
	res := obj(m, validationResultField)
	if str(res, validationResultDiscriminator) == ValidationNotCurrent && i64(res, validationCurrentVersionField) <= i64(m, validationStateVersionField) {
		return fmt.Errorf("%w: current version %d, validated %d", ErrNotCurrentRule, i64(res, validationCurrentVersionField), i64(m, validationStateVersionField))
	}
	return nil
}

var validationResultDef = &schema.Def{Name: "SettlementInputValidationResultV1", Doc: "current, or not_current with the dimension's current five-tuple.",
	Type: schema.Union{Discriminator: validationResultDiscriminator, Branches: []schema.Branch{
		{Value: ValidationCurrent, Doc: "the validated five-tuple is the dimension's Current at the linearization point"},
		{Value: ValidationNotCurrent, Doc: "a later snapshot is Current; only its five-tuple is returned (read the snapshot and lineage exactly)",
			Fields: schema.Fields(
				refQuad(PrefixCurrentSettlementInput, "the Current SettlementInputSnapshot@1"),
				schema.F(validationCurrentVersionField, schema.Int{Min: 2}, "later than the validated state version"),
			)},
	}}}

// ValidationReceiptDef describes SettlementInputCurrentValidationReceipt@1.
var ValidationReceiptDef = &schema.Def{Name: "SettlementInputCurrentValidationReceiptV1", Doc: "SettlementInputCurrentValidationReceipt@1: Metering's operation-bound answer whether a settlement input five-tuple is Current; no expiry.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixValidationReceipt, "repository-owned; excluded from the digest candidate"),
		schema.F(validationPurposeField, schema.Enum{Values: Purposes}, "the caller's purpose"),
		schema.F(validationOperationField, schema.UUID{}, "the caller's operation; one receipt per operation"),
		schema.DigestPairFields(validationManifestAlgorithm, validationManifestDigestField, "the caller's input manifest (or basis) digest"),
		schema.F(validationDimensionField, schema.UUID{}, "the settlement dimension (envelope.SettlementDimensionID)"),
		refQuad(PrefixSettlementInputSnapshot, "the validated SettlementInputSnapshot@1"),
		schema.F(validationStateVersionField, schema.Int{Min: 1}, "the validated state version"),
		schema.F(validationResultField, schema.Ref{Def: validationResultDef}, ""),
		schema.F(validationReceiptTimeField, schema.Timestamp{}, "the linearization point; excluded from the digest candidate (no expiry)"),
	)}}
