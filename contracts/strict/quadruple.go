package strict

import (
	"errors"
	"fmt"

	"github.com/oceanway/core/contracts/digest"
)

// ErrInvalidQuadruple marks a content-address quadruple that is incomplete or malformed.
var ErrInvalidQuadruple = errors.New("strict: invalid content-address quadruple")

// Quadruple identifies a content-addressed object:
// {ref, schemaVersion, digestAlgorithmVersion, digest}. In JSON its four
// fields carry a per-object prefix, e.g. runAdmissionManifestRef,
// runAdmissionManifestSchemaVersion, runAdmissionManifestDigestAlgorithmVersion
// and runAdmissionManifestDigest.
type Quadruple struct {
	Ref                    string
	SchemaVersion          string
	DigestAlgorithmVersion digest.Algorithm
	Digest                 string
}

// Digested returns the algorithm version and value as one Digest.
func (q Quadruple) Digested() digest.Digest {
	return digest.Digest{Algorithm: q.DigestAlgorithmVersion, Value: q.Digest}
}

// Validate checks completeness, a registered algorithm and the digest form.
func (q Quadruple) Validate() error {
	if q.Ref == "" || q.SchemaVersion == "" {
		return fmt.Errorf("%w: ref and schemaVersion are required", ErrInvalidQuadruple)
	}
	return q.Digested().Validate()
}

// Put writes the quadruple into m under prefix (prefix+"Ref", ...).
// With an empty prefix the plain names ref/schemaVersion/... are used.
func (q Quadruple) Put(m map[string]any, prefix string) {
	m[field(prefix, "Ref")] = q.Ref
	m[field(prefix, "SchemaVersion")] = q.SchemaVersion
	m[field(prefix, "DigestAlgorithmVersion")] = string(q.DigestAlgorithmVersion)
	m[field(prefix, "Digest")] = q.Digest
}

// Fields returns the four JSON field names for prefix.
func Fields(prefix string) [4]string {
	return [4]string{field(prefix, "Ref"), field(prefix, "SchemaVersion"), field(prefix, "DigestAlgorithmVersion"), field(prefix, "Digest")}
}

func field(prefix, suffix string) string {
	if prefix == "" {
		// ref, schemaVersion, digestAlgorithmVersion, digest
		return string(suffix[0]+'a'-'A') + suffix[1:]
	}
	return prefix + suffix
}

// Quadruple reads the four prefixed fields. A digest without its algorithm
// version, an unknown algorithm version or a malformed digest is rejected.
func (o *Object) Quadruple(prefix string) Quadruple {
	f := Fields(prefix)
	q := Quadruple{
		Ref:           o.String(f[0]),
		SchemaVersion: o.String(f[1]),
	}
	alg, hasAlg := o.take(f[2], false)
	dig, hasDigest := o.OptString(f[3])
	if !hasDigest {
		o.Fail(f[3], ErrMissingField, "")
		return q
	}
	if !hasAlg {
		o.Fail(f[2], digest.ErrMissingAlgorithm, "bare digest")
		return q
	}
	algText, ok := alg.(string)
	if !ok {
		o.Fail(f[2], ErrWrongType, "want string")
		return q
	}
	a, err := digest.ParseAlgorithm(algText)
	if err != nil {
		o.Fail(f[2], err, "")
		return q
	}
	if err := digest.ValidateValue(a, dig); err != nil {
		o.Fail(f[3], err, "")
		return q
	}
	q.DigestAlgorithmVersion = a
	q.Digest = dig
	return q
}

// DigestPair reads an "{x}DigestAlgorithmVersion + {x}Sha256"-style pair
// given both full field names. A bare digest is rejected.
func (o *Object) DigestPair(algField, valueField string) digest.Digest {
	algText, hasAlg := o.OptString(algField)
	value, hasValue := o.OptString(valueField)
	switch {
	case !hasValue:
		o.Fail(valueField, ErrMissingField, "")
		return digest.Digest{}
	case !hasAlg:
		o.Fail(algField, digest.ErrMissingAlgorithm, "bare digest")
		return digest.Digest{}
	}
	a, err := digest.ParseAlgorithm(algText)
	if err != nil {
		o.Fail(algField, err, "")
		return digest.Digest{}
	}
	if err := digest.ValidateValue(a, value); err != nil {
		o.Fail(valueField, err, "")
		return digest.Digest{}
	}
	return digest.Digest{Algorithm: a, Value: value}
}
