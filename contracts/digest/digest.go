// Package digest implements the closed registry of content-address algorithms.
// Today it holds exactly one: jcs-sha256-v1, the lowercase hex SHA-256 of the
// RFC 8785 canonical bytes. A digest is never valid without its algorithm
// version; an unknown algorithm version is an error, never a fallback.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/oceanway/core/contracts/jcs"
)

// Algorithm is a digest algorithm version literal.
type Algorithm string

// JCSSHA256V1 is SHA-256 over RFC 8785 canonical bytes, lowercase hex.
const JCSSHA256V1 Algorithm = "jcs-sha256-v1"

var (
	ErrUnknownAlgorithm = errors.New("digest: unknown digest algorithm version")
	ErrMissingAlgorithm = errors.New("digest: digest without its algorithm version")
	ErrMalformedDigest  = errors.New("digest: malformed digest value")
	ErrMismatch         = errors.New("digest: digest does not recompute")
)

// ParseAlgorithm accepts only registered algorithm versions.
func ParseAlgorithm(s string) (Algorithm, error) {
	switch Algorithm(s) {
	case JCSSHA256V1:
		return JCSSHA256V1, nil
	case "":
		return "", ErrMissingAlgorithm
	default:
		return "", fmt.Errorf("%w: %q", ErrUnknownAlgorithm, s)
	}
}

// Digest is an algorithm version together with its value. The zero value is invalid.
type Digest struct {
	Algorithm Algorithm
	Value     string // lowercase hex
}

// String renders "algorithm:value", the form the CLI prints.
func (d Digest) String() string { return string(d.Algorithm) + ":" + d.Value }

// Parse reads the "algorithm:value" form String renders. A bare value without
// its algorithm version is ErrMissingAlgorithm; the algorithm must be
// registered and the value must have its exact form.
func Parse(s string) (Digest, error) {
	alg, value, ok := strings.Cut(s, ":")
	if !ok {
		return Digest{}, fmt.Errorf("%w: %q", ErrMissingAlgorithm, s)
	}
	d := Digest{Algorithm: Algorithm(alg), Value: value}
	if err := d.Validate(); err != nil {
		return Digest{}, err
	}
	return d, nil
}

// Validate checks the algorithm is registered and the value has its exact form.
func (d Digest) Validate() error {
	if _, err := ParseAlgorithm(string(d.Algorithm)); err != nil {
		return err
	}
	return ValidateValue(d.Algorithm, d.Value)
}

// ValidateValue checks a digest value's form for a registered algorithm.
func ValidateValue(alg Algorithm, value string) error {
	if _, err := ParseAlgorithm(string(alg)); err != nil {
		return err
	}
	switch alg {
	case JCSSHA256V1:
		if len(value) != 64 {
			return fmt.Errorf("%w: want 64 lowercase hex characters, got %d characters", ErrMalformedDigest, len(value))
		}
		for i := 0; i < len(value); i++ {
			c := value[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return fmt.Errorf("%w: non lowercase-hex character at %d", ErrMalformedDigest, i)
			}
		}
		return nil
	default:
		return fmt.Errorf("%w: %q", ErrUnknownAlgorithm, alg)
	}
}

// OfCanonical digests bytes that are already canonical.
func OfCanonical(alg Algorithm, canonical []byte) (Digest, error) {
	if _, err := ParseAlgorithm(string(alg)); err != nil {
		return Digest{}, err
	}
	switch alg {
	case JCSSHA256V1:
		sum := sha256.Sum256(canonical)
		return Digest{Algorithm: alg, Value: hex.EncodeToString(sum[:])}, nil
	default:
		return Digest{}, fmt.Errorf("%w: %q", ErrUnknownAlgorithm, alg)
	}
}

// Of canonicalizes a value tree (see jcs.Marshal) and digests it.
func Of(alg Algorithm, v any) (Digest, error) {
	if _, err := ParseAlgorithm(string(alg)); err != nil {
		return Digest{}, err
	}
	canonical, err := jcs.Marshal(v)
	if err != nil {
		return Digest{}, err
	}
	return OfCanonical(alg, canonical)
}

// OfJSON canonicalizes a JSON document and digests it.
func OfJSON(alg Algorithm, doc []byte) (Digest, error) {
	if _, err := ParseAlgorithm(string(alg)); err != nil {
		return Digest{}, err
	}
	canonical, err := jcs.Canonicalize(doc)
	if err != nil {
		return Digest{}, err
	}
	return OfCanonical(alg, canonical)
}

// Verify recomputes the digest of v and compares it with want.
func Verify(want Digest, v any) error {
	if err := want.Validate(); err != nil {
		return err
	}
	got, err := Of(want.Algorithm, v)
	if err != nil {
		return err
	}
	if got.Value != want.Value {
		return fmt.Errorf("%w: recomputed %s, carried %s", ErrMismatch, got.Value, want.Value)
	}
	return nil
}
