// Package grants is Core's command grant issuer (issue 31, ADR-031): it
// exchanges an operator's actor assertion and Operations' resolution
// decision for a single-use SignedWorkforceCommandExecutionGrant@1, and
// verifies such grants for Billing.
//
// A grant is a compact JWS (go-jose, EdDSA over Ed25519) whose payload is
// the canonical contracts/reconciliation.GrantClaims: audience
// billing_finalization_reconciliation_resolution_command, a fresh jti, a
// lifetime of at most reconciliation.MaxGrantLifetime, and every object of
// the chain it authorizes. The header's kid is the RFC 7638 thumbprint of
// Core's grant key. Billing consumes the jti in its own transaction; the
// exchange result makes a lost response return the first grant.
//
// Issue 32 adds the late settlement command audience
// (billing_late_settlement_command): ExchangeLate signs
// reconciliation.LateGrantClaims after Operations' LateDecisions read, and
// VerifyLateGrant (the LateGrantVerifier Billing takes) accepts only those
// claims. One assertion buys one grant across both audiences.
package grants

import (
	"crypto/ed25519"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/workload"
)

// ErrGrant: a grant that does not verify (malformed, unknown key, bad
// signature, another issuer, claims that are not strictly a grant's).
var ErrGrant = errors.New("grants: grant does not verify")

// Signer signs grants with Core's grant key.
type Signer struct {
	issuer string
	signer jose.Signer
}

// NewSigner builds the signer of issuer (e.g. "core.grants").
func NewSigner(issuer string, key ed25519.PrivateKey) (*Signer, error) {
	if issuer == "" {
		return nil, errors.New("grants: the signer needs an issuer")
	}
	kid, err := workload.KeyID(key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid))
	if err != nil {
		return nil, fmt.Errorf("grants: signer: %w", err)
	}
	return &Signer{issuer: issuer, signer: s}, nil
}

// Issuer is the iss every grant of this signer carries.
func (s *Signer) Issuer() string { return s.issuer }

// Sign returns the compact JWS of claims (whose Issuer must be the signer's).
func (s *Signer) Sign(c *reconciliation.GrantClaims) (string, error) {
	if c.Issuer != s.issuer {
		return "", fmt.Errorf("grants: claims issued by %q, signer is %q", c.Issuer, s.issuer)
	}
	payload, err := c.Marshal()
	if err != nil {
		return "", err
	}
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("grants: sign: %w", err)
	}
	return jws.CompactSerialize()
}

// Verifier verifies grants of one issuer against its public keys
// (billing.GrantVerifier). It checks signature, issuer and the claims'
// strict shape; the time window and the jti are the consumer's.
type Verifier struct {
	issuer string
	keys   map[string]ed25519.PublicKey // by kid
}

// NewVerifier trusts keys for grants of issuer.
func NewVerifier(issuer string, keys ...ed25519.PublicKey) (*Verifier, error) {
	if issuer == "" || len(keys) == 0 {
		return nil, errors.New("grants: the verifier needs an issuer and a key")
	}
	v := &Verifier{issuer: issuer, keys: map[string]ed25519.PublicKey{}}
	for _, k := range keys {
		kid, err := workload.KeyID(k)
		if err != nil {
			return nil, err
		}
		v.keys[kid] = k
	}
	return v, nil
}

// VerifyGrant implements billing.GrantVerifier.
func (v *Verifier) VerifyGrant(compact string) (*reconciliation.GrantClaims, error) {
	jws, err := jose.ParseSignedCompact(compact, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: malformed: %v", ErrGrant, err)
	}
	key, ok := v.keys[jws.Signatures[0].Header.KeyID]
	if !ok {
		return nil, fmt.Errorf("%w: unknown key id", ErrGrant)
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrGrant, err)
	}
	c, err := reconciliation.DecodeGrantClaims(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGrant, err)
	}
	if c.Issuer != v.issuer {
		return nil, fmt.Errorf("%w: issuer %q, want %q", ErrGrant, c.Issuer, v.issuer)
	}
	return c, nil
}

// CodeInsertOnly is the SQLSTATE of an update, delete or truncate of an
// exchange result (schema grants).
const CodeInsertOnly = "GR001"
