package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing/catchup"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/cli"
	"github.com/oceanway/core/internal/dbtest"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
)

// OP-1, BI-2 (issue 32 part 2): the late settlement operator surface on
// real PostgreSQL: `case list --late` shows the open late case with its
// exposure; alice requests to fund it, alice cannot approve her own
// request, bob approves; `case show lcase-… --json` shows the chain.
func TestCaseLateCommands(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Metering},
		Lines:    []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), operationsschema.Line(), meteringschema.Line()},
		MaxConns: 8})
	admin, dsn := b.Core(), b.DSNs[boundary.Core]
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	opsDB := dbtest.RolePool(t, dsn, operationsschema.RoleOperations)
	scope := operationsread.LateCaseScope{Tenant: operationsread.Tenant{Kind: "organization", ID: uuid.NewString(), WorkspaceID: uuid.NewString()},
		Dimension: billingc.SettlementDimension{BillingReservationID: uuid.NewString(), BillingAccountID: uuid.NewString(), RunID: uuid.NewString(),
			RunStepID: uuid.NewString(), ExecutionAttemptID: uuid.NewString(), ChargeDimensionKey: "output_tokens",
			EconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: "credits"}}, Generation: 1}
	id, err := cases.Identities{Pool: opsDB}.ReserveLateSettlementCaseIdentity(t.Context(), scope)
	require.NoError(t, err)
	d, q := scope.Dimension, id.Identity
	dimID := d.SettlementDimensionID()
	_, err = admin.Exec(t.Context(), `INSERT INTO operations.late_settlement_cases (reconciliation_case_ref, projection_name,
		    projection_version, settlement_dimension_id, case_generation, case_identity_ref, case_identity_schema_version,
		    case_identity_digest_algorithm_version, case_identity_digest, case_request_operation_id, billing_reservation_id,
		    billing_account_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key, tenant_kind, tenant_id,
		    workspace_id, state, opened_by_event_id, opened_at)
		VALUES ($1, 'operations_read_model', 1, $2, 1, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'organization', $14, $15,
		    'open', gen_random_uuid(), now())`,
		id.CaseRef, dimID, q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest, id.CaseRequestOperationID,
		d.BillingReservationID, d.BillingAccountID, d.RunID, d.RunStepID, d.ExecutionAttemptID, d.ChargeDimensionKey,
		scope.Tenant.ID, scope.Tenant.WorkspaceID)
	require.NoError(t, err)
	exposure := billingc.LateSettlementExposureID(dimID, 2)
	_, err = admin.Exec(t.Context(), `INSERT INTO operations.late_settlement_case_exposures (late_settlement_exposure_id,
		    projection_name, projection_version, reconciliation_case_ref, exposure_ref, exposure_schema_version,
		    exposure_digest_algorithm_version, exposure_digest, exposure_amount, request_event_id, request_event_envelope_sha256,
		    requested_at)
		VALUES ($1, 'operations_read_model', 1, $2, 'lse-cli', '1', 'jcs-sha256-v1', repeat('d', 64), 7, gen_random_uuid(), repeat('e', 64), now())`,
		exposure, id.CaseRef)
	require.NoError(t, err)

	dir := t.TempDir()
	idpKey, idpPub := keyFiles(t, dir, "idp")
	grantKey, _ := keyFiles(t, dir, "grant")
	// --database-url: the server a database the command derives (Metering's
	// without --metering-dsn) is looked for on, this test's own, whatever
	// server the environment has.
	serverURL := dbtest.Server(t).URL
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Main(append(append([]string{"case"}, args...), "--core-dsn", dsn, "--database-url", serverURL), strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	as := func(who string) []string {
		return []string{"--as", who, "--actor-key", idpKey, "--actor-issuer", "idp", "--trust-actor-issuer", "idp=" + idpPub}
	}

	code, out, errOut := run("list", "--late")
	require.Zero(t, code, errOut)
	require.Contains(t, out, id.CaseRef)
	require.Contains(t, out, "exposure "+exposure)

	code, out, errOut = run(append([]string{"request-late", id.CaseRef, "--exposure", exposure, "--justification", "the customer agreed",
		"--evidence", fmt.Sprintf("late_settlement_case=%s@%s", q.Ref, q.Digest)}, as("workforce:alice@example.org")...)...)
	require.Zero(t, code, errOut)
	ref := regexp.MustCompile(`late request (lscr-[0-9a-f]+)`).FindStringSubmatch(out)
	require.NotNil(t, ref, out)

	code, _, errOut = run(append([]string{"approve-late", ref[1]}, as("workforce:alice@example.org")...)...)
	require.NotZero(t, code)
	require.Contains(t, errOut, "may not be approved by its requester")
	code, _, errOut = run(append([]string{"approve-late", ref[1]}, as("workforce:bob@example.org")...)...)
	require.Zero(t, code, errOut)

	// apply-late: only the requester; Core's grant key and the Metering
	// database are required; Billing decides the funding and refuses an
	// exposure it never recorded (this fixture's is Operations' only), so
	// nothing is charged and the command says why.
	code, _, errOut = run(append([]string{"apply-late", ref[1], "--grant-key", grantKey}, as("workforce:alice@example.org")...)...)
	require.NotZero(t, code)
	require.Contains(t, errOut, "metering", "without --metering-dsn the derived Metering database is not there")
	meteringDSN := []string{"--metering-dsn", b.DSNs[boundary.Metering]}
	code, _, errOut = run(append(append([]string{"apply-late", ref[1]}, meteringDSN...), as("workforce:alice@example.org")...)...)
	require.NotZero(t, code)
	require.Contains(t, errOut, "--grant-key")
	code, _, errOut = run(append(append([]string{"apply-late", ref[1], "--grant-key", grantKey}, meteringDSN...), as("workforce:alice@example.org")...)...)
	require.NotZero(t, code)
	require.Contains(t, errOut, catchup.ErrExposureNotOpen.Error())
	var results int
	require.NoError(t, admin.QueryRow(t.Context(), `SELECT count(*) FROM billing.late_settlement_command_results`).Scan(&results))
	require.Zero(t, results)

	code, out, errOut = run("show", id.CaseRef, "--json")
	require.Zero(t, code, errOut)
	var v cases.LateCaseView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Len(t, v.Requests, 1)
	require.Equal(t, "workforce:bob@example.org", *v.Requests[0].Approver)
	require.Len(t, v.Exposures, 1)
}
