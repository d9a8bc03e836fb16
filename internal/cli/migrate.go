package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/pgserver"
)

// boundaryDSNEnv is the environment variable of a boundary's DSN, e.g.
// OCEANWAY_CORE_DSN.
func boundaryDSNEnv(b boundary.Boundary) string {
	return "OCEANWAY_" + strings.ToUpper(string(b)) + "_DSN"
}

// migrateOptions are the flags of `oceanway migrate`.
type migrateOptions struct {
	databaseURL string
	prefix      string
	only        []string
	dsns        map[boundary.Boundary]*string
	lines       []migrate.Line
}

func newMigrateCmd(streams *IO) *cobra.Command {
	o := migrateOptions{dsns: map[boundary.Boundary]*string{}, lines: lines.All()}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create the boundary databases that do not exist yet and apply every migration line to them (idempotent)",
		Long: `migrate applies every migration line (the outbox line to all four producer
databases, each domain line to its own) to the boundary databases core, execution,
gateway and metering.

The server is --database-url, else DATABASE_URL, else a local server on 127.0.0.1:5432.
The boundary databases are <prefix>_core, <prefix>_execution, <prefix>_gateway and
<prefix>_metering on that server; the ones that do not exist yet are created.
A boundary given its own DSN (--core-dsn or OCEANWAY_CORE_DSN, ...) is migrated
where it is and never created. Running migrate again changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMigrate(cmd.Context(), streams, o)
		},
	}
	cmd.Flags().StringVar(&o.databaseURL, "database-url", "", "server connection string (default $DATABASE_URL, else 127.0.0.1:5432)")
	cmd.Flags().StringVar(&o.prefix, "db-prefix", migrate.DefaultPrefix, "prefix of the boundary database names (<prefix>_core, ...)")
	cmd.Flags().StringSliceVar(&o.only, "boundary", nil, "migrate only these boundaries (core, execution, gateway, metering)")
	for _, b := range boundary.All {
		o.dsns[b] = new(string)
		cmd.Flags().StringVar(o.dsns[b], string(b)+"-dsn", "", fmt.Sprintf("DSN of the %s database, migrated where it is (default $%s)", b, boundaryDSNEnv(b)))
	}
	return cmd
}

// runMigrate provisions the boundaries derived from the prefix, migrates the
// ones given a DSN where they are, and says how many migrations it applied.
func runMigrate(ctx context.Context, streams *IO, o migrateOptions) error {
	logf := func(format string, args ...any) { fmt.Fprintf(streams.Out, format+"\n", args...) }
	selected, err := selectBoundaries(o.only)
	if err != nil {
		return err
	}
	explicit := map[boundary.Boundary]string{}
	var derived []boundary.Boundary
	for _, b := range selected {
		dsn := *o.dsns[b]
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
		serverURL := o.databaseURL
		if serverURL == "" {
			srv, err := pgserver.Find(ctx, pgserver.Opts{NoStart: true})
			if err != nil {
				return err
			}
			serverURL = srv.URL
		}
		res, err := migrate.Provision(ctx, migrate.ProvisionParams{
			ServerURL: serverURL, Prefix: o.prefix, Boundaries: derived, Lines: o.lines, Logf: logf,
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
		res, err := migrate.Up(ctx, dsn, b, o.lines, migrate.Opts{Logf: logf})
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
}

// selectBoundaries parses --boundary (all four when empty).
func selectBoundaries(only []string) ([]boundary.Boundary, error) {
	if len(only) == 0 {
		return boundary.All, nil
	}
	var selected []boundary.Boundary
	for _, s := range only {
		b, err := boundary.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		selected = append(selected, b)
	}
	return selected, nil
}
