package settlement

import (
	"errors"
	"fmt"
	"slices"
)

// ChargeDimensionRegistryVersion names the charge dimension registry below:
// which charge dimensions an attempt of an output contract must settle
// (ADR-031: FinalizationInputManifest@1 "完整枚举该集合中每个 Attempt 的
// Contracts 注册 Charge Dimension"). Execution freezes this version and the
// attempt's set in its AttemptExecutionManifest@1; Metering completes an
// attempt's usage Work only when every dimension of the frozen set has
// committed, and Billing blocks until every one is in its input manifest.
// An entry never changes: a new dimension set is a new output contract (or a
// new registry version), never an edit of this one (the golden
// testdata/charge-dimension-registry.json is byte-compared).
const ChargeDimensionRegistryVersion = "oceanway-charge-dimension-registry@1"

// chargeDimensionRegistry maps an output contract ref to the sorted charge
// dimension keys its attempts settle. Every key is in the price book. The
// dimension of a not_dispatched attempt (ChargeDimensionNotDispatched) is
// no output contract's: a rejected attempt settles that one dimension
// instead of the frozen set.
var chargeDimensionRegistry = map[string][]string{
	"output-contract/text@1":        {"text.input_tokens", "text.output_tokens"},
	"output-contract/media@1":       {"media.images", "media.video_seconds"},
	"output-contract/tools@1":       {"text.input_tokens", "tools.calls"},
	"output-contract/canary-text@1": {"text.input_tokens", "text.output_tokens"},
}

// ErrUnregisteredOutputContract marks an output contract the charge
// dimension registry does not know: no attempt may be created for it (fail
// closed, never an empty set).
var ErrUnregisteredOutputContract = errors.New("settlement: output contract is not in the charge dimension registry")

// ErrChargeDimensionSet marks a frozen charge dimension set that is not the
// registry's set of its output contract under its registry version.
var ErrChargeDimensionSet = errors.New("settlement: charge dimension set differs from the registry")

// RegisteredDimensions returns (a copy of) the sorted charge dimension keys
// of an output contract under ChargeDimensionRegistryVersion.
func RegisteredDimensions(outputContractRef string) ([]string, error) {
	keys, ok := chargeDimensionRegistry[outputContractRef]
	if !ok {
		return nil, fmt.Errorf("%w: %q (%s)", ErrUnregisteredOutputContract, outputContractRef, ChargeDimensionRegistryVersion)
	}
	return slices.Clone(keys), nil
}

// CheckRegisteredDimensions refuses a frozen (registry version, keys) pair
// that is not exactly the registry's answer for the output contract.
func CheckRegisteredDimensions(registryVersion, outputContractRef string, keys []string) error {
	if registryVersion != ChargeDimensionRegistryVersion {
		return fmt.Errorf("%w: unknown registry version %q", ErrChargeDimensionSet, registryVersion)
	}
	want, err := RegisteredDimensions(outputContractRef)
	if err != nil {
		return err
	}
	if !slices.Equal(want, keys) {
		return fmt.Errorf("%w: %q registers %v, not %v", ErrChargeDimensionSet, outputContractRef, want, keys)
	}
	return nil
}

// ChargeDimensionRegistry returns the whole registry (output contract ref →
// sorted keys), a copy: the golden test and the docs render it.
func ChargeDimensionRegistry() map[string][]string {
	out := make(map[string][]string, len(chargeDimensionRegistry))
	for k, v := range chargeDimensionRegistry {
		out[k] = slices.Clone(v)
	}
	return out
}
