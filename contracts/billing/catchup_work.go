package billing

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// PurposeBillingCatchUpFence is the validateSettlementInputCurrent purpose
// of a catch-up verification (outbox document: purpose=billing_catch_up_fence).
const PurposeBillingCatchUpFence = "billing_catch_up_fence"

// DerivationCatchUpValidationOperation names the derivation of
// billingCatchUpValidationOperationId: purpose + the BillingCatchUp basis
// (with its algorithm) + the snapshot five-tuple to verify.
const DerivationCatchUpValidationOperation = "billing_catch_up_validation_operation@1"

// Work causes: why a generation exists.
const (
	// CatchUpCauseFinalization: the first Work the successful finalization
	// creates; it always verifies once, even when no watermark is ahead.
	CatchUpCauseFinalization = "finalization_committed"
	// CatchUpCauseSettlementInput: a newer current settlement input event
	// reopened the fence.
	CatchUpCauseSettlementInput = "settlement_input_observed"
	// CatchUpCauseSuccessor: the successor Work created atomically with a
	// transition (or an already-evaluated result) that rebaselined the fence.
	CatchUpCauseSuccessor = "transition_successor"
)

const (
	prefixCatchUpWork          = "billingSettlementCatchUpWork"
	fieldCatchUpBasisAlgorithm = "billingCatchUpBasisDigestAlgorithmVersion"
	fieldCatchUpBasisDigest    = "billingCatchUpBasisDigest"
	fieldCatchUpOperationID    = "billingCatchUpValidationOperationId"
)

var catchUpWorkSelf = strict.SelfAddressed{Prefix: prefixCatchUpWork, TimeFields: []string{"createdAt"}}

// CatchUpBasis is the BillingCatchUp basis a generation verifies: where the
// fence stood when the Work was created. Its digest (jcs-sha256-v1 over
// ToJSON) goes into the Work and the validation operation, so a Work of an
// older basis can never stand for a newer one.
type CatchUpBasis struct {
	SettlementDimensionID          string
	SettlementCatchUpFenceRevision int64
	WorkGeneration                 int64
	SettlementStateRevision        int64
	LastEvaluatedInput             SettlementInput
	InputToVerify                  SettlementInput
}

// ToJSON is the canonical basis tree.
func (b CatchUpBasis) ToJSON() map[string]any {
	return map[string]any{
		"settlementDimensionId":          b.SettlementDimensionID,
		"settlementCatchUpFenceRevision": b.SettlementCatchUpFenceRevision,
		"workGeneration":                 b.WorkGeneration,
		"settlementStateRevision":        b.SettlementStateRevision,
		"lastEvaluatedInput":             b.LastEvaluatedInput.toJSON(),
		"inputToVerify":                  b.InputToVerify.toJSON(),
	}
}

// Digest is the jcs-sha256-v1 digest of the basis.
func (b CatchUpBasis) Digest() digest.Digest {
	d, err := digest.Of(digest.JCSSHA256V1, b.ToJSON())
	if err != nil {
		panic("billing: catch-up basis digest: " + err.Error()) // only programming errors
	}
	return d
}

// CatchUpValidationOperationID derives billingCatchUpValidationOperationId.
func CatchUpValidationOperationID(basis digest.Digest, toVerify SettlementInput) string {
	return envelope.DeriveID(DerivationCatchUpValidationOperation, map[string]any{
		"purpose": PurposeBillingCatchUpFence,
		"billingCatchUpBasisDigestAlgorithmVersion": string(basis.Algorithm),
		"billingCatchUpBasisDigest":                 basis.Value,
		"settlementInput":                           toVerify.toJSON(),
	})
}

// BillingSettlementCatchUpWork is BillingSettlementCatchUpWork@1 — our
// definition of one immutable, content-addressed catch-up generation of a
// dimension (BI-3): verify with the Metering owner (purpose
// billing_catch_up_fence) whether InputToVerify is still current and, if a
// newer input is, commit the transition to it.
//
//	billingSettlementCatchUpWorkRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	dimension                              in full
//	settlementCatchUpFenceRevision         the fence revision that created this generation
//	workGeneration                         dense per dimension, from 1
//	workCause = finalization_committed | settlement_input_observed | transition_successor
//	settlementStateRevision                the settled state the basis starts from
//	lastEvaluatedInput                     the input that state settled
//	inputToVerify                          the highest input observed (≥ lastEvaluatedInput)
//	billingCatchUpBasisDigest pair         digest of CatchUpBasis
//	billingCatchUpValidationOperationId    derivation billing_catch_up_validation_operation@1
//	createdAt                              excluded from the digest candidate
type BillingSettlementCatchUpWork struct {
	Work      strict.Quadruple
	Dimension SettlementDimension
	Basis     CatchUpBasis
	WorkCause string
	CreatedAt time.Time
}

func (*BillingSettlementCatchUpWork) Kind() string              { return KindBillingSettlementCatchUpWork }
func (w *BillingSettlementCatchUpWork) Quad() *strict.Quadruple { return &w.Work }

// ValidationOperationID is the generation's billingCatchUpValidationOperationId.
func (w *BillingSettlementCatchUpWork) ValidationOperationID() string {
	return CatchUpValidationOperationID(w.Basis.Digest(), w.Basis.InputToVerify)
}

