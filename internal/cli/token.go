package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/api"
	"github.com/oceanway/core/internal/workload"
)

// newTokenCmd signs one workload token: what a platform (or an operator
// with curl) presents to the platform API. Each token is single-use and
// lives 30 s.
func newTokenCmd(streams *IO) *cobra.Command {
	var keySpec, who, audience, operation, scope string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Sign one single-use workload token (30 s) for the platform API or an internal call",
		Long: `token prints a compact JWS (EdDSA) signed with --workload-key as --workload, for
--audience and one scope: --operation admitRun gives the platform API's scope api:admitRun
(audience: the operation's owner, core_api, execution_api or gateway_api, unless --audience
says otherwise); --scope gives any other (with --audience). The callee must trust the key's public
half for that workload (serve --trust-workload workload=key.pub).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if keySpec == "" {
				keySpec = os.Getenv("OCEANWAY_WORKLOAD_KEY")
			}
			switch {
			case keySpec == "":
				return errors.New("token: --workload-key (or OCEANWAY_WORKLOAD_KEY) is required")
			case (operation == "") == (scope == ""):
				return errors.New("token: give exactly one of --operation and --scope")
			}
			if operation != "" {
				scope = api.Scope(operation)
				if audience == "" {
					owner, err := api.OperationOwner(operation)
					if err != nil {
						return fmt.Errorf("token: --operation: %w", err)
					}
					audience = api.Audience(owner)
				}
			}
			if audience == "" {
				return errors.New("token: --scope needs --audience")
			}
			key, err := workload.LoadPrivateKey(keySpec)
			if err != nil {
				return err
			}
			signer, err := workload.NewSigner(workload.SignerConfig{Workload: who, Key: key})
			if err != nil {
				return err
			}
			tok, err := signer.Sign(audience, scope)
			if err != nil {
				return err
			}
			fmt.Fprintln(streams.Out, tok)
			return nil
		},
	}
	cmd.Flags().StringVar(&keySpec, "workload-key", "", "Ed25519 private key (PKCS #8 PEM file or text; default $OCEANWAY_WORKLOAD_KEY)")
	cmd.Flags().StringVar(&who, "workload", "platform", "the workload the token is for (its iss and sub)")
	cmd.Flags().StringVar(&audience, "audience", "", "the callee (default with --operation: its owner's audience)")
	cmd.Flags().StringVar(&operation, "operation", "", "a platform API operationId: scope api:<operationId>")
	cmd.Flags().StringVar(&scope, "scope", "", "any other scope")
	return cmd
}
