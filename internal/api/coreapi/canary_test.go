package coreapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/apigen"
	"github.com/oceanway/core/internal/api/coreapi"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/runtoken"
	"github.com/oceanway/core/internal/workload"
)

// setupServed is setup with the Operations read model served (the core
// database as oceanway_operations, recordCanaryProof's reads) and the
// deployment's PUBLIC_ADMISSION_MODE: e.signer is platform.main, an
// internal caller; e.other is platform.other, public when public.Callers
// names it.
func setupServed(t *testing.T, public coreapi.PublicAdmission) *env {
	t.Helper()
	core := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), operationsschema.Line()}, MaxConns: 6}).Core()
	_, err := release.Bootstrap(t.Context(), core, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	dsn := core.Config().ConnString()
	adm := dbtest.RolePool(t, dsn, admissionschema.RoleAdmission)
	bil := dbtest.RolePool(t, dsn, billingschema.RoleBilling)
	ops := dbtest.RolePool(t, dsn, operationsschema.RoleOperations)
	e := &env{core: core}
	var trusted []workload.Trusted
	for _, s := range []struct {
		who string
		dst **workload.Signer
	}{{"platform.main", &e.signer}, {"platform.other", &e.other}} {
		priv, pub, err := workload.Generate()
		require.NoError(t, err)
		*s.dst, err = workload.NewSigner(workload.SignerConfig{Workload: s.who, Key: priv})
		require.NoError(t, err)
		trusted = append(trusted, workload.Trusted{Workload: s.who, Key: pub})
	}
	v, err := workload.NewVerifier(workload.VerifierConfig{Audience: api.AudienceCore, Trusted: trusted})
	require.NoError(t, err)
	tokenKey, tokenPub, err := workload.Generate()
	require.NoError(t, err)
	e.tokens, err = runtoken.NewVerifier(tokenPub)
	require.NoError(t, err)
	tokens, err := runtoken.NewSigner(tokenKey)
	require.NoError(t, err)
	h, err := api.Handler(api.Config{Core: coreapi.Server{Admission: adm, Billing: bil, Tokens: tokens, Operations: ops, Public: public},
		Served: map[api.Owner]api.Served{api.OwnerCore: {Verifier: v, Keys: &api.KeyStore{Pool: adm, Table: api.KeyTables[api.OwnerCore]}}}})
	require.NoError(t, err)
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	doc, err := api.LoadDocument()
	require.NoError(t, err)
	e.router, err = legacy.NewRouter(doc)
	require.NoError(t, err)
	return e
}

// admit admits one run as e.signer and returns it.
func (e *env) admit(t *testing.T) apigen.Run {
	t.Helper()
	r := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.signer, "admitRun"), uuid.NewString(), admitBody(uuid.NewString(), 100))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var run apigen.Run
	require.NoError(t, json.Unmarshal(r.body, &run))
	return run
}

func canaryBody(runID, reservationID string) string {
	return `{"runId":"` + runID + `","billingReservationId":"` + reservationID + `"}`
}

// ADR-031, issue 33: recordCanaryProof refuses, and stores nothing (no
// proof, no idempotency record), for a reservation Core does not know
// (404 not_found), a reservation of another run (400 invalid_request), a
// run the caller did not admit through the API (400), a public caller
// (403), and
// a run whose reservation has not finalized yet (409 canary_not_settled:
// the loop has not closed, the canary retries). The happy path, a
// finalized reservation the Operations projection holds with a current
// completeness proof, is TestCanaryProvesTheDeploymentAndGatesPublicAdmission
// (internal/cli).
func TestADR031RecordCanaryProofRefusals(t *testing.T) {
	t.Parallel()
	e := setupServed(t, coreapi.PublicAdmission{Callers: map[string]bool{"platform.other": true}})
	a, b := e.admit(t), e.admit(t)
	// A run admitted in process, not through the API: no canary drove it.
	inProcess, err := admission.New(e.core).Admit(t.Context(), admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
		TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 100})
	require.NoError(t, err)
	proofs, keys := e.count(t, "admission.canary_proofs"), e.count(t, "admission.api_idempotency_keys")
	for _, c := range []struct {
		name   string
		body   string
		status int
		code   string
		signer *workload.Signer
	}{
		{"a run no API caller admitted", canaryBody(inProcess.RunID, inProcess.BillingReservationID), http.StatusBadRequest, api.CodeInvalidRequest, nil},
		{"a public caller", canaryBody(a.RunId.String(), a.BillingReservationId.String()), http.StatusForbidden, api.CodeForbidden, e.other},
		{"unknown reservation", canaryBody(a.RunId.String(), uuid.NewString()), http.StatusNotFound, api.CodeNotFound, nil},
		{"another run's reservation", canaryBody(a.RunId.String(), b.BillingReservationId.String()), http.StatusBadRequest, api.CodeInvalidRequest, nil},
		{"not finalized", canaryBody(a.RunId.String(), a.BillingReservationId.String()), http.StatusConflict, api.CodeCanaryNotSettled, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			signer := e.signer
			if c.signer != nil {
				signer = c.signer
			}
			r := e.call(t, http.MethodPost, "/v1/canary-proofs", e.token(t, signer, "recordCanaryProof"), uuid.NewString(), c.body)
			require.Equal(t, c.status, r.status, string(r.body))
			require.Equal(t, c.code, problemCode(t, r))
			require.Equal(t, proofs, e.count(t, "admission.canary_proofs"), "no proof stored")
			require.Equal(t, keys, e.count(t, "admission.api_idempotency_keys"), "no response stored")
		})
	}
}

