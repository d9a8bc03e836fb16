package receipt_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
)

var update = goldentest.Update

// Layout (CT-4):
//
//	testdata/golden/<Kind>/<name>/raw.json        indented JSON as a producer might send it
//	testdata/golden/<Kind>/<name>/canonical.json  RFC 8785 bytes
//	testdata/golden/<Kind>/<name>/digest.txt      jcs-sha256-v1:<hex> of the digest candidate
//	                                              (of the whole document for the ack)
//	testdata/negative/<Kind>/<name>.json          a document that must be rejected
//	testdata/negative/manifest.json               kind, file, requirement and expected sentinel per artefact

func contractByName(t *testing.T, name string) receipt.Contract {
	t.Helper()
	for _, c := range receipt.Contracts() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("unknown contract %s", name)
	return receipt.Contract{}
}

func indent(t *testing.T, m map[string]any) []byte { return goldentest.Indent(t, m) }

// checkFile byte-compares got with the file, or rewrites it with -update.
func checkFile(t *testing.T, path string, got []byte) { goldentest.Check(t, path, got) }

func documentDigest(t *testing.T, c receipt.Contract, doc []byte) digest.Digest {
	t.Helper()
	if c.Digest == nil {
		d, err := digest.OfJSON(digest.JCSSHA256V1, doc)
		require.NoError(t, err)
		return d
	}
	d, err := c.Digest(doc)
	require.NoError(t, err)
	return d
}

// CT-4: every golden is regenerated from the fixtures and byte-compared; the
// raw file decodes strictly, passes every rule and its embedded digest; its
// canonical bytes and digest match the files; canonicalization is idempotent.
func TestGolden_CT4(t *testing.T) {
	t.Parallel()
	gs := allGoldens()
	perKind := map[string]int{}
	for _, g := range gs {
		perKind[g.kind]++
		t.Run(g.kind+"/"+g.name, func(t *testing.T) {
			t.Parallel()
			c := contractByName(t, g.kind)
			dir := filepath.Join("testdata", "golden", g.kind, g.name)
			rawPath := filepath.Join(dir, "raw.json")
			checkFile(t, rawPath, indent(t, g.obj.ToJSON()))
			raw, err := os.ReadFile(rawPath)
			require.NoError(t, err)

			require.NoError(t, c.Validate(raw))
			canonical, err := jcs.Canonicalize(raw)
			require.NoError(t, err)
			checkFile(t, filepath.Join(dir, "canonical.json"), canonical)
			again, err := jcs.Canonicalize(canonical)
			require.NoError(t, err)
			require.Equal(t, canonical, again, "canonicalization is idempotent")
			require.NoError(t, c.Validate(canonical))

			d := documentDigest(t, c, raw)
			checkFile(t, filepath.Join(dir, "digest.txt"), []byte(d.String()+"\n"))
			require.Equal(t, d, documentDigest(t, c, canonical))
			if self, ok := receipt.SelfAddressing(g.kind); ok {
				require.Equal(t, d.Value, g.obj.ToJSON()[self.Prefix+"Digest"], "embedded digest is the candidate digest")
			}
			// The decoded value re-encodes to the same canonical bytes.
			require.Equal(t, canonical, mustMarshal(g.obj.ToJSON()))
		})
	}
	for _, c := range receipt.Contracts() {
		require.GreaterOrEqual(t, perKind[c.Name], 2, c.Name)
	}
	if !*update {
		assertNoStaleFiles(t, filepath.Join("testdata", "golden"), gs)
	}
}

func assertNoStaleFiles(t *testing.T, root string, gs []golden) {
	t.Helper()
	want := map[string]bool{}
	for _, g := range gs {
		want[filepath.Join(root, g.kind, g.name)] = true
	}
	entries, err := filepath.Glob(filepath.Join(root, "*", "*"))
	require.NoError(t, err)
	for _, e := range entries {
		require.True(t, want[e], "golden %s has no fixture; delete it or restore the fixture", e)
	}
}

