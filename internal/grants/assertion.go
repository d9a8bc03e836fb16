package grants

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/oceanway/core/internal/workload"
)

// AudienceGrantExchange is the audience of an actor assertion presented
// to Core's grant exchange.
const AudienceGrantExchange = "oceanway_command_grant_exchange"

// MaxAssertionLifetime bounds an actor assertion's exp − iat.
const MaxAssertionLifetime = 5 * time.Minute

// Actor assertion errors.
var (
	// ErrAssertion: the assertion does not verify (malformed, unknown
	// issuer key, bad signature, audience, missing claims, too long).
	ErrAssertion = errors.New("grants: actor assertion does not verify")
	// ErrAssertionExpired: the assertion is not valid now.
	ErrAssertionExpired = errors.New("grants: actor assertion is not valid now")
)

// ActorAssertion is a verified actor assertion: a workforce identity
// provider's short-lived JWT naming the operator (sub) who runs a command.
type ActorAssertion struct {
	Issuer    string
	Subject   string
	JTI       string
	IssuedAt  time.Time
	ExpiresAt time.Time
}

// ValidAt reports whether the assertion is within its lifetime at now.
func (a *ActorAssertion) ValidAt(now time.Time) bool {
	return !now.Before(a.IssuedAt.Add(-time.Second)) && now.Before(a.ExpiresAt)
}

// ActorIssuer is a trusted workforce identity provider and its key.
type ActorIssuer struct {
	Issuer string
	Key    ed25519.PublicKey
}

// AssertionVerifier verifies actor assertions of trusted issuers. It checks
// signature, issuer, audience and the required claims; the time window is
// checked separately (ValidAt), because a replayed exchange whose first
// result committed returns that result whatever the time.
type AssertionVerifier struct {
	issuers map[string]ActorIssuer // by kid
}

// NewAssertionVerifier trusts the given issuers.
func NewAssertionVerifier(issuers ...ActorIssuer) (*AssertionVerifier, error) {
	if len(issuers) == 0 {
		return nil, errors.New("grants: the assertion verifier needs a trusted issuer")
	}
	v := &AssertionVerifier{issuers: map[string]ActorIssuer{}}
	for _, is := range issuers {
		kid, err := workload.KeyID(is.Key)
		if err != nil {
			return nil, err
		}
		if is.Issuer == "" {
			return nil, errors.New("grants: a trusted issuer needs a name")
		}
		v.issuers[kid] = is
	}
	return v, nil
}

// Verify checks the assertion's signature, issuer, audience and claims.
func (v *AssertionVerifier) Verify(token string) (*ActorAssertion, error) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: malformed: %v", ErrAssertion, err)
	}
	is, ok := v.issuers[tok.Headers[0].KeyID]
	if !ok {
		return nil, fmt.Errorf("%w: unknown issuer key", ErrAssertion)
	}
	var c jwt.Claims
	if err := tok.Claims(is.Key, &c); err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrAssertion, err)
	}
	switch {
	case c.Issuer != is.Issuer:
		return nil, fmt.Errorf("%w: issuer %q signed with the key of %q", ErrAssertion, c.Issuer, is.Issuer)
	case len(c.Audience) != 1 || c.Audience[0] != AudienceGrantExchange:
		return nil, fmt.Errorf("%w: audience %v", ErrAssertion, []string(c.Audience))
	case c.Subject == "" || c.ID == "" || c.IssuedAt == nil || c.Expiry == nil:
		return nil, fmt.Errorf("%w: sub, jti, iat and exp are required", ErrAssertion)
	case c.Expiry.Time().Sub(c.IssuedAt.Time()) > MaxAssertionLifetime || !c.Expiry.Time().After(c.IssuedAt.Time()):
		return nil, fmt.Errorf("%w: lifetime %s", ErrAssertion, c.Expiry.Time().Sub(c.IssuedAt.Time()))
	}
	return &ActorAssertion{Issuer: c.Issuer, Subject: c.Subject, JTI: c.ID, IssuedAt: c.IssuedAt.Time(), ExpiresAt: c.Expiry.Time()}, nil
}

// AssertionSigner is a workforce identity provider's signer (the demo's and
// the operator CLI's stand-in for the company's identity provider).
type AssertionSigner struct {
	issuer string
	signer jose.Signer
	now    func() time.Time
}

// NewAssertionSigner signs assertions of issuer with key.
func NewAssertionSigner(issuer string, key ed25519.PrivateKey, now func() time.Time) (*AssertionSigner, error) {
	kid, err := workload.KeyID(key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid))
	if err != nil {
		return nil, fmt.Errorf("grants: assertion signer: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &AssertionSigner{issuer: issuer, signer: s, now: now}, nil
}

// Assert returns a fresh assertion that principal is acting, valid for ttl
// (at most MaxAssertionLifetime).
func (s *AssertionSigner) Assert(principal string, ttl time.Duration) (string, error) {
	now := s.now()
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	c := jwt.Claims{Issuer: s.issuer, Subject: principal, Audience: jwt.Audience{AudienceGrantExchange},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(ttl)), ID: base64.RawURLEncoding.EncodeToString(jti)}
	return jwt.Signed(s.signer).Claims(c).Serialize()
}
