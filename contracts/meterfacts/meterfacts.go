// Package meterfacts holds the Metering owner's own facts that the spec
// names without a field list (ADR-031 Metering; outbox-publisher "Provider
// Cost Work"; ME-2): ProviderCostFact@1,
// ProviderCostAvailabilityProcessingFact@1 and the receipt of
// validateSettlementInputCurrent, SettlementInputCurrentValidationReceipt@1. Each is described once (package
// schema): the description decodes documents strictly, renders the
// generated JSON Schema and TypeScript (contracts/schemagen) and is listed
// in contracts/kinds.
//
// Every object is content-addressed with a quadruple (ref, schemaVersion
// "1", digestAlgorithmVersion, digest); the digest candidate is the full JSON
// form without the repository-owned ref, the object's own time field and the
// digest. The fields are this project's definition; each type's comment says
// why each field is there.
package meterfacts

import (
	"errors"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/sealed"
	"github.com/oceanway/core/contracts/strict"
)

// SchemaVersion1 is the schema version of every object of this package.
const SchemaVersion1 = "1"

// ErrInvalidObject marks a Go-built object that does not satisfy its
// description (Seal refuses it).
var ErrInvalidObject = errors.New("meterfacts: invalid object")

// Sealed is a content-addressed object of this package.
type Sealed = sealed.Object

// kindsInOrder lists the kinds of this package in their fixed order.
var kindsInOrder = []string{KindProviderCostFact, KindProviderCostAvailabilityProcessingFact, KindSettlementInputCurrentValidationReceipt,
	KindSettlementInputConflictFact}

// registry binds each kind to its description, self-addressing and the
// refinement rules a shape cannot express (contracts/sealed).
var registry = sealed.Registry{Invalid: ErrInvalidObject, Specs: func() map[string]sealed.Spec {
	return map[string]sealed.Spec{
		KindProviderCostFact:                        {Def: ProviderCostFactDef, Self: costFactSelf},
		KindProviderCostAvailabilityProcessingFact:  {Def: ProcessingFactDef, Self: processingSelf, Rules: processingRules},
		KindSettlementInputCurrentValidationReceipt: {Def: ValidationReceiptDef, Self: validationSelf, Rules: validationRules},
		KindSettlementInputConflictFact:             {Def: SettlementInputConflictFactDef, Self: settlementConflictSelf},
	}
}}

// Seal sets x's schema version 1, jcs-sha256-v1 and the digest of its
// candidate, checks the result against the description and returns the
// canonical body. The ref must already be set.
func Seal(x Sealed) ([]byte, error) { return registry.Seal(x) }

// decodeMap strictly decodes doc with the kind's description, checks its
// refinement rules and verifies that the embedded digest recomputes.
func decodeMap(kind string, doc []byte) (map[string]any, error) { return registry.Decode(kind, doc) }

// DigestOf returns the digest of x's candidate (x need not be sealed).
func DigestOf(x Sealed) (digest.Digest, error) { return registry.DigestOf(x, digest.JCSSHA256V1) }

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
			Digest: func(doc []byte) (digest.Digest, error) { return registry.DigestDoc(kind, doc, digest.JCSSHA256V1) },
		})
	}
	return out
}

// SelfAddressing returns where a kind keeps its own quadruple and which time
// field its candidate excludes.
func SelfAddressing(kind string) (strict.SelfAddressed, bool) {
	s, ok := registry.Spec(kind)
	return s.Self, ok
}

// --- description helpers ---------------------------------------------------

// selfQuad is an object's own quadruple (schema version 1).
func selfQuad(prefix, doc string) []schema.Field {
	q := schema.Quad(prefix, doc)
	q[1].Type = schema.SchemaVersion{Known: []string{SchemaVersion1}}
	return q
}

// refQuad is a referenced quadruple (of a version-1 object).
func refQuad(prefix, doc string) []schema.Field { return selfQuad(prefix, doc) }

// --- map binding helpers (the map is a description-checked tree) -----------

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func i64(m map[string]any, k string) int64 { n, _ := m[k].(int64); return n }

func obj(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }

func quad(m map[string]any, prefix string) strict.Quadruple {
	f := strict.Fields(prefix)
	return strict.Quadruple{Ref: str(m, f[0]), SchemaVersion: str(m, f[1]), DigestAlgorithmVersion: digest.Algorithm(str(m, f[2])), Digest: str(m, f[3])}
}

func timeOf(m map[string]any, k string) time.Time {
	t, _ := strict.ParseTimestamp(str(m, k))
	return t
}

func digestOf(m map[string]any, algField, valueField string) digest.Digest {
	return digest.Digest{Algorithm: digest.Algorithm(str(m, algField)), Value: str(m, valueField)}
}
