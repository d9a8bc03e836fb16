// Package dbtest gives tests isolated, committed, real PostgreSQL databases:
// one database per fact boundary (core, execution, gateway, metering), named
// <prefix>_core, <prefix>_execution, ... , with the migration lines the test
// names applied.
//
// Speed: once per test binary and per migration fingerprint (the lines and
// their files), the lines are migrated into a template database per boundary
// (owtmpl_<fingerprint>_<b>),
// built under a PostgreSQL advisory lock so concurrently running test
// binaries build it once; each test then gets CREATE DATABASE ... TEMPLATE,
// a file-level copy that takes milliseconds.
//
// Isolation and clean-up: a test binary picks a random run id and holds a
// session advisory lock on it for its lifetime; its databases are named
// owt_<run>_<n>_<boundary>. At start-up every owt_ database whose run lock
// is free (its binary is gone) is dropped, so leftovers of killed runs never
// accumulate and concurrent binaries never drop each other's databases.
// Each test's databases are dropped by its Cleanup.
//
// Server: DATABASE_URL if set, else the local server on 127.0.0.1:5432,
// else a throwaway cluster (internal/pgserver). OCEANWAY_PG_FORCE_EMBEDDED=1
// forces the throwaway cluster (DATABASE_URL= OCEANWAY_PG_FORCE_EMBEDDED=1 go
// test ./...). The role needs CREATEDB and CREATEROLE (tests that SET ROLE
// need membership in the outbox roles, which a superuser has).
//
// Lines: a test passes the lines it needs in Opts.Lines, e.g.
// []migrate.Line{outboxschema.Line(), operationsschema.Line()} or
// lines.All(); without them it gets the outbox line alone. Each set of lines
// has its own templates.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/pgserver"
)

// Advisory lock classes (the first int4 of the two-key form).
const (
	lockClassRun          = 0x4F570001 // (class, run id): held by a live test binary
	lockClassTemplate     = 0x4F570002 // (class, fingerprint hash): building a template
	lockClassTemplateUsed = 0x4F570003 // (class, fingerprint hash): shared while a binary uses a template
)

// Opts tunes New. The zero value gives all four boundaries with the outbox
// line.
type Opts struct {
	// Boundaries to create (all four when empty).
	Boundaries []boundary.Boundary
	// Lines are the migration lines applied (the outbox line alone when
	// empty); each boundary gets the ones that apply to it.
	Lines []migrate.Line
	// MaxConns per pool (default 4).
	MaxConns int32
	// SearchPath of pool connections. Default "pg_catalog": unqualified
	// table names fail loudly. Set "public" (or anything) to opt out.
	SearchPath string
}

// Bundle is one test's set of boundary databases.
type Bundle struct {
	// Prefix of the database names: <Prefix>_core, ...
	Prefix string
	// Pools and DSNs per created boundary.
	Pools map[boundary.Boundary]*pgxpool.Pool
	DSNs  map[boundary.Boundary]string

	cleanupOnce sync.Once
}

// Pool returns the pool of boundary b; it panics when b was not created.
func (b *Bundle) Pool(bd boundary.Boundary) *pgxpool.Pool {
	p, ok := b.Pools[bd]
	if !ok {
		panic(fmt.Sprintf("dbtest: boundary %s was not created", bd))
	}
	return p
}

// Core, Execution, Gateway and Metering return the boundary pools.
func (b *Bundle) Core() *pgxpool.Pool      { return b.Pool(boundary.Core) }
func (b *Bundle) Execution() *pgxpool.Pool { return b.Pool(boundary.Execution) }
func (b *Bundle) Gateway() *pgxpool.Pool   { return b.Pool(boundary.Gateway) }
func (b *Bundle) Metering() *pgxpool.Pool  { return b.Pool(boundary.Metering) }

// Cleanup closes the pools and drops the databases. New registers it with
// t.Cleanup; calling it again is a no-op.
func (b *Bundle) Cleanup() {
	b.cleanupOnce.Do(func() {
		for _, p := range b.Pools {
			p.Close()
		}
		if h, err := harness(context.Background()); err == nil {
			for _, dsn := range b.DSNs {
				cfg, err := pgx.ParseConfig(dsn)
				if err == nil {
					h.dropDatabase(context.Background(), cfg.Database)
				}
			}
		}
	})
}

