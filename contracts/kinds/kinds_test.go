package kinds_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/kinds"
)

func TestAllNamesAreUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, k := range kinds.All() {
		require.False(t, seen[k.Name], "duplicate kind %s", k.Name)
		seen[k.Name] = true
		require.NotNil(t, k.Validate, k.Name)
	}
	_, err := kinds.Lookup("NoSuchKind@1")
	require.ErrorIs(t, err, kinds.ErrUnknownKind)
}