// ToJSON returns the full JSON form.
func (w *BillingSettlementCatchUpWork) ToJSON() map[string]any {
	b := w.Basis
	d := b.Digest()
	m := map[string]any{
		"settlementCatchUpFenceRevision": b.SettlementCatchUpFenceRevision,
		"workGeneration":                 b.WorkGeneration,
		"workCause":                      w.WorkCause,
		"settlementStateRevision":        b.SettlementStateRevision,
		"lastEvaluatedInput":             b.LastEvaluatedInput.toJSON(),
		"inputToVerify":                  b.InputToVerify.toJSON(),
		fieldCatchUpBasisAlgorithm:       string(d.Algorithm),
		fieldCatchUpBasisDigest:          d.Value,
		fieldCatchUpOperationID:          CatchUpValidationOperationID(d, b.InputToVerify),
		"createdAt":                      strict.FormatTimestamp(w.CreatedAt),
	}
	w.Dimension.put(m)
	w.Work.Put(m, prefixCatchUpWork)
	return m
}

// DecodeBillingSettlementCatchUpWork strictly decodes the Work, checks its
// rules and verifies its digest.
func DecodeBillingSettlementCatchUpWork(doc []byte) (*BillingSettlementCatchUpWork, error) {
	m, err := decodeSettlementMap(KindBillingSettlementCatchUpWork, doc)
	if err != nil {
		return nil, err
	}
	return &BillingSettlementCatchUpWork{Work: stlQuad(m, prefixCatchUpWork), Dimension: settlementDimensionOf(m),
		Basis: catchUpBasisOf(m), WorkCause: stlStr(m, "workCause"), CreatedAt: stlTime(m, "createdAt")}, nil
}

func catchUpBasisOf(m map[string]any) CatchUpBasis {
	return CatchUpBasis{
		SettlementDimensionID:          stlStr(m, "settlementDimensionId"),
		SettlementCatchUpFenceRevision: stlI64(m, "settlementCatchUpFenceRevision"),
		WorkGeneration:                 stlI64(m, "workGeneration"),
		SettlementStateRevision:        stlI64(m, "settlementStateRevision"),
		LastEvaluatedInput:             settlementInputOf(stlObj(m, "lastEvaluatedInput")),
		InputToVerify:                  settlementInputOf(stlObj(m, "inputToVerify")),
	}
}

// CatchUpWorkDef describes BillingSettlementCatchUpWork@1.
var CatchUpWorkDef = &schema.Def{Name: "BillingSettlementCatchUpWorkV1",
	Doc: "BillingSettlementCatchUpWork@1: one immutable catch-up verification generation of a settlement dimension.",
	Type: schema.Object{Fields: schema.Fields(
		stlSelfQuad(prefixCatchUpWork, "assigned by Billing's repository; excluded from the digest candidate"),
		settlementDimensionFields(),
		schema.F("settlementCatchUpFenceRevision", schema.Int{Min: 1}, "the fence revision that created this generation"),
		schema.F("workGeneration", schema.Int{Min: 1}, "dense per dimension"),
		schema.F("workCause", schema.Enum{Values: []string{CatchUpCauseFinalization, CatchUpCauseSettlementInput, CatchUpCauseSuccessor}}, ""),
		schema.F("settlementStateRevision", schema.Int{Min: 1}, "the settled state the basis starts from"),
		schema.F("lastEvaluatedInput", schema.Ref{Def: SettlementInputDef}, "the input that state settled"),
		schema.F("inputToVerify", schema.Ref{Def: SettlementInputDef}, "the highest input observed when the generation was created"),
		schema.DigestPairFields(fieldCatchUpBasisAlgorithm, fieldCatchUpBasisDigest, "digest of the BillingCatchUp basis"),
		schema.F(fieldCatchUpOperationID, schema.UUID{}, "derivation billing_catch_up_validation_operation@1"),
		schema.F("createdAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// catchUpWorkRules: the verification input is not behind the evaluated one
// (same version means same snapshot), and the basis digest and validation
// operation recompute.
func catchUpWorkRules(m map[string]any) error {
	if err := checkSettlementDimension(m); err != nil {
		return err
	}
	b := catchUpBasisOf(m)
	if err := checkInputNotBehind(b.InputToVerify, b.LastEvaluatedInput, "inputToVerify"); err != nil {
		return err
	}
	d := b.Digest()
	if got := stlDigest(m, fieldCatchUpBasisAlgorithm, fieldCatchUpBasisDigest); got != d {
		return fmt.Errorf("%w: billingCatchUpBasisDigest %s (want %s)", ErrSettlementDerivedID, got, d)
	}
	if got, want := stlStr(m, fieldCatchUpOperationID), CatchUpValidationOperationID(d, b.InputToVerify); got != want {
		return fmt.Errorf("%w: billingCatchUpValidationOperationId %s (want %s)", ErrSettlementDerivedID, got, want)
	}
	return nil
}

func checkInputNotBehind(x, base SettlementInput, name string) error {
	switch {
	case x.StateVersion < base.StateVersion:
		return fmt.Errorf("%w: %s state version %d is behind %d", ErrCatchUpRule, name, x.StateVersion, base.StateVersion)
	case x.StateVersion == base.StateVersion && x.Snapshot != base.Snapshot:
		return fmt.Errorf("%w: %s state version %d names another snapshot", ErrCatchUpRule, name, x.StateVersion)
	}
	return nil
}
