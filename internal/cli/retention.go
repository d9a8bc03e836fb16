package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/retention"
)

// retentionOptions are the flags of `oceanway retention …`.
type retentionOptions struct {
	conn       boundaryFlags
	boundary   string
	asJSON     bool
	olderThan  string
	archiveDir string
	batchSize  int
	asRole     bool
	drillDSN   string
}

func newRetentionCmd(streams *IO) *cobra.Command {
	o := retentionOptions{}
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Retention of closed outbox history (RET-1): plan, archive (with recorded restore drill), verify, restore, drill",
		Long: `retention plan --older-than D reports, for one producer database, every event
created more than D ago by class — closed (published, every delivery acknowledged,
no quarantine row, no legacy adoption record: the only class that may ever leave
the hot tables), unpublished, quarantined, open_delivery, legacy_adoption_record —
and what the closed events would take with them (deliveries, attempt starts and
finishes). It reads only; nothing is archived or removed.

retention archive --older-than D --archive-dir DIR --drill-dsn URL moves that closed history out of
the hot tables in batches: each batch is written to DIR as content-addressed files
(objects/<sha256>.json: the events with envelope, digests, frozen definition
quadruple, deliveries and attempt history; the definitions they froze) plus a
manifest (manifests/<sha256>.json), fsynced and verified from disk; then the
restore drill of that batch runs in the scratch database named by --drill-dsn
(the outbox schema is migrated onto it; it must hold no event; superuser there; the
drill's transaction is rolled back so it stays a scratch) and is recorded in the
source's audited recovery baseline (outbox.retention_recovery_drills: drill document
digest, manifest digest, event-set digest, counts, scratch database, runtime
version); only then the controlled function outbox.retention_archive re-checks
every event and the recorded drill (OWR04 without one), records the run (counts,
manifest digest) and removes the rows.

retention drill --archive-dir DIR --drill-dsn URL re-runs the restore drill of every
manifest of DIR archived from this database and records each in the baseline (a
periodic proof that the archive still restores).

retention verify --archive-dir DIR recomputes every digest of DIR (no database).

retention restore --archive-dir DIR is the restore drill: it loads DIR into a
scratch database (the connection flags name it; it is created and migrated when
missing, and must hold no event) and proves that the restored rows re-export to
the archived bytes. It needs a superuser on that database.

D is a Go duration (720h) or a number of days (30d).
Connection flags: --boundary (default core) with --database-url + --db-prefix or --<boundary>-dsn.`,
	}
	cmd.PersistentFlags().BoolVar(&o.asJSON, "json", false, "print JSON instead of text")
	cmd.PersistentFlags().StringVar(&o.boundary, "boundary", string(boundary.Core), "producer database: core, execution, gateway or metering")
	conn := &cobra.Command{}
	o.conn.register(conn)
	cmd.PersistentFlags().AddFlagSet(conn.Flags())

	plan := &cobra.Command{
		Use: "plan", Short: "What would leave the hot tables, by class (read only)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRetentionPlan(cmd.Context(), streams, o) },
	}
	plan.Flags().StringVar(&o.olderThan, "older-than", "", "age of the history considered: a Go duration (720h) or days (30d)")
	archive := &cobra.Command{
		Use: "archive", Short: "Archive closed history older than --older-than to --archive-dir, then remove it from the hot tables", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRetentionArchive(cmd.Context(), streams, o) },
	}
	archive.Flags().StringVar(&o.olderThan, "older-than", "", "age of the history archived: a Go duration (720h) or days (30d)")
	archive.Flags().StringVar(&o.archiveDir, "archive-dir", "", "archive directory (created when missing)")
	archive.Flags().IntVar(&o.batchSize, "batch-size", retention.DefaultBatchSize, "events per run (one manifest, one call of the controlled function)")
	archive.Flags().StringVar(&o.drillDSN, "drill-dsn", "", "scratch database for the restore drill of every batch (required; env OCEANWAY_RETENTION_DRILL_DSN)")
	archive.Flags().BoolVar(&o.asRole, "least-privilege", envBool("OCEANWAY_LEAST_PRIVILEGE", true),
		"run as oceanway_retention by SET ROLE (it may read the history and execute outbox.retention_archive, nothing else); the connecting user must be a member (env OCEANWAY_LEAST_PRIVILEGE, default on)")
	verify := &cobra.Command{
		Use: "verify", Short: "Recompute every digest of an archive directory (no database)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRetentionVerify(streams, o) },
	}
	verify.Flags().StringVar(&o.archiveDir, "archive-dir", "", "archive directory")
	restore := &cobra.Command{
		Use: "restore", Short: "Restore drill: load an archive into a scratch database and prove it reproduces the archived rows", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRetentionRestore(cmd.Context(), streams, o) },
	}
	restore.Flags().StringVar(&o.archiveDir, "archive-dir", "", "archive directory")
	drill := &cobra.Command{
		Use: "drill", Short: "Re-run the restore drill of every manifest of --archive-dir and record it in the recovery baseline", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRetentionDrill(cmd.Context(), streams, o) },
	}
	drill.Flags().StringVar(&o.archiveDir, "archive-dir", "", "archive directory")
	drill.Flags().StringVar(&o.drillDSN, "drill-dsn", "", "scratch database for the restore drill (required; env OCEANWAY_RETENTION_DRILL_DSN)")
	drill.Flags().BoolVar(&o.asRole, "least-privilege", envBool("OCEANWAY_LEAST_PRIVILEGE", true),
		"record as oceanway_retention by SET ROLE (env OCEANWAY_LEAST_PRIVILEGE, default on)")
	cmd.AddCommand(plan, archive, verify, restore, drill)
	return cmd
}

