package settlement_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/settlement"
)

// TestChargeDimensionRegistryGolden_ME1 byte-compares the charge dimension
// registry with its golden (an entry never changes: a changed set is a new
// output contract or registry version, and shows here); every set is
// sorted, without duplicates and priced by the price book (issue 32 part 4).
func TestChargeDimensionRegistryGolden_ME1(t *testing.T) {
	reg := settlement.ChargeDimensionRegistry()
	doc := map[string]any{"registryVersion": settlement.ChargeDimensionRegistryVersion}
	entries := map[string]any{}
	for ref, keys := range reg {
		require.NotEmpty(t, keys, ref)
		for i, k := range keys {
			_, err := settlement.PriceOf(k)
			require.NoError(t, err, "%s: %s", ref, k)
			require.NotEqual(t, settlement.ChargeDimensionNotDispatched, k)
			if i > 0 {
				require.Less(t, keys[i-1], k, "%s: sorted, no duplicates", ref)
			}
		}
		anyKeys := make([]any, len(keys))
		for i, k := range keys {
			anyKeys[i] = k
		}
		entries[ref] = anyKeys
	}
	doc["outputContracts"] = entries
	got, err := jcs.Marshal(doc)
	require.NoError(t, err)
	got = append(got, '\n')
	path := filepath.Join("testdata", "charge-dimension-registry.json")
	if *goldentest.Update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "registry differs from %s (run with -update after review):\n%s", path, got)
}

// TestCheckRegisteredDimensions_ME1: a frozen set is exactly the registry's
// set of its output contract; an unknown output contract or version, a
// missing, extra or reordered key is refused.
func TestCheckRegisteredDimensions_ME1(t *testing.T) {
	const oc = "output-contract/text@1"
	v := settlement.ChargeDimensionRegistryVersion
	require.NoError(t, settlement.CheckRegisteredDimensions(v, oc, []string{"text.input_tokens", "text.output_tokens"}))
	for name, keys := range map[string][]string{
		"missing": {"text.input_tokens"}, "extra": {"text.input_tokens", "text.output_tokens", "tools.calls"},
		"reordered": {"text.output_tokens", "text.input_tokens"}, "empty": {},
	} {
		require.ErrorIs(t, settlement.CheckRegisteredDimensions(v, oc, keys), settlement.ErrChargeDimensionSet, name)
	}
	require.ErrorIs(t, settlement.CheckRegisteredDimensions("oceanway-charge-dimension-registry@0", oc, []string{"text.input_tokens", "text.output_tokens"}), settlement.ErrChargeDimensionSet)
	_, err := settlement.RegisteredDimensions("output-contract/unknown@1")
	require.ErrorIs(t, err, settlement.ErrUnregisteredOutputContract)
	require.ErrorIs(t, settlement.CheckRegisteredDimensions(v, "output-contract/unknown@1", []string{"text.input_tokens"}), settlement.ErrUnregisteredOutputContract)
	// The registry hands out copies.
	keys, err := settlement.RegisteredDimensions(oc)
	require.NoError(t, err)
	keys[0] = "tampered"
	again, _ := settlement.RegisteredDimensions(oc)
	require.Equal(t, "text.input_tokens", again[0])
}
