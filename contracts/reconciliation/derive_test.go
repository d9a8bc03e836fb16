package reconciliation_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rc "github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
)

// OP-1: the derivations are frozen vectors (append-only: a change of
// inputs is a new derivation name, never a new value for an old one).
func TestDerivationVectors_OP1(t *testing.T) {
	t.Parallel()
	require.Equal(t, "fcase-ef1cfbee-4adf-8481-8040-8977df9af7a1", rc.ReconciliationCaseRef(fence, 1))
	require.Equal(t, "5fec52b2-f343-8931-b07b-5fa0b03eac03", rc.CaseRequestOperationID(fence, 1))
	require.Equal(t, "a9391cdc-5034-870d-8d0f-a6730f049647", rc.ResolutionOperationID(fq("frcd-1", 'a')))
	op, err := rc.CommandGrantExchangeOperationID("https://idp.example.com", "assertion-7f3a")
	require.NoError(t, err)
	require.Equal(t, "16e616cf-963f-8ef1-8e4b-280b2dddbd88", op)
}

// OP-1: every input of a derivation changes it; nothing else does.
func TestDerivationsDependOnEveryInput_OP1(t *testing.T) {
	t.Parallel()
	ref := rc.ReconciliationCaseRef(fence, 1)
	require.True(t, strings.HasPrefix(ref, "fcase-") && strict.IsUUID(strings.TrimPrefix(ref, "fcase-")), ref)
	require.NotEqual(t, ref, rc.ReconciliationCaseRef(fence, 2))
	require.NotEqual(t, ref, rc.ReconciliationCaseRef(otherUUID, 1))
	require.NotEqual(t, rc.CaseRequestOperationID(fence, 1), rc.CaseRequestOperationID(fence, 2))
	require.NotEqual(t, strings.TrimPrefix(ref, "fcase-"), rc.CaseRequestOperationID(fence, 1), "distinct derivation names")

	base := fq("frcd-1", 'a')
	op := rc.ResolutionOperationID(base)
	for _, edit := range []func(q *strict.Quadruple){
		func(q *strict.Quadruple) { q.Ref = "frcd-2" },
		func(q *strict.Quadruple) { q.SchemaVersion = "2" },
		func(q *strict.Quadruple) { q.DigestAlgorithmVersion = "jcs-sha256-v2" },
		func(q *strict.Quadruple) { q.Digest = fq("", 'b').Digest },
	} {
		q := base
		edit(&q)
		require.NotEqual(t, op, rc.ResolutionOperationID(q))
	}

	exchange := func(iss, jti string) string {
		id, err := rc.CommandGrantExchangeOperationID(iss, jti)
		require.NoError(t, err)
		return id
	}
	first := exchange("https://idp.example.com", "assertion-7f3a")
	require.Equal(t, first, exchange("https://idp.example.com", "assertion-7f3a"))
	for _, other := range [][2]string{
		{"https://idp.example.com/", "assertion-7f3a"}, // byte for byte: no normalization
		{"https://IDP.example.com", "assertion-7f3a"},
		{"https://idp.example.com", "Assertion-7f3a"},
		{"assertion-7f3a", "https://idp.example.com"},
	} {
		require.NotEqual(t, first, exchange(other[0], other[1]), other)
	}
	for _, bad := range [][2]string{{"", "j"}, {"iss", ""}} {
		_, err := rc.CommandGrantExchangeOperationID(bad[0], bad[1])
		require.ErrorIs(t, err, strict.ErrEmptyString, bad)
	}
	for _, bad := range [][2]string{{"i ss", "j"}, {"iss", "jti\u00e9"}} {
		_, err := rc.CommandGrantExchangeOperationID(bad[0], bad[1])
		require.ErrorIs(t, err, strict.ErrInvalidValue, bad)
	}
}

// OP-1: the bookkeeping time is outside the digest; the JIT window is in it.
func TestDigestCoversWindowNotBookkeeping_OP1(t *testing.T) {
	t.Parallel()
	c := buildChain(t, firstGeneration, nil)
	before := c.jit.Activation
	c.jit.ActivatedAt = c.jit.ActivatedAt.Add(time.Minute)
	d, err := rc.DigestOf(c.jit)
	require.NoError(t, err)
	require.Equal(t, before.Digested(), d)
	c.jit.ExpiresAt = c.jit.ExpiresAt.Add(time.Second)
	d, err = rc.DigestOf(c.jit)
	require.NoError(t, err)
	require.NotEqual(t, before.Digested(), d)
}
