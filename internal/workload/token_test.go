package workload_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/workload"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func pair(t *testing.T, name string, now func() time.Time) (*workload.Signer, workload.Trusted) {
	t.Helper()
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	s, err := workload.NewSigner(workload.SignerConfig{Workload: name, Key: priv, Now: now})
	require.NoError(t, err)
	return s, workload.Trusted{Workload: name, Key: pub}
}

// Workload identity (issue 21): every refusal is typed and a token is
// accepted once; the audience must be exactly the callee.
func TestVerifyRefusals(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	signer, trusted := pair(t, "dispatcher.core", c.now)
	stranger, _ := pair(t, "dispatcher.core", c.now) // same name, untrusted key
	other, otherTrusted := pair(t, "dispatcher.metering", c.now)
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: "operations_projector",
		Trusted: []workload.Trusted{trusted, otherTrusted}, Now: c.now})
	require.NoError(t, err)
	const scope = "outbox.deliver:core_operations"

	tok, err := signer.Sign("operations_projector", scope)
	require.NoError(t, err)
	claims, err := v.Verify(tok, scope)
	require.NoError(t, err)
	require.Equal(t, "dispatcher.core", claims.Subject)
	require.Equal(t, "dispatcher.metering", mustVerify(t, v, other, scope).Subject)

	_, err = v.Verify(tok, scope)
	require.ErrorIs(t, err, workload.ErrReplay) // WORKLOAD.replay
	require.Equal(t, "replay", workload.Reason(err))

	refuse := func(tok, scope string, want error) {
		t.Helper()
		_, err := v.Verify(tok, scope)
		require.ErrorIs(t, err, want)
		require.NotEmpty(t, workload.Reason(err))
	}
	refuse("", scope, workload.ErrMissing)
	refuse("not.a.token", scope, workload.ErrMalformed)
	refuse(sign(t, stranger, "operations_projector", scope), scope, workload.ErrSigner)
	refuse(sign(t, signer, "metering_input_processor_consumer", scope), scope, workload.ErrAudience)                             // WORKLOAD.audience
	refuse(sign(t, signer, "operations_projector", "outbox.deliver:billing_finalization_coordinator"), scope, workload.ErrScope) // WORKLOAD.scope
	// A signature altered by one character.
	good := sign(t, signer, "operations_projector", scope)
	refuse(good[:len(good)-2]+flip(good[len(good)-2:]), scope, workload.ErrSigner)

	// Expired: signed now, verified after its lifetime and the leeway.
	old := sign(t, signer, "operations_projector", scope)
	c.t = c.t.Add(workload.DefaultTTL + workload.DefaultLeeway + time.Second)
	refuse(old, scope, workload.ErrExpired) // WORKLOAD.expired

	// A lifetime beyond the verifier's window is refused even while valid.
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	long, err := workload.NewSigner(workload.SignerConfig{Workload: "dispatcher.long", Key: priv, TTL: time.Hour, Now: c.now})
	require.NoError(t, err)
	lv, err := workload.NewVerifier(workload.VerifierConfig{Audience: "operations_projector",
		Trusted: []workload.Trusted{{Workload: "dispatcher.long", Key: pub}}, Now: c.now})
	require.NoError(t, err)
	_, err = lv.Verify(sign(t, long, "operations_projector", scope), scope)
	require.ErrorIs(t, err, workload.ErrLifetime) // WORKLOAD.lifetime

	// A trusted key signing for another workload's name.
	impostor, err := workload.NewVerifier(workload.VerifierConfig{Audience: "operations_projector",
		Trusted: []workload.Trusted{{Workload: "dispatcher.execution", Key: trusted.Key}}, Now: c.now})
	require.NoError(t, err)
	_, err = impostor.Verify(sign(t, signer, "operations_projector", scope), scope)
	require.ErrorIs(t, err, workload.ErrSubject) // WORKLOAD.subject
}

func mustVerify(t *testing.T, v *workload.Verifier, s *workload.Signer, scope string) *workload.Claims {
	t.Helper()
	c, err := v.Verify(sign(t, s, v.Audience(), scope), scope)
	require.NoError(t, err)
	return c
}

func sign(t *testing.T, s *workload.Signer, aud, scope string) string {
	t.Helper()
	tok, err := s.Sign(aud, scope)
	require.NoError(t, err)
	return tok
}

func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

// Keys load from PEM files or from PEM text (an environment variable).
func TestLoadKeys(t *testing.T) {
	t.Parallel()
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	privPEM, err := workload.EncodePrivateKey(priv)
	require.NoError(t, err)
	pubPEM, err := workload.EncodePublicKey(pub)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "k.pem"), privPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "k.pub"), pubPEM, 0o600))

	fromFile, err := workload.LoadPrivateKey(filepath.Join(dir, "k.pem"))
	require.NoError(t, err)
	require.Equal(t, priv, fromFile)
	fromText, err := workload.LoadPrivateKey(string(privPEM))
	require.NoError(t, err)
	require.Equal(t, priv, fromText)
	p, err := workload.LoadPublicKey(filepath.Join(dir, "k.pub"))
	require.NoError(t, err)
	require.Equal(t, pub, p)

	_, err = workload.LoadPrivateKey(string(pubPEM))
	require.ErrorIs(t, err, workload.ErrKey)
	_, err = workload.LoadPublicKey(filepath.Join(dir, "missing.pub"))
	require.ErrorIs(t, err, workload.ErrKey)
	_, err = workload.LoadPublicKey(strings.Repeat("x", 10))
	require.ErrorIs(t, err, workload.ErrKey)
}
