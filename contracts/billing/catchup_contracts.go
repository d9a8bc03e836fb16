package billing

// This file is the registry of the settlement catch-up and post-finality
// transition contracts (ADR-031 "终局后变化采用追加式 Transition", the
// outbox document's catch-up receipt rules; BI-2, BI-3, BSC-*):
//
//	BillingSettlementTransition@1   one append-only settlement step of a dimension after finalization
//	LateSettlementExposure@1        a positive difference after release, recorded and blocked (never charged)
//	BillingSettlementCatchUpWork@1  immutable, content-addressed catch-up verification work of one generation
//	BillingSettlementCatchUpFence@1 one revision of a dimension's catch-up fence (boundary DTO)
//	BillingSettlementCatchUpWorkAttemptFinished@1 the one finish of a Work generation
//
// The documents name these objects and some of their fields; the field lists
// below are this project's definition, and each type's comment says why a
// field is there. All are content-addressed with a quadruple (ref,
// schemaVersion "1", digestAlgorithmVersion, digest); the digest candidate is
// the full JSON form without the repository-owned ref, the object's own time
// field and the digest (CT-3). Names in this file carry a settlement/catch-up
// prefix: the package is shared with the finalization contracts.

import (
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/sealed"
	"github.com/oceanway/core/contracts/strict"
)

// SettlementSchemaVersion1 is the schema version of the catch-up and
// transition objects.
const SettlementSchemaVersion1 = "1"

// Contract names (spec names).
const (
	KindBillingSettlementTransition   = "BillingSettlementTransition@1"
	KindLateSettlementExposure        = "LateSettlementExposure@1"
	KindBillingSettlementCatchUpWork  = "BillingSettlementCatchUpWork@1"
	KindBillingSettlementCatchUpFence = "BillingSettlementCatchUpFence@1"
)

// LateEligibleDispositionReconcileBeforeCharge is the first phase's
// lateEligibleDisposition: a positive difference after the reservation was
// released is never charged automatically (BI-2).
const LateEligibleDispositionReconcileBeforeCharge = "reconcile_before_charge"

// Errors of the refinement rules a shape cannot express.
var (
	// ErrTransitionRule: revisions not contiguous, amounts that do not add
	// up for the kind, causation not matching the from revision, or a
	// settlement input that does not advance.
	ErrTransitionRule = errors.New("billing: settlement transition rule violated")
	// ErrExposureRule: a non-positive exposure amount.
	ErrExposureRule = errors.New("billing: late settlement exposure rule violated")
	// ErrCatchUpRule: a verification input behind the evaluated input, or a
	// caught_up fence whose watermark is ahead.
	ErrCatchUpRule = errors.New("billing: settlement catch-up rule violated")
	// ErrSettlementDerivedID: a derived identifier (settlement dimension,
	// validation operation, catch-up basis digest, exposure id) does not recompute.
	ErrSettlementDerivedID = errors.New("billing: derived identifier does not recompute")
	// ErrInvalidSettlementObject: a Go-built object that does not satisfy its
	// description (SealSettlement refuses it).
	ErrInvalidSettlementObject = errors.New("billing: invalid settlement object")
)

// SettlementSealed is a content-addressed catch-up or transition object.
type SettlementSealed = sealed.Object

var settlementKindsInOrder = []string{
	KindBillingSettlementTransition, KindLateSettlementExposure,
	KindBillingSettlementCatchUpWork, KindBillingSettlementCatchUpFence,
	KindBillingSettlementCatchUpWorkAttemptFinished,
}

// settlementRegistry binds each catch-up or transition kind to its
// description, self-addressing and rules (contracts/sealed).
var settlementRegistry = sealed.Registry{Invalid: ErrInvalidSettlementObject, Specs: func() map[string]sealed.Spec {
	return map[string]sealed.Spec{
		KindBillingSettlementTransition:                 {Def: TransitionDef, Self: transitionSelf, Rules: transitionRules},
		KindLateSettlementExposure:                      {Def: ExposureDef, Self: exposureSelf, Rules: exposureRules},
		KindBillingSettlementCatchUpWork:                {Def: CatchUpWorkDef, Self: catchUpWorkSelf, Rules: catchUpWorkRules},
		KindBillingSettlementCatchUpFence:               {Def: CatchUpFenceDef, Self: catchUpFenceSelf, Rules: catchUpFenceRules},
		KindBillingSettlementCatchUpWorkAttemptFinished: {Def: CatchUpFinishedDef, Self: catchUpFinishedSelf, Rules: catchUpFinishedRules},
	}
}}

