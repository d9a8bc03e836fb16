package cutover

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/cutover/dbsqlc"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/transport"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// Statements sqlc can express are generated into dbsqlc from queries/; the
// rest (optional scopes, views of another line, wide aggregate rows) are
// loaded from sql/.
var (
	stmts   = db.MustLoadStatements("cutover", sqlFiles, "sql")
	queries = dbsqlc.New()
)

var (
	qSourceMissing          = stmts.Get("source_missing")
	qSourceByIDs            = stmts.Get("source_by_ids")
	qCandidateInsert        = stmts.Get("candidate_insert")
	qCandidateMembersInsert = stmts.Get("candidate_members_insert")
	qCandidateCheck         = stmts.Get("candidate_check")
	qCutoverGate            = stmts.Get("cutover_gate")
	qArchivedSource         = stmts.Get("archived_source")
	qFingerprint            = stmts.Get("fingerprint")
	qStatusBuilds           = stmts.Get("status_builds")
	qStatusVersions         = stmts.Get("status_versions")
)

// Custom SQLSTATEs of the operations line (migration 00003).
const (
	SQLStateShadowFence     = "OP003"
	SQLStateOutsideBoundary = "OP004"
	SQLStateProofRefused    = "OP005"
	// SQLStateInsertOnly: update/delete of an insert-only fact (00001).
	SQLStateInsertOnly = "OP001"
)

// Errors.
var (
	// ErrFenced: the database refused a shadow write (stale or old token,
	// paused build, switched version: OP003; outside the frozen candidate:
	// OP004). The holder must stop.
	ErrFenced = errors.New("cutover: shadow write refused by the shadow fence")
	// ErrActiveVersion: the version asked for is the active one.
	ErrActiveVersion = errors.New("cutover: projection version is the active one")
	// ErrNoShadow: the version has no shadow build in the state needed.
	ErrNoShadow = errors.New("cutover: projection version has no shadow build in the required state")
	// ErrNotReady: the shadow does not cover the candidate (a missing
	// receipt, an unresolved gap, unsupported schema or quarantine).
	ErrNotReady = errors.New("cutover: shadow version is not ready")
	// ErrProofRefused: the database refused the readiness proof (OP005).
	ErrProofRefused = errors.New("cutover: readiness proof refused")
	// ErrArchivedSource: part of the projection's source was archived by
	// retention (RET-1); the shadow build reads hot events only, so a build
	// or cutover over it would prove fewer events than the source holds.
	ErrArchivedSource = errors.New("cutover: part of the projection source is archived; a shadow build cannot cover it")
	// ErrCandidateChanged: the frozen candidate or the build changed under
	// the final transaction.
	ErrCandidateChanged = errors.New("cutover: candidate or shadow claim changed before the switch")
)

// Pool is what the package needs of a database pool.
type Pool interface {
	db.Executor
	db.Beginner
	db.TxBeginner
}

var _ Pool = (*pgxpool.Pool)(nil)

// Config configures builds and cutovers.
type Config struct {
	// ProjectionName defaults to projector.ProjectionName.
	ProjectionName string
	// Batch is the page size of the source feed. Default 200.
	Batch int
	// Owner names the claim holder (status only). Default "oceanway".
	Owner string
	// Projector configures the projector instances that feed the shadow
	// (Inbox timeouts, BillingReads, WorkerVersion); ShadowToken and
	// Versions are set here.
	Projector projector.Config
}

func (c Config) withDefaults() Config {
	if c.ProjectionName == "" {
		c.ProjectionName = projector.ProjectionName
	}
	if c.Batch <= 0 {
		c.Batch = 200
	}
	if c.Owner == "" {
		c.Owner = "oceanway"
	}
	return c
}

// FeedResult counts one catch-up of a version from the source.
type FeedResult struct {
	// Applied is the number of source events applied (receipt written).
	Applied int64 `json:"applied"`
	// Waiting is the number of source events that still wait (revision
	// gap, unsupported pair, owner read) after the last pass.
	Waiting int64 `json:"waiting"`
	// Passes is the number of passes over the missing source events.
	Passes int `json:"passes"`
}

// feed applies every source event without a receipt of version v through a
// projector (shadow when token != ""), scoped to candidate when set, else
// to the events appended up to the database time at its start, in passes
// until a pass applies nothing. A refused write is ErrFenced.
func feed(ctx context.Context, pool Pool, cfg Config, v int64, token, candidate string) (FeedResult, error) {
	var until *time.Time
	if candidate == "" {
		rows, err := pool.Query(ctx, "SELECT now()")
		if err != nil {
			return FeedResult{}, fmt.Errorf("read database time: %w", err)
		}
		now, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[time.Time])
		if err != nil {
			return FeedResult{}, fmt.Errorf("read database time: %w", err)
		}
		until = &now
	}
	pcfg := cfg.Projector
	pcfg.Versions = []int64{v}
	pcfg.ShadowToken = token
	p, err := projector.New(pool, pcfg)
	if err != nil {
		return FeedResult{}, err
	}
	var res FeedResult
	for {
		res.Passes++
		applied, waiting, err := feedPass(ctx, pool, p, cfg, v, candidate, until)
		res.Applied += applied
		res.Waiting = waiting
		if err != nil || applied == 0 {
			return res, err
		}
	}
}

