package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/route"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/billing/catchup/catchupmetering"
	"github.com/oceanway/core/internal/billing/finalization"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/casegateway/casehttp"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/metering"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/cases"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/outbox/transport/httptransport"
	"github.com/oceanway/core/internal/ownerread/meteringread"
	"github.com/oceanway/core/internal/ownerread/ownerhttp"
	"github.com/oceanway/core/internal/server"
	"github.com/oceanway/core/internal/work"
	"github.com/oceanway/core/internal/workload"
)

// serveOptions are the flags of `oceanway serve`.
type serveOptions struct {
	conn       boundaryFlags
	disp       dispatcherFlags
	listen     string
	adminToken string // default $OCEANWAY_ADMIN_TOKEN
	migrateUp  bool
	bootstrap  bool // activate this release's first Delivery Set Definition where none is active
	asRoles    bool
	poolSize   int // most connections of one pool (0: the computed size)
	roles      roleFlags
	api        apiFlags
	lines      []migrate.Line // applied with --migrate
	// completenessInterval: how often the Operations completeness proof is recorded.
	completenessInterval time.Duration
}

func newServeCmd(streams *IO) *cobra.Command {
	o := serveOptions{lines: lines.All()}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run dispatcher and consumer roles, /metrics, /healthz, /readyz and the read-only admin page",
		Long: `serve runs, for every boundary database, K dispatchers that deliver to the consumers
wired in this process (the Operations projector for core_operations, the Metering input
processor for metering_input_processor, the Billing finalization coordinator for
billing_finalization_coordinator and, beside it, the Billing settlement catch-up consumer for
billing_settlement_catch_up); the owners' workers (the metering worker with the Metering input
processor; the Billing finalization and settlement catch-up workers with the coordinator when
metering_input_processor is consumed in the same process); and an HTTP listener with /metrics
(Prometheus), /healthz, /readyz and the read-only admin page under /admin/. SIGINT or SIGTERM
stops claiming and drains in-flight deliveries.

Role flags split this across processes and machines (docs/deploy.md):
  --dispatch core,...         run only these producer databases' dispatchers
  --consume core_operations   serve this consumer as an HTTP endpoint on --consumer-listen,
                              accepting workload tokens of --trust-workload keys
  --consumer-url D=URL        deliver destination D to a consumer endpoint elsewhere,
                              signing each call with --workload-key
  --serve-reads execution,...  answer these owners' directed reads on --consumer-listen
  --owner-url O=URL           call owner O's reads in another process (its database is never opened)
  --owner O                   one owner per process with only its own database: core, execution,
                              gateway or metering (its dispatchers, consumers, workers and reads;
                              it names the --consumer-url and --owner-url it still needs)
--consume accepts core_operations, metering_input_processor, billing_finalization_coordinator and
billing_settlement_catch_up (which also runs in process wherever billing_finalization_coordinator is
consumed). Without role flags everything runs here, in process.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), streams, o)
		},
	}
	o.conn.register(cmd)
	o.disp.register(cmd)
	o.roles.register(cmd)
	o.api.register(cmd)
	cmd.Flags().StringVar(&o.listen, "listen", envOr("OCEANWAY_LISTEN", "127.0.0.1:8088"), "HTTP listen address for /metrics, /healthz, /readyz, /admin/ (env OCEANWAY_LISTEN)")
	cmd.Flags().StringVar(&o.adminToken, "admin-token", "", "bearer token required by the admin page (default $OCEANWAY_ADMIN_TOKEN)")
	cmd.Flags().DurationVar(&o.completenessInterval, "completeness-interval", defaultCompletenessInterval,
		"with the Operations projector in this process: record its completeness proof (OPS-4) this often (0 disables)")
	cmd.Flags().IntVar(&o.poolSize, "pool-size", envInt("OCEANWAY_POOL_SIZE", 0),
		"most connections of each database pool of this process (default: sized from --dispatchers and --concurrency, at most 48) (env OCEANWAY_POOL_SIZE)")
	cmd.Flags().BoolVar(&o.bootstrap, "bootstrap", false,
		"on a fresh deployment: register and activate this release's Delivery Set Definition and Operations projection in every database of this process where none is active yet, as the demo does (a no-op where one is active; later changes go through oceanway definitions and projection)")
	cmd.Flags().BoolVar(&o.migrateUp, "migrate", true, "create missing boundary databases and apply migrations before serving")
	cmd.Flags().BoolVar(&o.asRoles, "least-privilege", envBool("OCEANWAY_LEAST_PRIVILEGE", true),
		"run dispatchers as oceanway_dispatcher and each consumer as its own role (oceanway_operations, oceanway_metering, oceanway_billing; owner reads as oceanway_execution, oceanway_gateway, oceanway_admission) by SET ROLE; the connecting user must be a member (env OCEANWAY_LEAST_PRIVILEGE, default on; =false to connect as the user itself)")
	return cmd
}

// runServe resolves (and with --migrate provisions) the boundary databases,
// opens the pools of the roles this process runs and serves until ctx ends.
func runServe(ctx context.Context, streams *IO, o serveOptions) error {
	log := slog.New(slog.NewJSONHandler(streams.Err, nil))
	logf := func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	logf("serve: runtime %s", applyRuntimeDefaults())
	if err := o.api.checkPublicMode(); err != nil {
		return err
	}
	if err := o.api.applyKeys(&o.roles); err != nil {
		return err
	}
	plan, err := o.roles.plan()
	if err != nil {
		return err
	}
	var migrateWith []migrate.Line
	if o.migrateUp {
		migrateWith = o.lines
	}
	dsns, err := o.conn.resolveSome(ctx, plan.databases(), migrateWith, logf)
	if err != nil {
		return err
	}
	if o.bootstrap {
		// The first activation of a fresh deployment, explicitly asked for.
		if err := bootstrapBoundaries(ctx, dsns, logf); err != nil {
			return err
		}
	}
	if dsn, ok := dsns[boundary.Core]; ok && o.api.publicMode == publicAdmissionEnabled {
		if err := requireCanaryProofAt(ctx, dsn, o.api, o.asRoles); err != nil {
			return err
		}
	}
	dispatcherRole := ""
	consumerRoles := map[boundary.Boundary]string{}
	readRoles := map[boundary.Boundary]string{} // owner reads, as the owner's role
	if o.asRoles {
		dispatcherRole = outboxschema.RoleDispatcher
		consumerRoles = map[boundary.Boundary]string{boundary.Core: operationsschema.RoleOperations, boundary.Metering: meteringschema.RoleMetering,
			boundary.Execution: executionschema.RoleExecution, boundary.Gateway: gatewayschema.RoleGateway}
		// Core's owner read on the core database is the admission owner's
		// (readRunAdmissionManifest@1), not the projector's role.
		readRoles = map[boundary.Boundary]string{boundary.Core: admissionschema.RoleAdmission,
			boundary.Execution: executionschema.RoleExecution, boundary.Gateway: gatewayschema.RoleGateway,
			// Metering's reads for Billing store their validation receipts.
			boundary.Metering: meteringschema.RoleMetering}
	}
	// Each role gets its own pools: the dispatchers' producer databases and
	// the consumers' own databases, each with its own database role.
	dispatchDSNs := map[boundary.Boundary]string{}
	for _, b := range plan.dispatch {
		if dsn, ok := dsns[b]; ok {
			dispatchDSNs[b] = dsn
		}
	}
	consumerDSNs := map[boundary.Boundary]string{}
	readDSNs := map[boundary.Boundary]string{} // owner reads, as the owner's role
	for _, d := range plan.consume {
		b := consumerBoundary[d]
		if dsn, ok := dsns[b]; ok {
			consumerDSNs[b] = dsn
		}
		for _, r := range consumerReads[d] {
			if _, remote := plan.ownerURLs[r]; remote {
				continue // read over HTTP: its database is never opened here
			}
			if dsn, ok := dsns[r]; ok {
				readDSNs[r] = dsn
			}
		}
	}
	for _, b := range plan.serveReads {
		if dsn, ok := dsns[b]; ok {
			readDSNs[b] = dsn
		}
	}
	// Billing's pool on the core database (as oceanway_billing): the
	// finalization coordinator and the owner read the Operations projector
	// verifies billing.finalization.committed@1 with.
	billingDSNs := map[boundary.Boundary]string{}
	if dsn, ok := dsns[boundary.Core]; ok && (slices.Contains(plan.consume, route.CoreOperations) ||
		slices.Contains(plan.consume, route.BillingFinalizationCoordinator) || slices.Contains(plan.consume, route.BillingSettlementCatchUp) ||
		slices.Contains(plan.serveReads, boundary.Core)) {
		billingDSNs[boundary.Core] = dsn
	}
	billingRole := ""
	if o.asRoles {
		billingRole = billingschema.RoleBilling
	}
	if o.asRoles {
		need := map[boundary.Boundary][]string{}
		for b := range billingDSNs {
			need[b] = append(need[b], billingRole)
		}
		for b := range dispatchDSNs {
			need[b] = append(need[b], dispatcherRole)
		}
		for b := range consumerDSNs {
			need[b] = append(need[b], consumerRoles[b])
		}
		for b := range readDSNs {
			need[b] = append(need[b], readRoles[b])
		}
		for _, svc := range plan.serveCases {
			need[boundary.Core] = append(need[boundary.Core], caseServiceRoles[svc])
		}
		if err := requireRoles(ctx, dsns, need); err != nil {
			return err
		}
	}
	// --pool-size caps every pool of this process (several processes on one
	// server share its connection budget).
	size := func(n int) int32 {
		if o.poolSize > 0 {
			n = min(n, o.poolSize)
		}
		return int32(n)
	}
	pools, err := openRolePools(ctx, dispatchDSNs, size(o.disp.dispatchers*(o.disp.cfg.Concurrency+2)+8), dispatcherRole)
	if err != nil {
		return err
	}
	defer pools.Close()
	consumerPools, err := openConsumerPools(ctx, consumerDSNs, size(o.disp.dispatchers*o.disp.cfg.Concurrency+4), consumerRoles)
	if err != nil {
		return err
	}
	defer consumerPools.Close()
	readPools, err := openConsumerPools(ctx, readDSNs, size(o.disp.dispatchers*o.disp.cfg.Concurrency+4), readRoles)
	if err != nil {
		return err
	}
	defer readPools.Close()
	billingPools, err := openRolePools(ctx, billingDSNs, size(o.disp.dispatchers*o.disp.cfg.Concurrency+4), billingRole)
	if err != nil {
		return err
	}
	defer billingPools.Close()
	// Operations' case identities, which the finalization worker reserves
	// before it enters reconciliation_required and the catch-up worker
	// before a late settlement exposure asks for its case (a small pool of
	// their own, as the Operations role).
	var casesPool *pgxpool.Pool
	if dsn, ok := billingDSNs[boundary.Core]; ok && (slices.Contains(plan.consume, route.BillingFinalizationCoordinator) ||
		slices.Contains(plan.consume, route.BillingSettlementCatchUp)) {
		role := ""
		if o.asRoles {
			role = operationsschema.RoleOperations
		}
		p, err := openRolePools(ctx, map[boundary.Boundary]string{boundary.Core: dsn}, size(4), role)
		if err != nil {
			return err
		}
		defer p.Close()
		casesPool = p[boundary.Core]
	}
	// The reconciliation chain services (--serve-cases), each on the core
	// database as its own role.
	var casePools map[string]*pgxpool.Pool
	if len(plan.serveCases) > 0 {
		dsn, ok := dsns[boundary.Core]
		if !ok {
			return errors.New("--serve-cases: no core database")
		}
		if casePools, err = openCasePools(ctx, dsn, plan.serveCases, o.asRoles); err != nil {
			return err
		}
		defer closeCasePools(casePools)
	}
	// The admin page reads every owner's read views: with least privilege it
	// gets small pools of its own as the connecting user (the dispatcher
	// role may not read them).
	var adminPools server.Pools
	if o.asRoles && len(dispatchDSNs) > 0 {
		if adminPools, err = openRolePools(ctx, dispatchDSNs, 4, ""); err != nil {
			return err
		}
		defer adminPools.Close()
	}
	if o.adminToken == "" {
		o.adminToken = os.Getenv("OCEANWAY_ADMIN_TOKEN")
	}
	return serve(ctx, serveParams{
		pools: pools, consumerPools: consumerPools, readPools: readPools, reads: inProcessReaders(readPools), billingPool: billingPools[boundary.Core],
		casesPool: casesPool, casePools: casePools,
		coordinator: slices.Contains(plan.consume, route.BillingFinalizationCoordinator),
		adminPools:  adminPools, dispatcher: o.disp, listen: o.listen,
		adminToken: o.adminToken, log: log, out: streams.Out, plan: plan, roles: o.roles, api: o.api,
		completenessInterval: o.completenessInterval,
	})
}

type serveParams struct {
	pools         server.Pools             // dispatchers, metrics, readiness, admin
	consumerPools server.Pools             // consumers (and their read model)
	readPools     server.Pools             // the owner databases consumers read (event-bound owner reads)
	reads         ownerReaders             // the owner reads over readPools
	billingPool   *pgxpool.Pool            // core as oceanway_billing: coordinator, readBillingFinalizationCommitted; nil: none
	casesPool     *pgxpool.Pool            // core as oceanway_operations: the finalization and catch-up workers' case identities; nil: none
	casePools     map[string]*pgxpool.Pool // the reconciliation chain services (--serve-cases), each as its role
	coordinator   bool                     // serve the Billing finalization coordinator
	adminPools    server.Pools             // the read-only admin page with least privilege; nil: pools
	dispatcher    dispatcherFlags
	listen        string
	adminToken    string
	log           *slog.Logger
	out           interface{ Write([]byte) (int, error) }
	plan          rolePlan
	roles         roleFlags
	api           apiFlags
	// completenessInterval: see serveOptions.
	completenessInterval time.Duration
}

// openConsumerPools opens one pool per database, each as its role in roles
// (the connecting user when roles has none).
func openConsumerPools(ctx context.Context, dsns map[boundary.Boundary]string, maxConns int32, roles map[boundary.Boundary]string) (server.Pools, error) {
	out := server.Pools{}
	for b, dsn := range dsns {
		p, err := openRolePools(ctx, map[boundary.Boundary]string{b: dsn}, maxConns, roles[b])
		if err != nil {
			out.Close()
			return nil, err
		}
		out[b] = p[b]
	}
	return out, nil
}

// consumersFor wires the consumers of the boundaries present: pools are the
// consumers' own databases, reads the owner databases they read (the
// Metering input processor runs only when the execution and gateway
// databases are there to verify its events).
//
// billingPool is the core database as the billing role: with it the
// projector verifies billing.finalization.committed@1 through
// readBillingFinalizationCommitted (without it, owner_read_unavailable), and
// coordinator adds the Billing finalization coordinator on it.
//
// batches are the consumers that also take batches: the Operations
// projector (see projector.ConsumeBatch) and, since issue 35, the Metering
// input processor. A batch keeps every earlier event's locks until its
// commit: the input processor reads the Execution and Gateway owners inside
// its transaction, so a later event's owner reads run with earlier
// attempts' fences locked against the metering worker (which waits at most
// one batch), and it applies a batch in attempt order (inbox.BatchOrder) so
// two batches never wait on each other in a cycle; one commit and one ack
// call per batch cost less than that (docs/bench.md "Item 2, second pass").
// The other two stay one transaction per event: the Billing coordinator and
// the settlement catch-up lock
// finalization fences, reservations and settlement dimensions that the
// finalization worker holds across its owner reads, and the catch-up's lock
// order (finalization fence before dimension) is a per-transaction rule a
// batch of several dimensions would break.
func consumersFor(pools server.Pools, reads ownerReaders, billingPool *pgxpool.Pool, coordinator, catchUp bool) (map[route.Destination]transport.ConsumerFunc, map[route.Destination]transport.BatchConsumerFunc, error) {
	consumers := map[route.Destination]transport.ConsumerFunc{}
	batches := map[route.Destination]transport.BatchConsumerFunc{}
	if core, ok := pools[boundary.Core]; ok {
		// Every projection version the registry lets a delivery freeze
		// (before and after a cutover, DS-8).
		cfg := projector.Config{AllVersions: true}
		if billingPool != nil {
			cfg.BillingReads = billing.Reads{DB: billingPool}
			// billing.settlement-transition.committed@1 is verified with the
			// catch-up's owner read.
			cfg.SettlementReads = catchup.Reads{DB: billingPool}
			// The two Finalization reconciliation case pairs (issue 31).
			cfg.FinalizationDecisionReads = billing.Reads{DB: billingPool}
			cfg.ResolutionAppliedReads = billing.Reads{DB: billingPool}
			// The late settlement case pair (issue 32).
			cfg.LateExposureReads = catchup.Reads{DB: billingPool}
			// The late settlement command's result and applied pairs (issue 32 part 2).
			cfg.LateResultReads = catchup.Reads{DB: billingPool}
			cfg.CaseResolutionReads = catchup.Reads{DB: billingPool}
		}
		if reads.committed != nil {
			cfg.BillingReads, cfg.SettlementReads = reads.committed, reads.transition
			cfg.FinalizationDecisionReads, cfg.ResolutionAppliedReads = reads.caseDecision, reads.caseResolution
			cfg.LateExposureReads = reads.lateExposure
			cfg.LateResultReads, cfg.CaseResolutionReads = reads.lateResult, reads.caseResolutionApplied
		}
		p, err := projector.New(core, cfg)
		if err != nil {
			return nil, nil, err
		}
		consumers[route.CoreOperations] = p.Consume
		batches[route.CoreOperations] = p.ConsumeBatch
	}
	if billingPool != nil && coordinator {
		c, err := billing.NewCoordinator(billingPool, billing.CoordinatorConfig{})
		if err != nil {
			return nil, nil, err
		}
		consumers[route.BillingFinalizationCoordinator] = c.Consume
	}
	if billingPool != nil && (coordinator || catchUp) {
		// Settlement inputs reach Billing on billing_settlement_catch_up:
		// before the finalization they wake the fence (a new Work), after it
		// they go to the dimension's catch-up fence.
		cu, err := catchup.NewConsumer(billingPool, catchup.ConsumerConfig{Finalization: catchup.FinalizationFenceObserver{}})
		if err != nil {
			return nil, nil, err
		}
		consumers[route.BillingSettlementCatchUp] = cu.Consume
	}
	if m, ok := pools[boundary.Metering]; ok && reads.execution != nil && reads.gateway != nil {
		c, err := metering.New(m, metering.Config{Reads: metering.Owners{Execution: reads.execution, Gateway: reads.gateway}})
		if err != nil {
			return nil, nil, err
		}
		consumers[route.MeteringInputProcessor] = c.Consume
		batches[route.MeteringInputProcessor] = c.ConsumeBatch
	}
	return consumers, batches, nil
}

// finalizationWorker builds the Billing finalization worker over the core
// database as the billing role when the owners it reads (execution, gateway,
// metering) are reachable in this process (nil otherwise).
//
// casesPool is the core database as the Operations role: a
// reconciliation_required decision reserves its case identity there and
// enters the case (whose exit is the resolution command chain, oceanway
// case). Without it (nil) such a decision is recorded as deferred and the
// fence waits.
func finalizationWorker(billingPool, casesPool *pgxpool.Pool, reads ownerReaders, concurrency int, wm *work.Metrics, counters *billing.Counters, log *slog.Logger) *finalization.Worker {
	if billingPool == nil || reads.execution == nil || reads.gateway == nil || reads.metering == nil {
		return nil
	}
	owners := finalization.Owners{Execution: reads.execution,
		Gateway: finalization.GatewayOwner{Reads: reads.gateway}, Metering: finalization.MeteringOwner{Reads: reads.metering}}
	ledger := finalization.BillingLedger{}
	if casesPool != nil {
		ledger.Cases = cases.Identities{Pool: casesPool}
	}
	return finalization.NewWorker(billingPool, owners, ledger, finalization.Config{Concurrency: concurrency, Metrics: wm, Counters: counters}, log)
}

// meteringWorker builds the metering worker over the metering database when
// the execution, gateway and core databases are there for its owner reads (nil
// otherwise: the process does not run the Metering owner).
func meteringWorker(m *pgxpool.Pool, reads ownerReaders, concurrency int, lease time.Duration, wm *work.Metrics, log *slog.Logger) (*metering.Worker, error) {
	if m == nil || reads.execution == nil || reads.gateway == nil || reads.manifest == nil {
		return nil, nil
	}
	return metering.NewWorker(m, metering.WorkerConfig{Concurrency: concurrency, Lease: lease, Metrics: wm, Log: log,
		Processor: metering.ProcessorConfig{Reads: metering.Owners{Execution: reads.execution, Gateway: reads.gateway, Core: reads.manifest}}})
}

// startMeteringWorker runs the metering worker (claim → process → finish)
// where the Metering input processor is served; wait stops it (after its
// in-flight attempts).
func startMeteringWorker(ctx context.Context, p serveParams, wm *work.Metrics) (wait func(), err error) {
	if !slices.Contains(p.plan.consume, route.MeteringInputProcessor) {
		return func() {}, nil
	}
	w, err := meteringWorker(p.consumerPools[boundary.Metering], p.reads, 4, 30*time.Second, wm, p.log)
	if err != nil || w == nil {
		return func() {}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	fmt.Fprintln(p.out, "oceanway serve: metering worker running (4 eligibility and 2 provider-cost slots, lease 30s)")
	return func() { cancel(); <-done }, nil
}

// startFinalizationWorker runs the Billing finalization worker where the
// coordinator is served and every owner database is reachable; the returned
// func stops it.
func startFinalizationWorker(ctx context.Context, p serveParams, wm *work.Metrics, counters *billing.Counters) (wait func()) {
	if !p.coordinator {
		return func() {}
	}
	w := finalizationWorker(p.billingPool, p.casesPool, p.reads.withMetering(p.consumerPools[boundary.Metering]), 2, wm, counters, p.log)
	if w == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	fmt.Fprintln(p.out, "oceanway serve: billing finalization worker running (2 slots)")
	return func() { cancel(); <-done }
}

// catchUpWorker builds the settlement catch-up worker over the core database
// as the billing role when the metering database it validates against is
// reachable (nil otherwise).
//
// casesPool is the core database as the Operations role: a late settlement
// exposure reserves its dimension's case identity there and asks for the
// case (issue 32). Without it (nil) exposures are recorded not_requested.
func catchUpWorker(billingPool, casesPool *pgxpool.Pool, m meteringread.Reader, wm *work.Metrics, counters *billing.Counters, log *slog.Logger) (*catchup.Worker, error) {
	if billingPool == nil || m == nil {
		return nil, nil
	}
	cfg := catchup.WorkerConfig{
		Metering: catchupmetering.Reads{Metering: m}, Ledger: catchup.TransitionPostings{}, Metrics: wm, Counters: counters, Log: log}
	if casesPool != nil {
		cfg.Cases = cases.Identities{Pool: casesPool}
	}
	return catchup.NewWorker(billingPool, cfg)
}

// startCatchUpWorker runs the settlement catch-up worker beside the
// finalization worker (post-finality inputs become transitions); the
// returned func stops it.
func startCatchUpWorker(ctx context.Context, p serveParams, wm *work.Metrics, counters *billing.Counters) (wait func(), err error) {
	if !p.coordinator {
		return func() {}, nil
	}
	w, err := catchUpWorker(p.billingPool, p.casesPool, p.reads.withMetering(p.consumerPools[boundary.Metering]).metering, wm, counters, p.log)
	if err != nil || w == nil {
		return func() {}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	fmt.Fprintln(p.out, "oceanway serve: billing settlement catch-up worker running")
	return func() { cancel(); <-done }, nil
}

func serve(ctx context.Context, p serveParams) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if len(p.plan.ownerURLs) > 0 {
		clients, err := ownerReadClients(p.roles, p.plan, ownerhttp.NewMetrics(reg))
		if err != nil {
			return err
		}
		defer func() {
			for _, c := range clients {
				c.Close()
			}
		}()
		p.reads = p.reads.over(httpReaders(clients))
	}
	consumers, batches, err := consumersFor(p.consumerPools, p.reads, p.billingPool, p.coordinator, slices.Contains(p.plan.consume, route.BillingSettlementCatchUp))
	if err != nil {
		return err
	}
	// Each consumer is timed where it applies (in process and behind the
	// consumer endpoints alike).
	consumers, batches = instrumentConsumers(inbox.NewApplyMetrics(reg), consumers, batches)
	registerOwnerCollectors(reg, p)
	// Every queue of Work (metering lanes, finalization, catch-up) reports
	// on the same metrics, labelled by queue name.
	wm := work.NewMetrics(reg)
	counters := billing.NewCounters(reg)
	waitWorker, err := startMeteringWorker(ctx, p, wm)
	if err != nil {
		return err
	}
	defer waitWorker()
	defer startFinalizationWorker(ctx, p, wm, counters)()
	waitCatchUp, err := startCatchUpWorker(ctx, p, wm, counters)
	if err != nil {
		return err
	}
	defer waitCatchUp()
	waitProofs := func() {}
	if core, ok := p.consumerPools[boundary.Core]; ok && slices.Contains(p.plan.consume, route.CoreOperations) {
		reg.MustRegister(readmodel.NewCollector(readmodel.New(core), 5*time.Second))
		proofCtx, stopProofs := context.WithCancel(ctx)
		wait := startCompletenessProofs(proofCtx, core, p.completenessInterval, p.log)
		waitProofs = func() { stopProofs(); wait() }
	}
	defer func() { waitProofs() }()
	netMetrics := httptransport.NewMetrics(reg)
	var rt *server.Runtime
	if len(p.plan.dispatch) > 0 {
		cfg := server.Config{Dispatcher: p.dispatcher.cfg, DispatchersPerBoundary: p.dispatcher.dispatchers,
			Batches: p.dispatcher.batches(batches)}
		if len(p.plan.remote) > 0 {
			client, err := newConsumerClient(p.roles, p.plan, netMetrics)
			if err != nil {
				return err
			}
			defer client.Close()
			cfg.Remote, cfg.RemoteDestinations = client, client.Destinations()
		}
		if rt, err = server.New(p.pools, consumers, cfg, reg, p.log); err != nil {
			return err
		}
	}
	// Readiness covers every database this process uses.
	ready := server.Pools{}
	for _, set := range []server.Pools{p.pools, p.consumerPools, p.readPools} {
		for b, pool := range set {
			ready[b] = pool
		}
	}
	var admin http.Handler
	if len(p.pools) > 0 {
		adminPools := p.adminPools
		if adminPools == nil {
			adminPools = p.pools
		}
		if admin, err = adminHandler(adminPools, p.adminToken); err != nil {
			return err
		}
	}
	ln, err := listenTCP(p.listen)
	if err != nil {
		return err
	}
	apiHandler, closeAPI, err := platformAPI(ctx, p)
	if err != nil {
		return err
	}
	defer closeAPI()
	srv := &http.Server{Handler: server.Handler(server.HTTPConfig{Registry: reg, Pools: ready, Admin: admin, API: apiHandler}), ReadHeaderTimeout: 5 * time.Second}
	httpErr := make(chan error, 2)
	go func() { httpErr <- srv.Serve(ln) }()
	servers := []*http.Server{srv}
	if !p.plan.legacy && (len(p.plan.consume) > 0 || len(p.plan.serveReads) > 0 || len(p.plan.serveCases) > 0) {
		csrv, addr, err := startConsumerEndpoints(p, consumers, netMetrics, httpErr)
		if err != nil {
			_ = srv.Close()
			return err
		}
		servers = append(servers, csrv)
		if len(p.plan.consume) > 0 {
			fmt.Fprintf(p.out, "oceanway serve: consumer endpoints %s%s for %v\n", addr, httptransport.PathPrefix, p.plan.consume)
		}
		if len(p.plan.serveCases) > 0 {
			fmt.Fprintf(p.out, "oceanway serve: case services %s%s for %v\n", addr, casehttp.PathPrefix, p.plan.serveCases)
		}
		if len(p.plan.serveReads) > 0 {
			fmt.Fprintf(p.out, "oceanway serve: owner read endpoint %s%s for %v\n", addr, ownerhttp.PathPrefix, p.plan.serveReads)
		}
	}
	served := []route.Destination{}
	if rt != nil {
		served = rt.Served()
	}
	fmt.Fprintf(p.out, "oceanway serve: http://%s (metrics /metrics, admin /admin/), serving %v (dispatchers of %v)\n", ln.Addr(), served, p.plan.dispatch)

	var runErr error
	if rt != nil {
		runErr = rt.Run(ctx) // returns after SIGINT/SIGTERM and the drain
	} else {
		<-ctx.Done()
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdownCtx)
	}
	for range servers {
		if err := <-httpErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	return runErr
}

// newConsumerClient is the HTTP transport to the remote consumer endpoints.
func newConsumerClient(roles roleFlags, plan rolePlan, m *httptransport.Metrics) (*httptransport.Client, error) {
	signer, tlsCfg, err := roles.caller()
	if err != nil {
		return nil, err
	}
	return httptransport.NewClient(httptransport.ClientConfig{Endpoints: plan.remote, Signer: signer, TLS: tlsCfg, Metrics: m})
}

// startConsumerEndpoints serves the consumer endpoints and the owner read
// endpoint of the plan on --consumer-listen (HTTPS with
// --tls-cert/--tls-key).
func startConsumerEndpoints(p serveParams, consumers map[route.Destination]transport.ConsumerFunc, m *httptransport.Metrics, errs chan<- error) (*http.Server, string, error) {
	trusted, err := p.roles.trusted()
	if err != nil {
		return nil, "", err
	}
	endpoints := map[route.Destination]httptransport.Endpoint{}
	for _, d := range p.plan.consume {
		aud, err := httptransport.Audience(d)
		if err != nil {
			return nil, "", err
		}
		v, err := workload.NewVerifier(workload.VerifierConfig{Audience: aud, Trusted: trusted})
		if err != nil {
			return nil, "", err
		}
		c, ok := consumers[d]
		if !ok {
			return nil, "", fmt.Errorf("--consume %s: no database for its consumer", d)
		}
		endpoints[d] = httptransport.Endpoint{Consume: c, Verifier: v}
	}
	mux := http.NewServeMux()
	if len(endpoints) > 0 {
		h, err := httptransport.NewHandler(httptransport.HandlerConfig{Endpoints: endpoints, Metrics: m, Log: p.log})
		if err != nil {
			return nil, "", err
		}
		mux.Handle(httptransport.PathPrefix, h)
	}
	if len(p.plan.serveReads) > 0 {
		h, err := ownerReadHandler(p, trusted)
		if err != nil {
			return nil, "", err
		}
		mux.Handle(ownerhttp.PathPrefix, h)
	}
	if len(p.plan.serveCases) > 0 {
		h, err := caseHandler(p, trusted)
		if err != nil {
			return nil, "", err
		}
		mux.Handle(casehttp.PathPrefix, h)
	}
	if (p.roles.tlsCert == "") != (p.roles.tlsKey == "") {
		return nil, "", errors.New("--tls-cert and --tls-key go together")
	}
	ln, err := listenTCP(p.roles.consumerListen)
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	scheme := "http"
	if p.roles.tlsCert != "" {
		scheme = "https"
		go func() { errs <- srv.ServeTLS(ln, p.roles.tlsCert, p.roles.tlsKey) }()
	} else {
		go func() { errs <- srv.Serve(ln) }()
	}
	return srv, scheme + "://" + ln.Addr().String(), nil
}

// ErrRolesNotGranted: serve runs with least privilege (the default) and the
// connecting user cannot take the component roles.
var ErrRolesNotGranted = errors.New("serve: the connecting user cannot take the least-privilege roles")

// requireRoles checks, on each boundary database, that the connecting user
// may SET ROLE to each role it needs there, and otherwise says exactly what
// to grant.
func requireRoles(ctx context.Context, dsns map[boundary.Boundary]string, need map[boundary.Boundary][]string) error {
	for _, b := range boundary.All {
		dsn, ok := dsns[b]
		roles := need[b]
		if !ok || len(roles) == 0 {
			continue
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return fmt.Errorf("connect %s: %w", b, err)
		}
		var user string
		var missing []string
		err = conn.QueryRow(ctx, `SELECT current_user::text,
			COALESCE(array_agg(r) FILTER (WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r)
			                                 OR NOT pg_has_role(current_user, r, 'MEMBER')), '{}')
			FROM unnest($1::text[]) AS r`, roles).Scan(&user, &missing)
		_ = conn.Close(context.WithoutCancel(ctx)) // the check's answer is already read
		if err != nil {
			return fmt.Errorf("check roles on %s: %w", b, err)
		}
		if len(missing) > 0 {
			quoted := make([]string, len(missing))
			for i, r := range missing {
				quoted[i] = pgx.Identifier{r}.Sanitize()
			}
			return fmt.Errorf("%w: user %s on the %s database is not a member of %s; run `GRANT %s TO %s;` as a superuser "+
				"(the roles are created by `oceanway migrate`), or run with --least-privilege=false",
				ErrRolesNotGranted, user, b, strings.Join(missing, ", "), strings.Join(quoted, ", "), pgx.Identifier{user}.Sanitize())
		}
	}
	return nil
}