// SealSettlement sets x's schema version 1, jcs-sha256-v1 and the digest of
// its candidate, checks the result against the description and the rules,
// and returns the canonical body. The ref must already be set.
func SealSettlement(x SettlementSealed) ([]byte, error) { return settlementRegistry.Seal(x) }

// SettlementDigestOf returns the digest of x's candidate (x need not be sealed).
func SettlementDigestOf(x SettlementSealed) (digest.Digest, error) {
	return settlementRegistry.DigestOf(x, digest.JCSSHA256V1)
}

// decodeSettlementMap strictly decodes doc with the kind's description,
// checks its rules and verifies that the embedded digest recomputes.
func decodeSettlementMap(kind string, doc []byte) (map[string]any, error) {
	return settlementRegistry.Decode(kind, doc)
}

// SettlementContract is one catch-up or transition kind as contracts/kinds
// and contracts/schemagen list it.
type SettlementContract struct {
	Name     string
	Validate func(doc []byte) error
	Digest   func(doc []byte) (digest.Digest, error)
	Def      *schema.Def
}

// SettlementContracts lists the catch-up and transition kinds in a fixed order.
func SettlementContracts() []SettlementContract {
	var out []SettlementContract
	for _, kind := range settlementKindsInOrder {
		s, _ := settlementRegistry.Spec(kind)
		out = append(out, SettlementContract{
			Name: kind,
			Def:  s.Def,
			Validate: func(doc []byte) error {
				_, err := decodeSettlementMap(kind, doc)
				return err
			},
			Digest: func(doc []byte) (digest.Digest, error) { return settlementRegistry.DigestDoc(kind, doc, "") },
		})
	}
	return out
}

// SettlementSelfAddressing returns where a kind keeps its own quadruple and
// which time field its candidate excludes.
func SettlementSelfAddressing(kind string) (strict.SelfAddressed, bool) {
	s, ok := settlementRegistry.Spec(kind)
	return s.Self, ok
}

// --- shared building blocks ----------------------------------------------

// SettlementDimension is the identity every catch-up and transition object
// carries in full: consumers never look a step up from an attempt.
type SettlementDimension struct {
	BillingReservationID string
	BillingAccountID     string
	RunID                string
	RunStepID            string
	ExecutionAttemptID   string
	ChargeDimensionKey   string
	EconomicIdentity     envelope.SettlementEconomicIdentityV1
}

// SettlementDimensionID is the Contracts-deterministic id of the dimension.
func (d SettlementDimension) SettlementDimensionID() string {
	return envelope.SettlementDimensionID(d.BillingReservationID, d.RunID, d.RunStepID, d.ExecutionAttemptID, d.ChargeDimensionKey)
}

func (d SettlementDimension) put(m map[string]any) {
	m["billingReservationId"] = d.BillingReservationID
	m["billingAccountId"] = d.BillingAccountID
	m["runId"] = d.RunID
	m["runStepId"] = d.RunStepID
	m["executionAttemptId"] = d.ExecutionAttemptID
	m["chargeDimensionKey"] = d.ChargeDimensionKey
	m["settlementDimensionId"] = d.SettlementDimensionID()
	m["settlementEconomicIdentity"] = d.EconomicIdentity.Map()
}

func settlementDimensionOf(m map[string]any) SettlementDimension {
	e := stlObj(m, "settlementEconomicIdentity")
	return SettlementDimension{
		BillingReservationID: stlStr(m, "billingReservationId"), BillingAccountID: stlStr(m, "billingAccountId"),
		RunID: stlStr(m, "runId"), RunStepID: stlStr(m, "runStepId"), ExecutionAttemptID: stlStr(m, "executionAttemptId"),
		ChargeDimensionKey: stlStr(m, "chargeDimensionKey"),
		EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: stlStr(e, "kind"), EntitlementKey: stlStr(e, "entitlementKey"),
			Unit: stlStr(e, "unit"), Currency: stlStr(e, "currency")},
	}
}

