package cli

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/pgserver"
	"github.com/oceanway/core/internal/server"
)

// boundaryFlags are the connection flags shared by long-running commands:
// one server URL with database names derived from a prefix, or one DSN per
// boundary (flag or OCEANWAY_<BOUNDARY>_DSN).
type boundaryFlags struct {
	databaseURL string
	prefix      string
	dsns        map[boundary.Boundary]*string
}

func (f *boundaryFlags) register(cmd *cobra.Command) {
	// Secrets-bearing defaults are read from the environment at use, never
	// shown as flag defaults in --help.
	cmd.Flags().StringVar(&f.databaseURL, "database-url", "", "server connection string (default $DATABASE_URL, else 127.0.0.1:5432)")
	cmd.Flags().StringVar(&f.prefix, "db-prefix", envOr("OCEANWAY_DB_PREFIX", migrate.DefaultPrefix), "prefix of the boundary database names (<prefix>_core, ...) (env OCEANWAY_DB_PREFIX)")
	f.dsns = map[boundary.Boundary]*string{}
	for _, b := range boundary.All {
		f.dsns[b] = new(string)
		cmd.Flags().StringVar(f.dsns[b], string(b)+"-dsn", "", fmt.Sprintf("DSN of the %s database (default $%s)", b, boundaryDSNEnv(b)))
	}
}

// resolve returns the DSN of every boundary. With lines, databases that do
// not exist yet are created and the lines are applied; without, nothing is
// created or migrated.
func (f *boundaryFlags) resolve(ctx context.Context, lines []migrate.Line, logf func(string, ...any)) (map[boundary.Boundary]string, error) {
	return f.resolveSome(ctx, boundary.All, lines, logf)
}

// resolveSome is resolve for the boundaries in only (a process that runs
// some roles touches only their databases).
func (f *boundaryFlags) resolveSome(ctx context.Context, only []boundary.Boundary, lines []migrate.Line, logf func(string, ...any)) (map[boundary.Boundary]string, error) {
	provision := len(lines) > 0
	out := map[boundary.Boundary]string{}
	var derived []boundary.Boundary
	for _, b := range only {
		dsn := *f.dsns[b]
		if dsn == "" {
			dsn = os.Getenv(boundaryDSNEnv(b))
		}
		if dsn != "" {
			out[b] = dsn
			if provision {
				if _, err := migrate.Up(ctx, dsn, b, lines, migrate.Opts{Logf: logf}); err != nil {
					return nil, err
				}
			}
			continue
		}
		derived = append(derived, b)
	}
	if len(derived) == 0 {
		return out, nil
	}
	serverURL := f.databaseURL
	if serverURL == "" { // DATABASE_URL, else the local server
		srv, err := pgserver.Find(ctx, pgserver.Opts{NoStart: true})
		if err != nil {
			return nil, err
		}
		serverURL = srv.URL
	}
	if provision {
		res, err := migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: serverURL, Prefix: f.prefix, Boundaries: derived, Lines: lines, Logf: logf})
		if err != nil {
			return nil, err
		}
		for b, dsn := range res.DSNs {
			out[b] = dsn
		}
		return out, nil
	}
	for _, b := range derived {
		out[b] = pgserver.WithDatabase(serverURL, migrate.DatabaseName(f.prefix, b))
	}
	return out, nil
}

// maxPoolConns bounds one boundary pool: far below a default server's
// max_connections (100), so several pools and tools fit beside each other.
const maxPoolConns = 48

// openPools connects one pool per DSN, each with at most min(maxConns,
// maxPoolConns) connections.
func openPools(ctx context.Context, dsns map[boundary.Boundary]string, maxConns int32) (server.Pools, error) {
	return openRolePools(ctx, dsns, maxConns, "")
}

// openRolePools is openPools whose sessions run as role (SET ROLE after
// connecting) when role is not empty: least privilege for a component.
func openRolePools(ctx context.Context, dsns map[boundary.Boundary]string, maxConns int32, role string) (server.Pools, error) {
	maxConns = min(maxConns, maxPoolConns)
	pools := server.Pools{}
	for b, dsn := range dsns {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			pools.Close()
			return nil, fmt.Errorf("%s dsn: %w", b, err)
		}
		if maxConns > 0 {
			cfg.MaxConns = maxConns
		}
		if role != "" {
			setRole := "SET ROLE " + pgx.Identifier{role}.Sanitize()
			cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
				_, err := c.Exec(ctx, setRole)
				return err
			}
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err == nil {
			if err = pool.Ping(ctx); err != nil {
				pool.Close() // not in pools yet: its health check would outlive the call
			}
		}
		if err != nil {
			pools.Close()
			return nil, fmt.Errorf("connect %s: %w", b, err)
		}
		pools[b] = pool
	}
	return pools, nil
}

// envBool reads a boolean environment variable (1/0, true/false, ...),
// def when unset or unreadable.
func envBool(name string, def bool) bool {
	if v, err := strconv.ParseBool(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
