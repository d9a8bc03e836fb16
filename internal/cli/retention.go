package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/retention"
)

// retentionOptions are the flags of `oceanway retention …`.
type retentionOptions struct {
	conn      boundaryFlags
	boundary  string
	asJSON    bool
	olderThan string
}

func newRetentionCmd(streams *IO) *cobra.Command {
	o := retentionOptions{}
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Retention of closed outbox history (RET-1): plan (archive, verify and restore are not built yet)",
		Long: `retention plan --older-than D reports, for one producer database, every event
created more than D ago by class — closed (published, every delivery acknowledged,
no quarantine row, no legacy adoption record: the only class that may ever leave
the hot tables), unpublished, quarantined, open_delivery, legacy_adoption_record —
and what the closed events would take with them (deliveries, attempt starts and
finishes). It reads only; nothing is archived or removed.

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
	cmd.AddCommand(plan)
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
