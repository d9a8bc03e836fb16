package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/operations/cutover"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
)

// projectionOptions are the flags of `oceanway projection …`.
type projectionOptions struct {
	conn    boundaryFlags
	version int64
	asJSON  bool
	follow  bool
	poll    time.Duration
	batch   int
	// asRoles: the Billing owner reads run as oceanway_billing (serve's
	// --least-privilege).
	asRoles bool
}

func newProjectionCmd(streams *IO) *cobra.Command {
	o := &projectionOptions{}
	cmd := &cobra.Command{
		Use:   "projection",
		Short: "Versions of the Operations read model: status, shadow build, cutover, fingerprint",
		Long: `projection manages the versions of the Operations read model (DS-8) in the core database.

  status       the active version, every version's receipts, missing source events,
               gaps, completeness answer and fingerprint, the shadow builds and their
               readiness proofs
  shadow       build --projection-version N next to the active one from the outbox
               source, under a fresh shadow claim token (--follow keeps feeding)
  cutover      switch to --projection-version N: pause and drain the shadow claim,
               freeze the candidate with a new token, catch up to it, stop and drain
               the active claim, re-check, write the readiness proof and switch in one
               transaction; then the new active version catches up
  fingerprint  a digest of version N's content that does not depend on build order

Connection flags: --database-url + --db-prefix (database <prefix>_core) or --core-dsn.
Run "oceanway migrate" first; shadow and cutover write, status and fingerprint only read.
shadow and cutover feed the version through the same projector serve runs, with the
same Billing owner reads (on the core database as oceanway_billing), so they apply
every pair the online projector applies.`,
	}
	cmd.PersistentFlags().BoolVar(&o.asJSON, "json", false, "print JSON instead of text")
	cmd.PersistentFlags().BoolVar(&o.asRoles, "least-privilege", envBool("OCEANWAY_LEAST_PRIVILEGE", true),
		"shadow and cutover: read Billing's owner facts as oceanway_billing by SET ROLE, as serve does (env OCEANWAY_LEAST_PRIVILEGE, default on; =false to read as the connecting user)")
	conn := &cobra.Command{}
	o.conn.register(conn)
	cmd.PersistentFlags().AddFlagSet(conn.Flags())

	versionFlag := func(c *cobra.Command) {
		c.Flags().Int64Var(&o.version, "projection-version", 0, "projection version (required)")
		_ = c.MarkFlagRequired("projection-version")
	}
	status := &cobra.Command{
		Use: "status", Short: "Active version, every version's state and completeness, shadow builds and readiness proofs", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProjectionStatus(cmd.Context(), streams, o) },
	}
	shadow := &cobra.Command{
		Use: "shadow", Short: "Build a projection version next to the active one from the outbox source", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProjectionShadow(cmd.Context(), streams, o) },
	}
	versionFlag(shadow)
	shadow.Flags().BoolVar(&o.follow, "follow", false, "keep feeding new events until interrupted")
	shadow.Flags().DurationVar(&o.poll, "poll", time.Second, "with --follow: pause between catch-ups")
	shadow.Flags().IntVar(&o.batch, "batch", 200, "source events read per page")
	cut := &cobra.Command{
		Use: "cutover", Short: "Prove a shadow version ready and switch the active pointer to it", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProjectionCutover(cmd.Context(), streams, o) },
	}
	versionFlag(cut)
	cut.Flags().IntVar(&o.batch, "batch", 200, "source events read per page")
	fp := &cobra.Command{
		Use: "fingerprint", Short: "Digest of a version's read-model content (independent of build order)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProjectionFingerprint(cmd.Context(), streams, o) },
	}
	versionFlag(fp)
	cmd.AddCommand(status, shadow, cut, fp)
	return cmd
}

