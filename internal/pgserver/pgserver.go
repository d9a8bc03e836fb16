// Package pgserver finds or starts the PostgreSQL server that tests, the demo
// and the CLI talk to (DESIGN.md §7):
//
//  1. DATABASE_URL, when set, is used as is;
//  2. otherwise a local server on 127.0.0.1:5432 (users postgres, then root,
//     trust authentication) when one answers;
//  3. otherwise a throwaway cluster: initdb into a fresh temporary directory,
//     postgres listening on a free loopback port, removed by Stop.
//
// OCEANWAY_PG_FORCE_EMBEDDED=1 skips steps 1 and 2 (to prove the suite runs on
// a machine without a server); an explicit Opts.DatabaseURL still wins. OCEANWAY_PG_BIN names the directory of the
// server binaries when they are neither on PATH nor in /usr/lib/postgresql/*/bin.
//
// The throwaway postmaster is a direct child of this process with a parent
// death signal, so a killed test binary does not leave a server running; a
// later Start removes the data directories of dead owners.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/internal/db"
)

// Environment variables read by Find.
const (
	EnvDatabaseURL   = "DATABASE_URL"
	EnvForceEmbedded = "OCEANWAY_PG_FORCE_EMBEDDED"
	EnvBinDir        = "OCEANWAY_PG_BIN"
)

// Source says where a Server came from.
type Source string

const (
	SourceDatabaseURL Source = "database_url"
	SourceLocal       Source = "local"
	SourceEmbedded    Source = "embedded"
)

// ErrNoServer is returned when no server is reachable and none can be started.
var ErrNoServer = errors.New("pgserver: no PostgreSQL server reachable and none could be started")

// Server is a reachable PostgreSQL server.
type Server struct {
	// URL is a connection string for the server's maintenance database (or
	// the database DATABASE_URL names).
	URL string
	// Source tells which of the three rules produced the server.
	Source Source

	cluster *cluster // non-nil for SourceEmbedded
}

// Opts tunes Find. The zero value reads the environment.
type Opts struct {
	// DatabaseURL overrides DATABASE_URL when non-empty.
	DatabaseURL string
	// ForceEmbedded skips DATABASE_URL and the local server.
	ForceEmbedded bool
	// NoStart skips step 3: when no server is reachable Find fails with
	// ErrNoServer instead of starting a throwaway cluster.
	NoStart bool
	// LocalAddr is the local server probed in step 2 (default 127.0.0.1:5432).
	LocalAddr string
	// Logf, when set, receives one line per decision.
	Logf func(format string, args ...any)
}

// Find returns the first server of the rules in the package comment. The
// caller must Stop it (a no-op unless it was started here).
func Find(ctx context.Context, opts Opts) (*Server, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	force := opts.ForceEmbedded || os.Getenv(EnvForceEmbedded) == "1"
	if dsn := opts.DatabaseURL; dsn != "" && !opts.ForceEmbedded {
		if err := ping(ctx, dsn); err != nil {
			return nil, fmt.Errorf("pgserver: database URL: %w", err)
		}
		return &Server{URL: dsn, Source: SourceDatabaseURL}, nil
	}
	if !force {
		if dsn := os.Getenv(EnvDatabaseURL); dsn != "" {
			if err := ping(ctx, dsn); err != nil {
				return nil, fmt.Errorf("pgserver: DATABASE_URL: %w", err)
			}
			logf("pgserver: using DATABASE_URL")
			return &Server{URL: dsn, Source: SourceDatabaseURL}, nil
		}
		addr := localAddr(opts)
		for _, user := range []string{"postgres", "root"} {
			dsn := fmt.Sprintf("postgres://%s@%s/postgres?sslmode=disable&connect_timeout=3", url.PathEscape(user), addr)
			if err := ping(ctx, dsn); err == nil {
				logf("pgserver: using local server %s as %s", addr, user)
				return &Server{URL: dsn, Source: SourceLocal}, nil
			}
		}
	}
	if opts.NoStart {
		return nil, fmt.Errorf("%w (set DATABASE_URL or start PostgreSQL on %s)", ErrNoServer, localAddr(opts))
	}
	c, err := startCluster(ctx, logf)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoServer, err)
	}
	logf("pgserver: started throwaway cluster in %s on port %d", c.dir, c.port)
	return &Server{URL: c.url(), Source: SourceEmbedded, cluster: c}, nil
}

func localAddr(opts Opts) string {
	if opts.LocalAddr != "" {
		return opts.LocalAddr
	}
	return "127.0.0.1:5432"
}

// Start always starts a throwaway cluster.
func Start(ctx context.Context) (*Server, error) {
	return Find(ctx, Opts{ForceEmbedded: true})
}

// ErrNotEmbedded: the server was not started by this process, so it is not
// ours to restart.
var ErrNotEmbedded = errors.New("pgserver: not a throwaway cluster started by this process")

// RestartImmediate restarts a throwaway cluster the way `pg_ctl restart -m
// immediate` does: every session is cut off, the server recovers from its
// WAL and accepts connections again on the same URL. Used by the demo's
// chaos mode; a shared server is never restarted (ErrNotEmbedded).
func (s *Server) RestartImmediate(ctx context.Context) error {
	if s == nil || s.cluster == nil {
		return ErrNotEmbedded
	}
	return s.cluster.restart(ctx)
}

// Stop shuts a throwaway cluster down and removes its directory; it does
// nothing for a server it did not start. Safe to call twice.
func (s *Server) Stop() error {
	if s == nil || s.cluster == nil {
		return nil
	}
	return s.cluster.stop()
}

// DatabaseURL returns the server's URL with the database name replaced.
func (s *Server) DatabaseURL(database string) string {
	return WithDatabase(s.URL, database)
}

// WithDatabase replaces the database of a postgres:// URL or a key=value DSN.
func WithDatabase(dsn, database string) string { return db.WithDatabase(dsn, database) }

func ping(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	return conn.Ping(ctx)
}
