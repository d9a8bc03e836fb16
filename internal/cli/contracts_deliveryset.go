package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/deliveryset"
)

func newDeliverySetCmd(streams *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delivery-set",
		Short: "Build Delivery Set Definitions",
	}
	var o firstReleaseOptions
	first := &cobra.Command{
		Use:   "first-release --projection-name NAME --projection-version N",
		Short: "Print the first full release definition (13 pairs, 14 mandatory members) as canonical JSON, digest included (no trailing newline)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return printFirstRelease(streams, o)
		},
	}
	first.Flags().StringVar(&o.name, "projection-name", "", "active Operations projection name frozen in the core_operations members")
	first.Flags().Int64Var(&o.version, "projection-version", 0, "active Operations projection version (≥ 1)")
	first.Flags().Int64Var(&o.setVersion, "delivery-set-version", deliveryset.FirstReleaseVersion, "deliverySetVersion of the definition (a cutover uses a new one)")
	cmd.AddCommand(first)
	return cmd
}

// firstReleaseOptions are the flags of `contracts delivery-set first-release`.
type firstReleaseOptions struct {
	name       string
	version    int64
	setVersion int64
}

// printFirstRelease writes the canonical first release definition.
func printFirstRelease(streams *IO, o firstReleaseOptions) error {
	if o.name == "" || o.version == 0 {
		return errors.New("--projection-name and --projection-version are required")
	}
	d, err := deliveryset.Build(o.setVersion, o.name, o.version)
	if err != nil {
		return err
	}
	canonical, err := d.Canonical()
	if err != nil {
		return err
	}
	_, err = streams.Out.Write(canonical)
	return err
}
