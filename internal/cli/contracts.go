package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/kinds"
)

func init() { commandFuncs = append(commandFuncs, newContractsCmd) }

// contractsSubcommands lets later files (validate, schema, delivery-set)
// add their own subcommands to "oceanway contracts".
var contractsSubcommands []func(*IO) *cobra.Command

func newContractsCmd(streams *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "contracts",
		Short: "Canonicalize, digest and validate contract documents",
	}
	cmd.AddCommand(
		&cobra.Command{
			Use:   "canonicalize",
			Short: "Read one JSON document on stdin and write its RFC 8785 canonical bytes (no trailing newline)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				doc, err := io.ReadAll(streams.In)
				if err != nil {
					return fmt.Errorf("read stdin: %w", err)
				}
				canonical, err := jcs.Canonicalize(doc)
				if err != nil {
					return err
				}
				_, err = streams.Out.Write(canonical)
				return err
			},
		},
	)
	cmd.AddCommand(newDigestCmd(streams))
	for _, f := range contractsSubcommands {
		cmd.AddCommand(f(streams))
	}
	return cmd
}

func newDigestCmd(streams *IO) *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   "digest",
		Short: "Read one JSON document on stdin and print jcs-sha256-v1:<hex> of its canonical bytes (or of a contract's digest candidate with --kind)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, err := io.ReadAll(streams.In)
			if err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			var d digest.Digest
			if kind == "" {
				d, err = digest.OfJSON(digest.JCSSHA256V1, doc)
			} else {
				k, lookupErr := kinds.Lookup(kind)
				if lookupErr != nil {
					return lookupErr
				}
				if k.Digest == nil {
					return fmt.Errorf("kind %s is not content-addressed", kind)
				}
				d, err = k.Digest(doc)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(streams.Out, d.String())
			return err
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "contract kind whose digest candidate to digest (e.g. OperationsProjectionAppliedReceipt@1)")
	return cmd
}
