package strict_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

func fullReceipt() map[string]any {
	return map[string]any{
		"sampleReceiptRef":                    "receipt-1",
		"sampleReceiptSchemaVersion":          "SampleReceipt@1",
		"sampleReceiptDigestAlgorithmVersion": "jcs-sha256-v1",
		"sampleReceiptDigest":                 "",
		"appliedAt":                           "2024-05-06T07:08:09.123456Z",
		"createdAt":                           "2024-05-06T07:00:00.000000Z",
		"amount":                              jcs.Number("100"),
		"nested":                              map[string]any{"appliedAt": "kept: not the object's own field"},
	}
}

// CT-3: the candidate excludes exactly the ref, the object's own time
// field(s) and the digest; schema version and algorithm version stay in.
func TestCandidateExcludesExactlyTheListedFields(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"sampleReceiptRef", "sampleReceiptDigest", "appliedAt"}, sampleAddress.Exclusions())

	full := fullReceipt()
	before := maps.Clone(full)
	cand := sampleAddress.CandidateOf(full)
	require.Equal(t, before, full, "the full object is not modified")

	var kept []string
	for k := range cand {
		kept = append(kept, k)
	}
	slices.Sort(kept)
	require.Equal(t, []string{"amount", "createdAt", "nested", "sampleReceiptDigestAlgorithmVersion", "sampleReceiptSchemaVersion"}, kept,
		"another timestamp (createdAt) and nested fields with an excluded name stay in")

	require.Equal(t, map[string]any{"a": 1}, strict.Candidate(map[string]any{"a": 1, "b": 2}, "b", "absent"))
	require.Equal(t, map[string]any{"a": 1, "b": 2}, strict.Candidate(map[string]any{"a": 1, "b": 2}))
}

func TestSelfAddressedComputeVerify(t *testing.T) {
	t.Parallel()
	full := fullReceipt()
	d, err := sampleAddress.Compute(digest.JCSSHA256V1, full)
	require.NoError(t, err)
	full["sampleReceiptDigest"] = d.Value

	// The digest is the digest of the candidate's canonical bytes.
	canonical, err := jcs.Marshal(sampleAddress.CandidateOf(full))
	require.NoError(t, err)
	want, err := digest.OfCanonical(digest.JCSSHA256V1, canonical)
	require.NoError(t, err)
	require.Equal(t, want, d)
	require.NoError(t, sampleAddress.Verify(full))

	// Excluded fields may change without changing the digest.
	for _, k := range []string{"sampleReceiptRef", "appliedAt"} {
		changed := maps.Clone(full)
		changed[k] = "something else"
		require.NoError(t, sampleAddress.Verify(changed), k)
	}
	// Every covered field is bound by the digest.
	for _, k := range []string{"amount", "createdAt", "nested", "sampleReceiptSchemaVersion"} {
		changed := maps.Clone(full)
		changed[k] = "something else"
		require.ErrorIs(t, sampleAddress.Verify(changed), digest.ErrMismatch, k)
	}

	bare := maps.Clone(full)
	delete(bare, "sampleReceiptDigestAlgorithmVersion")
	require.ErrorIs(t, sampleAddress.Verify(bare), digest.ErrMissingAlgorithm, "a bare digest is invalid")
	unknown := maps.Clone(full)
	unknown["sampleReceiptDigestAlgorithmVersion"] = "jcs-sha256-v2"
	require.ErrorIs(t, sampleAddress.Verify(unknown), digest.ErrUnknownAlgorithm)
	wrongType := maps.Clone(full)
	wrongType["sampleReceiptDigestAlgorithmVersion"] = 1
	require.ErrorIs(t, sampleAddress.Verify(wrongType), strict.ErrWrongType)
	noDigest := maps.Clone(full)
	delete(noDigest, "sampleReceiptDigest")
	require.ErrorIs(t, sampleAddress.Verify(noDigest), digest.ErrMalformedDigest)

	_, err = sampleAddress.Compute("jcs-sha256-v2", full)
	require.ErrorIs(t, err, digest.ErrUnknownAlgorithm)
}
