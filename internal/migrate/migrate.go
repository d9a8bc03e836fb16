// Package migrate applies the embedded SQL migrations of OceanWay Core.
//
// Migrations are grouped in lines. A line is owned by one module, lives in
// that module's embedded FS and applies to a set of fact boundaries (the
// databases of DESIGN.md §2): the outbox line to all four producer
// databases, a domain line to its own database. Each line keeps its own
// goose version table (public.goose_db_version_<line>), so lines version
// independently. Every migration runs in one transaction with its version
// row written in the same transaction (goose's default for SQL files).
//
// There is no registry: an owner's schema package exports its line, the
// product lists its lines once (internal/lines.All), and every caller passes
// the lines it means to Up, Provision or Fingerprint:
//
//	//go:embed migrations/*.sql
//	var files embed.FS
//
//	func Line() migrate.Line {
//		return migrate.Line{Name: "billing", Boundaries: []boundary.Boundary{boundary.Core}, FS: sub(files), After: []string{"outbox"}}
//	}
//
// Lines apply in dependency order (After), then by name. Cluster-wide roles a
// line grants to are declared in Line.Roles and created idempotently before
// any line runs (EnsureRoles), because CREATE ROLE is not per database.
package migrate

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/oceanway/core/internal/boundary"
)

// Line is one migration line.
type Line struct {
	// Name identifies the line; the version table is goose_db_version_<Name>.
	Name string
	// Boundaries are the databases the line applies to.
	Boundaries []boundary.Boundary
	// FS holds the line's migrations at its root: zero-padded goose SQL
	// files (00001_name.sql with -- +goose Up).
	FS fs.FS
	// After names lines that must be applied before this one.
	After []string
	// Roles are cluster-wide NOLOGIN roles the line's migrations grant to.
	Roles []string
}

// MustSub returns directory dir of an embedded tree, the form a schema
// package hands its migrations over in (FS: migrate.MustSub(files,
// "migrations")). A missing directory is a build mistake, so it panics.
func MustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// VersionTable is the goose version table of the line.
func (l Line) VersionTable() string { return "goose_db_version_" + l.Name }

// AppliesTo reports whether the line applies to boundary b.
func (l Line) AppliesTo(b boundary.Boundary) bool {
	for _, x := range l.Boundaries {
		if x == b {
			return true
		}
	}
	return false
}

