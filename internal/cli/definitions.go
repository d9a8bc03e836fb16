package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

// definitionsOptions are the flags of `oceanway definitions …`.
type definitionsOptions struct {
	conn          boundaryFlags
	boundary      string
	asJSON        bool
	file          string
	sourceRelease string
	version       int64
	initial       bool
	readiness     string
}

func newDefinitionsCmd(streams *IO) *cobra.Command {
	o := &definitionsOptions{}
	cmd := &cobra.Command{
		Use:   "definitions",
		Short: "Delivery Set Definitions of a producer database: list, show, register, activate",
		Long: `definitions manages the Delivery Set Definition registry of one producer database (DS-6).

  list      every registered version with its quadruple and registry status
  show      one version's canonical definition (--version N; the active one without)
  register  insert-or-compare a complete definition from --file (binding the release's
            four destinations first, idempotently): the document is decoded
            strictly (unknown fields, unsorted arrays, wrong counts, a digest that does
            not recompute are refused); the same file twice is a no-op; a version already
            registered with another candidate or digest is refused. Never activates.
  activate  explicitly activate an already registered --version N. The first activation
            of a database (no definition active yet) needs --initial: it also binds the
            four destinations and records the frozen projection versions as ready
            (--readiness-proof, a new empty projection). Later switches that change the
            Operations projection version go through "oceanway projection cutover".

migrate and serve never register or activate a definition, except serve --bootstrap on a fresh
deployment (the first activation, as the demo does).
Connection flags: --boundary (default core) with --database-url + --db-prefix or --<boundary>-dsn.`,
	}
	cmd.PersistentFlags().BoolVar(&o.asJSON, "json", false, "print JSON instead of text")
	cmd.PersistentFlags().StringVar(&o.boundary, "boundary", string(boundary.Core), "producer database: core, execution, gateway or metering")
	conn := &cobra.Command{}
	o.conn.register(conn)
	cmd.PersistentFlags().AddFlagSet(conn.Flags())

	list := &cobra.Command{
		Use: "list", Short: "Every registered definition with its quadruple and status", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDefinitionsList(cmd.Context(), streams, o) },
	}
	show := &cobra.Command{
		Use: "show", Short: "One definition's canonical JSON (the active one without --version)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDefinitionsShow(cmd.Context(), streams, o) },
	}
	show.Flags().Int64Var(&o.version, "version", 0, "deliverySetVersion (default: the active definition)")
	register := &cobra.Command{
		Use: "register --file F", Short: "Insert-or-compare a complete definition (strictly decoded); never activates", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDefinitionsRegister(cmd.Context(), streams, o) },
	}
	register.Flags().StringVar(&o.file, "file", "", "definition document (JSON, digest included; - for standard input)")
	register.Flags().StringVar(&o.sourceRelease, "source-release", "", "registry metadata: the release the definition comes from")
	_ = register.MarkFlagRequired("file")
	activate := &cobra.Command{
		Use: "activate --version N", Short: "Explicitly activate an already registered definition", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDefinitionsActivate(cmd.Context(), streams, o) },
	}
	activate.Flags().Int64Var(&o.version, "version", 0, "deliverySetVersion to activate (required)")
	activate.Flags().BoolVar(&o.initial, "initial", false, "first activation of this database: bind destinations and mark the frozen projection versions ready")
	activate.Flags().StringVar(&o.readiness, "readiness-proof", "initial-activation", "with --initial: readiness proof reference recorded for the new, empty projection versions")
	_ = activate.MarkFlagRequired("version")
	cmd.AddCommand(list, show, register, activate)
	return cmd
}

// pool opens the selected producer database (no provisioning, no migration).
func (o *definitionsOptions) pool(ctx context.Context) (*pgxpool.Pool, error) {
	b, err := boundary.Parse(o.boundary)
	if err != nil {
		return nil, err
	}
	dsns, err := o.conn.resolveSome(ctx, []boundary.Boundary{b}, nil, nil)
	if err != nil {
		return nil, err
	}
	dsn, ok := dsns[b]
	if !ok {
		return nil, fmt.Errorf("definitions: no %s database", b)
	}
	pools, err := openPools(ctx, map[boundary.Boundary]string{b: dsn}, 2)
	if err != nil {
		return nil, err
	}
	return pools[b], nil
}

func (o *definitionsOptions) print(w io.Writer, v any, text func() error) error {
	if o.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return text()
}

// quadrupleJSON is a definition quadruple with its contract field names.
type quadrupleJSON struct {
	DeliverySetVersion                          int64  `json:"deliverySetVersion"`
	DeliverySetDefinitionSchemaVersion          string `json:"deliverySetDefinitionSchemaVersion"`
	DeliverySetDefinitionDigestAlgorithmVersion string `json:"deliverySetDefinitionDigestAlgorithmVersion"`
	DeliverySetDefinitionDigest                 string `json:"deliverySetDefinitionDigest"`
}

func quadOf(q deliveryset.Quadruple) quadrupleJSON {
	return quadrupleJSON{q.DeliverySetVersion, q.DeliverySetDefinitionSchemaVersion,
		string(q.DeliverySetDefinitionDigestAlgorithmVersion), q.DeliverySetDefinitionDigest}
}

