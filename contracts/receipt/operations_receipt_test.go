package receipt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// OperationsProjectionAppliedReceipt@1: a sealed receipt decodes, re-encodes
// byte for byte and its digest recomputes.
func TestOperationsProjectionAppliedReceipt_RoundTrip(t *testing.T) {
	t.Parallel()
	r := opsReceipt("roundtrip")
	doc := mustJSON(r)
	got, err := receipt.DecodeOperationsProjectionAppliedReceipt(doc)
	require.NoError(t, err)
	require.NoError(t, got.VerifyDigest())
	require.Equal(t, r, got)
	require.Equal(t, doc, mustJSON(got))
	m := r.ToJSON()
	require.Equal(t, "core_operations", m["destination"])
	require.Equal(t, "operations_projector", m["consumerName"])
	require.Equal(t, "jcs-sha256-v1", m["operationsProjectionAppliedReceiptDigestAlgorithmVersion"])
	require.Equal(t, route.Required("operations_run_view", 3), got.Projection())
}

// CT-3: the candidate excludes exactly the ref, appliedAt and the digest.
func TestOperationsProjectionAppliedReceipt_Candidate_CT3(t *testing.T) {
	t.Parallel()
	assertCandidate(t, opsReceipt("candidate"), "operationsProjectionAppliedReceipt", "appliedAt")
}

type sealed interface {
	ToJSON() map[string]any
	Digest() (digest.Digest, error)
	VerifyDigest() error
}

// assertCandidate proves an object's digest candidate is its full JSON form
// without exactly the ref, its time field and the digest (CT-3): the digest
// the object computes equals the digest of an independently built candidate
// and equals the digest it carries.
func assertCandidate(t *testing.T, obj sealed, prefix, timeField string) {
	t.Helper()
	full := obj.ToJSON()
	for _, k := range []string{prefix + "Ref", prefix + "SchemaVersion", prefix + "DigestAlgorithmVersion", prefix + "Digest", timeField} {
		require.Contains(t, full, k)
	}
	candidate := clone(full).(map[string]any)
	delete(candidate, prefix+"Ref")
	delete(candidate, prefix+"Digest")
	delete(candidate, timeField)
	want, err := digest.Of(digest.JCSSHA256V1, candidate)
	require.NoError(t, err)
	got, err := obj.Digest()
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, want.Value, full[prefix+"Digest"])
	require.NoError(t, obj.VerifyDigest())
}

// OperationsProjectionAppliedReceipt@1 refinement: destination=core_operations,
// consumerName=operations_projector; plus CT-2 shape rejections.
func TestOperationsProjectionAppliedReceipt_Rejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(m map[string]any)
		want   error
	}{
		{"destination literal", func(m map[string]any) { m["destination"] = "metering_input_processor" }, receipt.ErrReceiptDestination},
		{"consumer literal", func(m map[string]any) { m["consumerName"] = "operations_projector_v2" }, receipt.ErrReceiptConsumer},
		{"unknown schema version", func(m map[string]any) { m["operationsProjectionAppliedReceiptSchemaVersion"] = "2" }, strict.ErrUnknownSchemaVersion},
		{"unknown algorithm", func(m map[string]any) { m["operationsProjectionAppliedReceiptDigestAlgorithmVersion"] = "sha256" }, digest.ErrUnknownAlgorithm},
		{"bare envelope digest", func(m map[string]any) { delete(m, "eventEnvelopeDigestAlgorithmVersion") }, digest.ErrMissingAlgorithm},
		{"missing projection", func(m map[string]any) { delete(m, "projectionVersion") }, strict.ErrMissingField},
		{"projection version zero", func(m map[string]any) { m["projectionVersion"] = int64(0) }, strict.ErrOutOfRange},
		{"non-canonical time", func(m map[string]any) { m["appliedAt"] = "2026-03-01T12:01:00Z" }, strict.ErrInvalidTimestamp},
		{"unknown field", func(m map[string]any) { m["aggregateRevision"] = int64(1) }, strict.ErrUnknownField},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := opsReceipt("reject").ToJSON()
			tc.mutate(m)
			_, err := receipt.DecodeOperationsProjectionAppliedReceipt(mustMarshal(m))
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestOperationsProjectionAppliedReceipt_DigestMismatch_CT3(t *testing.T) {
	t.Parallel()
	m := opsReceipt("tamper").ToJSON()
	m["projectionName"] = "shadow_run_view"
	r, err := receipt.DecodeOperationsProjectionAppliedReceipt(mustMarshal(m))
	require.NoError(t, err)
	require.ErrorIs(t, r.VerifyDigest(), digest.ErrMismatch)
}

func TestNewOperationsProjectionAppliedReceipt(t *testing.T) {
	t.Parallel()
	_, err := receipt.NewOperationsProjectionAppliedReceipt("r", route.NotApplicable, opsEvent("x"), at(1))
	require.ErrorIs(t, err, receipt.ErrProjectionTargetMismatch)
	_, err = receipt.NewOperationsProjectionAppliedReceipt("", opsTarget, opsEvent("x"), at(1))
	require.ErrorIs(t, err, strict.ErrMissingField)
	r := opsReceipt("seal")
	d, err := r.Digest()
	require.NoError(t, err)
	require.Equal(t, r.Receipt.Digest, d.Value)
	canonical, err := jcs.Marshal(strict.SelfAddressed{Prefix: "operationsProjectionAppliedReceipt", TimeFields: []string{"appliedAt"}}.CandidateOf(r.ToJSON()))
	require.NoError(t, err)
	want, err := digest.OfCanonical(digest.JCSSHA256V1, canonical)
	require.NoError(t, err)
	require.Equal(t, want, d)
}
