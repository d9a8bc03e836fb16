package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/server"
)

// Admin command defaults and environment.
const (
	adminDefaultListen = "127.0.0.1:8089"
	envAdminToken      = "OCEANWAY_ADMIN_TOKEN"
)

// adminConn is the connection flags of `oceanway admin` and `oceanway
// inspect`: the same as serve's (--database-url + --db-prefix, or one DSN
// per boundary), plus the read bounds.
type adminConn struct {
	boundaryFlags
	quarantineLimit  int
	lookupLimit      int
	statementTimeout time.Duration
}

// flagSet returns the flags as a set to add to a command (locally or as
// persistent flags of a command group).
func (c *adminConn) flagSet() *pflag.FlagSet {
	tmp := &cobra.Command{}
	c.register(tmp)
	fs := tmp.Flags()
	fs.IntVar(&c.quarantineLimit, "quarantine-limit", admin.DefaultQuarantineLimit, "most recent quarantines listed")
	fs.IntVar(&c.lookupLimit, "lookup-limit", admin.DefaultLookupLimit, "events a run or reservation lookup returns per boundary")
	fs.DurationVar(&c.statementTimeout, "statement-timeout", admin.DefaultStatementTimeout, "bound of every admin query")
	return fs
}

func (c *adminConn) config() admin.Config {
	return admin.Config{QuarantineLimit: c.quarantineLimit, LookupLimit: c.lookupLimit, StatementTimeout: c.statementTimeout}
}

// open connects one read-only pool per boundary database. A database
// derived from --db-prefix that does not exist is skipped (and named in
// skipped); a boundary given its own DSN must answer. At least one boundary
// must remain.
func (c *adminConn) open(ctx context.Context) (server.Pools, []string, error) {
	dsns, err := c.resolve(ctx, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	pools := server.Pools{}
	var skipped []string
	for _, b := range boundary.All {
		dsn, ok := dsns[b]
		if !ok {
			continue
		}
		explicit := *c.dsns[b] != ""
		pool, err := openReadOnlyPool(ctx, dsn)
		if err != nil {
			if !explicit && db.SQLState(err) == pgerrcode.InvalidCatalogName { // database does not exist
				skipped = append(skipped, migrate.DatabaseName(c.prefix, b))
				continue
			}
			pools.Close()
			return nil, nil, fmt.Errorf("connect %s: %w", b, err)
		}
		pools[b] = pool
	}
	if len(pools) == 0 {
		return nil, skipped, fmt.Errorf("no boundary database found: none of %s exists (run oceanway migrate, or pass --db-prefix or --<boundary>-dsn)",
			strings.Join(skipped, ", "))
	}
	return pools, skipped, nil
}

// openReadOnlyPool connects a small pool whose sessions default to read-only
// transactions: a second guard under the READ ONLY transactions of package
// admin.
func openReadOnlyPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse dsn: %w", err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["application_name"] = "oceanway-admin"
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

func reportSkipped(w io.Writer, skipped []string) {
	for _, s := range skipped {
		fmt.Fprintf(w, "oceanway: skipping database %s: it does not exist\n", s)
	}
}

// adminOptions are the flags of `oceanway admin`.
type adminOptions struct {
	conn   adminConn
	listen string
	token  string // default $OCEANWAY_ADMIN_TOKEN
}

func newAdminCmd(streams *IO) *cobra.Command {
	var o adminOptions
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Serve the read-only outbox admin page and its JSON API for the boundary databases",
		Long: `admin serves the read-only admin page (overview, lookup by exact event, run or
reservation id, completeness) and its JSON API under /api/ for the boundary databases:
<prefix>_core, <prefix>_execution, <prefix>_gateway and <prefix>_metering on the server
--database-url (else $DATABASE_URL, else 127.0.0.1:5432); the ones that do not exist are
skipped. A boundary given its own DSN (--core-dsn or OCEANWAY_CORE_DSN, ...) is read where it is.

The page cannot change anything: only GET and HEAD are answered, and there is no skip,
force-success, edit-payload or replay action. Every query runs in a READ ONLY transaction.
It listens on loopback by default; --token (or $OCEANWAY_ADMIN_TOKEN) requires
"Authorization: Bearer <token>" on every request. See docs/admin.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAdmin(cmd.Context(), streams, o)
		},
	}
	cmd.Flags().AddFlagSet(o.conn.flagSet())
	cmd.Flags().StringVar(&o.listen, "listen", adminDefaultListen, "HTTP listen address (loopback by default)")
	cmd.Flags().StringVar(&o.token, "token", "", "bearer token required on every request (default $"+envAdminToken+")")
	return cmd
}

// runAdmin serves the admin page until ctx ends, then shuts down.
func runAdmin(ctx context.Context, streams *IO, o adminOptions) error {
	if o.token == "" {
		o.token = os.Getenv(envAdminToken)
	}
	pools, skipped, err := o.conn.open(ctx)
	reportSkipped(streams.Err, skipped)
	if err != nil {
		return err
	}
	defer pools.Close()
	reader := admin.NewReader(adminBoundaries(pools), o.conn.config())
	handler := admin.NewHandler(reader, admin.HandlerConfig{Token: o.token})

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	if o.token == "" && !isLoopback(ln.Addr()) {
		fmt.Fprintf(streams.Err, "oceanway admin: warning: listening on %s without a token; set --token or $%s\n", ln.Addr(), envAdminToken)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      o.conn.statementTimeout*4 + 10*time.Second,
		IdleTimeout:       60 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	auth := "no token"
	if o.token != "" {
		auth = "bearer token required"
	}
	fmt.Fprintf(streams.Out, "oceanway admin: http://%s/ (read-only, %s) for %s\n", ln.Addr(), auth, strings.Join(reader.BoundaryNames(), ", "))

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
