package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/legacy"
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
	// legacy adoption (OB-BOOT-1), run on the core database after migrating
	adoptLegacy bool
	legacyTable string
	evidence    string
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
where it is and never created. Running migrate again changes nothing.

--adopt-legacy then adopts the legacy outbox table --legacy-table (default
public.legacy_outbox, see docs/examples/legacy-outbox.sql) of the core
database (OB-BOOT-1) and writes the evidence JSON to --evidence: published
events under an explicit Bootstrap Delivery Set Version without delivery rows,
open events under the active definition, every row that cannot be adopted in
outbox.legacy_quarantine. It needs an active definition; running it again
changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMigrate(cmd.Context(), streams, o)
		},
	}
	cmd.Flags().StringVar(&o.databaseURL, "database-url", "", "server connection string (default $DATABASE_URL, else 127.0.0.1:5432)")
	cmd.Flags().StringVar(&o.prefix, "db-prefix", migrate.DefaultPrefix, "prefix of the boundary database names (<prefix>_core, ...)")
	cmd.Flags().StringSliceVar(&o.only, "boundary", nil, "migrate only these boundaries (core, execution, gateway, metering)")
	cmd.Flags().BoolVar(&o.adoptLegacy, "adopt-legacy", false, "adopt the core database's legacy outbox table after migrating (OB-BOOT-1)")
	cmd.Flags().StringVar(&o.legacyTable, "legacy-table", legacy.DefaultSource, "legacy outbox table adopted by --adopt-legacy (columns id, envelope, published_at)")
	cmd.Flags().StringVar(&o.evidence, "evidence", "", "with --adopt-legacy: write the adoption evidence (JSON) to this file")
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
	if o.adoptLegacy && (o.evidence == "" || !slices.Contains(selected, boundary.Core)) {
		return errors.New("migrate: --adopt-legacy needs --evidence FILE and the core boundary")
	}
	if !o.adoptLegacy && o.evidence != "" {
		return errors.New("migrate: --evidence is only used with --adopt-legacy")
	}
	dsnOf := map[boundary.Boundary]string{}
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
		maps.Copy(dsnOf, res.DSNs)
	}
	for _, b := range selected {
		dsn, ok := explicit[b]
		if !ok {
			continue
		}
		dsnOf[b] = dsn
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
	if o.adoptLegacy {
		return runAdoptLegacy(ctx, logf, dsnOf[boundary.Core], o)
	}
	return nil
}

// runAdoptLegacy adopts the legacy outbox of the core database and writes
// the evidence file (synced) before reporting.
func runAdoptLegacy(ctx context.Context, logf func(string, ...any), dsn string, o migrateOptions) error {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return fmt.Errorf("adopt legacy: connect: %w", err)
	}
	defer pool.Close()
	ev, err := legacy.Adopt(ctx, pool, legacy.Params{Source: o.legacyTable})
	if err != nil {
		return fmt.Errorf("adopt legacy: %w", err)
	}
	doc, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return fmt.Errorf("adopt legacy: encode evidence: %w", err)
	}
	if err := writeSynced(o.evidence, append(doc, '\n')); err != nil {
		return fmt.Errorf("adopt legacy: write evidence: %w", err)
	}
	logf("migrate: adopted %d legacy event(s) from %s (now: %d published, %d open; %d already adopted), %d quarantined (now: %d); bootstrap definition %d; evidence %s",
		ev.AdoptedTotal, ev.Source, ev.Counts["adopted_published"], ev.Counts["adopted_open"], ev.Counts["already_adopted"],
		ev.QuarantineTotal, ev.Counts[legacy.ClassUnparseable]+ev.Counts[legacy.ClassUnsupported]+ev.Counts[legacy.ClassDigestConflict],
		ev.Bootstrap.DeliverySetVersion, o.evidence)
	return nil
}

// writeSynced writes a file and fsyncs it.
func writeSynced(path string, data []byte) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
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
