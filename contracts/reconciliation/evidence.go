package reconciliation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

const fieldEvidence = "investigationEvidenceReferences"

// EvidenceReference is one content-addressed reference Operations'
// investigation relied on. Billing only checks that the set is the same on
// every object of the chain; it never dereferences one as proof that an
// owner repaired anything (the re-evaluation's own owner reads decide).
type EvidenceReference struct {
	EvidenceKind string // snake_case
	Object       strict.Quadruple
}

func (e EvidenceReference) key() [3]string {
	return [3]string{e.EvidenceKind, e.Object.Ref, e.Object.Digest}
}

func (e EvidenceReference) toJSON() map[string]any {
	m := map[string]any{"evidenceKind": e.EvidenceKind}
	e.Object.Put(m, "") // ref, schemaVersion, digestAlgorithmVersion, digest
	return m
}

// EvidenceReferenceDef describes one investigation evidence reference.
var EvidenceReferenceDef = &schema.Def{Name: "InvestigationEvidenceReferenceV1",
	Doc: "A content-addressed reference to evidence the investigation relied on; never dereferenced as proof of a repair.",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("evidenceKind", schema.CodeText, "snake_case kind of the referenced object"),
		schema.F("ref", schema.RefText, ""),
		schema.F("schemaVersion", schema.VersionText, ""),
		schema.DigestPairFields("digestAlgorithmVersion", "digest", ""),
	)}}

func evidenceField() []schema.Field {
	return schema.F(fieldEvidence, schema.Array{Items: schema.Ref{Def: EvidenceReferenceDef}, MinItems: 1, MaxItems: MaxEvidenceReferences},
		"sorted by (evidenceKind, ref, digest), no duplicate; the same set on Request, Candidate, Decision, Grant and Applied")
}

func evidenceJSON(refs []EvidenceReference) []any {
	out := make([]any, 0, len(refs))
	for _, e := range refs {
		out = append(out, e.toJSON())
	}
	return out
}

func evidenceOf(m map[string]any) []EvidenceReference {
	out := []EvidenceReference{}
	for _, x := range list(m, fieldEvidence) {
		out = append(out, EvidenceReference{EvidenceKind: str(x, "evidenceKind"), Object: quad(x, "")})
	}
	return out
}

// SortEvidence sorts refs in place into the order every object carries.
// It does not drop duplicates: a duplicate is the caller's mistake, and Seal
// refuses it.
func SortEvidence(refs []EvidenceReference) {
	slices.SortFunc(refs, func(a, b EvidenceReference) int { return compareKeys(a.key(), b.key()) })
}

// EvidenceEqual reports whether a and b are the same sequence (both sorted
// sets, so the same set).
func EvidenceEqual(a, b []EvidenceReference) bool { return slices.Equal(a, b) }

func compareKeys(a, b [3]string) int {
	for i := range a {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// evidenceRules: strictly increasing by (evidenceKind, ref, digest), which
// refuses an unsorted list and a duplicate alike.
func evidenceRules(m map[string]any) error {
	refs := evidenceOf(m)
	for i := 1; i < len(refs); i++ {
		if compareKeys(refs[i-1].key(), refs[i].key()) >= 0 {
			return fmt.Errorf("%w: %s[%d] is not after %s[%d]", ErrEvidenceSet, fieldEvidence, i, fieldEvidence, i-1)
		}
	}
	return nil
}
