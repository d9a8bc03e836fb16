// The finalization pipeline's objects (ADR-031 "Billing Finalization 使用三组
// 完整验证", BI-1): FinalizationInputManifest@1 (the closure and the exact
// settlement inputs it covers), FinalizationValidationBundle@1 (the three
// receipt sets) and BillingFinalizationDecision@1
// (settle_and_release_remainder | release_all | blocked |
// reconciliation_required). The chain is fixed: manifest → receipts →
// bundle → decision; no receipt refers back to the bundle. Each is
// described once (package schema), decoded strictly, refined by its rules
// and listed in contracts/kinds; amounts use exact rationals (amount.go).

package billing

import (
	"errors"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/sealed"
	"github.com/oceanway/core/contracts/strict"
)

// SchemaVersion1 is the schema version of every object of this package.
const SchemaVersion1 = "1"

// Contract names (spec names).
const (
	KindFinalizationInputManifest     = "FinalizationInputManifest@1"
	KindFinalizationValidationBundle  = "FinalizationValidationBundle@1"
	KindBillingFinalizationDecision   = "BillingFinalizationDecision@1"
	DerivationFinalizationOperationV1 = "billing_finalization_operation@1"
)

var kindsInOrder = []string{KindFinalizationInputManifest, KindFinalizationValidationBundle, KindBillingFinalizationDecision}

// Errors of the refinement rules a shape cannot express.
var (
	// ErrManifestRule: dimensions not sorted or duplicated, count or target
	// total not recomputing, a settlement dimension id not derived, or a
	// gateway availability on a not-dispatched dimension (or missing on a
	// dispatched one).
	ErrManifestRule = errors.New("billing: input manifest rule")
	// ErrBundleRule: a receipt set not sorted, not counted or echoing
	// another operation or input manifest than the bundle's.
	ErrBundleRule = errors.New("billing: validation bundle rule")
	// ErrDecisionRule: settled + released ≠ reserved, settled above the
	// reservation, or release_all settling anything.
	ErrDecisionRule = errors.New("billing: decision rule")
	// ErrInvalidObject marks a Go-built object that does not satisfy its
	// description (Seal refuses it).
	ErrInvalidObject = errors.New("billing: invalid object")
)

// FinalizationOperationID is the one finalization operation of a fence
// (derivation billing_finalization_operation@1): every evaluation of the
// fence, in any order of its inputs, works under the same operation, so the
// success it finally commits has one digest.
func FinalizationOperationID(billingFinalizationFenceID string) string {
	return envelope.DeriveID(DerivationFinalizationOperationV1, map[string]any{"billingFinalizationFenceId": billingFinalizationFenceID})
}

// Sealed is a content-addressed object of this package.
type Sealed = sealed.Object

// registry binds each kind to its description, self-addressing and
// refinement rules (contracts/sealed).
var registry = sealed.Registry{Invalid: ErrInvalidObject, Specs: func() map[string]sealed.Spec {
	return map[string]sealed.Spec{
		KindFinalizationInputManifest:    {Def: FinalizationInputManifestDef, Self: manifestSelf, Rules: manifestRules},
		KindFinalizationValidationBundle: {Def: FinalizationValidationBundleDef, Self: bundleSelf, Rules: bundleRules},
		KindBillingFinalizationDecision:  {Def: BillingFinalizationDecisionDef, Self: decisionSelf, Rules: decisionRules},
	}
}}

// Seal sets x's schema version 1, jcs-sha256-v1 and the digest of its
// candidate, checks the result against the description and its rules and
// returns the canonical body. The ref must already be set.
func Seal(x Sealed) ([]byte, error) { return registry.Seal(x) }

func decodeMap(kind string, doc []byte) (map[string]any, error) { return registry.Decode(kind, doc) }

// Contract is one kind of this package as contracts/kinds lists it.
type Contract struct {
	Name     string
	Validate func(doc []byte) error
	Digest   func(doc []byte) (digest.Digest, error)
	Def      *schema.Def
}

// Contracts lists the kinds of this package in a fixed order.
func Contracts() []Contract {
	var out []Contract
	for _, kind := range kindsInOrder {
		s, _ := registry.Spec(kind)
		out = append(out, Contract{
			Name: kind,
			Def:  s.Def,
			Validate: func(doc []byte) error {
				_, err := decodeMap(kind, doc)
				return err
			},
			Digest: func(doc []byte) (digest.Digest, error) { return registry.DigestDoc(kind, doc, "") },
		})
	}
	return out
}

// --- map binding helpers (the map is a description-checked tree) ---------

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func i64(m map[string]any, k string) int64 { n, _ := m[k].(int64); return n }

func obj(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }

func list(m map[string]any, k string) []map[string]any {
	raw, _ := m[k].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, r := range raw {
		x, _ := r.(map[string]any)
		out = append(out, x)
	}
	return out
}

func quad(m map[string]any, prefix string) strict.Quadruple {
	f := strict.Fields(prefix)
	return strict.Quadruple{Ref: str(m, f[0]), SchemaVersion: str(m, f[1]), DigestAlgorithmVersion: digest.Algorithm(str(m, f[2])), Digest: str(m, f[3])}
}

// SealAddressed seals x with a ref derived from its own content
// (refPrefix + the first 32 hex digits of its digest): the same content
// always gets the same ref, so every order of evaluation that reaches the
// same inputs writes byte-identical objects.
func SealAddressed(x Sealed, refPrefix string) ([]byte, error) {
	x.Quad().Ref = refPrefix + "pending"
	if _, err := Seal(x); err != nil {
		return nil, err
	}
	x.Quad().Ref = refPrefix + x.Quad().Digest[:32]
	return Seal(x)
}
