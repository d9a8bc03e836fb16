package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/kinds"
)

func newContractsCmd(streams *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "contracts",
		Short: "Canonicalize, digest and validate contract documents",
	}
	cmd.AddCommand(
		newCanonicalizeCmd(streams),
		newDigestCmd(streams),
		newValidateCmd(streams),
		newSchemaCmd(streams),
		newDeliverySetCmd(streams),
	)
	return cmd
}

func newCanonicalizeCmd(streams *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "canonicalize",
		Short: "Read one JSON document on stdin and write its RFC 8785 canonical bytes (no trailing newline)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return canonicalize(streams)
		},
	}
}

// canonicalize writes the JCS bytes of the document on stdin.
func canonicalize(streams *IO) error {
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
}

func newDigestCmd(streams *IO) *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   "digest",
		Short: "Read one JSON document on stdin and print jcs-sha256-v1:<hex> of its canonical bytes (or of a contract's digest candidate with --kind)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return printDigest(streams, kind)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "contract kind whose digest candidate to digest (e.g. OperationsProjectionAppliedReceipt@1)")
	return cmd
}

// printDigest prints the digest of the document on stdin, or of its digest
// candidate when kind is set.
func printDigest(streams *IO, kind string) error {
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
}
