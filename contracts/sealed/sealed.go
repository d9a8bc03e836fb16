// Package sealed is the one mechanism behind the content-addressed objects of
// contracts/execution, contracts/meterfacts and contracts/billing: a registry
// of kind → {description, self-addressing, refinement rules} with Seal,
// Decode and DigestOf. Each package keeps its own kinds, sentinel errors and
// exported API; the error texts are the ones those packages always produced.
package sealed

import (
	"fmt"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// SchemaVersion1 is the schema version Seal writes.
const SchemaVersion1 = "1"

// Object is a content-addressed object (schema version 1).
type Object interface {
	// Kind is the contract name.
	Kind() string
	// ToJSON is the full JSON form (ints as int64, times as canonical text).
	ToJSON() map[string]any
	// Quad is the object's own quadruple (Seal fills all but the ref).
	Quad() *strict.Quadruple
}

// Spec binds a kind to its description and self-addressing.
type Spec struct {
	Def  *schema.Def
	Self strict.SelfAddressed
	// Rules checks refinement rules a shape cannot express (nil: none).
	Rules func(m map[string]any) error
}

// Registry is one package's kinds.
type Registry struct {
	// Invalid is the package's sentinel for an object Seal refuses.
	Invalid error
	// Specs builds the kind table on use, so the package's descriptions
	// need not be initialised before the registry is.
	Specs func() map[string]Spec
}

// Spec returns the kind's spec.
func (r Registry) Spec(kind string) (Spec, bool) {
	s, ok := r.Specs()[kind]
	return s, ok
}

// Seal sets x's schema version 1, jcs-sha256-v1 and the digest of its
// candidate, checks the result against the description and its rules and
// returns the canonical body. The ref must already be set.
func (r Registry) Seal(x Object) ([]byte, error) {
	s, ok := r.Spec(x.Kind())
	if !ok {
		return nil, fmt.Errorf("seal %s: %w: unknown kind", x.Kind(), r.Invalid)
	}
	q := x.Quad()
	q.SchemaVersion = SchemaVersion1
	q.DigestAlgorithmVersion = digest.JCSSHA256V1
	q.Digest = ""
	d, err := s.Self.Compute(digest.JCSSHA256V1, x.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", x.Kind(), err)
	}
	q.Digest = d.Value
	body, err := jcs.Marshal(x.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", x.Kind(), err)
	}
	if _, err := r.Decode(x.Kind(), body); err != nil {
		return nil, fmt.Errorf("seal %s: %w: %w", x.Kind(), r.Invalid, err)
	}
	return body, nil
}

// Decode strictly decodes doc with the kind's description, checks its
// refinement rules and verifies that the embedded digest recomputes.
func (r Registry) Decode(kind string, doc []byte) (map[string]any, error) {
	s, ok := r.Spec(kind)
	if !ok {
		return nil, fmt.Errorf("decode %s: unknown kind", kind)
	}
	m, err := schema.DecodeDocument(doc, schema.Ref{Def: s.Def})
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	if s.Rules != nil {
		if err := s.Rules(m); err != nil {
			return nil, fmt.Errorf("decode %s: %w", kind, err)
		}
	}
	if err := s.Self.Verify(m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return m, nil
}

// DigestOf returns the digest of x's candidate with alg (x need not be
// sealed).
func (r Registry) DigestOf(x Object, alg digest.Algorithm) (digest.Digest, error) {
	s, ok := r.Spec(x.Kind())
	if !ok {
		return digest.Digest{}, fmt.Errorf("digest %s: unknown kind", x.Kind())
	}
	return s.Self.Compute(alg, x.ToJSON())
}

// DigestDoc decodes doc and returns the digest of its candidate with alg, or,
// when alg is empty, with the algorithm version the document carries.
func (r Registry) DigestDoc(kind string, doc []byte, alg digest.Algorithm) (digest.Digest, error) {
	m, err := r.Decode(kind, doc)
	if err != nil {
		return digest.Digest{}, err
	}
	s, _ := r.Spec(kind)
	if alg == "" {
		carried, _ := m[strict.Fields(s.Self.Prefix)[2]].(string)
		alg = digest.Algorithm(carried)
	}
	return s.Self.Compute(alg, m)
}
