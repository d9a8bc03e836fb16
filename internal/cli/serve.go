package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
	cmd.Flags().BoolVar(&o.asRoles, "least-privilege", envBool("OCEANWAY_LEAST_PRIVILEGE", true),
		"run dispatchers as oceanway_dispatcher and each consumer as its own role (oceanway_operations) by SET ROLE; the connecting user must be a member of both (env OCEANWAY_LEAST_PRIVILEGE, default on; =false to connect as the user itself)")
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
		if err := requireRoles(ctx, dsns, dispatcherRole, consumerRole); err != nil {
			return err
		}
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
	// The admin page and readiness read every schema: with least privilege
	// they get small pools of their own as the connecting user (the
	// dispatcher role may not read the read views of other owners).
	var readPools server.Pools
	if o.asRoles {
		if readPools, err = openRolePools(ctx, dsns, 4, ""); err != nil {
			return err
		}
		defer readPools.Close()
	}
	if o.adminToken == "" {
		o.adminToken = os.Getenv("OCEANWAY_ADMIN_TOKEN")
	}
	return serve(ctx, serveParams{
		pools: pools, consumerPools: consumerPools, readPools: readPools, dispatcher: o.disp, listen: o.listen,
		adminToken: o.adminToken, log: log, out: streams.Out,
	})
}

type serveParams struct {
	pools         server.Pools // dispatchers, metrics, readiness, admin
	consumerPools server.Pools // in-process consumers (and their read model)
	readPools     server.Pools // readiness and the read-only admin page; nil: pools
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
		p, err := projector.New(core, projector.Config{})
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
	readPools := p.readPools
	if readPools == nil {
		readPools = p.pools
	}
	admin, err := adminHandler(readPools, p.adminToken)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", p.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: server.Handler(server.HTTPConfig{Registry: reg, Pools: readPools, Admin: admin}), ReadHeaderTimeout: 5 * time.Second}
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

// ErrRolesNotGranted: serve runs with least privilege (the default) and the
// connecting user cannot take the component roles.
var ErrRolesNotGranted = errors.New("serve: the connecting user cannot take the least-privilege roles")

// requireRoles checks, on every boundary database, that the connecting user
// may SET ROLE to each role, and otherwise says exactly what to grant.
func requireRoles(ctx context.Context, dsns map[boundary.Boundary]string, roles ...string) error {
	for _, b := range boundary.All {
		dsn, ok := dsns[b]
		if !ok {
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
		conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			return fmt.Errorf("check roles on %s: %w", b, err)
		}
		if len(missing) > 0 {
			quoted := make([]string, len(missing))
			for i, r := range missing {
				quoted[i] = pgx.Identifier{r}.Sanitize()
			}
			return fmt.Errorf("%w: user %s on the %s database is not a member of %s; run `GRANT %s TO %s;` as a superuser "+
				"(the roles are created by `oceanway migrate`), or start serve with --least-privilege=false",
				ErrRolesNotGranted, user, b, strings.Join(missing, ", "), strings.Join(quoted, ", "), pgx.Identifier{user}.Sanitize())
		}
	}
	return nil
}
