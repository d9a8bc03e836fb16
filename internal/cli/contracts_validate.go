package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/kinds"
)

func newValidateCmd(streams *IO) *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   "validate --kind NAME",
		Short: "Strictly validate one contract document on stdin; exit non-zero with the typed reason when invalid",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return validate(streams, kind)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "contract kind, e.g. DeliverySetDefinition, CanonicalEventEnvelope@1, ActiveConsumerAck@1")
	return cmd
}

// validate strictly validates the document on stdin as kind.
func validate(streams *IO, kind string) error {
	if kind == "" {
		return errors.New("--kind is required")
	}
	k, err := kinds.Lookup(kind)
	if err != nil {
		return err
	}
	doc, err := io.ReadAll(streams.In)
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	if err := k.Validate(doc); err != nil {
		return fmt.Errorf("invalid %s: %w", kind, err)
	}
	return nil
}