// New creates the boundary databases for one test and registers their
// removal with t.Cleanup. Safe for parallel tests.
func New(t testing.TB, opts ...Opts) *Bundle {
	t.Helper()
	var o Opts
	if len(opts) > 0 {
		o = opts[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := NewBundle(ctx, o)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(b.Cleanup)
	return b
}

// NewBundle is New without a testing.TB; the caller must call Cleanup.
func NewBundle(ctx context.Context, o Opts) (*Bundle, error) {
	h, err := harness(ctx)
	if err != nil {
		return nil, err
	}
	bs := o.Boundaries
	if len(bs) == 0 {
		bs = boundary.All
	}
	lines := o.Lines
	if len(lines) == 0 {
		lines = []migrate.Line{outboxschema.Line()}
	}
	lines, err = overlayLines(lines)
	if err != nil {
		return nil, err
	}
	set, err := h.lineSet(ctx, lines)
	if err != nil {
		return nil, err
	}
	maxConns := o.MaxConns
	if maxConns <= 0 {
		maxConns = 4
	}
	searchPath := o.SearchPath
	if searchPath == "" {
		searchPath = "pg_catalog"
	}
	b := &Bundle{
		Prefix: fmt.Sprintf("owt_%08x_%d", h.runID, h.counter.Add(1)),
		Pools:  map[boundary.Boundary]*pgxpool.Pool{},
		DSNs:   map[boundary.Boundary]string{},
	}
	for _, bd := range bs {
		tmpl, err := h.template(ctx, set, bd)
		if err != nil {
			b.Cleanup()
			return nil, err
		}
		name := migrate.DatabaseName(b.Prefix, bd)
		if err := h.createDatabase(ctx, name, tmpl); err != nil {
			b.Cleanup()
			return nil, err
		}
		dsn := h.srv.DatabaseURL(name)
		b.DSNs[bd] = dsn
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			b.Cleanup()
			return nil, err
		}
		cfg.MaxConns = maxConns
		cfg.ConnConfig.RuntimeParams["search_path"] = searchPath
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Cleanup()
			return nil, err
		}
		b.Pools[bd] = pool
	}
	return b, nil
}

// NewPrefix returns a fresh database name prefix for a test that creates
// its own databases (e.g. through migrate.Provision): <prefix>_<boundary>
// databases belong to this test binary's run, so they are dropped by the
// test's cleanup and swept if the binary dies.
func NewPrefix(t testing.TB) string {
	t.Helper()
	h, err := harness(context.Background())
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	prefix := fmt.Sprintf("owt_%08x_%d", h.runID, h.counter.Add(1))
	t.Cleanup(func() {
		for _, b := range boundary.All {
			h.dropDatabase(context.Background(), migrate.DatabaseName(prefix, b))
		}
	})
	return prefix
}

// RolePool opens a small pool on dsn whose sessions run as role (SET ROLE
// after connect), closed when the test ends: the least-privilege tests run
// production statements through it. The search path is pg_catalog only, so
// an unqualified table name fails there instead of passing by accident.
func RolePool(t testing.TB, dsn, role string) *pgxpool.Pool {
	t.Helper()
	return RolePoolWithParams(t, dsn, role, nil)
}

