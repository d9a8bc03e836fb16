package execution_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

var update = flag.Bool("update", false, "rewrite testdata/golden and testdata/negative from the fixtures")

var at = time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)

func manifestFixture(project string) *execution.RunAdmissionManifest {
	return &execution.RunAdmissionManifest{
		Manifest:             strict.Quadruple{Ref: "ram-0195f4a8-0000-7000-8000-000000000001"},
		AdmissionOperationID: "0195f4a8-0000-7000-8000-000000000010",
		RequestDigest:        digest.Digest{Algorithm: digest.JCSSHA256V1, Value: "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"},
		RunID:                "0195f4a8-0000-7000-8000-000000000020",
		Tenant: execution.Tenant{Kind: execution.TenantOrganization, TenantID: "0195f4a8-0000-7000-8000-000000000030",
			WorkspaceID: "0195f4a8-0000-7000-8000-000000000031", ProjectID: project},
		BillingAccountID:     "0195f4a8-0000-7000-8000-000000000040",
		BillingReservationID: "0195f4a8-0000-7000-8000-000000000041",
		ReservedCredits:      1500,
		AdmittedAt:           at,
	}
}

func sealed[T execution.Sealed](t *testing.T, x T) T {
	t.Helper()
	_, err := execution.Seal(x)
	require.NoError(t, err)
	return x
}

type golden struct {
	kind, name string
	obj        execution.Sealed
}

func goldens(t *testing.T) []golden {
	m1 := sealed(t, manifestFixture("0195f4a8-0000-7000-8000-000000000032"))
	m2 := sealed(t, manifestFixture(""))
	tok := func(m *execution.RunAdmissionManifest, ref string) *execution.RunExecutionToken {
		return sealed(t, execution.TokenFor(m, ref, at.Add(time.Second)))
	}
	attempt := func(step, attemptID, gw string, rev int64) *execution.AttemptExecutionManifest {
		return sealed(t, &execution.AttemptExecutionManifest{
			Manifest: strict.Quadruple{Ref: "aem-" + attemptID}, RunID: m1.RunID, RunStepID: step, ExecutionAttemptID: attemptID,
			RunAdmissionManifest: m1.Manifest, ModelDeploymentID: "model-deploy/text-large", GatewayDeploymentID: gw,
			RoutingPolicyRevision: rev,
			OutputContract: strict.Quadruple{Ref: "output-contract/text@1", SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1,
				Digest: "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"},
			CreatedAt: at.Add(2 * time.Second),
		})
	}
	return []golden{
		{execution.KindRunAdmissionManifest, "with_project", m1},
		{execution.KindRunAdmissionManifest, "without_project", m2},
		{execution.KindRunExecutionToken, "with_project", tok(m1, "ret-1")},
		{execution.KindRunExecutionToken, "without_project", tok(m2, "ret-2")},
		{execution.KindAttemptExecutionManifest, "first_attempt", attempt("0195f4a8-0000-7000-8000-000000000050", "0195f4a8-0000-7000-8000-000000000060", "gw-eu-1", 3)},
		{execution.KindAttemptExecutionManifest, "rerouted_attempt", attempt("0195f4a8-0000-7000-8000-000000000050", "0195f4a8-0000-7000-8000-000000000061", "gw-us-2", 4)},
	}
}

func contract(t *testing.T, kind string) execution.Contract {
	t.Helper()
	for _, c := range execution.Contracts() {
		if c.Name == kind {
			return c
		}
	}
	t.Fatalf("unknown kind %s", kind)
	return execution.Contract{}
}

func indent(t *testing.T, m map[string]any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(m))
	return buf.Bytes()
}

func checkFile(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden; run go test ./contracts/execution -update")
	require.Equal(t, string(want), string(got), "%s is stale; run with -update and review the diff", path)
}

// CT-4: every golden is regenerated from the fixtures and byte-compared; the
// raw file decodes strictly and its embedded digest recomputes; canonical
// bytes and the candidate digest match the files.
func TestGolden_CT4(t *testing.T) {
	t.Parallel()
	perKind := map[string]int{}
	for _, g := range goldens(t) {
		perKind[g.kind]++
		c := contract(t, g.kind)
		dir := filepath.Join("testdata", "golden", g.kind, g.name)
		checkFile(t, filepath.Join(dir, "raw.json"), indent(t, g.obj.ToJSON()))
		raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
		require.NoError(t, err)
		require.NoError(t, c.Validate(raw), g.name)
		canonical, err := jcs.Canonicalize(raw)
		require.NoError(t, err)
		checkFile(t, filepath.Join(dir, "canonical.json"), canonical)
		d, err := c.Digest(raw)
		require.NoError(t, err)
		checkFile(t, filepath.Join(dir, "digest.txt"), []byte(d.String()+"\n"))
		require.Equal(t, g.obj.Quad().Digest, d.Value, "embedded digest is the candidate digest")
	}
	for _, c := range execution.Contracts() {
		require.GreaterOrEqual(t, perKind[c.Name], 2, c.Name)
	}
}

// The typed decoders return exactly the object that was sealed.
func TestDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, g := range goldens(t) {
		body, err := jcs.Marshal(g.obj.ToJSON())
		require.NoError(t, err)
		var back execution.Sealed
		switch g.kind {
		case execution.KindRunAdmissionManifest:
			back, err = execution.DecodeRunAdmissionManifest(body)
		case execution.KindRunExecutionToken:
			back, err = execution.DecodeRunExecutionToken(body)
		case execution.KindAttemptExecutionManifest:
			back, err = execution.DecodeAttemptExecutionManifest(body)
		}
		require.NoError(t, err)
		require.Equal(t, g.obj, back, g.kind+"/"+g.name)
	}
}
