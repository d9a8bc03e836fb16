package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/deliveryset"
)

func init() { contractsSubcommands = append(contractsSubcommands, newDeliverySetCmd) }

func newDeliverySetCmd(streams *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delivery-set",
		Short: "Build Delivery Set Definitions",
	}
	var (
		name       string
		version    int64
		setVersion int64
	)
	first := &cobra.Command{
		Use:   "first-release --projection-name NAME --projection-version N",
		Short: "Print the first full release definition (13 pairs, 14 mandatory members) as canonical JSON, digest included (no trailing newline)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" || version == 0 {
				return errors.New("--projection-name and --projection-version are required")
			}
			d, err := deliveryset.Build(setVersion, name, version)
			if err != nil {
				return err
			}
			canonical, err := d.Canonical()
			if err != nil {
				return err
			}
			_, err = streams.Out.Write(canonical)
			return err
		},
	}
	first.Flags().StringVar(&name, "projection-name", "", "active Operations projection name frozen in the core_operations members")
	first.Flags().Int64Var(&version, "projection-version", 0, "active Operations projection version (≥ 1)")
	first.Flags().Int64Var(&setVersion, "delivery-set-version", deliveryset.FirstReleaseVersion, "deliverySetVersion of the definition (a cutover uses a new one)")
	cmd.AddCommand(first)
	return cmd
}
