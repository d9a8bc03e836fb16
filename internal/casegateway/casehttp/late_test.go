package casehttp_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing/catchup"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway"
	"github.com/oceanway/core/internal/casegateway/casehttp"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/grants"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cases"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread/operationsread"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/workload"
)

// lateBilling stands for Billing's late side (the Billing engineer's): it
// verifies the grant it receives as a late grant of exactly the candidate
// and decision.
type lateBilling struct {
	verifier grants.LateGrantVerifier
	applied  []catchup.LateSettlementCommand
}

func (b *lateBilling) DecideFunding(_ context.Context, d *reconciliation.LateDecision) (*reconciliation.FundingDecision, error) {
	return &reconciliation.FundingDecision{CommandOperationID: d.CommandOperationID(), Case: d.Case, Exposure: d.Exposure}, nil
}

func (b *lateBilling) ApplyLateSettlementCommand(_ context.Context, cmd catchup.LateSettlementCommand) (catchup.LateSettlementOutcome, error) {
	claims, err := b.verifier.VerifyLateGrant(cmd.Grant)
	if err != nil {
		return catchup.LateSettlementOutcome{}, err
	}
	if err := reconciliation.CheckLateGrant(claims, cmd.Candidate, cmd.Decision); err != nil {
		return catchup.LateSettlementOutcome{}, err
	}
	b.applied = append(b.applied, cmd)
	return catchup.LateSettlementOutcome{Result: &reconciliation.LateResult{CommandOperationID: claims.CommandOperationID}}, nil
}

// OP-1, BI-2 (issue 32 part 2): the late settlement command across
// processes: Operations' late calls and its late decision read, and Core's
// late exchange, each behind its own HTTP server, role and keys; Core reads
// Operations' late decision over HTTP before it signs; typed refusals
// (self-approval, an exposure not in the case) cross the wire as their own
// errors. Billing's late side is a fake here.
func TestOP1LateChainAcrossProcesses(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), operationsschema.Line()}, MaxConns: 12})
	admin, dsn := b.Core(), b.DSNs[boundary.Core]
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	opsDB := dbtest.RolePool(t, dsn, operationsschema.RoleOperations)
	grantsDB := dbtest.RolePool(t, dsn, billingschema.RoleGrants)

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
		VALUES ($1, 'operations_read_model', 1, $2, 'lse-http', '1', 'jcs-sha256-v1', repeat('d', 64), 7, gen_random_uuid(), repeat('e', 64), now())`,
		exposure, id.CaseRef)
	require.NoError(t, err)

	gw, core, idpKey, grantKey := keys(t), keys(t), keys(t), keys(t)
	actors, err := grants.NewAssertionVerifier(grants.ActorIssuer{Issuer: idp, Key: idpKey.pub})
	require.NoError(t, err)
	idpSigner, err := grants.NewAssertionSigner(idp, idpKey.priv, nil)
	require.NoError(t, err)
	grantSigner, err := grants.NewSigner("core.grants", grantKey.priv)
	require.NoError(t, err)
	grantVerifier, err := grants.NewVerifier("core.grants", grantKey.pub)
	require.NoError(t, err)
	serve := func(cfg casehttp.ServerConfig) string {
		h, err := casehttp.Handler(cfg)
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	commands := cases.Commands{Pool: opsDB, Workload: casegateway.Workload}
	opsURL := serve(casehttp.ServerConfig{LateOperations: casegateway.LocalOperations{Actors: actors, Commands: commands}, LateDecisions: commands,
		Verifiers: map[string]*workload.Verifier{casehttp.AudienceOperations: verifier(t, casehttp.AudienceOperations,
			map[string]keyPair{casegateway.Workload: gw, casehttp.WorkloadGrants: core})}})
	coreOps, err := casehttp.NewClient(opsURL, signer(t, casehttp.WorkloadGrants, core), nil)
	require.NoError(t, err)
	grantsURL := serve(casehttp.ServerConfig{LateGrants: grants.Exchanger{Pool: grantsDB, Signer: grantSigner, Assertions: actors, LateDecisions: coreOps},
		Verifiers: map[string]*workload.Verifier{casehttp.AudienceGrants: verifier(t, casehttp.AudienceGrants, map[string]keyPair{casegateway.Workload: gw})}})
	client := func(url string) *casehttp.Client {
		c, err := casehttp.NewClient(url, signer(t, casegateway.Workload, gw), nil)
		require.NoError(t, err)
		return c
	}
	lb := &lateBilling{verifier: grantVerifier}
	g := casegateway.Gateway{Actors: actors, LateOperations: client(opsURL), LateGrants: client(grantsURL), LateBilling: lb}
	as := func(who string) string {
		a, err := idpSigner.Assert(who, time.Minute)
		require.NoError(t, err)
		return a
	}

	ev := []reconciliation.EvidenceReference{{EvidenceKind: "late_settlement_case", Object: q}}
	_, err = g.RequestLate(t.Context(), as(alice), cases.LateRequestInput{CaseRef: id.CaseRef, LateSettlementExposureID: uuid.NewString(),
		Evidence: ev, Justification: "x", CommandRequestOperationID: uuid.NewString()})
	require.ErrorIs(t, err, cases.ErrLateExposureNotInCase, "typed across the wire")
	req, err := g.RequestLate(t.Context(), as(alice), cases.LateRequestInput{CaseRef: id.CaseRef, LateSettlementExposureID: exposure,
		Evidence: ev, Justification: "the customer agreed", CommandRequestOperationID: uuid.NewString()})
	require.NoError(t, err)
	ref := req.Request.Request.Ref
	_, err = g.ApproveLate(t.Context(), as(alice), ref)
	require.ErrorIs(t, err, reconciliation.ErrSelfApproval)
	_, err = g.ApproveLate(t.Context(), as(bob), ref)
	require.NoError(t, err)

	assertion := as(alice)
	first, err := g.ApplyLate(t.Context(), assertion, ref)
	require.NoError(t, err)
	require.Len(t, lb.applied, 1)
	again, err := g.ApplyLate(t.Context(), assertion, ref)
	require.NoError(t, err)
	require.Equal(t, first.Grant, again.Grant, "the first grant after a lost response")
	require.Equal(t, first.Chain.Decision.Decision, again.Chain.Decision.Decision)
}
