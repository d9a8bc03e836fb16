// Package workload is the workload identity of OceanWay's internal calls:
// a caller (a producer's dispatcher) signs a short-lived token for each call
// and the callee (a consumer endpoint, or an owner's directed read) verifies
// it before touching its database.
//
// A token is a compact JWS (go-jose, EdDSA over Ed25519) whose claims are:
//
//	iss = sub = the caller's workload name (e.g. "dispatcher.core")
//	aud       = exactly one audience: the callee (e.g. "operations_projector")
//	scope     = what the call may do (e.g. "outbox.deliver:core_operations")
//	iat, nbf, exp = a lifetime of at most the verifier's window (default 60 s)
//	jti       = a fresh random id, accepted once
//
// The header's kid is the RFC 7638 thumbprint of the signing public key; the
// verifier trusts a fixed set of public keys, each bound to the one workload
// name it may sign for. It refuses, with a typed error and before any other
// work: a missing or malformed token, an unknown key or a bad signature
// (ErrSigner), a subject other than the key's workload, an audience that is
// not exactly its own, a scope other than the expected one, an expired or
// not-yet-valid token, a lifetime beyond its window, and a jti it has seen
// before (ErrReplay). Seen jtis are remembered until their token expires, so
// the memory is bounded by the call rate times the window.
//
// Keys are PEM files (PKCS #8 private keys, PKIX public keys) or the same PEM
// text in an environment variable; Generate makes throwaway ones (the demo,
// tests).
package workload