var (
	lineName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`)
	roleName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
)

// Validate checks one line on its own: name, FS, boundaries and role names.
func (l Line) Validate() error {
	if !lineName.MatchString(l.Name) {
		return fmt.Errorf("migrate: invalid line name %q", l.Name)
	}
	if l.FS == nil || len(l.Boundaries) == 0 {
		return fmt.Errorf("migrate: line %s needs an FS and at least one boundary", l.Name)
	}
	for _, b := range l.Boundaries {
		if _, err := boundary.Parse(string(b)); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	for _, role := range l.Roles {
		if !roleName.MatchString(role) {
			return fmt.Errorf("migrate: line %s: invalid role name %q", l.Name, role)
		}
	}
	return nil
}

// Ordered validates lines and returns them in application order:
// dependencies first, then by name. It fails on an invalid or duplicate
// line and on an unknown or cyclic dependency.
func Ordered(lines []Line) ([]Line, error) {
	byName := make(map[string]Line, len(lines))
	for _, l := range lines {
		if err := l.Validate(); err != nil {
			return nil, err
		}
		if _, dup := byName[l.Name]; dup {
			return nil, fmt.Errorf("migrate: duplicate line %s", l.Name)
		}
		byName[l.Name] = l
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var (
		out   []Line
		state = map[string]int{} // 1 visiting, 2 done
		visit func(string) error
	)
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("migrate: dependency cycle through line %s", n)
		case 2:
			return nil
		}
		l := byName[n]
		state[n] = 1
		deps := append([]string(nil), l.After...)
		sort.Strings(deps)
		for _, d := range deps {
			if _, ok := byName[d]; !ok {
				return fmt.Errorf("migrate: line %s runs after unknown line %s", n, d)
			}
			if err := visit(d); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, l)
		return nil
	}
	for _, n := range names {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// For returns the lines of boundary b in application order.
func For(lines []Line, b boundary.Boundary) ([]Line, error) {
	all, err := Ordered(lines)
	if err != nil {
		return nil, err
	}
	var out []Line
	for _, l := range all {
		if l.AppliesTo(b) {
			out = append(out, l)
		}
	}
	return out, nil
}

// Roles returns every role the lines declare, sorted, unique.
func Roles(lines []Line) ([]string, error) {
	all, err := Ordered(lines)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, l := range all {
		for _, role := range l.Roles {
			set[role] = true
		}
	}
	out := make([]string, 0, len(set))
	for role := range set {
		out = append(out, role)
	}
	sort.Strings(out)
	return out, nil
}

// Fingerprint digests the names, boundaries, order and file contents of
// the lines. Test harnesses name their template databases after it, so a
// changed migration or another set of lines yields a fresh template.
func Fingerprint(lines []Line) (string, error) {
	all, err := Ordered(lines)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, l := range all {
		fmt.Fprintf(h, "line %s %v after %v roles %v\n", l.Name, l.Boundaries, l.After, l.Roles)
		err := fs.WalkDir(l.FS, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(l.FS, p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "file %s %d\n", p, len(b))
			h.Write(b)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("fingerprint line %s: %w", l.Name, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// EnsureRoles creates the given NOLOGIN roles when missing. It is safe to
// run concurrently from several processes: a concurrent creation surfaces as
// duplicate_object or unique_violation and counts as success.
func EnsureRoles(ctx context.Context, conn *pgx.Conn, roles []string) error {
	for _, r := range roles {
		if !roleName.MatchString(r) {
			return fmt.Errorf("migrate: invalid role name %q", r)
		}
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1)", r).Scan(&exists); err != nil {
			return fmt.Errorf("ensure role %s: %w", r, err)
		}
		if exists {
			continue
		}
		_, err := conn.Exec(ctx, "CREATE ROLE "+pgx.Identifier{r}.Sanitize()+" NOLOGIN")
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && (pgErr.Code == pgerrcode.DuplicateObject || pgErr.Code == pgerrcode.UniqueViolation)) {
			return fmt.Errorf("create role %s: %w", r, err)
		}
	}
	return nil
}

// Applied describes one migration applied by Up.
type Applied struct {
	Line    string
	Version int64
	Path    string
}

// Opts tunes Up.
type Opts struct {
	// NoLock skips goose's session advisory lock (the caller serializes).
	NoLock bool
	// Logf receives one line per applied migration when set.
	Logf func(format string, args ...any)
}

// Up applies the lines of boundary b to the database at dsn, creating the
// roles of every given line first. It is idempotent.
func Up(ctx context.Context, dsn string, b boundary.Boundary, lines []Line, opts Opts) ([]Applied, error) {
	if len(lines) == 0 {
		return nil, errors.New("migrate: no migration lines given")
	}
	ls, err := For(lines, b)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w", b, err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("migrate %s: connect: %w", b, err)
	}
	roles, err := Roles(lines)
	if err == nil {
		err = EnsureRoles(ctx, conn, roles)
	}
	_ = conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}

	sqlDB := stdlib.OpenDB(*cfg)
	defer func() { _ = sqlDB.Close() }() // releases pooled connections; the migrations' outcome is already known
	sqlDB.SetMaxOpenConns(2)
	var out []Applied
	for _, l := range ls {
		applied, err := upLine(ctx, sqlDB, b, l, opts)
		out = append(out, applied...)
		if err != nil {
			return out, fmt.Errorf("migrate %s line %s: %w", b, l.Name, err)
		}
	}
	return out, nil
}

func upLine(ctx context.Context, sqlDB *sql.DB, b boundary.Boundary, l Line, opts Opts) ([]Applied, error) {
	popts := []goose.ProviderOption{
		goose.WithTableName(l.VersionTable()),
		goose.WithDisableGlobalRegistry(true),
	}
	if !opts.NoLock {
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 600))
		if err != nil {
			return nil, err
		}
		popts = append(popts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, l.FS, popts...)
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	var out []Applied
	for _, r := range results {
		if r.Error != nil {
			continue
		}
		out = append(out, Applied{Line: l.Name, Version: r.Source.Version, Path: r.Source.Path})
		if opts.Logf != nil {
			opts.Logf("migrate: %s: line %s: %s", b, l.Name, r.String())
		}
	}
	return out, err
}
