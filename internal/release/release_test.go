package release_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// DS-7, DS-4: the release's policy is the first full release's routes, its
// bindings are the four destinations' contracts, and Bootstrap binds,
// registers and activates once, then changes nothing on a second run.
func TestDS7BootstrapBindsRegistersAndActivatesOnce(t *testing.T) {
	t.Parallel()
	for eventType, dests := range deliveryset.FirstReleaseRoutes {
		require.Equal(t, dests, release.Policy.Required(eventType), eventType)
	}
	require.Len(t, release.Bindings(), len(route.Destinations))
	for _, b := range release.Bindings() {
		require.NoError(t, route.CheckConsumer(b.Destination, b.ConsumerName))
	}

	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}}).Core()
	p := release.BootstrapParams{ProjectionName: "operations", ProjectionVersion: 1, SourceRelease: "test"}
	def, err := release.Bootstrap(ctx, pool, p)
	require.NoError(t, err)
	again, err := release.Bootstrap(ctx, pool, p)
	require.NoError(t, err)
	require.Equal(t, def.Quadruple(), again.Quadruple())
	require.NoError(t, deliveryset.CoversFirstRelease(def))

	active, err := outbox.ActiveDefinition(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, def.Quadruple(), active.Definition.Quadruple())
	require.Equal(t, "test", active.SourceRelease)
	stored, err := outbox.DestinationBindings(ctx, pool)
	require.NoError(t, err)
	require.ElementsMatch(t, release.Bindings(), stored)
	pointers, err := outbox.ProjectionPointers(ctx, pool)
	require.NoError(t, err)
	require.Len(t, pointers, 1)
	require.Equal(t, int64(1), pointers[0].ProjectionVersion)
}
