// Package cli wires the oceanway subcommands. Each command group lives in its
// own file (contracts.go, migrate.go, ...) and exports nothing but its
// constructor; NewRoot lists every constructor. A command's RunE parses its
// flags into an options struct and calls one function.
package cli

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// IO carries the standard streams so commands are testable in-process.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// NewRoot builds the root command with every subcommand.
func NewRoot(streams *IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "oceanway",
		Short:         "OceanWay Core: transactional outbox, consumer receipts and billing finality",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.AddCommand(
		newAdminCmd(streams),
		newBenchCmd(streams),
		newContractsCmd(streams),
		newDefinitionsCmd(streams),
		newDemoCmd(streams),
		newInspectCmd(streams),
		newMigrateCmd(streams),
		newProjectionCmd(streams),
		newCaseCmd(streams),
		newRetentionCmd(streams),
		newServeCmd(streams),
		newTokenCmd(streams),
		newKeysCmd(streams),
		newCanaryCmd(streams),
		newVerifyCmd(streams),
	)
	return root
}

// Main runs the CLI and returns the process exit code. Errors are printed as
// one line on standard error.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root := NewRoot(&IO{In: in, Out: out, Err: errOut})
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(errOut, "oceanway: %v\n", err)
		return 1
	}
	return 0
}
