package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/server"
)

// serveOptions are the flags of `oceanway serve`.
type serveOptions struct {
	conn       boundaryFlags
	disp       dispatcherFlags
	listen     string
	adminToken string // default $OCEANWAY_ADMIN_TOKEN
	migrateUp  bool
	asRoles    bool
	lines      []migrate.Line // applied with --migrate
}

func newServeCmd(streams *IO) *cobra.Command {
	o := serveOptions{lines: lines.All()}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the dispatchers and in-process consumers of every boundary, /metrics, /healthz, /readyz and the read-only admin page",
		Long: `serve runs, for every boundary database, K dispatchers that deliver to the consumers
wired in this process (today: the Operations projector for core_operations), plus an HTTP
listener with /metrics (Prometheus), /healthz, /readyz and the read-only admin page under
/admin/. SIGINT or SIGTERM stops claiming and drains in-flight deliveries.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), streams, o)
		},
	}
	o.conn.register(cmd)
	o.disp.register(cmd)
	cmd.Flags().StringVar(&o.listen, "listen", envOr("OCEANWAY_LISTEN", "127.0.0.1:8088"), "HTTP listen address for /metrics, /healthz, /readyz, /admin/ (env OCEANWAY_LISTEN)")
	cmd.Flags().StringVar(&o.adminToken, "admin-token", "", "bearer token required by the admin page (default $OCEANWAY_ADMIN_TOKEN)")
	cmd.Flags().BoolVar(&o.migrateUp, "migrate", true, "create missing boundary databases and apply migrations before serving")
	cmd.Flags().BoolVar(&o.asRoles, "least-privilege", os.Getenv("OCEANWAY_LEAST_PRIVILEGE") == "1",
		"run dispatchers as oceanway_dispatcher and consumers as oceanway_operations (SET ROLE; the connecting user must be a member) (env OCEANWAY_LEAST_PRIVILEGE=1)")
	return cmd
}

// runServe resolves (and with --migrate provisions) the boundary databases,
// opens the dispatcher and consumer pools and serves until ctx ends.
func runServe(ctx context.Context, streams *IO, o serveOptions) error {
	log := slog.New(slog.NewJSONHandler(streams.Err, nil))
	logf := func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	var migrateWith []migrate.Line
	if o.migrateUp {
		migrateWith = o.lines
	}
	dsns, err := o.conn.resolve(ctx, migrateWith, logf)
	if err != nil {
		return err
	}
	dispatcherRole, consumerRole := "", ""
	if o.asRoles {
		dispatcherRole, consumerRole = outboxschema.RoleDispatcher, operationsschema.RoleOperations
	}
	pools, err := openRolePools(ctx, dsns, int32(o.disp.dispatchers*(o.disp.cfg.Concurrency+2)+8), dispatcherRole)
	if err != nil {
		return err
	}
	defer pools.Close()
	// The only in-process consumer today is the Operations projector in core.
	consumerDSNs := map[boundary.Boundary]string{}
	if dsn, ok := dsns[boundary.Core]; ok {
		consumerDSNs[boundary.Core] = dsn
	}
	consumerPools, err := openRolePools(ctx, consumerDSNs, int32(o.disp.dispatchers*o.disp.cfg.Concurrency+4), consumerRole)
	if err != nil {
		return err
	}
	defer consumerPools.Close()
	if o.adminToken == "" {
		o.adminToken = os.Getenv("OCEANWAY_ADMIN_TOKEN")
	}
	return serve(ctx, serveParams{
		pools: pools, consumerPools: consumerPools, dispatcher: o.disp, listen: o.listen, adminToken: o.adminToken, log: log, out: streams.Out,
	})
}

type serveParams struct {
	pools         server.Pools // dispatchers, metrics, readiness, admin
	consumerPools server.Pools // in-process consumers (and their read model)
	dispatcher    dispatcherFlags
	listen        string
	adminToken    string
	log           *slog.Logger
	out           interface{ Write([]byte) (int, error) }
}

// consumersFor wires the in-process consumers of the boundaries present.
func consumersFor(pools server.Pools) (map[route.Destination]transport.ConsumerFunc, error) {
	consumers := map[route.Destination]transport.ConsumerFunc{}
	if core, ok := pools[boundary.Core]; ok {
		// Every projection version the registry lets a delivery freeze
		// (before and after a cutover, DS-8).
		p, err := projector.New(core, projector.Config{AllVersions: true})
		if err != nil {
			return nil, err
		}
		consumers[route.CoreOperations] = p.Consume
	}
	return consumers, nil
}

func serve(ctx context.Context, p serveParams) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	consumers, err := consumersFor(p.consumerPools)
	if err != nil {
		return err
	}
	if core, ok := p.consumerPools[boundary.Core]; ok {
		reg.MustRegister(readmodel.NewCollector(readmodel.New(core), 5*time.Second))
	}
	rt, err := server.New(p.pools, consumers, server.Config{Dispatcher: p.dispatcher.cfg, DispatchersPerBoundary: p.dispatcher.dispatchers}, reg, p.log)
	if err != nil {
		return err
	}
	admin, err := adminHandler(p.pools, p.adminToken)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", p.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: server.Handler(server.HTTPConfig{Registry: reg, Pools: p.pools, Admin: admin}), ReadHeaderTimeout: 5 * time.Second}
	httpErr := make(chan error, 1)
	go func() { httpErr <- srv.Serve(ln) }()
	fmt.Fprintf(p.out, "oceanway serve: http://%s (metrics /metrics, admin /admin/), serving %v\n", ln.Addr(), rt.Served())

	runErr := rt.Run(ctx) // returns after SIGINT/SIGTERM and the drain
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := <-httpErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return runErr
}