func settlementDimensionFields() []schema.Field {
	return schema.Fields(
		schema.F("billingReservationId", schema.UUID{}, ""),
		schema.F("billingAccountId", schema.UUID{}, ""),
		schema.F("runId", schema.UUID{}, ""),
		schema.F("runStepId", schema.UUID{}, ""),
		schema.F("executionAttemptId", schema.UUID{}, ""),
		schema.F("chargeDimensionKey", schema.KeyText, "registered charge dimension key"),
		schema.F("settlementDimensionId", schema.UUID{}, "derivation settlement_dimension@1 over reservation/run/step/attempt/dimension"),
		schema.F("settlementEconomicIdentity", schema.Ref{Def: envelope.EconomicIdentityDef}, ""),
	)
}

// checkSettlementDimension: settlementDimensionId recomputes.
func checkSettlementDimension(m map[string]any) error {
	want := envelope.SettlementDimensionID(stlStr(m, "billingReservationId"), stlStr(m, "runId"), stlStr(m, "runStepId"),
		stlStr(m, "executionAttemptId"), stlStr(m, "chargeDimensionKey"))
	if got := stlStr(m, "settlementDimensionId"); got != want {
		return fmt.Errorf("%w: settlementDimensionId %s (want %s)", ErrSettlementDerivedID, got, want)
	}
	return nil
}

// SettlementInput is the settlement input five-tuple: the
// SettlementInputSnapshot@1 quadruple and its state version.
type SettlementInput struct {
	Snapshot     strict.Quadruple
	StateVersion int64
}

const prefixSettlementInputSnapshot = "settlementInputSnapshot"

func (s SettlementInput) toJSON() map[string]any {
	m := map[string]any{"settlementInputStateVersion": s.StateVersion}
	s.Snapshot.Put(m, prefixSettlementInputSnapshot)
	return m
}

func settlementInputOf(m map[string]any) SettlementInput {
	return SettlementInput{Snapshot: stlQuad(m, prefixSettlementInputSnapshot), StateVersion: stlI64(m, "settlementInputStateVersion")}
}

// SettlementInputDef is the settlement input five-tuple.
var SettlementInputDef = &schema.Def{Name: "SettlementInputV1", Doc: "A SettlementInputSnapshot@1 five-tuple: quadruple and state version.",
	Type: schema.Object{Fields: schema.Fields(
		stlRefQuad(prefixSettlementInputSnapshot, "SettlementInputSnapshot@1"),
		schema.F("settlementInputStateVersion", schema.Int{Min: 1}, ""),
	)}}

func stlSelfQuad(prefix, doc string) []schema.Field {
	q := schema.Quad(prefix, doc)
	q[1].Type = schema.SchemaVersion{Known: []string{SettlementSchemaVersion1}}
	return q
}

// stlRefQuad is a referenced quadruple of another owner's object; its schema
// version is that object's, so only its form is checked here.
func stlRefQuad(prefix, doc string) []schema.Field { return schema.Quad(prefix, doc) }

// parseAmount reads a canonical decimal amount exactly (never a float).
func parseAmount(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil
	}
	return r
}

// FormatAmount renders an exact non-negative amount in the canonical
// AmountText form (no exponent, no trailing fractional zeros).
func FormatSettlementAmount(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	s := r.FloatString(18)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	return s
}

// --- map accessors on description-checked trees ---------------------------

func stlStr(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func stlI64(m map[string]any, k string) int64 { n, _ := m[k].(int64); return n }

func stlObj(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }

func stlQuad(m map[string]any, prefix string) strict.Quadruple {
	f := strict.Fields(prefix)
	return strict.Quadruple{Ref: stlStr(m, f[0]), SchemaVersion: stlStr(m, f[1]), DigestAlgorithmVersion: digest.Algorithm(stlStr(m, f[2])), Digest: stlStr(m, f[3])}
}

func stlTime(m map[string]any, k string) time.Time {
	t, _ := strict.ParseTimestamp(stlStr(m, k))
	return t
}

func stlDigest(m map[string]any, algField, valueField string) digest.Digest {
	return digest.Digest{Algorithm: digest.Algorithm(stlStr(m, algField)), Value: stlStr(m, valueField)}
}
