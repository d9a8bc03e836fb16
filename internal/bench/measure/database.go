package measure

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/db"
)

var databaseName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// DatabaseURL returns serverURL with its database replaced by name.
func DatabaseURL(serverURL, name string) string { return db.WithDatabase(serverURL, name) }

// CreateDatabase creates a fresh database name on the server (dropping a
// leftover of the same name first).
func CreateDatabase(ctx context.Context, serverURL, name string) error {
	if !databaseName.MatchString(name) {
		return fmt.Errorf("measure: invalid database name %q", name)
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop leftover database %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// DropDatabases drops the databases (terminating their sessions); it runs
// on a context that survives the caller's cancellation so an interrupted
// benchmark still cleans up.
func DropDatabases(ctx context.Context, serverURL string, names ...string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }() // Terminate only: the server ends the session either way
	var first error
	for _, name := range names {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil && first == nil {
			first = fmt.Errorf("drop database %s: %w", name, err)
		}
	}
	return first
}

// NewPool opens a pool of exactly size connections to the database (all
// opened up front, so that no connection is born or dies during a run and
// the backend CPU sampler sees every backend from the start).
func NewPool(ctx context.Context, dsn string, size int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MinConns = size, size
	cfg.MaxConnIdleTime = time.Hour
	cfg.MaxConnLifetime = 2 * time.Hour
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// Open every connection now.
	conns := make([]*pgxpool.Conn, 0, size)
	for range size {
		c, err := pool.Acquire(ctx)
		if err != nil {
			for _, c := range conns {
				c.Release()
			}
			pool.Close()
			return nil, err
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	return pool, nil
}

// ServerInfo reads the server's version and synchronous_commit setting.
func ServerInfo(ctx context.Context, serverURL, source string, cpus int) (Server, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return Server{}, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // Terminate only: the server ends the session either way
	s := Server{Source: source, CPUs: cpus}
	rows, err := conn.Query(ctx, qServerInfo)
	if err != nil {
		return s, err
	}
	info, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[struct {
		Version           string `db:"server_version"`
		SynchronousCommit string `db:"synchronous_commit"`
	}])
	s.Version, s.SynchronousCommit = info.Version, info.SynchronousCommit
	return s, err
}

// waitBackendsGone waits until no session other than the excluded pids is
// connected to the databases, so that every backend of the run has exited
// and flushed its statistics.
func waitBackendsGone(ctx context.Context, admin *pgx.Conn, databases []string, exclude []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		rows, err := admin.Query(ctx, qClientBackends, pgx.NamedArgs{"databases": databases, "exclude": exclude})
		if err != nil {
			return err
		}
		n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("measure: %d session(s) still connected to %v after %s", n, databases, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