// corePool opens the core database's pool (no provisioning, no migration),
// as role when it is not empty.
func (o *projectionOptions) corePool(ctx context.Context, role string) (*pgxpool.Pool, error) {
	dsns, err := o.conn.resolve(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	dsn, ok := dsns[boundary.Core]
	if !ok {
		return nil, errors.New("projection: no core database")
	}
	pools, err := openRolePools(ctx, map[boundary.Boundary]string{boundary.Core: dsn}, 8, role)
	if err != nil {
		return nil, err
	}
	return pools[boundary.Core], nil
}

// billingPool opens the core database as the billing role (the connecting
// user without --least-privilege): the pool Billing's owner reads run on,
// as in serve.
func (o *projectionOptions) billingPool(ctx context.Context) (*pgxpool.Pool, error) {
	role := ""
	if o.asRoles {
		role = billingschema.RoleBilling
	}
	return o.corePool(ctx, role)
}

// config is the shadow/cutover configuration: the projector that feeds a
// version verifies the Billing pairs with the same owner reads as serve's
// projector (issue 31 item 7: without them the billing events wait and the
// cutover refuses).
func (o *projectionOptions) config(billingPool *pgxpool.Pool) cutover.Config {
	return cutover.Config{Batch: o.batch, Owner: "oceanway projection", Projector: withBillingReads(projector.Config{}, billingPool)}
}

// withBillingReads wires every Billing owner read the projector verifies a
// pair with over billingPool (the core database as oceanway_billing): the
// reads consumersFor wires in serve.
func withBillingReads(cfg projector.Config, billingPool *pgxpool.Pool) projector.Config {
	cfg.BillingReads = billing.Reads{DB: billingPool}
	cfg.SettlementReads = catchup.Reads{DB: billingPool}
	cfg.FinalizationDecisionReads = billing.Reads{DB: billingPool}
	cfg.ResolutionAppliedReads = billing.Reads{DB: billingPool}
	cfg.LateExposureReads = catchup.Reads{DB: billingPool}
	cfg.LateResultReads = catchup.Reads{DB: billingPool}
	cfg.CaseResolutionReads = catchup.Reads{DB: billingPool}
	return cfg
}

func (o *projectionOptions) print(w io.Writer, v any, text func() error) error {
	if o.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return text()
}

func runProjectionStatus(ctx context.Context, streams *IO, o *projectionOptions) error {
	pool, err := o.corePool(ctx, "")
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := cutover.ReadStatus(ctx, pool, "")
	if err != nil {
		return err
	}
	return o.print(streams.Out, st, func() error { return printProjectionStatus(streams.Out, st) })
}

func printProjectionStatus(out io.Writer, st cutover.Status) error {
	fmt.Fprintf(out, "projection %s, active version %d\n\n", st.ProjectionName, st.ActiveVersion)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tACTIVE\tRECEIPTS\tMISSING\tGAPS\tUNSUPPORTED\tVERIFICATION\tCURRENCY\tCOMPLETENESS\tFINGERPRINT")
	for _, v := range st.Versions {
		c := v.Completeness
		fmt.Fprintf(w, "%d\t%t\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", v.ProjectionVersion, v.Active, v.Receipts, v.Missing,
			v.UnresolvedGaps, v.Unsupported, c.VerificationState, c.SnapshotCurrency, c.ProjectionCompleteness, v.Fingerprint.SHA256)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(st.Builds) == 0 {
		fmt.Fprintln(out, "\nno shadow builds")
		return nil
	}
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BUILD\tSTATE\tOWNER\tCANDIDATE MEMBERS\tREADINESS PROOF\tPROVED AT")
	for _, b := range st.Builds {
		members, proof, at := "-", "-", "-"
		if b.CandidateMembers != nil {
			members = fmt.Sprint(*b.CandidateMembers)
		}
		if b.ReadinessProofDigest != nil {
			proof = "jcs-sha256-v1:" + *b.ReadinessProofDigest
		}
		if b.ProvedAt != nil {
			at = b.ProvedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", b.ProjectionVersion, b.State, b.ClaimOwner, members, proof, at)
	}
	return w.Flush()
}

func runProjectionShadow(ctx context.Context, streams *IO, o *projectionOptions) error {
	pool, err := o.corePool(ctx, "")
	if err != nil {
		return err
	}
	defer pool.Close()
	reads, err := o.billingPool(ctx)
	if err != nil {
		return err
	}
	defer reads.Close()
	res, err := cutover.Shadow(ctx, pool, o.config(reads), o.version, o.follow, o.poll)
	if err != nil {
		return err
	}
	return o.print(streams.Out, res, func() error {
		_, err := fmt.Fprintf(streams.Out, "shadow %s@%d: applied %d source events in %d passes, %d waiting; fingerprint %s (%d receipts)\n",
			res.ProjectionName, res.ProjectionVersion, res.Feed.Applied, res.Feed.Passes, res.Feed.Waiting,
			res.Fingerprint.SHA256, res.Fingerprint.Receipts)
		return err
	})
}

func runProjectionCutover(ctx context.Context, streams *IO, o *projectionOptions) error {
	pool, err := o.corePool(ctx, "")
	if err != nil {
		return err
	}
	defer pool.Close()
	reads, err := o.billingPool(ctx)
	if err != nil {
		return err
	}
	defer reads.Close()
	res, err := cutover.Cutover(ctx, pool, o.config(reads), o.version, cutover.Hooks{})
	if err != nil {
		return err
	}
	// A completeness proof of the new active version, so the read-only
	// completeness query can verify it.
	proof, err := readmodel.New(pool).ProveCompleteness(ctx, readmodel.Params{})
	if err != nil {
		return err
	}
	doc := struct {
		cutover.Result
		Completeness string   `json:"completeness"`
		Reasons      []string `json:"completenessReasons"`
	}{res, proof.ProjectionCompleteness, proof.Reasons}
	return o.print(streams.Out, doc, func() error {
		_, err := fmt.Fprintf(streams.Out, "cutover %s@%d → @%d: candidate %s (%d members, %d caught up), readiness proof %s, delivery set %d active; %d events caught up after the switch; completeness %s %v\n",
			res.ProjectionName, res.PreviousVersion, res.ProjectionVersion, res.CandidateID, res.CandidateMembers, res.CatchUp.Applied,
			res.ProofRef, res.DeliverySetVersion, res.AfterSwitch.Applied, proof.ProjectionCompleteness, proof.Reasons)
		return err
	})
}

func runProjectionFingerprint(ctx context.Context, streams *IO, o *projectionOptions) error {
	pool, err := o.corePool(ctx, "")
	if err != nil {
		return err
	}
	defer pool.Close()
	p, err := cutover.Fingerprint(ctx, pool, "", o.version)
	if err != nil {
		return err
	}
	return o.print(streams.Out, p, func() error {
		_, err := fmt.Fprintf(streams.Out, "%s\t%d receipts\n", p.SHA256, p.Receipts)
		return err
	})
}
