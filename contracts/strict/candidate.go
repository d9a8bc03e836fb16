package strict

import (
	"fmt"

	"github.com/oceanway/core/contracts/digest"
)

// Candidate returns a shallow copy of an object's full JSON form without the
// excluded fields. Each contract states its exclusions exactly (its
// repository-owned ref, its own timestamp(s), the digest itself); nothing
// else may be left out.
func Candidate(full map[string]any, exclude ...string) map[string]any {
	out := make(map[string]any, len(full))
	for k, v := range full {
		out[k] = v
	}
	for _, k := range exclude {
		delete(out, k)
	}
	return out
}

// SelfAddressed describes where a content-addressed object keeps its own
// quadruple and which time fields its digest candidate excludes.
type SelfAddressed struct {
	Prefix     string   // e.g. "operationsProjectionAppliedReceipt"
	TimeFields []string // e.g. {"appliedAt"}
}

// Exclusions lists the fields the digest candidate leaves out: the
// repository-owned ref, the own time fields and the digest itself.
func (s SelfAddressed) Exclusions() []string {
	f := Fields(s.Prefix)
	return append([]string{f[0], f[3]}, s.TimeFields...)
}

// CandidateOf returns the digest candidate of the object's full JSON form.
func (s SelfAddressed) CandidateOf(full map[string]any) map[string]any {
	return Candidate(full, s.Exclusions()...)
}

// Compute digests the candidate of full with alg.
func (s SelfAddressed) Compute(alg digest.Algorithm, full map[string]any) (digest.Digest, error) {
	return digest.Of(alg, s.CandidateOf(full))
}

// Verify recomputes the digest of full with the algorithm version the object
// carries and compares it with the carried digest.
func (s SelfAddressed) Verify(full map[string]any) error {
	f := Fields(s.Prefix)
	algValue, hasAlg := full[f[2]]
	algText, isString := algValue.(string)
	value, _ := full[f[3]].(string)
	if hasAlg && !isString {
		return fmt.Errorf("%s: %w: want string", f[2], ErrWrongType)
	}
	alg, err := digest.ParseAlgorithm(algText)
	if err != nil {
		return fmt.Errorf("%s: %w", f[2], err)
	}
	if err := digest.Verify(digest.Digest{Algorithm: alg, Value: value}, s.CandidateOf(full)); err != nil {
		return fmt.Errorf("%s: %w", f[3], err)
	}
	return nil
}
