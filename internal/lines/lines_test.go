package lines_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/migrate"
)

// All is already in application order, so the list reads as it applies.
func TestAllIsInDependencyOrder(t *testing.T) {
	t.Parallel()
	all := lines.All()
	ordered, err := migrate.Ordered(all)
	require.NoError(t, err)
	var got, want []string
	for i := range all {
		got = append(got, all[i].Name)
		want = append(want, ordered[i].Name)
	}
	require.Equal(t, want, got)
}
