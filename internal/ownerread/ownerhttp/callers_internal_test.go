package ownerhttp

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

type (
	anyManifest  struct{ coreread.ManifestReader }
	anyCommitted struct {
		coreread.FinalizationCommittedReader
	}
	anyTransit struct {
		coreread.SettlementTransitionReader
	}
	anyDecision struct {
		coreread.FinalizationDecisionForOperationsReader
	}
	anyResolution struct {
		coreread.ResolutionAppliedForOperationsReader
	}
	anyLateExposure struct {
		coreread.LateExposureCaseRequestReader
	}
	anyLateResult struct {
		coreread.LateCommandResultReader
	}
	anyCaseResolutionApplied struct {
		coreread.CaseResolutionAppliedReader
	}
	anyExecution struct{ executionread.Reader }
	anyGateway   struct{ gatewayread.Reader }
	anyMetering  struct{ meteringread.Reader }
)

// Every read served names the owners that may call it: a read added
// without its callers would be refused to everyone, so it fails here
// first; and only owner.<owner> workloads act for an owner.
func TestEveryReadNamesItsCallers(t *testing.T) {
	routes := routesOf(Served{Manifest: anyManifest{}, FinalizationCommitted: anyCommitted{}, SettlementTransition: anyTransit{},
		CaseDecision: anyDecision{}, CaseResolution: anyResolution{}, LateExposure: anyLateExposure{},
		LateResult: anyLateResult{}, CaseResolutionApplied: anyCaseResolutionApplied{}, Execution: anyExecution{}, Gateway: anyGateway{}, Metering: anyMetering{}})
	require.Len(t, routes, len(Callers))
	for read := range routes {
		require.NotEmpty(t, Callers[read], read)
	}
	for name, want := range map[string]string{"owner.core": "core", "owner.metering": "metering"} {
		got, ok := CallerOwner(name)
		require.True(t, ok, name)
		require.Equal(t, want, got)
	}
	for _, name := range []string{"owner.billing", "dispatcher.core", "core", "owner."} {
		_, ok := CallerOwner(name)
		require.False(t, ok, name)
	}
}