// parseAge parses a Go duration or a whole number of days ("30d").
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%w: %q", retention.ErrInvalidOlderThan, s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: %q", retention.ErrInvalidOlderThan, s)
	}
	return d, nil
}

func runRetentionPlan(ctx context.Context, streams *IO, o retentionOptions) error {
	age, err := parseAge(o.olderThan)
	if err != nil {
		return err
	}
	dopts := definitionsOptions{conn: o.conn, boundary: o.boundary}
	pool, err := dopts.pool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	p, err := retention.PlanFor(ctx, pool, age)
	if err != nil {
		return err
	}
	if o.asJSON {
		enc := json.NewEncoder(streams.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	w := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "events created before %s (older than %s)\n", p.Cutoff.Format(time.RFC3339), age)
	fmt.Fprintln(w, "CLASS\tEVENTS")
	for _, c := range []string{retention.ClassClosed, retention.ClassUnpublished, retention.ClassQuarantined,
		retention.ClassOpenDelivery, retention.ClassLegacyAdoption} {
		fmt.Fprintf(w, "%s\t%d\n", c, p.Classes[c])
	}
	fmt.Fprintf(w, "leaving (closed)\t%d events, %d deliveries, %d attempt starts, %d attempt finishes\n",
		p.Leaving.Events, p.Leaving.Deliveries, p.Leaving.AttemptStarts, p.Leaving.AttemptFinishes)
	return w.Flush()
}

func (o retentionOptions) print(streams *IO, v any, text func() error) error {
	if o.asJSON {
		enc := json.NewEncoder(streams.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return text()
}

// sourceAndDrillPools opens the source database (as oceanway_retention
// with --least-privilege) and the drill's scratch database (migrated to
// the outbox line when it has none; connecting user, a superuser there).
func (o retentionOptions) sourceAndDrillPools(ctx context.Context) (source, drill *pgxpool.Pool, err error) {
	if o.archiveDir == "" {
		return nil, nil, retention.ErrNoArchiveDir
	}
	drillDSN := o.drillDSN
	if drillDSN == "" {
		drillDSN = os.Getenv("OCEANWAY_RETENTION_DRILL_DSN")
	}
	if drillDSN == "" {
		return nil, nil, retention.ErrNoDrillTarget
	}
	b, err := boundary.Parse(o.boundary)
	if err != nil {
		return nil, nil, err
	}
	dsns, err := o.conn.resolveSome(ctx, []boundary.Boundary{b}, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	role := ""
	if o.asRole {
		role = outboxschema.RoleRetention
		if err := requireRoles(ctx, dsns, map[boundary.Boundary][]string{b: {role}}); err != nil {
			return nil, nil, err
		}
	}
	if _, err := migrate.Up(ctx, drillDSN, b, []migrate.Line{outboxschema.Line()}, migrate.Opts{}); err != nil {
		return nil, nil, fmt.Errorf("drill database: %w", err)
	}
	pools, err := openRolePools(ctx, map[boundary.Boundary]string{b: dsns[b]}, 4, role)
	if err != nil {
		return nil, nil, err
	}
	drills, err := openPools(ctx, map[boundary.Boundary]string{b: drillDSN}, 2)
	if err != nil {
		pools.Close()
		return nil, nil, fmt.Errorf("drill database: %w", err)
	}
	return pools[b], drills[b], nil
}

func runRetentionArchive(ctx context.Context, streams *IO, o retentionOptions) error {
	age, err := parseAge(o.olderThan)
	if err != nil {
		return err
	}
	pool, drill, err := o.sourceAndDrillPools(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer drill.Close()
	res, err := retention.Archive(ctx, pool, retention.ArchiveParams{OlderThan: age, Dir: o.archiveDir, BatchSize: o.batchSize, Drill: drill})
	if res != nil && len(res.Runs) > 0 && err != nil {
		fmt.Fprintf(streams.Err, "retention: %d run(s) completed before the failure (%d events archived)\n", len(res.Runs), res.Counts.Events)
	}
	if err != nil {
		return err
	}
	return o.print(streams, res, func() error {
		w := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
		fmt.Fprintf(w, "archived closed history created before %s to %s\n", res.Cutoff.Format(time.RFC3339), res.Dir)
		fmt.Fprintln(w, "RUN\tMANIFEST\tDRILL\tEVENTS\tDELIVERIES\tSTARTS\tFINISHES")
		for _, r := range res.Runs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\n", r.RunID, r.ManifestSHA256, r.DrillSHA256, r.Counts.Events, r.Counts.Deliveries,
				r.Counts.AttemptStarts, r.Counts.AttemptFinishes)
		}
		fmt.Fprintf(w, "total\t%d run(s)\t\t%d\t%d\t%d\t%d\n", len(res.Runs), res.Counts.Events, res.Counts.Deliveries,
			res.Counts.AttemptStarts, res.Counts.AttemptFinishes)
		return w.Flush()
	})
}

func runRetentionDrill(ctx context.Context, streams *IO, o retentionOptions) error {
	pool, drill, err := o.sourceAndDrillPools(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer drill.Close()
	recs, err := retention.Drill(ctx, pool, drill, o.archiveDir)
	if err != nil {
		return err
	}
	return o.print(streams, recs, func() error {
		w := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "MANIFEST\tDRILL\tEVENTS\tSCRATCH")
		for _, r := range recs {
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", r.Document.ManifestSHA256, r.DrillSHA256, r.Document.Counts.Events, r.Document.ScratchDatabase)
		}
		fmt.Fprintf(w, "recorded %d drill(s) in the recovery baseline\n", len(recs))
		return w.Flush()
	})
}

func runRetentionVerify(streams *IO, o retentionOptions) error {
	res, err := retention.Verify(o.archiveDir)
	if err != nil {
		return err
	}
	return o.print(streams, res, func() error {
		_, err := fmt.Fprintf(streams.Out, "verified %s: %d manifest(s), %d file(s), %d events, %d deliveries, %d attempt starts, %d attempt finishes\n",
			res.Dir, len(res.Manifests), res.Files, res.Counts.Events, res.Counts.Deliveries, res.Counts.AttemptStarts, res.Counts.AttemptFinishes)
		return err
	})
}

func runRetentionRestore(ctx context.Context, streams *IO, o retentionOptions) error {
	if o.archiveDir == "" {
		return retention.ErrNoArchiveDir
	}
	b, err := boundary.Parse(o.boundary)
	if err != nil {
		return err
	}
	// the scratch database is created and gets the outbox line when missing
	dsns, err := o.conn.resolveSome(ctx, []boundary.Boundary{b}, []migrate.Line{outboxschema.Line()}, nil)
	if err != nil {
		return err
	}
	pools, err := openPools(ctx, map[boundary.Boundary]string{b: dsns[b]}, 2)
	if err != nil {
		return err
	}
	pool := pools[b]
	defer pool.Close()
	res, err := retention.Restore(ctx, pool, o.archiveDir)
	if err != nil {
		return err
	}
	return o.print(streams, res, func() error {
		_, err := fmt.Fprintf(streams.Out, "restore drill into %s: %d manifest(s), %d events, %d deliveries, %d attempt starts, %d attempt finishes restored; re-exported rows reproduce every archived digest\n",
			res.Database, len(res.Manifests), res.Counts.Events, res.Counts.Deliveries, res.Counts.AttemptStarts, res.Counts.AttemptFinishes)
		return err
	})
}
