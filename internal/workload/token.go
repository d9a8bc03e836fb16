package workload

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Refusals, each with its own low-cardinality Reason.
var (
	ErrMissing   = errors.New("workload token: missing")
	ErrMalformed = errors.New("workload token: malformed")
	ErrSigner    = errors.New("workload token: unknown signer or bad signature")
	ErrSubject   = errors.New("workload token: subject is not the signing key's workload")
	ErrAudience  = errors.New("workload token: audience is not exactly this callee")
	ErrScope     = errors.New("workload token: scope not allowed")
	ErrExpired   = errors.New("workload token: expired or not yet valid")
	ErrLifetime  = errors.New("workload token: lifetime beyond the verifier's window")
	ErrReplay    = errors.New("workload token: replayed")
)

// Reason returns the low-cardinality reason of a refusal (a metric label),
// "" when err is not one.
func Reason(err error) string {
	for _, r := range []struct {
		err    error
		reason string
	}{
		{ErrMissing, "missing"}, {ErrMalformed, "malformed"}, {ErrSigner, "signer"}, {ErrSubject, "subject"},
		{ErrAudience, "audience"}, {ErrScope, "scope"}, {ErrExpired, "expired"}, {ErrLifetime, "lifetime"}, {ErrReplay, "replay"},
	} {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return ""
}

// DefaultTTL is the lifetime of a signed token; DefaultWindow the longest
// lifetime a verifier accepts; DefaultLeeway the clock skew tolerated.
const (
	DefaultTTL    = 30 * time.Second
	DefaultWindow = 60 * time.Second
	DefaultLeeway = 5 * time.Second
)

// Claims are a token's claims.
type Claims struct {
	jwt.Claims
	Scope string `json:"scope"`
}

// Signer signs the tokens of one workload.
type Signer struct {
	workload string
	ttl      time.Duration
	signer   jose.Signer
	now      func() time.Time
}

// SignerConfig configures a Signer.
type SignerConfig struct {
	Workload string // iss and sub
	Key      ed25519.PrivateKey
	TTL      time.Duration    // default DefaultTTL
	Now      func() time.Time // default time.Now (tests)
}

// NewSigner builds a signer.
func NewSigner(cfg SignerConfig) (*Signer, error) {
	if cfg.Workload == "" {
		return nil, fmt.Errorf("%w: signer needs a workload name", ErrKey)
	}
	if len(cfg.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: signer needs an Ed25519 private key", ErrKey)
	}
	kid, err := KeyID(cfg.Key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: cfg.Key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Signer{workload: cfg.Workload, ttl: cfg.TTL, signer: s, now: cfg.Now}, nil
}

// Workload is the signer's workload name.
func (s *Signer) Workload() string { return s.workload }

// Sign returns a fresh single-use token for audience and scope.
func (s *Signer) Sign(audience, scope string) (string, error) {
	now := s.now()
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	c := Claims{Claims: jwt.Claims{
		Issuer: s.workload, Subject: s.workload, Audience: jwt.Audience{audience},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(s.ttl)),
		ID: base64URL(jti),
	}, Scope: scope}
	tok, err := jwt.Signed(s.signer).Claims(c).Serialize()
	if err != nil {
		return "", fmt.Errorf("sign workload token: %w", err)
	}
	return tok, nil
}

// Trusted is one public key a verifier accepts and the workload it signs for.
type Trusted struct {
	Workload string
	Key      ed25519.PublicKey
}

// VerifierConfig configures a Verifier.
type VerifierConfig struct {
	Audience string // exactly this callee
	Trusted  []Trusted
	Window   time.Duration    // longest accepted lifetime; default DefaultWindow
	Leeway   time.Duration    // clock skew; default DefaultLeeway
	Now      func() time.Time // default time.Now (tests)
}

// Verifier checks tokens addressed to one audience.
type Verifier struct {
	cfg  VerifierConfig
	keys map[string]Trusted // by kid

	mu       sync.Mutex
	seen     map[string]time.Time // jti → until when it is remembered
	lastScan time.Time
}

// NewVerifier builds a verifier. It needs an audience and at least one
// trusted key.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if cfg.Audience == "" {
		return nil, fmt.Errorf("%w: verifier needs an audience", ErrKey)
	}
	if len(cfg.Trusted) == 0 {
		return nil, fmt.Errorf("%w: verifier for %s trusts no workload key", ErrKey, cfg.Audience)
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = DefaultLeeway
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg, keys: map[string]Trusted{}, seen: map[string]time.Time{}}
	for _, t := range cfg.Trusted {
		if t.Workload == "" || len(t.Key) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: trusted key needs a workload name and an Ed25519 public key", ErrKey)
		}
		kid, err := KeyID(t.Key)
		if err != nil {
			return nil, err
		}
		v.keys[kid] = t
	}
	return v, nil
}

// Audience is the verifier's audience.
func (v *Verifier) Audience() string { return v.cfg.Audience }

// Verify checks token for scope and returns its claims. Every refusal wraps
// one of the Err* sentinels above. A token is accepted at most once.
func (v *Verifier) Verify(token, scope string) (*Claims, error) {
	if token == "" {
		return nil, ErrMissing
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	trusted, ok := v.keys[tok.Headers[0].KeyID]
	if !ok {
		return nil, fmt.Errorf("%w: unknown key id", ErrSigner)
	}
	var c Claims
	if err := tok.Claims(trusted.Key, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSigner, err)
	}
	now := v.cfg.Now()
	switch {
	// guard WORKLOAD.subject
	case c.Subject != trusted.Workload || c.Issuer != trusted.Workload:
		return nil, fmt.Errorf("%w: %q signed by the key of %q", ErrSubject, c.Subject, trusted.Workload)
	// guard WORKLOAD.audience
	case len(c.Audience) != 1 || c.Audience[0] != v.cfg.Audience:
		return nil, fmt.Errorf("%w: %v, want [%s]", ErrAudience, []string(c.Audience), v.cfg.Audience)
	// guard WORKLOAD.scope
	case c.Scope != scope:
		return nil, fmt.Errorf("%w: %q, want %q", ErrScope, c.Scope, scope)
	// guard WORKLOAD.required-claims
	case c.Expiry == nil || c.IssuedAt == nil || c.ID == "":
		return nil, fmt.Errorf("%w: exp, iat and jti are required", ErrMalformed)
	}
	// guard WORKLOAD.expired
	if err := c.ValidateWithLeeway(jwt.Expected{Time: now}, v.cfg.Leeway); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExpired, err)
	}
	// guard WORKLOAD.lifetime
	if c.Expiry.Time().Sub(c.IssuedAt.Time()) > v.cfg.Window {
		return nil, fmt.Errorf("%w: %s", ErrLifetime, c.Expiry.Time().Sub(c.IssuedAt.Time()))
	}
	// guard WORKLOAD.replay
	if !v.remember(c.ID, c.Expiry.Time().Add(v.cfg.Leeway), now) {
		return nil, ErrReplay
	}
	return &c, nil
}

// remember records jti until its expiry and reports whether it was new.
// Expired entries are swept at most once per window.
func (v *Verifier) remember(jti string, until, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if now.Sub(v.lastScan) > v.cfg.Window {
		for k, t := range v.seen {
			if now.After(t) {
				delete(v.seen, k)
			}
		}
		v.lastScan = now
	}
	if _, dup := v.seen[jti]; dup {
		return false
	}
	v.seen[jti] = until
	return true
}

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
