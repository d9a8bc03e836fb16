package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/admin"
)

// inspectFlags are shared by every inspect subcommand (persistent flags).
type inspectFlags struct {
	conn    adminConn
	asJSON  bool
	streams *IO
}

func newInspectCmd(streams *IO) *cobra.Command {
	f := &inspectFlags{streams: streams}
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Read-only outbox queries on the command line (the admin page's data as tables or --json)",
		Long: `inspect runs the admin page's read-only queries and prints human-readable tables, or
JSON with --json (the same documents as the admin page's /api/ endpoints).

Connection flags are those of "oceanway admin": --database-url + --db-prefix (databases
<prefix>_core ... <prefix>_metering; missing ones are skipped) or --<boundary>-dsn.
Ids are exact UUIDs; anything else is rejected before any query runs. Every query runs in
a READ ONLY transaction. The exit status is 1 when an id matches nothing or a boundary
could not be read (what could be read is still printed).`,
	}
	cmd.PersistentFlags().AddFlagSet(f.conn.flagSet())
	cmd.PersistentFlags().BoolVar(&f.asJSON, "json", false, "print JSON (for scripts) instead of tables")

	cmd.AddCommand(
		f.queryCmd("deliveries", "Delivery counts by status per boundary and destination, and the oldest pending age", f.deliveries),
		f.queryCmd("quarantine", "The most recent quarantined deliveries with their reason (bounded by --quarantine-limit)", f.quarantine),
		f.queryCmd("definitions", "The registered Delivery Set Definitions (active first) and the active projection versions", f.definitions),
		f.queryCmd("completeness", "Outbox completeness per boundary (open and quarantined mandatory deliveries, published_at coverage) and the Operations projection's answer", f.completeness),
		f.lookupCmd(admin.KindEvent, "event ID", "An event by exact event id: envelope, digest, definition quadruple, published_at, deliveries and attempt history"),
		f.lookupCmd(admin.KindRun, "run ID", "Every event of a run (aggregate or payload runId), with deliveries and attempt history"),
		f.lookupCmd(admin.KindReservation, "reservation ID", "Every event of a billing reservation (aggregate or payload billingReservationId), with deliveries and attempt history"),
	)
	return cmd
}

// inspectQuery runs one admin query and returns the boundaries' statuses,
// the JSON document and the table printer of its result.
type inspectQuery func(ctx context.Context, r *admin.Reader) ([]admin.BoundaryStatus, any, func() error, error)

// queryCmd is an inspect subcommand without arguments that runs q.
func (f *inspectFlags) queryCmd(use, short string, q inspectQuery) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), q)
		},
	}
}

func (f *inspectFlags) deliveries(ctx context.Context, r *admin.Reader) ([]admin.BoundaryStatus, any, func() error, error) {
	res := r.Deliveries(ctx)
	return res.Boundaries, res, func() error { return printDeliveries(f.streams.Out, res) }, nil
}

func (f *inspectFlags) quarantine(ctx context.Context, r *admin.Reader) ([]admin.BoundaryStatus, any, func() error, error) {
	res := r.Quarantines(ctx)
	return res.Boundaries, res, func() error { return printQuarantine(f.streams.Out, res) }, nil
}

func (f *inspectFlags) definitions(ctx context.Context, r *admin.Reader) ([]admin.BoundaryStatus, any, func() error, error) {
	res := r.Definitions(ctx)
	return res.Boundaries, res, func() error { return printDefinitions(f.streams.Out, res) }, nil
}

func (f *inspectFlags) completeness(ctx context.Context, r *admin.Reader) ([]admin.BoundaryStatus, any, func() error, error) {
	res := r.Completeness(ctx)
	return res.Boundaries, res, func() error { return printCompleteness(f.streams.Out, res) }, nil
}

// errNothingFound is returned (exit 1) when an exact id matched nothing.
var errNothingFound = errors.New("nothing found")

func (f *inspectFlags) lookupCmd(kind admin.IDKind, use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.lookup(cmd.Context(), kind, args[0])
		},
	}
}

// lookup finds the events of one exact id and prints them.
func (f *inspectFlags) lookup(ctx context.Context, kind admin.IDKind, arg string) error {
	// Validate before connecting: no query runs on garbage.
	id, err := admin.ParseID(kind, arg)
	if err != nil {
		return err
	}
	return f.run(ctx, func(ctx context.Context, r *admin.Reader) ([]admin.BoundaryStatus, any, func() error, error) {
		res, err := r.Lookup(ctx, kind, id)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(res.Events) == 0 && len(admin.Failed(res.Boundaries)) == 0 {
			return nil, nil, nil, fmt.Errorf("%w: no event for %s id %s in %s", errNothingFound, kind, id, strings.Join(r.BoundaryNames(), ", "))
		}
		return res.Boundaries, res, func() error { return printLookup(f.streams.Out, res) }, nil
	})
}

// run connects, runs one query, prints it (JSON or table) and turns
// unreadable boundaries into an error after printing what could be read.
func (f *inspectFlags) run(ctx context.Context, q inspectQuery) error {
	pools, skipped, err := f.conn.open(ctx)
	reportSkipped(f.streams.Err, skipped)
	if err != nil {
		return err
	}
	defer pools.Close()
	reader := admin.NewReader(adminBoundaries(pools), f.conn.config())
	statuses, doc, human, err := q(ctx, reader)
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(f.streams.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else if err := human(); err != nil {
		return err
	}
	if failed := admin.Failed(statuses); len(failed) > 0 {
		msgs := make([]string, len(failed))
		for i, s := range failed {
			msgs[i] = s.Boundary + ": " + s.Error
		}
		return fmt.Errorf("%d boundary database(s) could not be read: %s", len(failed), strings.Join(msgs, "; "))
	}
	return nil
}
