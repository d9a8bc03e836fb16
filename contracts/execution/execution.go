// Package execution holds the admission and execution identity objects of
// ADR-031 ("准入与执行身份必须内容寻址"): Core's RunAdmissionManifest@1 (moved
// here from internal/admission so Execution can recompute it),
// RunExecutionToken@1 and AttemptExecutionManifest@1; and the Execution
// owner's eligibility and closure facts (EX-2, EX-3, GW-1):
// ExecutionEligibilityFact@1, AttemptNotDispatchedFact@1,
// RunAttemptSetManifest@1, RunExecutionFinalizationFact@1 and
// RunExecutionFinalizationConflictFact@1. Each is described once
// (package schema): the description decodes documents strictly, renders the
// generated JSON Schema and TypeScript (contracts/schemagen) and is listed in
// contracts/kinds for `oceanway contracts validate --kind`.
//
// All three are content-addressed with a quadruple (ref, schemaVersion "1",
// digestAlgorithmVersion, digest); the digest candidate is the full JSON form
// without the repository-owned ref, the object's own time field and the
// digest (CT-3). The documents name these objects without a field list: the
// fields below are this project's definition, and every type's comment says
// why each field is there.
package execution

import (
	"errors"
	"fmt"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/sealed"
	"github.com/oceanway/core/contracts/strict"
)

// SchemaVersion1 is the schema version of every object of this package.
const SchemaVersion1 = "1"

// Contract names (spec names).
const (
	KindRunAdmissionManifest     = "RunAdmissionManifest@1"
	KindRunExecutionToken        = "RunExecutionToken@1"
	KindAttemptExecutionManifest = "AttemptExecutionManifest@1"

	KindExecutionEligibilityFact             = "ExecutionEligibilityFact@1"
	KindAttemptNotDispatchedFact             = "AttemptNotDispatchedFact@1"
	KindRunAttemptSetManifest                = "RunAttemptSetManifest@1"
	KindRunExecutionFinalizationFact         = "RunExecutionFinalizationFact@1"
	KindRunExecutionFinalizationConflictFact = "RunExecutionFinalizationConflictFact@1"
)

// kindsInOrder lists the kinds of this package in their fixed order.
var kindsInOrder = []string{
	KindRunAdmissionManifest, KindRunExecutionToken, KindAttemptExecutionManifest,
	KindExecutionEligibilityFact, KindAttemptNotDispatchedFact, KindRunAttemptSetManifest,
	KindRunExecutionFinalizationFact, KindRunExecutionFinalizationConflictFact,
	KindGatewayRouteSnapshot, KindAttemptRouteBinding, KindGatewayPreBindingRejectionFact,
	KindProviderEvidence, KindAvailabilitySnapshot, KindRunExecutionFinalizationReceipt, KindAvailabilityCurrentValidationReceipt,
	KindGatewayEvidenceConflictFact, KindExecutionEligibilityConflictFact,
}

// ErrAttemptSetRule marks an attempt set whose count differs from its
// attempts or whose attempts are not strictly sorted by (runStepId,
// executionAttemptId).
var ErrAttemptSetRule = errors.New("execution: attempt set is not counted or sorted")

// ErrChargeDimensionSet marks an attempt manifest whose frozen charge
// dimension set is not the Contracts registry's set of its output contract.
var ErrChargeDimensionSet = errors.New("execution: charge dimension set is not the registry's")

// ErrInvalidObject marks a Go-built object that does not satisfy its
// description (Seal refuses it).
var ErrInvalidObject = errors.New("execution: invalid object")

// Sealed is a content-addressed object of this package.
type Sealed = sealed.Object

