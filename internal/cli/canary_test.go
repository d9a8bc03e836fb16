package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/coreapi"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/workload"
)

// runRoot runs one oceanway command in process and returns its output.
func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out := &syncBuffer{}
	root := NewRoot(&IO{In: strings.NewReader(""), Out: out, Err: out})
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

// admitAs calls admitRun as workload who (its key at keyPath) and returns
// the status and the problem code (if any).
func admitAs(t *testing.T, listen, who, keyPath string) (int, string) {
	t.Helper()
	key, err := workload.LoadPrivateKey(keyPath)
	require.NoError(t, err)
	s, err := workload.NewSigner(workload.SignerConfig{Workload: who, Key: key})
	require.NoError(t, err)
	tok, err := s.Sign(api.AudienceCore, api.Scope("admitRun"))
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+listen+"/v1/runs", strings.NewReader(
		`{"organizationId":"`+uuid.NewString()+`","workspaceId":"`+uuid.NewString()+`","billingAccountId":"`+uuid.NewString()+`","reservedCredits":5}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", uuid.NewString())
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var p struct {
		Code string `json:"code"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&p) // a 201 has no code
	return resp.StatusCode, p.Code
}

// Issue 33 items 3–6 (ADR-031's canary gate): keys generate writes the
// install's keys once (never over them); serve --keys --bootstrap serves
// every owner's API on a fresh prefix; PUBLIC_ADMISSION_MODE disabled
// refuses a public caller's admitRun (public_admission_disabled) and not
// an internal one; enabled before any proof refuses to start; the canary,
// through the public API only, closes the loop and records a passed proof;
// demo --via api --api URL then drives the same serve and passes every
// invariant; and serve starts with public admission enabled and admits the
// public caller.
func TestCanaryProvesTheDeploymentAndGatesPublicAdmission(t *testing.T) {
	// Not parallel: a whole serve and a demo share the server's connections.
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	t.Cleanup(func() { _ = dropBoundaryDatabases(context.Background(), srv.URL, prefix) })
	keys := filepath.Join(t.TempDir(), "keys")
	out, err := runRoot(t, "keys", "generate", "--dir", keys)
	require.NoError(t, err, out)
	_, err = runRoot(t, "keys", "generate", "--dir", keys)
	require.ErrorContains(t, err, "never overwritten")
	// A public caller of this deployment, trusted like every *.pub of D.
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	privPEM, err := workload.EncodePrivateKey(priv)
	require.NoError(t, err)
	pubPEM, err := workload.EncodePublicKey(pub)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(keys, "public.signup.key"), privPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(keys, "public.signup.pub"), pubPEM, 0o600))
	// Operators' identity provider, trusted by serve for the case operations.
	idpKey, idpPub, err := workload.Generate()
	require.NoError(t, err)
	idpPEM, err := workload.EncodePublicKey(idpPub)
	require.NoError(t, err)
	idpFile := filepath.Join(t.TempDir(), "idp.pub")
	require.NoError(t, os.WriteFile(idpFile, idpPEM, 0o600))
	conn := []string{"--database-url", srv.URL, "--db-prefix", prefix, "--keys", keys, "--public-workload", "public.signup",
		"--trust-actor-issuer", "https://idp.example.org=" + idpFile}

	// Enabled before any proof: serve refuses to start.
	out, err = runRoot(t, append([]string{"serve", "--public-admission-mode", "enabled", "--bootstrap", "--listen", freeAddr(t),
		"--consumer-listen", freeAddr(t)}, conn...)...)
	require.ErrorContains(t, err, "no passed canary proof", out)

	listen := freeAddr(t)
	served := startServe(t, append([]string{"--bootstrap", "--pool-size", "3", "--completeness-interval", "500ms", "--listen", listen,
		"--consumer-listen", freeAddr(t)}, conn...)...)
	require.Eventually(t, func() bool {
		return strings.Contains(served.String(), "platform API on --listen: /v1/ for core, execution, gateway")
	},
		60*time.Second, 20*time.Millisecond, served.String())
	status, code := admitAs(t, listen, "public.signup", filepath.Join(keys, "public.signup.key"))
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, api.CodePublicAdmission, code)
	// A public caller may call admitRun and its reads only, whatever scope
	// its token names.
	pubKey, err := workload.LoadPrivateKey(filepath.Join(keys, "public.signup.key"))
	require.NoError(t, err)
	pubSigner, err := workload.NewSigner(workload.SignerConfig{Workload: "public.signup", Key: pubKey})
	require.NoError(t, err)
	issueTok, err := pubSigner.Sign(api.AudienceCore, api.Scope("issueRunExecutionToken"))
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+listen+"/v1/runs/"+uuid.NewString()+"/execution-token", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+issueTok)
	req.Header.Set("Idempotency-Key", "k-public")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	out, err = runRoot(t, "canary", "--api", "http://"+listen, "--keys", keys, "--timeout", "2m")
	require.NoError(t, err, out)
	require.Contains(t, out, "canary: verdict PASSED")
	for _, check := range []string{coreapi.CheckFinalized, coreapi.CheckProjected, coreapi.CheckCompleteness, coreapi.CheckBalanced, coreapi.CheckUsageSettled, coreapi.CheckCommitted} {
		require.Contains(t, out, "check "+check, out)
	}

	// Item 3: the demo drives the same deployment's serve through its API
	// and proves every invariant there, the canary's run counted.
	out, err = runRoot(t, "demo", "--via", "api", "--api", "http://"+listen, "--keys", keys, "--runs", "12", "--plain",
		"--database-url", srv.URL, "--db-prefix", prefix)
	require.NoError(t, err, out)
	require.Contains(t, out, "held 1 run(s) before this demo")
	require.Contains(t, out, "verdict                                   PASSED")

	status, _ = admitAs(t, listen, keyPlatform, filepath.Join(keys, "platform.key"))
	require.Equal(t, http.StatusCreated, status, "internal callers are unaffected")

	// The operators' case operations, with an actor assertion of the
	// trusted identity provider (a workload token is not one).
	idp, err := grants.NewAssertionSigner("https://idp.example.org", idpKey, nil)
	require.NoError(t, err)
	assertion, err := idp.Assert("workforce:alice@example.org", time.Minute)
	require.NoError(t, err)
	list := func(bearer string) (int, []byte) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+listen+"/v1/cases?state=resolved", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, body
	}
	code200, body := list(assertion)
	require.Equal(t, http.StatusOK, code200, string(body))
	var cl struct {
		Cases []struct {
			State string `json:"state"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(body, &cl))
	for _, c := range cl.Cases {
		require.Equal(t, "resolved", c.State)
	}
	platformKey, err := workload.LoadPrivateKey(filepath.Join(keys, "platform.key"))
	require.NoError(t, err)
	ws, err := workload.NewSigner(workload.SignerConfig{Workload: keyPlatform, Key: platformKey})
	require.NoError(t, err)
	wtok, err := ws.Sign(api.Audience(api.OwnerOperations), api.Scope("listCases"))
	require.NoError(t, err)
	code401, _ := list(wtok)
	require.Equal(t, http.StatusUnauthorized, code401, "a workload token is not an operator's assertion")

	enabled := freeAddr(t)
	again := startServe(t, append([]string{"--public-admission-mode", "enabled", "--listen", enabled, "--consumer-listen", freeAddr(t)}, conn...)...)
	require.Eventually(t, func() bool { return strings.Contains(again.String(), "PUBLIC_ADMISSION_MODE enabled") }, 60*time.Second, 20*time.Millisecond, again.String())
	status, code = admitAs(t, enabled, "public.signup", filepath.Join(keys, "public.signup.key"))
	require.Equal(t, http.StatusCreated, status, code)
}