type sourceRow struct {
	EventID                      string    `db:"event_id"`
	EventType                    string    `db:"event_type"`
	EventSchemaVersion           string    `db:"event_schema_version"`
	EventEnvelope                string    `db:"event_envelope"`
	Alg                          string    `db:"alg"`
	Sha                          string    `db:"sha"`
	Destination                  string    `db:"destination"`
	ConsumerName                 string    `db:"consumer_name"`
	ExpectedReceiptType          string    `db:"expected_receipt_type"`
	ExpectedReceiptSchemaVersion string    `db:"expected_receipt_schema_version"`
	Mandatory                    bool      `db:"mandatory"`
	CreatedAt                    time.Time `db:"created_at"`
}

func feedPass(ctx context.Context, pool Pool, p *projector.Projector, cfg Config, v int64, candidate string, until *time.Time) (applied, waiting int64, err error) {
	var cand *string
	if candidate != "" {
		cand = &candidate
	}
	rows, err := pool.Query(ctx, qSourceMissing, pgx.NamedArgs{
		"projection_name": cfg.ProjectionName, "projection_version": v, "candidate_id": cand, "until": until,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("read missing source events: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, 0, fmt.Errorf("read missing source events: %w", err)
	}
	for len(ids) > 0 {
		page := ids[:min(cfg.Batch, len(ids))]
		ids = ids[len(page):]
		rows, err := pool.Query(ctx, qSourceByIDs, pgx.NamedArgs{"projection_name": cfg.ProjectionName, "event_ids": page})
		if err != nil {
			return applied, waiting, fmt.Errorf("read source events: %w", err)
		}
		events, err := pgx.CollectRows(rows, pgx.RowToStructByName[sourceRow])
		if err != nil {
			return applied, waiting, fmt.Errorf("read source events: %w", err)
		}
		for _, r := range events {
			_, err := p.Consume(ctx, r.delivery(cfg.ProjectionName, v))
			switch state := db.SQLState(err); {
			case err == nil:
				applied++
			case state == SQLStateShadowFence || state == SQLStateOutsideBoundary:
				return applied, waiting, fmt.Errorf("%w: %w", ErrFenced, err)
			case ctx.Err() != nil:
				return applied, waiting, ctx.Err()
			default:
				var c transport.Classified
				if !errors.As(err, &c) || !c.Retryable() {
					return applied, waiting, fmt.Errorf("apply source event %s: %w", r.EventID, err)
				}
				waiting++ // gap, unsupported pair, owner read: the next pass or a later feed
			}
		}
	}
	return applied, waiting, nil
}

// delivery is the source event as the projector's delivery for version v:
// the frozen member with its projection target set to v.
func (r sourceRow) delivery(name string, v int64) transport.Delivery {
	return transport.Delivery{
		EventID: r.EventID, EventType: r.EventType, EventSchemaVersion: r.EventSchemaVersion,
		Envelope:       []byte(r.EventEnvelope),
		EnvelopeDigest: digest.Digest{Algorithm: digest.Algorithm(r.Alg), Value: r.Sha},
		Member: route.Member{
			EventType: r.EventType, EventSchemaVersion: r.EventSchemaVersion,
			Destination: route.Destination(r.Destination), ConsumerName: r.ConsumerName,
			ExpectedReceiptType: r.ExpectedReceiptType, ExpectedReceiptSchemaVersion: r.ExpectedReceiptSchemaVersion,
			ProjectionTarget: route.Required(name, v), Mandatory: r.Mandatory,
		},
		AttemptID: "shadow-" + r.EventID, AttemptNumber: 1,
	}
}

// ShadowResult is the outcome of a shadow build.
type ShadowResult struct {
	ProjectionName    string     `json:"projectionName"`
	ProjectionVersion int64      `json:"projectionVersion"`
	Feed              FeedResult `json:"feed"`
	Fingerprint       Print      `json:"fingerprint"`
}

// Shadow claims the shadow build of version v (registering the version in
// the outbox registry; a fresh claim token fences any previous holder out)
// and builds it from the source until a pass applies nothing. With follow,
// it keeps feeding events as they arrive until ctx ends (nil error then).
// The active version keeps serving meanwhile.
func Shadow(ctx context.Context, pool Pool, cfg Config, v int64, follow bool, poll time.Duration) (ShadowResult, error) {
	cfg = cfg.withDefaults()
	token, err := claim(ctx, pool, cfg, v)
	if err != nil {
		return ShadowResult{}, err
	}
	res := ShadowResult{ProjectionName: cfg.ProjectionName, ProjectionVersion: v}
	for {
		f, err := feed(ctx, pool, cfg, v, token, "")
		res.Feed.Applied += f.Applied
		res.Feed.Waiting = f.Waiting
		res.Feed.Passes += f.Passes
		if err != nil && !(follow && ctx.Err() != nil) {
			return res, err
		}
		if !follow || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
	fctx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		fctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
	}
	res.Fingerprint, err = Fingerprint(fctx, pool, cfg.ProjectionName, v)
	return res, err
}

// claim registers version v and claims its shadow build with a new token.
func claim(ctx context.Context, pool Pool, cfg Config, v int64) (string, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (string, error) {
		active, err := activeVersion(ctx, tx, cfg.ProjectionName)
		if err != nil {
			return "", err
		}
		if active == v {
			return "", fmt.Errorf("%w: %s@%d", ErrActiveVersion, cfg.ProjectionName, v)
		}
		if err := refuseArchivedSource(ctx, tx, cfg.ProjectionName, ""); err != nil {
			return "", err
		}
		if err := outbox.RegisterProjectionVersionTx(ctx, tx, cfg.ProjectionName, v); err != nil {
			return "", err
		}
		token, err := queries.BuildClaim(ctx, tx, dbsqlc.BuildClaimParams{
			ProjectionName: cfg.ProjectionName, ProjectionVersion: v, Token: uuid.NewString(), Owner: cfg.Owner,
		})
		if err = db.NotFound(err); errors.Is(err, db.ErrNotFound) {
			return "", fmt.Errorf("%w: %s@%d was cut over already", ErrNoShadow, cfg.ProjectionName, v)
		}
		if err != nil {
			return "", fmt.Errorf("claim shadow build: %w", err)
		}
		return token, nil
	})
}

// activeVersion reads the active pointer of a projection (0: none).
func activeVersion(ctx context.Context, q db.Executor, name string) (int64, error) {
	rows, err := q.Query(ctx, `SELECT projection_version FROM outbox.active_projections WHERE projection_name = $1`, name)
	if err != nil {
		return 0, fmt.Errorf("read active projection: %w", err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	if err = db.NotFound(err); errors.Is(err, db.ErrNotFound) {
		return 0, nil
	}
	return v, err
}

// Print is the content fingerprint of one projection version.
type Print struct {
	ProjectionVersion int64  `json:"projectionVersion"`
	Receipts          int64  `json:"receipts"`
	SHA256            string `json:"sha256"`
}

// Fingerprint digests the content of version v of a projection: a value
// that does not depend on build order or on the version number, so a
// rebuilt version equals the version it was rebuilt from (see
// sql/fingerprint.sql for what is included).
func Fingerprint(ctx context.Context, q db.Executor, name string, v int64) (Print, error) {
	if name == "" {
		name = projector.ProjectionName
	}
	rows, err := q.Query(ctx, qFingerprint, pgx.NamedArgs{"projection_name": name, "projection_version": v})
	if err != nil {
		return Print{}, fmt.Errorf("fingerprint %s@%d: %w", name, v, err)
	}
	type row struct {
		Receipts int64  `db:"receipts"`
		SHA256   string `db:"sha256"`
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[row])
	if err != nil {
		return Print{}, fmt.Errorf("fingerprint %s@%d: %w", name, v, err)
	}
	return Print{ProjectionVersion: v, Receipts: r.Receipts, SHA256: r.SHA256}, nil
}

// CatchUp feeds version v (the active one, or any version without a shadow
// build) from the source without a shadow token: after a switch the new
// active version catches up on the events appended after the freeze.
func CatchUp(ctx context.Context, pool Pool, cfg Config, v int64) (FeedResult, error) {
	return feed(ctx, pool, cfg.withDefaults(), v, "", "")
}

// refuseArchivedSource returns ErrArchivedSource when archived events of the
// projection's source are outside the candidate (all of them when candidate
// is empty): the shadow feed cannot see them.
func refuseArchivedSource(ctx context.Context, q db.Executor, name, candidate string) error {
	var c *string
	if candidate != "" {
		c = &candidate
	}
	var n int64
	if err := q.QueryRow(ctx, qArchivedSource, pgx.NamedArgs{"projection_name": name, "candidate_id": c}).Scan(&n); err != nil {
		return fmt.Errorf("count archived source events: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("%w: %d archived events of %s are outside the shadow's source", ErrArchivedSource, n, name)
	}
	return nil
}
