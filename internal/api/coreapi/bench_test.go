package coreapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/api/coreapi"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/workload"
)

// BenchmarkAdmission measures admissions per second through the platform
// API (HTTP, document validation, a fresh workload token per call, the
// Idempotency-Key's lock, lookup and stored response in the admission's
// transaction) against the in-process driver (admission.Service.Admit), on
// the same database in the same run, 8 concurrent callers each (issue 33).
//
//	go test -run '^$' -bench BenchmarkAdmission -benchtime 2000x ./internal/api/coreapi/
func BenchmarkAdmission(b *testing.B) {
	core := dbtest.New(b, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line()}, MaxConns: 12}).Core()
	_, err := release.Bootstrap(b.Context(), core, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "bench"})
	require.NoError(b, err)
	adm := dbtest.RolePool(b, core.Config().ConnString(), admissionschema.RoleAdmission)
	bil := dbtest.RolePool(b, core.Config().ConnString(), billingschema.RoleBilling)
	request := func() admission.Request {
		return admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization", TenantID: uuid.NewString(),
			WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 300}
	}

	b.Run("inprocess", func(b *testing.B) {
		svc := admission.New(adm)
		b.SetParallelism(4) // 8 callers on 2 cores
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := svc.Admit(b.Context(), request()); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
	})

	b.Run("api", func(b *testing.B) {
		priv, pub, err := workload.Generate()
		require.NoError(b, err)
		signer, err := workload.NewSigner(workload.SignerConfig{Workload: "platform", Key: priv})
		require.NoError(b, err)
		v, err := workload.NewVerifier(workload.VerifierConfig{Audience: api.AudienceCore, Trusted: []workload.Trusted{{Workload: "platform", Key: pub}}})
		require.NoError(b, err)
		h, err := api.Handler(api.Config{Core: coreapi.Server{Admission: adm, Billing: bil},
			Served: map[api.Owner]api.Served{api.OwnerCore: {Verifier: v, Keys: &api.KeyStore{Pool: adm, Table: api.KeyTables[api.OwnerCore]}}}})
		require.NoError(b, err)
		srv := httptest.NewServer(h)
		defer srv.Close()
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.MaxIdleConnsPerHost = 16
		client := &http.Client{Transport: transport}
		b.SetParallelism(4)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				tok, err := signer.Sign(api.AudienceCore, api.Scope("admitRun"))
				if err != nil {
					b.Error(err)
					return
				}
				req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, srv.URL+"/v1/runs", strings.NewReader(admitBody(uuid.NewString(), 300)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Idempotency-Key", uuid.NewString())
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Errorf("admitRun answered %d", resp.StatusCode)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
	})
}
