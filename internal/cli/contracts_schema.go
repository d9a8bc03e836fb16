package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/schemagen"
)

func newSchemaCmd(streams *IO) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "schema --out DIR",
		Short: "Write the generated JSON Schema (DIR/json) and TypeScript (DIR/ts) of the envelope, payloads and Delivery Set Definition",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return writeSchemas(streams, out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "output directory")
	return cmd
}

// writeSchemas writes the generated files under out and lists their paths.
func writeSchemas(streams *IO, out string) error {
	if out == "" {
		return errors.New("--out is required")
	}
	paths, err := schemagen.Write(out)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if _, err := fmt.Fprintln(streams.Out, p); err != nil {
			return err
		}
	}
	return nil
}
