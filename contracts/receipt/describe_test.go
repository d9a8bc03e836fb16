package receipt_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/schema"
)

func definitionOf(t *testing.T, kind string) *schema.Def {
	t.Helper()
	for _, d := range receipt.Definitions() {
		if d.Kind == kind {
			return d.Def
		}
	}
	t.Fatalf("no description of %s", kind)
	return nil
}

// CT-5: every kind has a valid description, listed in the order of Contracts.
func TestCT5EveryKindIsDescribed(t *testing.T) {
	t.Parallel()
	defs := receipt.Definitions()
	require.Len(t, defs, len(receipt.Contracts()))
	for i, c := range receipt.Contracts() {
		require.Equal(t, c.Name, defs[i].Kind)
		require.NoError(t, schema.Validate(schema.Ref{Def: defs[i].Def}), c.Name)
	}
}

// CT-5: the description accepts every golden and reads it back to the same
// canonical bytes, so the generated JSON Schema and TypeScript describe what
// the decoders accept.
func TestCT5DescriptionsAcceptEveryGolden(t *testing.T) {
	t.Parallel()
	for _, d := range receipt.Definitions() {
		dirs, err := filepath.Glob(filepath.Join("testdata", "golden", d.Kind, "*"))
		require.NoError(t, err)
		require.NotEmpty(t, dirs, d.Kind)
		for _, dir := range dirs {
			raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
			require.NoError(t, err)
			m, err := schema.DecodeDocument(raw, schema.Ref{Def: d.Def})
			require.NoError(t, err, dir)
			got, err := jcs.Marshal(m)
			require.NoError(t, err)
			want, err := os.ReadFile(filepath.Join(dir, "canonical.json"))
			require.NoError(t, err)
			require.Equal(t, strings.TrimSpace(string(want)), string(got), dir)
		}
	}
}

// CT-5: every negative artefact whose reason is a shape reason (a strict or
// digest-form sentinel, or a refinement sentinel that names a field the
// shape does not allow, omits or fixes) is rejected by the description too.
func TestCT5DescriptionsRejectShapeNegatives(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "negative", "manifest.json"))
	require.NoError(t, err)
	var manifest []struct{ Kind, File, Reason string }
	require.NoError(t, json.Unmarshal(b, &manifest))
	shape := map[string]bool{
		"receipt.ErrReceiptDestination": true, "receipt.ErrReceiptConsumer": true,
		"receipt.ErrCaseRefForbidden": true, "receipt.ErrBlockedCarriesFinish": true,
		"receipt.ErrBlockedCarriesProcessing": true, "receipt.ErrHeldCarriesWork": true,
		"receipt.ErrDurabilityMixed": true, "receipt.ErrCostEvidenceTrimmed": true,
		"receipt.ErrBlockedMissingFact": true, "receipt.ErrTerminalIncomplete": true,
		"digest.ErrMissingAlgorithm": true, "digest.ErrUnknownAlgorithm": true,
	}
	checked := 0
	for _, n := range manifest {
		if !shape[n.Reason] && !strings.HasPrefix(n.Reason, "strict.") {
			continue
		}
		doc, err := os.ReadFile(filepath.FromSlash(n.File))
		require.NoError(t, err)
		_, err = schema.DecodeDocument(doc, schema.Ref{Def: definitionOf(t, n.Kind)})
		require.Error(t, err, "%s (%s) passes the description", n.File, n.Reason)
		checked++
	}
	require.Greater(t, checked, 30)
}
