package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/workload"
)

// Role flags (issue 21): no flag is everything in one process; the four
// consumers are named, and the one without an endpoint is refused clearly.
func TestServeRolePlan(t *testing.T) {
	t.Parallel()
	legacy, err := (&roleFlags{}).plan()
	require.NoError(t, err)
	require.True(t, legacy.legacy)
	require.Equal(t, boundary.All, legacy.dispatch)
	require.Equal(t, []route.Destination{route.CoreOperations, route.MeteringInputProcessor, route.BillingFinalizationCoordinator}, legacy.consume)

	p, err := (&roleFlags{dispatch: []string{"core", "metering"}, consumerURLs: []string{"core_operations=https://ops:8089"}}).plan()
	require.NoError(t, err)
	require.Equal(t, []boundary.Boundary{boundary.Core, boundary.Metering}, p.dispatch)
	require.Equal(t, map[route.Destination]string{route.CoreOperations: "https://ops:8089"}, p.remote)
	require.Empty(t, p.consume)
	require.Equal(t, []boundary.Boundary{boundary.Core, boundary.Metering}, p.databases())
	ops, err := (&roleFlags{consume: []string{"core_operations"}}).plan()
	require.NoError(t, err)
	require.Equal(t, []boundary.Boundary{boundary.Core}, ops.databases(), "a consumer-only process touches only its own database")
	require.Equal(t, boundary.All, legacy.databases())

	met, err := (&roleFlags{consume: []string{"metering_input_processor"}}).plan()
	require.NoError(t, err)
	require.Equal(t, []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway, boundary.Metering}, met.databases(),
		"the Metering input processor touches its own database and the owners it reads (Core: the admission manifest)")
	coord, err := (&roleFlags{consume: []string{"billing_finalization_coordinator"}}).plan()
	require.NoError(t, err)
	require.Equal(t, []boundary.Boundary{boundary.Core}, coord.databases(), "the Billing finalization coordinator works in the core database")
	// Issue 34: the settlement catch-up consumer has its own endpoint now
	// (the Metering owner's dispatchers deliver to it from another process).
	cu, err := (&roleFlags{consume: []string{"billing_settlement_catch_up"}}).plan()
	require.NoError(t, err)
	require.Equal(t, []route.Destination{route.BillingSettlementCatchUp}, cu.consume)
	require.Equal(t, []boundary.Boundary{boundary.Core}, cu.databases())
	for _, bad := range []roleFlags{
		{consume: []string{"operations"}},                    // not an exact destination literal
		{dispatch: []string{"billing"}},                      // not a boundary
		{dispatch: []string{"core"}},                         // no consumer to deliver to
		{consumerURLs: []string{"core_operations=http://x"}}, // remote without a dispatcher
		{dispatch: []string{"core"}, consumerURLs: []string{"core_operations"}},
		{dispatch: []string{"core"}, consume: []string{"core_operations"}, consumerURLs: []string{"core_operations=http://x"}},
		{owner: "billing"},                   // not an owner
		{serveReads: []string{"operations"}}, // not an owner
		{ownerURLs: []string{"execution"}},   // no URL
		{serveReads: []string{"execution"}, ownerURLs: []string{"execution=http://x"}}, // reads itself and elsewhere
	} {
		_, err := bad.plan()
		require.Error(t, err, "%+v", bad)
	}
}

// syncBuffer is a bytes.Buffer safe for a running command and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startServe runs `oceanway serve args...` until the test ends.
func startServe(t *testing.T, args ...string) *syncBuffer {
	t.Helper()
	out := &syncBuffer{}
	ctx, stop := context.WithCancel(t.Context())
	root := NewRoot(&IO{In: strings.NewReader(""), Out: out, Err: out})
	root.SetArgs(append([]string{"serve"}, args...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done, "serve %v: %s", args, out.String())
	})
	return out
}

