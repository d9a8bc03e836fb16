package workload

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
)

// ErrKey is returned for a key that cannot be loaded or is not Ed25519.
var ErrKey = errors.New("workload: key")

// Generate returns a fresh Ed25519 key pair (throwaway keys for the demo and
// tests; production keys come from files or the environment).
func Generate() (ed25519.PrivateKey, ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate workload key: %w", err)
	}
	return priv, pub, nil
}

// pemOf reads spec: PEM text itself (it starts with "-----BEGIN"), else the
// path of a PEM file.
func pemOf(spec string) (*pem.Block, error) {
	data := []byte(spec)
	if !strings.HasPrefix(strings.TrimSpace(spec), "-----BEGIN") {
		var err error
		if data, err = os.ReadFile(spec); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrKey, err)
		}
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrKey)
	}
	return block, nil
}

// LoadPrivateKey loads an Ed25519 private key from a PKCS #8 PEM file path
// or PEM text (`openssl genpkey -algorithm ed25519`).
func LoadPrivateKey(spec string) (ed25519.PrivateKey, error) {
	block, err := pemOf(spec)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: private key is %T, want Ed25519", ErrKey, k)
	}
	return priv, nil
}

// LoadPublicKey loads an Ed25519 public key from a PKIX PEM file path or PEM
// text (`openssl pkey -pubout`).
func LoadPublicKey(spec string) (ed25519.PublicKey, error) {
	block, err := pemOf(spec)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: public key is %T, want Ed25519", ErrKey, k)
	}
	return pub, nil
}

// EncodePrivateKey returns the PKCS #8 PEM text of priv.
func EncodePrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// EncodePublicKey returns the PKIX PEM text of pub.
func EncodePublicKey(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// KeyID is the RFC 7638 thumbprint (SHA-256, base64url) of pub: the kid of
// every token it verifies.
func KeyID(pub ed25519.PublicKey) (string, error) {
	tp, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("%w: thumbprint: %w", ErrKey, err)
	}
	return base64URL(tp), nil
}
