package admin

import (
	"context"
	"embed"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/internal/admin/dbsqlc"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
)

// The event lookups (one column list, fragment_event_columns.sql) and the
// two statements with a nullable min() sqlc cannot type are loaded from
// sql/; every other query is generated into dbsqlc from queries/.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var (
	stmts   = db.MustLoadStatements("admin", sqlFiles, "sql")
	queries = dbsqlc.New()
)

// The loaded statements, resolved once (a typo fails at package init).
var (
	qCompletenessEvents = stmts.Get("completeness_events")
	qDeliveryCounts     = stmts.Get("delivery_counts")
	qEventById          = stmts.Get("event_by_id")
	qEventsByReference  = stmts.Get("events_by_reference")
)

// Boundaries maps a boundary name (core, execution, gateway, metering) to
// the pool of its producer database.
type Boundaries map[string]*pgxpool.Pool

// boundaryOrder is the display order of the known boundaries (their order
// in boundary.All); other names follow alphabetically.
var boundaryOrder = func() map[string]int {
	order := make(map[string]int, len(boundary.All))
	for i, b := range boundary.All {
		order[string(b)] = i
	}
	return order
}()

// Names returns the boundary names in display order.
func (b Boundaries) Names() []string {
	names := make([]string, 0, len(b))
	for n := range b {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		oi, iKnown := boundaryOrder[names[i]]
		oj, jKnown := boundaryOrder[names[j]]
		switch {
		case iKnown && jKnown:
			return oi < oj
		case iKnown != jKnown:
			return iKnown
		default:
			return names[i] < names[j]
		}
	})
	return names
}

// Config bounds what a Reader reads. The zero value gives the defaults.
type Config struct {
	// QuarantineLimit bounds the recent quarantine list (default 50).
	QuarantineLimit int
	// LookupLimit bounds the events a run or reservation lookup returns per
	// boundary (default 100).
	LookupLimit int
	// AttemptLimit bounds the attempt rows a lookup returns per boundary
	// (default 5000).
	AttemptLimit int
	// MoneyListLimit bounds each list of the overview's money sections:
	// open late settlement exposures and blocked Metering Work (default 20).
	MoneyListLimit int
	// CaseListLimit bounds each list of the Cases page: open cases and
	// resolved cases (default 50).
	CaseListLimit int
	// CaseRequestLimit bounds the resolution command requests read for the
	// cases listed (default 1000).
	CaseRequestLimit int
	// StatementTimeout bounds every statement, server side (SET LOCAL
	// statement_timeout) and client side (default 10s).
	StatementTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultQuarantineLimit  = 50
	DefaultLookupLimit      = 100
	DefaultAttemptLimit     = 5000
	DefaultStatementTimeout = 10 * time.Second
)

func (c Config) withDefaults() Config {
	if c.QuarantineLimit <= 0 {
		c.QuarantineLimit = DefaultQuarantineLimit
	}
	if c.LookupLimit <= 0 {
		c.LookupLimit = DefaultLookupLimit
	}
	if c.AttemptLimit <= 0 {
		c.AttemptLimit = DefaultAttemptLimit
	}
	if c.MoneyListLimit <= 0 {
		c.MoneyListLimit = DefaultMoneyListLimit
	}
	if c.CaseListLimit <= 0 {
		c.CaseListLimit = DefaultCaseListLimit
	}
	if c.CaseRequestLimit <= 0 {
		c.CaseRequestLimit = DefaultCaseRequestLimit
	}
	if c.StatementTimeout <= 0 {
		c.StatementTimeout = DefaultStatementTimeout
	}
	return c
}

// Reader runs the read-only admin queries over a set of producer databases.
// It is safe for concurrent use.
type Reader struct {
	boundaries Boundaries
	names      []string
	cfg        Config
}

// NewReader builds a reader over the given boundaries; the caller keeps
// ownership of the pools.
func NewReader(b Boundaries, cfg Config) *Reader {
	own := make(Boundaries, len(b))
	for n, p := range b {
		if p != nil {
			own[n] = p
		}
	}
	return &Reader{boundaries: own, names: own.Names(), cfg: cfg.withDefaults()}
}

// BoundaryNames returns the boundaries the reader reads, in display order.
func (r *Reader) BoundaryNames() []string { return append([]string(nil), r.names...) }

// Config returns the effective configuration (defaults applied).
func (r *Reader) Config() Config { return r.cfg }

// BoundaryStatus says whether one boundary could be read, and as of when.
type BoundaryStatus struct {
	Boundary string `json:"boundary"`
	// Database is the database name the pool is connected to.
	Database string `json:"database,omitempty"`
	// AsOf is the database time of the read's snapshot.
	AsOf time.Time `json:"asOf"`
	// Error is set when the boundary could not be read; its other results
	// are then missing.
	Error string `json:"error,omitempty"`
}

// readOnly runs fn in a READ ONLY, REPEATABLE READ transaction on pool with
// a local statement timeout. It is the only way this package touches a
// database: a write inside fn fails with SQLSTATE 25006.
func (r *Reader) readOnly(ctx context.Context, pool *pgxpool.Pool, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.StatementTimeout+time.Second)
	defer cancel()
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	return db.WithTxOptions(ctx, pool, opts, func(ctx context.Context, tx pgx.Tx) error {
		ms := fmt.Sprintf("%dms", r.cfg.StatementTimeout.Milliseconds())
		if err := queries.StatementTimeoutSet(ctx, tx, ms); err != nil {
			return fmt.Errorf("set statement timeout: %w", err)
		}
		return fn(ctx, tx)
	})
}

// eachBoundary reads every boundary in its own read-only transaction, in
// display order, and reports each one's status. fn starts after the
// snapshot row is read.
func (r *Reader) eachBoundary(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx, st BoundaryStatus) error) []BoundaryStatus {
	out := make([]BoundaryStatus, 0, len(r.names))
	for _, name := range r.names {
		st := BoundaryStatus{Boundary: name}
		err := r.readOnly(ctx, r.boundaries[name], func(ctx context.Context, tx pgx.Tx) error {
			snap, err := queries.Snapshot(ctx, tx)
			if err != nil {
				return fmt.Errorf("read snapshot time: %w", err)
			}
			st.AsOf, st.Database = snap.AsOf.UTC(), snap.Database
			return fn(ctx, tx, st)
		})
		if err != nil {
			st.Error = err.Error()
		}
		out = append(out, st)
	}
	return out
}

// Failed returns the statuses that carry an error.
func Failed(statuses []BoundaryStatus) []BoundaryStatus {
	var out []BoundaryStatus
	for _, s := range statuses {
		if s.Error != "" {
			out = append(out, s)
		}
	}
	return out
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
