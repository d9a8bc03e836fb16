package cli_test

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/cli"
)

// The command tree is the explicit list in NewRoot: every documented
// command is there, once.
func TestRootListsEveryCommand(t *testing.T) {
	t.Parallel()
	root := cli.NewRoot(&cli.IO{})
	names := func(cmds []*cobra.Command) []string {
		var out []string
		for _, c := range cmds {
			out = append(out, c.Name())
		}
		return out
	}
	require.Equal(t, []string{"admin", "bench", "canary", "case", "contracts", "definitions", "demo", "inspect", "keys", "migrate", "projection", "retention", "serve", "token", "verify"}, names(root.Commands()))
	contracts, _, err := root.Find([]string{"contracts"})
	require.NoError(t, err)
	require.Equal(t, []string{"canonicalize", "delivery-set", "digest", "schema", "validate"}, names(contracts.Commands()))
	inspect, _, err := root.Find([]string{"inspect"})
	require.NoError(t, err)
	require.Equal(t, []string{"completeness", "definitions", "deliveries", "event", "quarantine", "reservation", "run"}, names(inspect.Commands()))
}
