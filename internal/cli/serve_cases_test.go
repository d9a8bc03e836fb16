package cli_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/reconciliation"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/casegateway/casehttp"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/workload"
)

// keyFiles writes a fresh Ed25519 key pair as name.key and name.pub in dir.
func keyFiles(t *testing.T, dir, name string) (priv, pub string) {
	t.Helper()
	k, p, err := workload.Generate()
	require.NoError(t, err)
	kb, err := workload.EncodePrivateKey(k)
	require.NoError(t, err)
	pb, err := workload.EncodePublicKey(p)
	require.NoError(t, err)
	priv, pub = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	require.NoError(t, os.WriteFile(priv, kb, 0o600))
	require.NoError(t, os.WriteFile(pub, pb, 0o600))
	return priv, pub
}

var caseServicesLine = regexp.MustCompile(`case services (http://[0-9.:]+)/v1/cases/`)

// startServe runs `oceanway serve ARGS` as its own process (this test
// binary re-executing the CLI) and returns the URL of its case services.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"serve", "--listen", "127.0.0.1:0", "--consumer-listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), reexecCLI+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := caseServicesLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-time.After(60 * time.Second):
		t.Fatalf("serve %v did not announce its case services", args)
		return ""
	}
}

// OP-1 (issue 31, the cross-process gate ADR-031 requires): Operations,
// Core's grant issuer and Billing each run in their own `oceanway serve`
// process (--serve-cases, least privilege, their own keys), and the
// chain passes over the internal HTTP transport: request, approval by a
// second operator, apply (Core reads Operations' decision over HTTP before
// it signs the grant; Billing verifies it with Core's public key only).
func TestServeCaseServicesInSeparateProcesses(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), operationsschema.Line()}, MaxConns: 8})
	admin, dsn := b.Core(), b.DSNs[boundary.Core]
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	opsDB := dbtest.RolePool(t, dsn, operationsschema.RoleOperations)
	billingDB := dbtest.RolePool(t, dsn, billingschema.RoleBilling)
	c := billingtest.EnterCase(t, admin, billingDB, cases.Identities{Pool: opsDB})
	p, err := projector.New(opsDB, projector.Config{Inbox: inbox.Config{LockTimeout: time.Second},
		FinalizationDecisionReads: billing.Reads{DB: billingDB}, ResolutionAppliedReads: billing.Reads{DB: billingDB}})
	require.NoError(t, err)
	_, err = p.Consume(t.Context(), operationstest.DeliveryV1(c.CaseRequested))
	require.NoError(t, err)

	dir := t.TempDir()
	gwKey, gwPub := keyFiles(t, dir, "gateway")
	coreKey, corePub := keyFiles(t, dir, "core-grants")
	idpKey, idpPub := keyFiles(t, dir, "idp")
	grantKey, grantPub := keyFiles(t, dir, "grant")
	trustGateway := "--trust-workload=" + casegateway.Workload + "=" + gwPub
	ops := startServe(t, "--core-dsn", dsn, "--serve-cases", "operations", trustGateway,
		"--trust-workload="+casehttp.WorkloadGrants+"="+corePub, "--trust-actor-issuer", "idp="+idpPub)
	grantsURL := startServe(t, "--core-dsn", dsn, "--serve-cases", "grants", trustGateway, "--cases-operations-url", ops,
		"--workload", casehttp.WorkloadGrants, "--workload-key", coreKey, "--grant-key", grantKey, "--trust-actor-issuer", "idp="+idpPub)
	billingURL := startServe(t, "--core-dsn", dsn, "--serve-cases", "billing", trustGateway, "--trust-grant-key", grantPub)

	key, err := workload.LoadPrivateKey(gwKey)
	require.NoError(t, err)
	signer, err := workload.NewSigner(workload.SignerConfig{Workload: casegateway.Workload, Key: key})
	require.NoError(t, err)
	client := func(url string) *casehttp.Client {
		cl, err := casehttp.NewClient(url, signer, nil)
		require.NoError(t, err)
		return cl
	}
	idpPriv, err := workload.LoadPrivateKey(idpKey)
	require.NoError(t, err)
	idp, err := grants.NewAssertionSigner("idp", idpPriv, nil)
	require.NoError(t, err)
	idpPubKey, err := workload.LoadPublicKey(idpPub)
	require.NoError(t, err)
	actors, err := grants.NewAssertionVerifier(grants.ActorIssuer{Issuer: "idp", Key: idpPubKey})
	require.NoError(t, err)
	g := casegateway.Gateway{Actors: actors, Operations: client(ops), Grants: client(grantsURL), Billing: client(billingURL)}
	as := func(who string) string {
		a, err := idp.Assert(who, time.Minute)
		require.NoError(t, err)
		return a
	}

	req, err := g.Request(t.Context(), as("workforce:alice@example.org"), cases.RequestInput{CaseRef: c.Case.ReconciliationCaseRef,
		OperationID: uuid.NewString(), Justification: "owner fixed the usage",
		Evidence: []reconciliation.EvidenceReference{{EvidenceKind: "billing_finalization_case", Object: c.Case.Identity}}})
	require.NoError(t, err)
	_, err = g.Approve(t.Context(), as("workforce:bob@example.org"), req.Request.Request.Ref)
	require.NoError(t, err)
	applied, err := g.Apply(t.Context(), as("workforce:alice@example.org"), req.Request.Request.Ref)
	require.NoError(t, err)
	require.Equal(t, c.Case, applied.Result.Fact.Case)
	var n int
	require.NoError(t, admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.finalization_reconciliation_resolutions`).Scan(&n))
	require.Equal(t, 1, n)
}
