package admission_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
)

func manifestRead(req admission.Request, res admission.Result) coreread.RunAdmissionManifestRead {
	return coreread.RunAdmissionManifestRead{
		ContractVersion: coreread.ReadRunAdmissionManifestV1,
		Audience:        execution.AudienceRunExecutionState,
		Tenant:          execution.Tenant{Kind: req.TenantKind, TenantID: req.TenantID, WorkspaceID: req.WorkspaceID, ProjectID: req.ProjectID},
		RunID:           res.RunID,
		Manifest:        res.Manifest,
	}
}

// EX-1 (ADR-031 manifest read contract): readRunAdmissionManifest@1 answers
// found only for the exact quadruple, tenant and run, with a body whose
// digest recomputes; not_found when neither ref nor run exist; conflicting
// otherwise; an invalid request (version, audience, bare ref) reads nothing.
func TestEX1ReadRunAdmissionManifest(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t, true)
	ctx := t.Context()
	reqA, reqB := request(), request()
	reqB.ProjectID = ""
	resA, err := svc.Admit(ctx, reqA)
	require.NoError(t, err)
	resB, err := svc.Admit(ctx, reqB)
	require.NoError(t, err)

	// found, for both runs (with and without project).
	for _, c := range []struct {
		req admission.Request
		res admission.Result
	}{{reqA, resA}, {reqB, resB}} {
		got, err := admission.ReadRunAdmissionManifest(ctx, pool, manifestRead(c.req, c.res))
		require.NoError(t, err)
		require.Equal(t, ownerread.Found, got.Answer, got.Reason)
		require.Equal(t, c.res.Manifest, got.Value.Manifest)
		require.Equal(t, c.res.RunID, got.Value.RunID)
		require.Equal(t, c.res.BillingReservationID, got.Value.BillingReservationID)
		require.Equal(t, c.req.ReservedCredits, got.Value.ReservedCredits)
		again, err := execution.DecodeRunAdmissionManifest(got.Body)
		require.NoError(t, err, "the answer's body decodes and its digest recomputes")
		require.Equal(t, got.Value, again)
	}

	// not_found: neither the ref nor the run exist.
	unknown := manifestRead(reqA, resA)
	unknown.RunID = uuid.NewString()
	unknown.Manifest.Ref = "ram-" + uuid.NewString()
	got, err := admission.ReadRunAdmissionManifest(ctx, pool, unknown)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, got.Answer)

	// conflicting: every mismatch the request can state.
	conflicts := map[string]func(r *coreread.RunAdmissionManifestRead){
		"other digest": func(r *coreread.RunAdmissionManifestRead) {
			r.Manifest.Digest = "00000000000000000000000000000000000000000000000000000000000000ff"
		},
		"other schema version": func(r *coreread.RunAdmissionManifestRead) { r.Manifest.SchemaVersion = "2" },
		"ref of another run":   func(r *coreread.RunAdmissionManifestRead) { r.Manifest = resB.Manifest },
		"unknown ref of an admitted run": func(r *coreread.RunAdmissionManifestRead) {
			r.Manifest.Ref = "ram-" + uuid.NewString()
		},
		"other tenant":    func(r *coreread.RunAdmissionManifestRead) { r.Tenant.TenantID = uuid.NewString() },
		"other workspace": func(r *coreread.RunAdmissionManifestRead) { r.Tenant.WorkspaceID = uuid.NewString() },
		"project omitted": func(r *coreread.RunAdmissionManifestRead) { r.Tenant.ProjectID = "" },
	}
	for name, mutate := range conflicts {
		r := manifestRead(reqA, resA)
		mutate(&r)
		got, err := admission.ReadRunAdmissionManifest(ctx, pool, r)
		require.NoError(t, err, name)
		require.Equal(t, ownerread.Conflicting, got.Answer, name)
		require.NotEmpty(t, got.Reason, name)
		require.Nil(t, got.Value, name)
	}

	// invalid requests are refused, not answered.
	invalid := map[string]func(r *coreread.RunAdmissionManifestRead){
		"bare ref":        func(r *coreread.RunAdmissionManifestRead) { r.Manifest = strict.Quadruple{Ref: r.Manifest.Ref} },
		"no algorithm":    func(r *coreread.RunAdmissionManifestRead) { r.Manifest.DigestAlgorithmVersion = "" },
		"unknown version": func(r *coreread.RunAdmissionManifestRead) { r.ContractVersion = "readRunAdmissionManifest@2" },
		"other audience":  func(r *coreread.RunAdmissionManifestRead) { r.Audience = "admin_console" },
		"no tenant":       func(r *coreread.RunAdmissionManifestRead) { r.Tenant = execution.Tenant{} },
		"run not a uuid":  func(r *coreread.RunAdmissionManifestRead) { r.RunID = "latest" },
		"unknown algorith": func(r *coreread.RunAdmissionManifestRead) {
			r.Manifest.DigestAlgorithmVersion = digest.Algorithm("sha1")
		},
	}
	for name, mutate := range invalid {
		r := manifestRead(reqA, resA)
		mutate(&r)
		_, err := admission.ReadRunAdmissionManifest(ctx, pool, r)
		require.ErrorIs(t, err, ownerread.ErrInvalidRequest, name)
	}
}

// EX-1: Core issues RunExecutionToken@1 from the stored manifest; the token
// decodes strictly, carries the manifest quadruple and the run's identities.
func TestEX1IssueRunExecutionToken(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t, true)
	ctx := t.Context()
	req := request()
	res, err := svc.Admit(ctx, req)
	require.NoError(t, err)
	tok, body, err := admission.IssueRunExecutionToken(ctx, pool, res.RunID, "ret-"+uuid.NewString(), time.Now())
	require.NoError(t, err)
	back, err := execution.DecodeRunExecutionToken(body)
	require.NoError(t, err)
	require.Equal(t, tok, back)
	require.Equal(t, res.Manifest, tok.Manifest)
	require.Equal(t, res.BillingReservationID, tok.BillingReservationID)
	require.Equal(t, res.BillingAccountID, tok.BillingAccountID)
	require.Equal(t, req.TenantID, tok.Tenant.TenantID)

	_, _, err = admission.IssueRunExecutionToken(ctx, pool, uuid.NewString(), "ret-x", time.Now())
	require.ErrorIs(t, err, admission.ErrRunNotAdmitted)
}