// definitionRow is one registry row as printed by list --json.
type definitionRow struct {
	quadrupleJSON
	Status               string     `json:"status"`
	SourceRelease        string     `json:"sourceRelease,omitempty"`
	RegisteredAt         time.Time  `json:"registeredAt"`
	ActivatedAt          *time.Time `json:"activatedAt,omitempty"`
	RetiredAt            *time.Time `json:"retiredAt,omitempty"`
	ApplicableEventCount int        `json:"applicableEventCount"`
	MemberCount          int        `json:"memberCount"`
}

func runDefinitionsList(ctx context.Context, streams *IO, o *definitionsOptions) error {
	pool, err := o.pool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	defs, err := outbox.Definitions(ctx, pool)
	if err != nil {
		return err
	}
	rows := make([]definitionRow, len(defs))
	for i, d := range defs {
		rows[i] = definitionRow{
			quadrupleJSON: quadOf(d.Definition.Quadruple()), Status: string(d.Status), SourceRelease: d.SourceRelease,
			RegisteredAt: d.RegisteredAt, ActivatedAt: d.ActivatedAt, RetiredAt: d.RetiredAt,
			ApplicableEventCount: len(d.Definition.ApplicableEvents), MemberCount: len(d.Definition.Members),
		}
	}
	return o.print(streams.Out, rows, func() error {
		if len(rows) == 0 {
			_, err := fmt.Fprintln(streams.Out, "no definitions registered")
			return err
		}
		w := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "VERSION\tSCHEMA\tDIGEST\tSTATUS\tPAIRS\tMEMBERS\tREGISTERED\tACTIVATED\tSOURCE")
		for _, r := range rows {
			activated := "-"
			if r.ActivatedAt != nil {
				activated = r.ActivatedAt.UTC().Format(time.RFC3339)
			}
			source := r.SourceRelease
			if source == "" {
				source = "-"
			}
			fmt.Fprintf(w, "%d\t%s\t%s:%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.DeliverySetVersion, r.DeliverySetDefinitionSchemaVersion,
				r.DeliverySetDefinitionDigestAlgorithmVersion, r.DeliverySetDefinitionDigest, r.Status, r.ApplicableEventCount,
				r.MemberCount, r.RegisteredAt.UTC().Format(time.RFC3339), activated, source)
		}
		return w.Flush()
	})
}

func runDefinitionsShow(ctx context.Context, streams *IO, o *definitionsOptions) error {
	pool, err := o.pool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	var d outbox.StoredDefinition
	if o.version == 0 {
		d, err = outbox.ActiveDefinition(ctx, pool)
	} else {
		d, err = outbox.DefinitionByVersion(ctx, pool, o.version)
	}
	if err != nil {
		return err
	}
	// The canonical document, byte for byte what the registry stores.
	if _, err := streams.Out.Write(d.CanonicalJSON); err != nil {
		return err
	}
	_, err = fmt.Fprintln(streams.Out)
	return err
}

func readDefinitionFile(streams *IO, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(streams.In)
	}
	return os.ReadFile(name)
}

func runDefinitionsRegister(ctx context.Context, streams *IO, o *definitionsOptions) error {
	doc, err := readDefinitionFile(streams, o.file)
	if err != nil {
		return fmt.Errorf("read definition: %w", err)
	}
	def, err := deliveryset.Decode(doc)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", outbox.ErrInvalidDefinition, o.file, err)
	}
	pool, err := o.pool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := release.Register(ctx, pool, def, outbox.RegisterOpts{SourceRelease: o.sourceRelease})
	if err != nil {
		return err
	}
	out := struct {
		quadrupleJSON
		Inserted bool `json:"inserted"`
	}{quadOf(res.Quadruple), res.Inserted}
	return o.print(streams.Out, out, func() error {
		verb := "registered"
		if !res.Inserted {
			verb = "already registered, identical (no change)"
		}
		_, err := fmt.Fprintf(streams.Out, "definition %d %s: %s:%s (not active; activate with `oceanway definitions activate --version %d`)\n",
			res.Quadruple.DeliverySetVersion, verb, res.Quadruple.DeliverySetDefinitionDigestAlgorithmVersion,
			res.Quadruple.DeliverySetDefinitionDigest, res.Quadruple.DeliverySetVersion)
		return err
	})
}

func runDefinitionsActivate(ctx context.Context, streams *IO, o *definitionsOptions) error {
	if o.version <= 0 {
		return errors.New("--version must be ≥ 1")
	}
	pool, err := o.pool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	var res outbox.ActivationResult
	if o.initial {
		res, err = release.ActivateInitial(ctx, pool, o.version, o.readiness)
	} else {
		res, err = outbox.Activate(ctx, pool, o.version)
	}
	if err != nil {
		return err
	}
	out := struct {
		Activated     quadrupleJSON  `json:"activated"`
		Retired       *quadrupleJSON `json:"retired,omitempty"`
		AlreadyActive bool           `json:"alreadyActive"`
	}{Activated: quadOf(res.Activated), AlreadyActive: res.AlreadyActive}
	if res.Retired != nil {
		r := quadOf(*res.Retired)
		out.Retired = &r
	}
	return o.print(streams.Out, out, func() error {
		switch {
		case res.AlreadyActive:
			_, err = fmt.Fprintf(streams.Out, "definition %d is already active (no change)\n", res.Activated.DeliverySetVersion)
		case res.Retired != nil:
			_, err = fmt.Fprintf(streams.Out, "definition %d active; definition %d retired\n", res.Activated.DeliverySetVersion, res.Retired.DeliverySetVersion)
		default:
			_, err = fmt.Fprintf(streams.Out, "definition %d active\n", res.Activated.DeliverySetVersion)
		}
		return err
	})
}
