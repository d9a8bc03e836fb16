package boundary_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
)

func TestParseAcceptsExactlyTheFourNames(t *testing.T) {
	t.Parallel()
	for _, b := range boundary.All {
		got, err := boundary.Parse(string(b))
		require.NoError(t, err)
		require.Equal(t, b, got)
	}
	for _, s := range []string{"", "Core", "billing", " core"} {
		_, err := boundary.Parse(s)
		require.ErrorContains(t, err, "unknown boundary")
	}
	require.Equal(t, []boundary.Boundary{boundary.Core, boundary.Execution, boundary.Gateway, boundary.Metering}, boundary.All)
}