// registry binds each kind to its description, self-addressing and the
// refinement rules a shape cannot express (contracts/sealed).
var registry = sealed.Registry{Invalid: ErrInvalidObject, Specs: func() map[string]sealed.Spec {
	return map[string]sealed.Spec{
		KindRunAdmissionManifest:     {Def: RunAdmissionManifestDef, Self: manifestSelf},
		KindRunExecutionToken:        {Def: RunExecutionTokenDef, Self: tokenSelf},
		KindAttemptExecutionManifest: {Def: AttemptExecutionManifestDef, Self: attemptManifestSelf, Rules: attemptManifestRules},

		KindExecutionEligibilityFact:             {Def: ExecutionEligibilityFactDef, Self: eligibilitySelf},
		KindAttemptNotDispatchedFact:             {Def: AttemptNotDispatchedFactDef, Self: notDispatchedSelf},
		KindRunAttemptSetManifest:                {Def: RunAttemptSetManifestDef, Self: attemptSetSelf, Rules: attemptSetRules},
		KindRunExecutionFinalizationFact:         {Def: RunExecutionFinalizationFactDef, Self: finalizationSelf, Rules: attemptSetRules},
		KindRunExecutionFinalizationConflictFact: {Def: RunExecutionFinalizationConflictFactDef, Self: conflictSelf},

		KindGatewayRouteSnapshot:             {Def: GatewayRouteSnapshotDef, Self: routeSelf},
		KindAttemptRouteBinding:              {Def: AttemptRouteBindingDef, Self: bindingSelf},
		KindGatewayPreBindingRejectionFact:   {Def: GatewayPreBindingRejectionFactDef, Self: rejectionSelf},
		KindProviderEvidence:                 {Def: ProviderEvidenceDef, Self: evidenceSelf},
		KindAvailabilitySnapshot:             {Def: AvailabilitySnapshotDef, Self: availabilitySelf, Rules: availabilityRules},
		KindGatewayEvidenceConflictFact:      {Def: GatewayEvidenceConflictFactDef, Self: evidenceConflictSelf},
		KindExecutionEligibilityConflictFact: {Def: ExecutionEligibilityConflictFactDef, Self: eligibilityConflictSelf},

		KindRunExecutionFinalizationReceipt:      {Def: RunExecutionFinalizationReceiptDef, Self: finalizationReceiptSelf},
		KindAvailabilityCurrentValidationReceipt: {Def: AvailabilityCurrentValidationReceiptDef, Self: availabilityValidationSelf, Rules: availabilityValidationRules},
	}
}}

// Seal sets x's schema version 1, jcs-sha256-v1 and the digest of its
// candidate, checks the result against the description and returns the
// canonical body. The ref must already be set.
func Seal(x Sealed) ([]byte, error) { return registry.Seal(x) }

// decodeMap strictly decodes doc with the kind's description and verifies
// that the embedded digest recomputes.
func decodeMap(kind string, doc []byte) (map[string]any, error) { return registry.Decode(kind, doc) }

// DigestOf returns the digest of x's candidate (x need not be sealed).
func DigestOf(x Sealed) (digest.Digest, error) {
	alg := x.Quad().DigestAlgorithmVersion
	if alg == "" {
		alg = digest.JCSSHA256V1
	}
	return registry.DigestOf(x, alg)
}

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

// SelfAddressing returns where a kind keeps its own quadruple and which time
// field its candidate excludes.
func SelfAddressing(kind string) (strict.SelfAddressed, bool) {
	s, ok := registry.Spec(kind)
	return s.Self, ok
}

// --- map binding helpers (the map is a description-checked tree) ---------

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func i64(m map[string]any, k string) int64 { n, _ := m[k].(int64); return n }

func strs(m map[string]any, k string) []string {
	items, _ := m[k].([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, _ := it.(string)
		out = append(out, s)
	}
	return out
}

func quad(m map[string]any, prefix string) strict.Quadruple {
	f := strict.Fields(prefix)
	return strict.Quadruple{Ref: str(m, f[0]), SchemaVersion: str(m, f[1]), DigestAlgorithmVersion: digest.Algorithm(str(m, f[2])), Digest: str(m, f[3])}
}

// attemptSetRules: attemptCount equals the number of attempts, sorted
// strictly by (runStepId, executionAttemptId).
func attemptSetRules(m map[string]any) error {
	items, _ := m["attempts"].([]any)
	if i64(m, "attemptCount") != int64(len(items)) {
		return fmt.Errorf("%w: attemptCount %d, %d attempts", ErrAttemptSetRule, i64(m, "attemptCount"), len(items))
	}
	for i := 1; i < len(items); i++ {
		a, _ := items[i-1].(map[string]any)
		b, _ := items[i].(map[string]any)
		if compareKey(str(a, "runStepId"), str(a, "executionAttemptId"), str(b, "runStepId"), str(b, "executionAttemptId")) >= 0 {
			return fmt.Errorf("%w: attempts[%d] is not after attempts[%d]", ErrAttemptSetRule, i, i-1)
		}
	}
	return nil
}

func compareKey(stepA, attemptA, stepB, attemptB string) int {
	switch {
	case stepA < stepB:
		return -1
	case stepA > stepB:
		return 1
	case attemptA < attemptB:
		return -1
	case attemptA > attemptB:
		return 1
	}
	return 0
}
