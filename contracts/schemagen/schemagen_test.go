package schemagen_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/schemagen"
	"github.com/oceanway/core/contracts/settlement"
)

const (
	schemaDir      = "../schema"
	envelopeData   = "../envelope/testdata"
	deliverySetDir = "../deliveryset/testdata"
	receiptDir     = "../receipt"
)

// CT-5: the committed files are exactly what the generator renders from the
// Go descriptions (make verify checks the same through git).
func TestCT5GeneratedFilesAreFresh(t *testing.T) {
	t.Parallel()
	files, err := schemagen.Files()
	require.NoError(t, err)
	require.Len(t, files, 4+len(envelope.Pairs())+1+len(receipt.Definitions())+1+len(execution.Contracts())+1+len(billing.Contracts())+1+len(meterfacts.Contracts())+1+len(settlement.Contracts())+1+len(billing.SettlementContracts())+1+len(reconciliation.Contracts()))
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(schemaDir, filepath.FromSlash(rel)))
		require.NoError(t, err, "%s missing: run make generate", rel)
		require.Equal(t, string(want), string(got), "%s is stale: run make generate", rel)
	}
}

// CT-5: the committed typed payloads are what the generator renders.
func TestCT5GeneratedPayloadsAreFresh(t *testing.T) {
	t.Parallel()
	want, err := schemagen.PayloadsGo()
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(schemagen.PayloadsGoFile)))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "%s is stale: run make generate", schemagen.PayloadsGoFile)
}

func TestCT5WriteIsIdempotent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "json"), 0o755))
	stale := filepath.Join(dir, "json", "removed.schema.json")
	require.NoError(t, os.WriteFile(stale, []byte("{}"), 0o644))
	paths, err := schemagen.Write(dir)
	require.NoError(t, err)
	require.NoFileExists(t, stale)
	again, err := schemagen.Write(dir)
	require.NoError(t, err)
	require.Equal(t, paths, again)
}

func compile(t *testing.T, rel string) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(schemaDir, filepath.FromSlash(rel)))
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "file:///oceanway/" + rel
	require.NoError(t, c.AddResource(url, doc))
	s, err := c.Compile(url)
	require.NoError(t, err)
	return s
}

func instance(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return v
}

type negative struct {
	Name          string `json:"name"`
	Requirement   string `json:"requirement"`
	Reason        string `json:"reason"`
	SchemaRejects bool   `json:"schemaRejects"`
}

func manifest(t *testing.T, dir string) []negative {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "negative", "manifest.json"))
	require.NoError(t, err)
	var out []negative
	require.NoError(t, json.Unmarshal(b, &out))
	require.NotEmpty(t, out)
	return out
}

// CT-4, CT-5: every positive envelope golden validates against the generated
// envelope schema and its payload against the pair's payload schema; every
// shape-error negative artefact is rejected.
func TestCT5EnvelopeGoldensAgainstGeneratedSchema(t *testing.T) {
	t.Parallel()
	env := compile(t, schemagen.EnvelopeSchemaFile)
	for _, p := range envelope.Pairs() {
		raw := instance(t, filepath.Join(envelopeData, "golden", p.EventType, "raw.json"))
		require.NoError(t, env.Validate(raw), p.EventType)
		payload := compile(t, schemagen.PayloadSchemaFile(p.EventType))
		require.NoError(t, payload.Validate(raw.(map[string]any)["payload"]), p.EventType)
	}
	shape := 0
	for _, n := range manifest(t, envelopeData) {
		if !n.SchemaRejects {
			continue
		}
		shape++
		v := instance(t, filepath.Join(envelopeData, "negative", n.Name+".json"))
		require.Error(t, env.Validate(v), "%s (%s) must be rejected by the schema", n.Name, n.Reason)
	}
	require.Greater(t, shape, 10)
}

// CT-4, CT-5, DS-1: the first-release golden validates against the generated
// Delivery Set Definition schema; shape-error negatives are rejected.
func TestCT5DeliverySetGoldenAgainstGeneratedSchema(t *testing.T) {
	t.Parallel()
	s := compile(t, schemagen.DeliverySetSchemaFile)
	require.NoError(t, s.Validate(instance(t, filepath.Join(deliverySetDir, "golden", "first-release", "raw.json"))))
	shape := 0
	for _, n := range manifest(t, deliverySetDir) {
		if !n.SchemaRejects {
			continue
		}
		shape++
		v := instance(t, filepath.Join(deliverySetDir, "negative", n.Name+".json"))
		require.Error(t, s.Validate(v), "%s (%s) must be rejected by the schema", n.Name, n.Reason)
	}
	require.Greater(t, shape, 10)
}