// The separate-process layout: one `serve --consume core_operations` (the
// Operations projector behind an HTTPS endpoint with a provided certificate)
// and one `serve --dispatch core --consumer-url ...` (the core dispatchers,
// signing workload tokens, trusting the certificate's CA); an admission's
// events cross over HTTPS and are acknowledged.
func TestServeRolesAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	dir := t.TempDir()
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	privPEM, err := workload.EncodePrivateKey(priv)
	require.NoError(t, err)
	pubPEM, err := workload.EncodePublicKey(pub)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dispatcher.pem"), privPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dispatcher.pub"), pubPEM, 0o600))
	consumerAddr := freeAddr(t)
	conn := []string{"--database-url", srv.URL, "--db-prefix", prefix, "--listen", "127.0.0.1:0"}
	t.Cleanup(func() { _ = dropBoundaryDatabases(context.Background(), srv.URL, prefix) }) // t.Context() is cancelled before cleanups run

	// Unknown consumers are refused before anything starts.
	var out, errOut bytes.Buffer
	require.Equal(t, 1, Main(append([]string{"serve", "--consume", "billing_finalization"}, conn...), strings.NewReader(""), &out, &errOut))
	require.Contains(t, errOut.String(), "billing_finalization")

	certFile, keyFile := selfSignedCert(t, dir)
	consumer := startServe(t, append([]string{"--consume", "core_operations", "--consumer-listen", consumerAddr,
		"--tls-cert", certFile, "--tls-key", keyFile,
		"--trust-workload", "dispatcher.core=" + filepath.Join(dir, "dispatcher.pub")}, conn...)...)
	require.Eventually(t, func() bool { return strings.Contains(consumer.String(), "consumer endpoints") }, 60*time.Second, 20*time.Millisecond)

	core, err := pgxpool.New(t.Context(), srv.DatabaseURL(prefix+"_core"))
	require.NoError(t, err)
	defer core.Close()
	_, err = release.Bootstrap(t.Context(), core, release.BootstrapParams{ProjectionName: demoProjectionName, ProjectionVersion: demoProjectionVersion})
	require.NoError(t, err)

	startServe(t, append([]string{"--dispatch", "core", "--migrate=false", "--poll", "50ms",
		"--consumer-url", "core_operations=https://" + consumerAddr, "--tls-ca", certFile,
		"--workload", "dispatcher.core", "--workload-key", filepath.Join(dir, "dispatcher.pem")}, conn...)...)

	res, err := admission.New(core).Admit(t.Context(), admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
		TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 300})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var acked, receipts int
		require.NoError(c, core.QueryRow(t.Context(), `SELECT
			(SELECT count(*) FROM outbox.outbox_deliveries WHERE status = 'acknowledged' AND event_id = ANY($1::uuid[])),
			(SELECT count(*) FROM operations.applied_receipts WHERE event_id = ANY($1::uuid[]))`,
			[]string{res.RunCreatedEventID, res.WalletReservedEventID}).Scan(&acked, &receipts))
		require.Equal(c, 2, acked)
		require.Equal(c, 2, receipts)
	}, 60*time.Second, 20*time.Millisecond)
}

// `serve --owner` (issue 34): one owner per process with only its own
// database; the roles it runs follow from the owner, and an owner process
// that lacks an address it needs is refused, naming what is missing.
func TestServeOwnerPlan(t *testing.T) {
	t.Parallel()
	urls := func(bs ...string) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b+"=http://"+b+":8090")
		}
		return out
	}
	core, err := (&roleFlags{owner: "core", ownerURLs: urls("execution", "gateway", "metering")}).plan()
	require.NoError(t, err)
	require.Equal(t, []boundary.Boundary{boundary.Core}, core.dispatch)
	require.Equal(t, []route.Destination{route.CoreOperations, route.BillingFinalizationCoordinator, route.BillingSettlementCatchUp}, core.consume)
	require.Equal(t, []boundary.Boundary{boundary.Core}, core.serveReads)
	require.Equal(t, []boundary.Boundary{boundary.Core}, core.databases(), "Core opens only its own database")
	// It signs as owner.core: the name the other owners' reads know it by.
	f := roleFlags{owner: "core", workloadName: defaultWorkload, ownerURLs: urls("execution", "gateway", "metering")}
	_, err = f.plan()
	require.NoError(t, err)
	require.Equal(t, "owner.core", f.workloadName)
	_, err = (&roleFlags{owner: "core", workloadName: "billing-worker", ownerURLs: urls("execution", "gateway", "metering")}).plan()
	require.ErrorContains(t, err, "as workload owner.core")

	met, err := (&roleFlags{owner: "metering", ownerURLs: urls("execution", "gateway", "core"),
		consumerURLs: []string{"billing_settlement_catch_up=http://core:8090"}}).plan()
	require.NoError(t, err)
	require.Equal(t, []route.Destination{route.MeteringInputProcessor}, met.consume)
	require.Equal(t, []boundary.Boundary{boundary.Metering}, met.databases(),
		"the Metering input processor and worker read Execution, Gateway and Core over HTTP: their databases are never opened")

	exe, err := (&roleFlags{owner: "execution", consumerURLs: []string{"metering_input_processor=http://m", "billing_finalization_coordinator=http://c"}}).plan()
	require.NoError(t, err)
	require.Equal(t, []boundary.Boundary{boundary.Execution}, exe.databases())
	require.Empty(t, exe.consume)

	_, err = (&roleFlags{owner: "metering", ownerURLs: urls("execution")}).plan()
	require.ErrorContains(t, err, "--owner-url gateway=URL")
	require.ErrorContains(t, err, "--owner-url core=URL")
	require.ErrorContains(t, err, "--consumer-url billing_settlement_catch_up=URL")
	_, err = (&roleFlags{owner: "gateway"}).plan()
	require.ErrorContains(t, err, "--consumer-url metering_input_processor=URL")
	// Another role flag that would open another owner's database is refused.
	_, err = (&roleFlags{owner: "metering", consume: []string{"core_operations"}, ownerURLs: urls("execution", "gateway", "core"),
		consumerURLs: []string{"billing_settlement_catch_up=http://core:8090"}}).plan()
	require.ErrorContains(t, err, "runs with only its own database")
	_, err = (&roleFlags{owner: "execution", serveReads: []string{"gateway"},
		consumerURLs: []string{"metering_input_processor=http://m", "billing_finalization_coordinator=http://c"}}).plan()
	require.ErrorContains(t, err, "runs with only its own database")
}

