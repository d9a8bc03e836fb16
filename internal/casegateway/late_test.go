package casegateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/strict"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing/catchup"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway"
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

func TestMain(m *testing.M) { dbtest.Main(m) }

const (
	idp   = "https://idp.example.org"
	alice = "workforce:alice@example.org"
	bob   = "workforce:bob@example.org"
)

// journal records the owners' calls in order.
type journal struct {
	mu    sync.Mutex
	calls []string
}

func (j *journal) add(call string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls = append(j.calls, call)
}

// recordingGrants is Core's exchange, journaled.
type recordingGrants struct {
	x grants.Exchanger
	j *journal
}

func (r recordingGrants) ExchangeLate(ctx context.Context, req grants.LateExchangeRequest) (grants.Exchanged, error) {
	r.j.add("exchange")
	return r.x.ExchangeLate(ctx, req)
}

// fakeLateBilling stands for Billing's side (built by the Billing
// engineer): a funding decision per command operation and one outcome per
// command operation, the first returned again on a replay.
type fakeLateBilling struct {
	j        *journal
	mu       sync.Mutex
	funding  map[string]*reconciliation.FundingDecision
	outcomes map[string]catchup.LateSettlementOutcome
	grants   map[string]string
	verifier grants.LateGrantVerifier
}

func (b *fakeLateBilling) DecideFunding(_ context.Context, d *reconciliation.LateDecision) (*reconciliation.FundingDecision, error) {
	b.j.add("funding")
	b.mu.Lock()
	defer b.mu.Unlock()
	op := d.CommandOperationID()
	if fd, ok := b.funding[op]; ok {
		return fd, nil
	}
	fd := &reconciliation.FundingDecision{CommandOperationID: op, Case: d.Case, Exposure: d.Exposure, JTI: uuid.NewString()}
	b.funding[op] = fd
	return fd, nil
}

func (b *fakeLateBilling) ApplyLateSettlementCommand(_ context.Context, cmd catchup.LateSettlementCommand) (catchup.LateSettlementOutcome, error) {
	b.j.add("apply")
	claims, err := b.verifier.VerifyLateGrant(cmd.Grant)
	if err != nil {
		return catchup.LateSettlementOutcome{}, err
	}
	if err := reconciliation.CheckLateGrant(claims, cmd.Candidate, cmd.Decision); err != nil {
		return catchup.LateSettlementOutcome{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	op := cmd.Decision.CommandOperationID()
	if out, ok := b.outcomes[op]; ok {
		if b.grants[op] != cmd.Grant || b.funding[op] != cmd.Funding {
			return catchup.LateSettlementOutcome{}, catchup.ErrLateCommandConflict
		}
		out.Replayed = true
		return out, nil
	}
	out := catchup.LateSettlementOutcome{Result: &reconciliation.LateResult{CommandOperationID: op}}
	b.outcomes[op], b.grants[op] = out, cmd.Grant
	return out, nil
}

type lateWorld struct {
	gateway casegateway.Gateway
	billing *fakeLateBilling
	j       *journal
	idp     *grants.AssertionSigner
	caseRef string
	expo    string
}

func newLateWorld(t *testing.T) *lateWorld {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), operationsschema.Line()}, MaxConns: 12})
	admin, dsn := b.Core(), b.DSNs[boundary.Core]
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	opsDB := dbtest.RolePool(t, dsn, operationsschema.RoleOperations)
	grantsDB := dbtest.RolePool(t, dsn, billingschema.RoleGrants)

	// An open late settlement case with one exposure (revision 2), as the
	// projector materialises it.
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
	expo := billingc.LateSettlementExposureID(dimID, 2)
	_, err = admin.Exec(t.Context(), `INSERT INTO operations.late_settlement_case_exposures (late_settlement_exposure_id,
		    projection_name, projection_version, reconciliation_case_ref, exposure_ref, exposure_schema_version,
		    exposure_digest_algorithm_version, exposure_digest, exposure_amount, request_event_id, request_event_envelope_sha256,
		    requested_at)
		VALUES ($1, 'operations_read_model', 1, $2, $3, '1', 'jcs-sha256-v1', repeat('d', 64), 5, gen_random_uuid(), repeat('e', 64), now())`,
		expo, id.CaseRef, fmt.Sprintf("lse-%s", expo[:8]))
	require.NoError(t, err)

	idpPriv, idpPub, err := workload.Generate()
	require.NoError(t, err)
	actors, err := grants.NewAssertionVerifier(grants.ActorIssuer{Issuer: idp, Key: idpPub})
	require.NoError(t, err)
	idpSigner, err := grants.NewAssertionSigner(idp, idpPriv, nil)
	require.NoError(t, err)
	grantPriv, grantPub, err := workload.Generate()
	require.NoError(t, err)
	grantSigner, err := grants.NewSigner("core.grants", grantPriv)
	require.NoError(t, err)
	grantVerifier, err := grants.NewVerifier("core.grants", grantPub)
	require.NoError(t, err)

	commands := cases.Commands{Pool: opsDB, Workload: casegateway.Workload}
	j := &journal{}
	lb := &fakeLateBilling{j: j, funding: map[string]*reconciliation.FundingDecision{}, outcomes: map[string]catchup.LateSettlementOutcome{},
		grants: map[string]string{}, verifier: grantVerifier}
	local := casegateway.LocalOperations{Actors: actors, Commands: commands}
	w := &lateWorld{billing: lb, j: j, idp: idpSigner, caseRef: id.CaseRef, expo: expo}
	w.gateway = casegateway.Gateway{Actors: actors, Operations: local, LateOperations: journaledOps{local, j},
		LateGrants:  recordingGrants{x: grants.Exchanger{Pool: grantsDB, Signer: grantSigner, Assertions: actors, LateDecisions: commands}, j: j},
		LateBilling: lb}
	return w
}