// RolePoolWithParams is RolePool with extra session parameters (for
// example default_transaction_isolation).
func RolePoolWithParams(t testing.TB, dsn, role string, params map[string]string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["search_path"] = "pg_catalog"
	for k, v := range params {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET ROLE "+pgx.Identifier{role}.Sanitize())
		return err
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Server returns the server the harness uses (found or started once per
// test binary).
func Server(t testing.TB) *pgserver.Server {
	t.Helper()
	h, err := harness(context.Background())
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return h.srv
}

// pgxAsyncClose ignores the goroutines pgconn keeps after a connection whose
// query was cancelled is closed: asyncClose sends a cancel request and a
// Terminate in the background with a 15 s deadline, and its background
// reader may still be draining. They end on their own; a loaded machine can
// keep them alive past goleak's retries. A pool left open is still caught
// (its health-check goroutine), and an idle connection left open has no
// goroutine for goleak to see either way.
var pgxAsyncClose = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgconn.(*PgConn).asyncClose.func1"),
	goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgconn/internal/bgreader.(*BGReader).bgRead"),
}

// Main runs the tests of a package, stops a throwaway cluster the harness
// started, and then fails the run when a goroutine outlived the tests
// (goleak): a pool, listener or dispatcher a test forgot to stop. Every test
// package under internal/ uses it: func TestMain(m *testing.M) { dbtest.Main(m) }.
// opts are targeted goleak ignores, each with a reason at the call site.
func Main(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	Close()
	if code == 0 {
		if err := goleak.Find(append(pgxAsyncClose, opts...)...); err != nil {
			fmt.Fprintf(os.Stderr, "dbtest: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Close releases the run lock and stops a throwaway cluster. Tests must not
// use the harness afterwards.
func Close() {
	hMu.Lock()
	defer hMu.Unlock()
	if h == nil {
		return
	}
	h.adminPool.Close()
	_ = h.lockConn.Close(context.Background())
	_ = h.srv.Stop()
	h, hErr = nil, errors.New("dbtest: closed")
}

// ---------------------------------------------------------------------------

type state struct {
	srv     *pgserver.Server
	runID   uint32
	counter atomic.Int64

	lockMu    sync.Mutex
	lockConn  *pgx.Conn     // session: holds the run lock and the template-use lock
	adminPool *pgxpool.Pool // CREATE/DROP DATABASE (maintenance database)

	tmplMu    sync.Mutex
	templates map[string]string // "<fingerprint>/<boundary>" → template database
	sets      map[string]bool   // fingerprints whose use lock this binary holds
}

// lineSet is one set of migration lines and its fingerprint.
type lineSet struct {
	lines []migrate.Line
	fp    string // first 16 hex digits of migrate.Fingerprint
}

var (
	hMu  sync.Mutex
	h    *state
	hErr error
)

func harness(ctx context.Context) (*state, error) {
	hMu.Lock()
	defer hMu.Unlock()
	if h != nil || hErr != nil {
		return h, hErr
	}
	h, hErr = setup(ctx)
	return h, hErr
}

func setup(ctx context.Context) (*state, error) {
	srv, err := pgserver.Find(ctx, pgserver.Opts{})
	if err != nil {
		return nil, err
	}
	s := &state{srv: srv, templates: map[string]string{}, sets: map[string]bool{}}
	s.lockConn, err = pgx.Connect(ctx, srv.URL)
	if err != nil {
		_ = srv.Stop()
		return nil, fmt.Errorf("connect %s server: %w", srv.Source, err)
	}
	poolCfg, err := pgxpool.ParseConfig(srv.URL)
	if err != nil {
		return nil, err
	}
	poolCfg.MaxConns = 4
	if s.adminPool, err = pgxpool.NewWithConfig(ctx, poolCfg); err != nil {
		return nil, err
	}
	for {
		var buf [4]byte
		_, _ = rand.Read(buf[:])
		s.runID = binary.BigEndian.Uint32(buf[:]) & 0x7fffffff
		var ok bool
		if err := s.lockConn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1::int4, $2::int4)", lockClassRun, int32(s.runID)).Scan(&ok); err != nil {
			return nil, fmt.Errorf("run lock: %w", err)
		}
		if ok {
			break
		}
	}
	if err := s.sweep(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

var leftover = regexp.MustCompile(`^owt_([0-9a-f]{8})_\d+_[a-z]+$`)

// sweep drops the databases of test binaries that are gone.
func (s *state) sweep(ctx context.Context) error {
	rows, err := s.lockConn.Query(ctx, "SELECT datname FROM pg_catalog.pg_database WHERE datname LIKE 'owt\\_%'")
	if err != nil {
		return fmt.Errorf("list leftovers: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list leftovers: %w", err)
	}
	byRun := map[uint32][]string{}
	for _, n := range names {
		m := leftover.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		run, _ := strconv.ParseUint(m[1], 16, 32)
		byRun[uint32(run)] = append(byRun[uint32(run)], n)
	}
	for run, dbs := range byRun {
		if run == s.runID {
			continue
		}
		var free bool
		if err := s.lockConn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1::int4, $2::int4)", lockClassRun, int32(run)).Scan(&free); err != nil {
			return err
		}
		if !free {
			continue // that binary is still running
		}
		for _, d := range dbs {
			s.dropDatabase(ctx, d)
		}
		if _, err := s.lockConn.Exec(ctx, "SELECT pg_advisory_unlock($1::int4, $2::int4)", lockClassRun, int32(run)); err != nil {
			return err
		}
	}
	return nil
}

// lineSet fingerprints lines. The first time this binary uses a set, it
// holds the set's template-use lock (shared) so no other binary sweeps its
// templates, and creates the lines' roles: tests SET ROLE to them even when
// the templates were built by an earlier run.
func (s *state) lineSet(ctx context.Context, lines []migrate.Line) (lineSet, error) {
	fp, err := migrate.Fingerprint(lines)
	if err != nil {
		return lineSet{}, err
	}
	set := lineSet{lines: lines, fp: fp[:16]}
	s.tmplMu.Lock()
	defer s.tmplMu.Unlock()
	if s.sets[set.fp] {
		return set, nil
	}
	roles, err := migrate.Roles(lines)
	if err != nil {
		return lineSet{}, err
	}
	s.lockMu.Lock()
	defer s.lockMu.Unlock()
	if err := migrate.EnsureRoles(ctx, s.lockConn, roles); err != nil {
		return lineSet{}, err
	}
	if _, err := s.lockConn.Exec(ctx, "SELECT pg_advisory_lock_shared($1::int4, $2::int4)", lockClassTemplateUsed, int32(hash32(set.fp))); err != nil {
		return lineSet{}, err
	}
	if len(s.sets) == 0 {
		// Sweep the templates of other fingerprints nobody uses, once: a
		// later sweep would take our own use locks (a session never
		// conflicts with itself) and drop templates we use.
		if err := s.sweepTemplates(ctx, set.fp); err != nil {
			return lineSet{}, err
		}
	}
	s.sets[set.fp] = true
	return set, nil
}

// template returns the template database of boundary b with the lines of
// set, building it once.
func (s *state) template(ctx context.Context, set lineSet, b boundary.Boundary) (string, error) {
	s.tmplMu.Lock()
	defer s.tmplMu.Unlock()
	if name, ok := s.templates[set.fp+"/"+string(b)]; ok {
		return name, nil
	}
	name := fmt.Sprintf("owtmpl_%s_%s", set.fp, b)
	key := int32(hash32(set.fp))

	s.lockMu.Lock()
	defer s.lockMu.Unlock()
	if _, err := s.lockConn.Exec(ctx, "SELECT pg_advisory_lock($1::int4, $2::int4)", lockClassTemplate, key); err != nil {
		return "", fmt.Errorf("template lock: %w", err)
	}
	defer func() {
		_, _ = s.lockConn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1::int4, $2::int4)", lockClassTemplate, key)
	}()
	var isTemplate *bool
	err := s.lockConn.QueryRow(ctx, "SELECT datistemplate FROM pg_catalog.pg_database WHERE datname = $1", name).Scan(&isTemplate)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	if isTemplate == nil || !*isTemplate {
		// Missing, or half-built by a binary that died: (re)build.
		s.dropDatabase(ctx, name)
		if _, err := s.lockConn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", fmt.Errorf("create template %s: %w", name, err)
		}
		if _, err := migrate.Up(ctx, s.srv.DatabaseURL(name), b, set.lines, migrate.Opts{NoLock: true}); err != nil {
			return "", fmt.Errorf("migrate template %s: %w", name, err)
		}
		if _, err := s.lockConn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH IS_TEMPLATE true"); err != nil {
			return "", err
		}
	}
	s.templates[set.fp+"/"+string(b)] = name
	return name, nil
}

var templateName = regexp.MustCompile(`^owtmpl_([0-9a-f]{16})_[a-z]+$`)

// sweepTemplates drops the templates of other migration fingerprints that no
// running binary uses (nobody holds their use lock shared).
func (s *state) sweepTemplates(ctx context.Context, current string) error {
	rows, err := s.lockConn.Query(ctx, "SELECT datname FROM pg_catalog.pg_database WHERE datname LIKE 'owtmpl\\_%'")
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	byFP := map[string][]string{}
	for _, n := range names {
		if m := templateName.FindStringSubmatch(n); m != nil && m[1] != current {
			byFP[m[1]] = append(byFP[m[1]], n)
		}
	}
	for fp, dbs := range byFP {
		key := int32(hash32(fp))
		var free bool
		if err := s.lockConn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1::int4, $2::int4)", lockClassTemplateUsed, key).Scan(&free); err != nil {
			return err
		}
		if !free {
			continue
		}
		for _, d := range dbs {
			s.dropDatabase(ctx, d)
		}
		if _, err := s.lockConn.Exec(ctx, "SELECT pg_advisory_unlock($1::int4, $2::int4)", lockClassTemplateUsed, key); err != nil {
			return err
		}
	}
	return nil
}

func (s *state) createDatabase(ctx context.Context, name, template string) error {
	_, err := s.adminPool.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

func (s *state) dropDatabase(ctx context.Context, name string) {
	ident := pgx.Identifier{name}.Sanitize()
	_, _ = s.adminPool.Exec(ctx, "ALTER DATABASE "+ident+" WITH IS_TEMPLATE false")
	_, _ = s.adminPool.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
}

func hash32(s string) uint32 {
	f := fnv.New32a()
	_, _ = f.Write([]byte(s))
	return f.Sum32() & 0x7fffffff
}