// CT-5: every receipt golden validates against its generated schema; every
// negative artefact whose reason is a shape reason is rejected by it.
func TestCT5ReceiptGoldensAgainstGeneratedSchema(t *testing.T) {
	t.Parallel()
	schemas := map[string]*jsonschema.Schema{}
	for _, d := range receipt.Definitions() {
		s := compile(t, schemagen.ReceiptSchemaFile(d.Kind))
		schemas[d.Kind] = s
		dirs, err := filepath.Glob(filepath.Join(receiptDir, "testdata", "golden", d.Kind, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, dirs)
		for _, dir := range dirs {
			require.NoError(t, s.Validate(instance(t, filepath.Join(dir, "raw.json"))), dir)
		}
	}
	b, err := os.ReadFile(filepath.Join(receiptDir, "testdata", "negative", "manifest.json"))
	require.NoError(t, err)
	var negatives []struct{ Kind, File, Reason string }
	require.NoError(t, json.Unmarshal(b, &negatives))
	shape := 0
	for _, n := range negatives {
		if !strings.HasPrefix(n.Reason, "strict.") && n.Reason != "digest.ErrMissingAlgorithm" {
			continue
		}
		shape++
		v := instance(t, filepath.Join(receiptDir, filepath.FromSlash(n.File)))
		require.Error(t, schemas[n.Kind].Validate(v), "%s (%s) must be rejected by the schema", n.File, n.Reason)
	}
	require.Greater(t, shape, 15)
}

// CT-5, BI-1: every Billing finalization golden validates against its
// generated schema; every negative rejected for its shape (strict.*) is
// rejected by the schema too (rule and digest negatives are Go-only).
func TestCT5BillingGoldensAgainstGeneratedSchema(t *testing.T) {
	t.Parallel()
	const billingDir = "../billing/testdata"
	schemas := map[string]*jsonschema.Schema{}
	for _, c := range billing.Contracts() {
		s := compile(t, schemagen.BillingSchemaFile(c.Name))
		schemas[c.Name] = s
		dirs, err := filepath.Glob(filepath.Join(billingDir, "golden", c.Name, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, dirs)
		for _, dir := range dirs {
			require.NoError(t, s.Validate(instance(t, filepath.Join(dir, "raw.json"))), dir)
		}
	}
	b, err := os.ReadFile(filepath.Join(billingDir, "negative", "manifest.json"))
	require.NoError(t, err)
	var negatives []struct{ Kind, File, Expected string }
	require.NoError(t, json.Unmarshal(b, &negatives))
	shape := 0
	for _, n := range negatives {
		if !strings.HasPrefix(n.Expected, "strict:") {
			continue
		}
		shape++
		v := instance(t, filepath.Join(billingDir, "negative", filepath.FromSlash(n.File)))
		require.Error(t, schemas[n.Kind].Validate(v), "%s (%s) must be rejected by the schema", n.File, n.Expected)
	}
	require.Greater(t, shape, 5)
}

// CT-5: every settlement catch-up and transition golden validates against
// its generated schema.
func TestCT5SettlementGoldensAgainstGeneratedSchema(t *testing.T) {
	t.Parallel()
	for _, c := range billing.SettlementContracts() {
		s := compile(t, schemagen.BillingSchemaFile(c.Name))
		dirs, err := filepath.Glob(filepath.Join("..", "billing", "testdata", "golden", c.Name, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, dirs)
		for _, dir := range dirs {
			require.NoError(t, s.Validate(instance(t, filepath.Join(dir, "raw.json"))), dir)
		}
	}
}

// CT-5, OP-1: every reconciliation golden validates against its generated
// schema; every negative rejected for its shape (strict.*) is rejected by
// the schema too (rule and digest negatives are Go-only).
func TestCT5ReconciliationGoldensAgainstGeneratedSchema(t *testing.T) {
	t.Parallel()
	const dir = "../reconciliation/testdata"
	schemas := map[string]*jsonschema.Schema{}
	for _, c := range reconciliation.Contracts() {
		s := compile(t, schemagen.ReconciliationSchemaFile(c.Name))
		schemas[c.Name] = s
		goldens, err := filepath.Glob(filepath.Join(dir, "golden", c.Name, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, goldens)
		for _, g := range goldens {
			require.NoError(t, s.Validate(instance(t, filepath.Join(g, "raw.json"))), g)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "negative", "manifest.json"))
	require.NoError(t, err)
	var negatives []struct{ Kind, File, Expected string }
	require.NoError(t, json.Unmarshal(b, &negatives))
	shape := 0
	for _, n := range negatives {
		if !strings.HasPrefix(n.Expected, "strict:") {
			continue
		}
		shape++
		v := instance(t, filepath.Join(dir, "negative", filepath.FromSlash(n.File)))
		require.Error(t, schemas[n.Kind].Validate(v), "%s (%s) must be rejected by the schema", n.File, n.Expected)
	}
	require.Greater(t, shape, 20)
}
