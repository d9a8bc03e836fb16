package workload_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/workload"
)

// TestVerifyRequiredClaims (WORKLOAD.required-claims): a token correctly
// signed by a trusted key, for this audience and scope, that lacks exp, iat
// or jti is malformed. Without the check a token with no expiry would be
// accepted forever (no exp to expire, no lifetime to exceed) and one
// without jti could not be told apart on replay.
func TestVerifyRequiredClaims(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	const aud, scope, name = "operations_projector", "outbox.deliver:core_operations", "dispatcher.core"
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: aud,
		Trusted: []workload.Trusted{{Workload: name, Key: pub}}, Now: func() time.Time { return now }})
	require.NoError(t, err)

	full := func() workload.Claims {
		return workload.Claims{Claims: jwt.Claims{Issuer: name, Subject: name, Audience: jwt.Audience{aud},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
			Expiry: jwt.NewNumericDate(now.Add(workload.DefaultTTL))}, Scope: scope}
	}
	n := 0
	signed := func(c workload.Claims) string {
		n++
		if c.ID == "-" {
			c.ID = ""
		} else {
			c.ID = "jti-" + string(rune('a'+n))
		}
		return signClaims(t, priv, pub, c)
	}

	// The control: the same construction with every claim is accepted.
	_, err = v.Verify(signed(full()), scope)
	require.NoError(t, err)

	noExp := full()
	noExp.Expiry = nil
	noIat := full()
	noIat.IssuedAt = nil
	noJti := full()
	noJti.ID = "-"
	for name, c := range map[string]workload.Claims{"exp": noExp, "iat": noIat, "jti": noJti} {
		_, err := v.Verify(signed(c), scope)
		require.ErrorIs(t, err, workload.ErrMalformed, "token without %s", name) // WORKLOAD.required-claims
		require.Contains(t, err.Error(), "exp, iat and jti are required", name)
	}
}

func signClaims(t *testing.T, priv ed25519.PrivateKey, pub ed25519.PublicKey, c workload.Claims) string {
	t.Helper()
	kid, err := workload.KeyID(pub)
	require.NoError(t, err)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: priv},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid))
	require.NoError(t, err)
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	require.NoError(t, err)
	return tok
}