// selfSignedCert writes a self-signed certificate for 127.0.0.1 and its key
// (PEM files) into dir: "provided certificates" for the TLS test.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "oceanway test consumer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "consumer.crt"), filepath.Join(dir, "consumer.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile
}

// Issue 33: `serve` puts Core's platform API on --listen where it has the
// core database and trusts callers' keys: the document at /openapi.json,
// and an unauthenticated admitRun answered 401 application/problem+json.
func TestServePlatformAPI(t *testing.T) {
	t.Parallel()
	srv := dbtest.Server(t)
	prefix := dbtest.NewPrefix(t)
	t.Cleanup(func() { _ = dropBoundaryDatabases(context.Background(), srv.URL, prefix) })
	dir := t.TempDir()
	_, pub, err := workload.Generate()
	require.NoError(t, err)
	pubPEM, err := workload.EncodePublicKey(pub)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "platform.pub"), pubPEM, 0o600))
	tokenKey, _, err := workload.Generate()
	require.NoError(t, err)
	tokenPEM, err := workload.EncodePrivateKey(tokenKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "core-token.key"), tokenPEM, 0o600))
	listen := freeAddr(t)
	out := startServe(t, "--serve-reads", "core", "--consumer-listen", freeAddr(t), "--listen", listen,
		"--trust-workload", "platform="+filepath.Join(dir, "platform.pub"), "--token-key", filepath.Join(dir, "core-token.key"),
		"--database-url", srv.URL, "--db-prefix", prefix)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "platform API on --listen") }, 60*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + listen + "/openapi.json")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+listen+"/v1/runs", strings.NewReader(
		`{"organizationId":"`+uuid.NewString()+`","workspaceId":"`+uuid.NewString()+`","billingAccountId":"`+uuid.NewString()+`","reservedCredits":5}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k-1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
}

// Issue 33: `oceanway token` signs what a platform presents to the API: a
// token for admitRun is accepted by the API's verifier for that scope only,
// one for openRun names Execution's audience; a missing key, both
// --operation and --scope, an unknown operation or a scope without
// --audience are refused.
func TestTokenCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	priv, pub, err := workload.Generate()
	require.NoError(t, err)
	privPEM, err := workload.EncodePrivateKey(priv)
	require.NoError(t, err)
	keyFile := filepath.Join(dir, "platform.pem")
	require.NoError(t, os.WriteFile(keyFile, privPEM, 0o600))
	var out, errOut bytes.Buffer
	require.Equal(t, 0, Main([]string{"token", "--workload-key", keyFile, "--operation", "admitRun"}, strings.NewReader(""), &out, &errOut), errOut.String())
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: "core_api", Trusted: []workload.Trusted{{Workload: "platform", Key: pub}}})
	require.NoError(t, err)
	claims, err := v.Verify(strings.TrimSpace(out.String()), "api:admitRun")
	require.NoError(t, err)
	require.Equal(t, "platform", claims.Subject)
	// An Execution operation's token names Execution's audience.
	out.Reset()
	require.Equal(t, 0, Main([]string{"token", "--workload-key", keyFile, "--operation", "openRun"}, strings.NewReader(""), &out, &errOut), errOut.String())
	ev, err := workload.NewVerifier(workload.VerifierConfig{Audience: "execution_api", Trusted: []workload.Trusted{{Workload: "platform", Key: pub}}})
	require.NoError(t, err)
	_, err = ev.Verify(strings.TrimSpace(out.String()), "api:openRun")
	require.NoError(t, err)
	for _, args := range [][]string{{"token", "--operation", "admitRun"}, {"token", "--workload-key", keyFile, "--operation", "admitRun", "--scope", "x"},
		{"token", "--workload-key", keyFile, "--operation", "noSuchOperation"}, {"token", "--workload-key", keyFile, "--scope", "x"}} {
		errOut.Reset()
		require.Equal(t, 1, Main(args, strings.NewReader(""), &out, &errOut), args)
	}
}
