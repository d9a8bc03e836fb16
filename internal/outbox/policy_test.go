package outbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox"
)

// DS-9: a release policy is validated once, when it is built, and keeps
// its own copy of the routes.
func TestDS9ReleasePolicyIsValidatedOnce(t *testing.T) {
	t.Parallel()
	for _, bad := range []map[string][]route.Destination{
		{"": {route.CoreOperations}},
		{"run.created@2.0": nil},
		{"run.created@2.0": {""}},
		{"run.created@2.0": {route.CoreOperations, route.CoreOperations}},
	} {
		_, err := outbox.NewReleasePolicy(bad)
		require.Error(t, err, "%v", bad)
	}
	routes := map[string][]route.Destination{"run.created@2.0": {route.CoreOperations}}
	p, err := outbox.NewReleasePolicy(routes)
	require.NoError(t, err)
	routes["run.created@2.0"][0] = route.MeteringInputProcessor
	require.Equal(t, []route.Destination{route.CoreOperations}, p.Required("run.created@2.0"))
	require.Empty(t, outbox.ReleasePolicy{}.Required("run.created@2.0"))
}
