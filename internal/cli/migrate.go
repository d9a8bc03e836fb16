package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/migrate"
	_ "github.com/oceanway/core/internal/outbox/schema" // the outbox line
	"github.com/oceanway/core/internal/pgserver"
)

func init() { commandFuncs = append(commandFuncs, newMigrateCmd) }

// boundaryDSNEnv is the environment variable of a boundary's DSN, e.g.
// OCEANWAY_CORE_DSN.
func boundaryDSNEnv(b migrate.Boundary) string {
	return "OCEANWAY_" + strings.ToUpper(string(b)) + "_DSN"
}

func newMigrateCmd(streams *IO) *cobra.Command {
	var (
		databaseURL string
		prefix      string
		only        []string
		dsns        = map[migrate.Boundary]*string{}
	)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create the boundary databases that do not exist yet and apply every migration line to them (idempotent)",
		Long: `migrate applies every registered migration line (the outbox line to all four producer
databases, each domain line to its own) to the boundary databases core, execution,
gateway and metering.

The server is --database-url, else DATABASE_URL, else a local server on 127.0.0.1:5432.
The boundary databases are <prefix>_core, <prefix>_execution, <prefix>_gateway and
<prefix>_metering on that server; the ones that do not exist yet are created.
A boundary given its own DSN (--core-dsn or OCEANWAY_CORE_DSN, ...) is migrated
where it is and never created. Running migrate again changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logf := func(format string, args ...any) { fmt.Fprintf(streams.Out, format+"\n", args...) }

			selected := migrate.Boundaries
			if len(only) > 0 {
				selected = nil
				for _, s := range only {
					b, err := migrate.ParseBoundary(s)
					if err != nil {
						return err
					}
					selected = append(selected, b)
				}
			}
			explicit := map[migrate.Boundary]string{}
			var derived []migrate.Boundary
			for _, b := range selected {
				dsn := *dsns[b]
				if dsn == "" {
					dsn = os.Getenv(boundaryDSNEnv(b))
				}
				if dsn != "" {
					explicit[b] = dsn
				} else {
					derived = append(derived, b)
				}
			}

			applied := 0
			if len(derived) > 0 {
				server := databaseURL
				if server == "" {
					srv, err := pgserver.Find(ctx, pgserver.Opts{NoStart: true})
					if err != nil {
						return err
					}
					server = srv.URL
				}
				res, err := migrate.Provision(ctx, migrate.ProvisionParams{
					ServerURL: server, Prefix: prefix, Boundaries: derived, Logf: logf,
				})
				applied += len(res.Applied)
				if err != nil {
					return err
				}
			}
			for _, b := range selected {
				dsn, ok := explicit[b]
				if !ok {
					continue
				}
				res, err := migrate.Up(ctx, dsn, b, migrate.Opts{Logf: logf})
				applied += len(res)
				if err != nil {
					return err
				}
			}
			if applied == 0 {
				logf("migrate: %d boundary database(s) up to date", len(selected))
			} else {
				logf("migrate: applied %d migration(s) to %d boundary database(s)", applied, len(selected))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "server connection string (default $DATABASE_URL, else 127.0.0.1:5432)")
	cmd.Flags().StringVar(&prefix, "db-prefix", migrate.DefaultPrefix, "prefix of the boundary database names (<prefix>_core, ...)")
	cmd.Flags().StringSliceVar(&only, "boundary", nil, "migrate only these boundaries (core, execution, gateway, metering)")
	for _, b := range migrate.Boundaries {
		dsns[b] = new(string)
		cmd.Flags().StringVar(dsns[b], string(b)+"-dsn", "", fmt.Sprintf("DSN of the %s database, migrated where it is (default $%s)", b, boundaryDSNEnv(b)))
	}
	return cmd
}