// TestGolden_DecodedRoundTrip decodes every raw golden with its typed decoder
// (not through the registry) and compares the re-encoded canonical bytes.
func TestGolden_DecodedRoundTrip(t *testing.T) {
	t.Parallel()
	decoders := map[string]func([]byte) (interface{ ToJSON() map[string]any }, error){
		receipt.KindActiveConsumerAck: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeActiveConsumerAck(b)
		},
		receipt.KindOperationsProjectionAppliedReceipt: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeOperationsProjectionAppliedReceipt(b)
		},
		receipt.KindMeteringInputProcessorConsumerReceipt: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeMeteringInputProcessorConsumerReceipt(b)
		},
		receipt.KindMeteringInputWorkAttemptFinished: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeMeteringInputWorkAttemptFinished(b)
		},
		receipt.KindMeteringInputWorkAttemptBlocked: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeMeteringInputWorkAttemptBlocked(b)
		},
		receipt.KindEligibilityProcessingConflictEvidence: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeEligibilityProcessingConflictEvidence(b)
		},
		receipt.KindProviderCostProcessingConflictEvidence: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeProviderCostProcessingConflictEvidence(b)
		},
		receipt.KindBillingSettlementCatchUpWorkAttemptBlocked: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeBillingSettlementCatchUpWorkAttemptBlocked(b)
		},
		receipt.KindBillingFinalizationCoordinatorConsumerReceipt: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeBillingFinalizationCoordinatorConsumerReceipt(b)
		},
		receipt.KindBillingSettlementCatchUpConsumerReceipt: func(b []byte) (interface{ ToJSON() map[string]any }, error) {
			return receipt.DecodeBillingSettlementCatchUpConsumerReceipt(b)
		},
	}
	require.Len(t, decoders, len(receipt.Contracts()))
	for _, g := range allGoldens() {
		doc := mustMarshal(g.obj.ToJSON())
		x, err := decoders[g.kind](doc)
		require.NoError(t, err, g.kind+"/"+g.name)
		require.Equal(t, doc, mustMarshal(x.ToJSON()), g.kind+"/"+g.name)
	}
}

// CT-3: every content-addressed golden's candidate excludes exactly its ref,
// own time field and digest.
func TestGolden_Candidates_CT3(t *testing.T) {
	t.Parallel()
	for _, g := range allGoldens() {
		self, ok := receipt.SelfAddressing(g.kind)
		if !ok {
			continue
		}
		assertCandidate(t, g.obj.(sealed), self.Prefix, self.TimeFields[0])
	}
}

type negativeEntry struct {
	Kind        string `json:"kind"`
	File        string `json:"file"`
	Requirement string `json:"requirement"`
	Reason      string `json:"reason"`
}

// CT-4: every negative artefact is rejected with its named reason; the
// artefacts and the manifest are regenerated from the rule table.
func TestNegative_CT4(t *testing.T) {
	t.Parallel()
	byKey := map[string]golden{}
	for _, g := range allGoldens() {
		byKey[g.kind+"/"+g.name] = g
	}
	var manifest []negativeEntry
	seen := map[string]bool{}
	for _, n := range negatives() {
		base, ok := byKey[n.kind+"/"+n.base]
		require.True(t, ok, "negative %s: unknown base %s/%s", n.name, n.kind, n.base)
		require.False(t, seen[n.kind+"/"+n.name], "duplicate negative %s/%s", n.kind, n.name)
		seen[n.kind+"/"+n.name] = true
		reasonName := sentinelName(t, n.want)
		file := filepath.Join("testdata", "negative", n.kind, n.name+".json")
		manifest = append(manifest, negativeEntry{Kind: n.kind, File: filepath.ToSlash(file), Requirement: n.req, Reason: reasonName})

		m := clone(base.obj.ToJSON()).(map[string]any)
		n.mutate(m)
		if !n.keepDigest {
			if self, ok := receipt.SelfAddressing(n.kind); ok {
				dg, err := self.Compute(digest.JCSSHA256V1, m)
				require.NoError(t, err)
				m[self.Prefix+"Digest"] = dg.Value
			}
		}
		checkFile(t, file, indent(t, m))
	}
	sort.Slice(manifest, func(i, j int) bool { return manifest[i].File < manifest[j].File })
	b, err := json.MarshalIndent(manifest, "", "  ")
	require.NoError(t, err)
	manifestPath := filepath.Join("testdata", "negative", "manifest.json")
	checkFile(t, manifestPath, append(b, '\n'))

	// Verify from the files alone, as another implementation would.
	raw, err := os.ReadFile(manifestPath)
	require.NoError(t, err)
	var entries []negativeEntry
	require.NoError(t, json.Unmarshal(raw, &entries))
	require.Len(t, entries, len(manifest))
	names := sentinels()
	for _, e := range entries {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(e.File, "testdata/negative/"), ".json"), func(t *testing.T) {
			t.Parallel()
			doc, err := os.ReadFile(filepath.FromSlash(e.File))
			require.NoError(t, err)
			want, ok := names[e.Reason]
			require.True(t, ok, "unknown reason %s", e.Reason)
			err = contractByName(t, e.Kind).Validate(doc)
			require.ErrorIs(t, err, want, "%s (%s)", e.File, e.Requirement)
		})
	}
}