// ADR-031, issue 33: a process without the Operations read model cannot
// check the loop, so it does not serve recordCanaryProof (404
// operation_not_served_here) and stores nothing.
func TestADR031RecordCanaryProofNeedsOperations(t *testing.T) {
	t.Parallel()
	e := setup(t) // Operations: nil
	r := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.signer, "admitRun"), "key-1", admitBody(uuid.NewString(), 100))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var run apigen.Run
	require.NoError(t, json.Unmarshal(r.body, &run))
	keys := e.count(t, "admission.api_idempotency_keys")

	got := e.call(t, http.MethodPost, "/v1/canary-proofs", e.token(t, e.signer, "recordCanaryProof"), "key-2",
		canaryBody(run.RunId.String(), run.BillingReservationId.String()))
	require.Equal(t, http.StatusNotFound, got.status, string(got.body))
	require.Equal(t, api.CodeNotServedHere, problemCode(t, got))
	require.Equal(t, 0, e.count(t, "admission.canary_proofs"))
	require.Equal(t, keys, e.count(t, "admission.api_idempotency_keys"))
}

// EX-1 under ADR-031's PUBLIC_ADMISSION_MODE (issue 33): while the mode is
// disabled, admitRun from a public caller is refused (403
// public_admission_disabled) and writes nothing, not even its idempotency
// record; an internal caller is admitted as before. Enabled, the public
// caller is admitted too.
func TestEX1PublicAdmissionModeRefusesPublicCallers(t *testing.T) {
	t.Parallel()
	callers := map[string]bool{"platform.other": true}

	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		e := setupServed(t, coreapi.PublicAdmission{Callers: callers})
		r := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.other, "admitRun"), "key-1", admitBody(uuid.NewString(), 100))
		require.Equal(t, http.StatusForbidden, r.status, string(r.body))
		require.Equal(t, api.CodePublicAdmission, problemCode(t, r))
		require.Equal(t, 0, e.count(t, "admission.runs"), "nothing written")
		require.Equal(t, 0, e.count(t, "admission.api_idempotency_keys"), "no key stored")
		require.Equal(t, 0, e.count(t, "outbox.outbox_events"))

		internal := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.signer, "admitRun"), "key-1", admitBody(uuid.NewString(), 100))
		require.Equal(t, http.StatusCreated, internal.status, string(internal.body))
		require.Equal(t, 1, e.count(t, "admission.runs"))
	})

	t.Run("enabled", func(t *testing.T) {
		t.Parallel()
		e := setupServed(t, coreapi.PublicAdmission{Enabled: true, Proof: "canary-proof/" + uuid.NewString() + "/" + zeros64, Callers: callers})
		r := e.call(t, http.MethodPost, "/v1/runs", e.token(t, e.other, "admitRun"), "key-1", admitBody(uuid.NewString(), 100))
		require.Equal(t, http.StatusCreated, r.status, string(r.body))
		require.Equal(t, 1, e.count(t, "admission.runs"))
		require.Equal(t, 1, e.count(t, "admission.api_idempotency_keys"))
	})
}

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"