// journaledOps records Operations' decide.
type journaledOps struct {
	casegateway.LocalOperations
	j *journal
}

func (o journaledOps) DecideLate(ctx context.Context, assertion, requestRef string) (*cases.LateChain, error) {
	o.j.add("decide")
	return o.LocalOperations.DecideLate(ctx, assertion, requestRef)
}

func (w *lateWorld) as(t *testing.T, who string) string {
	t.Helper()
	a, err := w.idp.Assert(who, time.Minute)
	require.NoError(t, err)
	return a
}

// OP-1, BI-2 (issue 32): the gateway runs the late settlement command in
// the ADR's order — Operations decides, Billing decides the funding, Core
// exchanges the assertion for the late grant after Operations' read,
// Billing applies — and the grant Billing receives verifies as the late
// grant of exactly that candidate and decision. Apply again with the same
// assertion after a lost response returns the same decision, funding,
// grant and outcome (replayed); self-approval is refused.
func TestOP1GatewayApplyLateOrderAndIdempotence(t *testing.T) {
	t.Parallel()
	w := newLateWorld(t)
	ctx := t.Context()
	req, err := w.gateway.RequestLate(ctx, w.as(t, alice), cases.LateRequestInput{CaseRef: w.caseRef, LateSettlementExposureID: w.expo,
		Justification: "customer agreed", CommandRequestOperationID: uuid.NewString(),
		Evidence: []reconciliation.EvidenceReference{{EvidenceKind: "late_settlement_case", Object: mustQuad(t, w)}}})
	require.NoError(t, err)
	ref := req.Request.Request.Ref
	_, err = w.gateway.ApproveLate(ctx, w.as(t, alice), ref)
	require.ErrorIs(t, err, reconciliation.ErrSelfApproval)
	_, err = w.gateway.ApproveLate(ctx, w.as(t, bob), ref)
	require.NoError(t, err)

	assertion := w.as(t, alice)
	first, err := w.gateway.ApplyLate(ctx, assertion, ref)
	require.NoError(t, err)
	require.Equal(t, []string{"decide", "funding", "exchange", "apply"}, w.j.calls)
	require.False(t, first.Outcome.Replayed)
	require.Equal(t, first.Chain.Decision.CommandOperationID(), first.Funding.CommandOperationID)

	again, err := w.gateway.ApplyLate(ctx, assertion, ref)
	require.NoError(t, err)
	require.Equal(t, first.Chain.Decision.Decision, again.Chain.Decision.Decision)
	require.Same(t, first.Funding, again.Funding)
	require.Equal(t, first.Grant, again.Grant, "the first grant")
	require.True(t, again.Outcome.Replayed)
	require.Equal(t, first.Outcome.Result, again.Outcome.Result)

	// Another assertion of the same operator is another exchange: the
	// grant differs, and Billing (here its fake) refuses it for the
	// command operation that committed.
	_, err = w.gateway.ApplyLate(ctx, w.as(t, alice), ref)
	require.ErrorIs(t, err, catchup.ErrLateCommandConflict)

	// Unwired late owners refuse before any owner is called.
	bare := w.gateway
	bare.LateBilling = nil
	_, err = bare.ApplyLate(ctx, assertion, ref)
	require.ErrorIs(t, err, casegateway.ErrLateNotWired)
}

func mustQuad(t *testing.T, _ *lateWorld) strict.Quadruple {
	t.Helper()
	return strict.Quadruple{Ref: "lcir-evidence", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: fmt.Sprintf("%064x", 1)}
}
