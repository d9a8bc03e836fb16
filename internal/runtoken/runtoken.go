// Package runtoken signs and verifies a run's execution token on the
// platform API: Core signs the RunExecutionToken@1 it issues (compact JWS,
// EdDSA, the token's canonical bytes as payload) with its token key, and
// Execution opens a run over the API only with a token whose signature
// verifies against Core's public key. The token's content is derivable
// from event data; the signature is what makes it a permission.
package runtoken

import (
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"

	"github.com/oceanway/core/internal/workload"
)

// Type is the JWS typ header of a signed run execution token.
const Type = "oceanway-run-execution-token+jws"

// ErrInvalid is a token that is not a compact JWS of this type signed by a
// trusted Core key.
var ErrInvalid = errors.New("runtoken: not a run execution token signed by a trusted Core key")

// Signer signs run execution tokens with Core's key.
type Signer struct {
	signer jose.Signer
}

// NewSigner returns a signer with Core's token key.
func NewSigner(key ed25519.PrivateKey) (*Signer, error) {
	kid, err := workload.KeyID(key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key},
		(&jose.SignerOptions{}).WithType(Type).WithHeader(jose.HeaderKey("kid"), kid))
	if err != nil {
		return nil, fmt.Errorf("runtoken: %w", err)
	}
	return &Signer{signer: s}, nil
}

// Sign returns the compact JWS of the token's canonical bytes (Ed25519 is
// deterministic: the same token signs to the same JWS).
func (s *Signer) Sign(tokenBody []byte) (string, error) {
	jws, err := s.signer.Sign(tokenBody)
	if err != nil {
		return "", fmt.Errorf("runtoken: sign: %w", err)
	}
	return jws.CompactSerialize()
}

// Verifier verifies signed run execution tokens against Core's keys.
type Verifier struct {
	keys map[string]ed25519.PublicKey // by kid
}

// NewVerifier trusts these Core token keys.
func NewVerifier(keys ...ed25519.PublicKey) (*Verifier, error) {
	if len(keys) == 0 {
		return nil, errors.New("runtoken: no trusted Core key")
	}
	v := &Verifier{keys: map[string]ed25519.PublicKey{}}
	for _, k := range keys {
		kid, err := workload.KeyID(k)
		if err != nil {
			return nil, err
		}
		v.keys[kid] = k
	}
	return v, nil
}

// Verify returns the signed token's payload (the RunExecutionToken@1
// bytes, still to be decoded strictly) when the JWS is of this type and its
// signature verifies against the trusted key its kid names.
func (v *Verifier) Verify(compact string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(compact, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: %d signatures", ErrInvalid, len(jws.Signatures))
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != Type {
		return nil, fmt.Errorf("%w: typ %q", ErrInvalid, typ)
	}
	key, ok := v.keys[h.KeyID]
	if !ok {
		return nil, fmt.Errorf("%w: unknown kid %q", ErrInvalid, h.KeyID)
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return payload, nil
}
