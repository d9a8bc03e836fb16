package cli_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/billingtest"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/cli"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

// OP-1 (issue 31, item 6): the operator surface end to end on real
// PostgreSQL. `case list` shows the open case; alice requests, alice
// cannot approve her own request (the command fails and says why), bob
// approves, alice applies (decision, Core's grant, Billing's resolution);
// `case show --json` shows the chain; an unauthenticated command is refused.
func TestCaseCommands(t *testing.T) {
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
	idpKey, idpPub := keyFiles(t, dir, "idp")
	grantKey, _ := keyFiles(t, dir, "grant")
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Main(append(append([]string{"case"}, args...), "--core-dsn", dsn), strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	as := func(who string) []string {
		return []string{"--as", who, "--actor-key", idpKey, "--actor-issuer", "idp", "--trust-actor-issuer", "idp=" + idpPub}
	}

	code, out, errOut := run("list")
	require.Zero(t, code, errOut)
	require.Contains(t, out, c.Case.ReconciliationCaseRef)
	require.Contains(t, out, "open")

	code, out, errOut = run(append([]string{"request", c.Case.ReconciliationCaseRef, "--justification", "the provider corrected the usage"},
		as("workforce:alice@example.org")...)...)
	require.Zero(t, code, errOut)
	ref := regexp.MustCompile(`request (frcr-[0-9a-f]+)`).FindStringSubmatch(out)
	require.NotNil(t, ref, out)

	code, _, errOut = run(append([]string{"approve", ref[1]}, as("workforce:alice@example.org")...)...)
	require.NotZero(t, code)
	require.Contains(t, errOut, "may not be approved by its requester")

	code, _, errOut = run(append([]string{"approve", ref[1]}, as("workforce:bob@example.org")...)...)
	require.Zero(t, code, errOut)
	code, out, errOut = run(append([]string{"apply", ref[1], "--grant-key", grantKey}, as("workforce:alice@example.org")...)...)
	require.Zero(t, code, errOut)
	require.Contains(t, out, "resolution frra-")

	code, _, errOut = run("approve", ref[1], "--trust-actor-issuer", "idp="+idpPub)
	require.NotZero(t, code, "no assertion, no command")
	require.Contains(t, errOut, "actor assertion is required")

	code, out, errOut = run("show", c.Case.ReconciliationCaseRef, "--json")
	require.Zero(t, code, errOut)
	var v cases.CaseView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Len(t, v.Requests, 1)
	require.Equal(t, "workforce:bob@example.org", *v.Requests[0].Approver)
	require.NotNil(t, v.Requests[0].DecisionRef)
	var applied int
	require.NoError(t, admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.finalization_reconciliation_resolutions`).Scan(&applied))
	require.Equal(t, 1, applied)
}
