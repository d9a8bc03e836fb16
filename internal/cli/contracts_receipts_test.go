package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/receipt"
)

const receiptTestdata = "../../contracts/receipt/testdata"

// CT-4 / OB-DELIVER-3: `oceanway contracts validate --kind NAME` accepts every
// receipt golden by its spec name, and `contracts digest --kind NAME` prints
// the digest of its candidate (the golden's digest.txt).
func TestContractsValidateAndDigest_ReceiptGoldens(t *testing.T) {
	t.Parallel()
	for _, c := range receipt.Contracts() {
		dirs, err := filepath.Glob(filepath.Join(receiptTestdata, "golden", c.Name, "*"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(dirs), 2, c.Name)
		for _, dir := range dirs {
			t.Run(c.Name+"/"+filepath.Base(dir), func(t *testing.T) {
				t.Parallel()
				raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
				require.NoError(t, err)
				res := runMain(t, raw, "contracts", "validate", "--kind", c.Name)
				require.Equal(t, 0, res.code, res.stderr)
				require.Empty(t, res.stderr)

				res = runMain(t, raw, "contracts", "digest", "--kind", c.Name)
				if c.Digest == nil {
					require.Equal(t, 1, res.code)
					require.Contains(t, res.stderr, "not content-addressed")
					return
				}
				require.Equal(t, 0, res.code, res.stderr)
				want, err := os.ReadFile(filepath.Join(dir, "digest.txt"))
				require.NoError(t, err)
				require.Equal(t, string(want), res.stdout)
			})
		}
	}
}

// CT-2 / CT-4 and every MET/BFC/BSC rule: each negative artefact exits
// non-zero with its typed reason on standard error.
func TestContractsValidate_ReceiptNegatives(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(receiptTestdata, "negative", "manifest.json"))
	require.NoError(t, err)
	var entries []struct {
		Kind, File, Requirement, Reason string
	}
	require.NoError(t, json.Unmarshal(raw, &entries))
	require.NotEmpty(t, entries)
	for _, e := range entries {
		t.Run(strings.TrimPrefix(e.File, "testdata/negative/"), func(t *testing.T) {
			t.Parallel()
			doc, err := os.ReadFile(filepath.Join(receiptTestdata, strings.TrimPrefix(e.File, "testdata/")))
			require.NoError(t, err)
			res := runMain(t, doc, "contracts", "validate", "--kind", e.Kind)
			require.Equal(t, 1, res.code, "%s must be rejected (%s)", e.File, e.Requirement)
			require.Empty(t, res.stdout)
			require.True(t, strings.HasPrefix(res.stderr, "oceanway: invalid "+e.Kind+": "), res.stderr)
			require.Equal(t, 1, strings.Count(res.stderr, "\n"), "one line on standard error")
		})
	}
}

// The typed reason reaches standard error, e.g. the held_for_resolution rule.
func TestContractsValidate_ReceiptReasonText(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(receiptTestdata, "negative", receipt.KindBillingSettlementCatchUpConsumerReceipt, "held-with-work-generation.json"))
	require.NoError(t, err)
	res := runMain(t, doc, "contracts", "validate", "--kind", receipt.KindBillingSettlementCatchUpConsumerReceipt)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, receipt.ErrHeldCarriesWork.Error())
	require.Contains(t, res.stderr, "$.outcome.durability.workGeneration")
}

// A kind name must be exact: no alias without the schema suffix.
func TestContractsValidate_ReceiptKindNamesAreExact(t *testing.T) {
	t.Parallel()
	res := runMain(t, []byte(`{}`), "contracts", "validate", "--kind", "MeteringInputProcessorConsumerReceipt")
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "unknown contract kind")
	for _, c := range receipt.Contracts() {
		res := runMain(t, []byte(`{}`), "contracts", "validate", "--kind", c.Name)
		require.Equal(t, 1, res.code, c.Name)
		require.NotContains(t, res.stderr, "unknown contract kind", c.Name)
	}
}

// digest --kind computes the candidate digest even when the carried digest
// is stale, so a producer can seal a document.
func TestContractsDigest_ReceiptCandidate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(receiptTestdata, "golden", receipt.KindOperationsProjectionAppliedReceipt, "run_created")
	raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	m["appliedAt"] = "2031-01-01T00:00:00.000000Z"                          // own time field: not in the candidate
	m["operationsProjectionAppliedReceiptRef"] = "another-repository-ref"   // ref: not in the candidate
	m["operationsProjectionAppliedReceiptDigest"] = strings.Repeat("0", 64) // stale digest
	doc, err := json.Marshal(m)
	require.NoError(t, err)
	res := runMain(t, doc, "contracts", "digest", "--kind", receipt.KindOperationsProjectionAppliedReceipt)
	require.Equal(t, 0, res.code, res.stderr)
	want, err := os.ReadFile(filepath.Join(dir, "digest.txt"))
	require.NoError(t, err)
	require.Equal(t, string(want), res.stdout)
	res = runMain(t, doc, "contracts", "validate", "--kind", receipt.KindOperationsProjectionAppliedReceipt)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "does not recompute")
}
