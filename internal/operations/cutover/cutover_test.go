package cutover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

type bundle struct {
	dsn   string
	pool  *pgxpool.Pool
	adm   *admission.Service
	proj  *projector.Projector
	store *dispatcher.Store
	cfg   Config
}

func setup(t *testing.T, maxConns int32) *bundle {
	t.Helper()
	dbs := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: lines.All(), MaxConns: maxConns})
	pool := dbs.Core()
	_, err := release.Bootstrap(t.Context(), pool, release.BootstrapParams{
		ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "test",
	})
	require.NoError(t, err)
	p, err := projector.New(pool, projector.Config{Versions: []int64{1, 2}, BillingReads: operationstest.Found()})
	require.NoError(t, err)
	return &bundle{dsn: dbs.DSNs[boundary.Core], pool: pool, adm: admission.New(pool), proj: p, store: dispatcher.NewStore(pool, 5*time.Second),
		cfg: Config{Batch: 7, Projector: projector.Config{BillingReads: operationstest.Found()}}}
}

func admitRequest() admission.Request {
	return admission.Request{
		AdmissionOperationID: uuid.NewString(), TenantKind: envelope.TenantOrganization,
		TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 100,
	}
}

func (b *bundle) admit(ctx context.Context, n int) error {
	for range n {
		if _, err := b.adm.Admit(ctx, admitRequest()); err != nil {
			return err
		}
	}
	return nil
}

// deliverAll plays a dispatcher by hand: claim, consume, verify and ack,
// until nothing is claimable.
func (b *bundle) deliverAll(ctx context.Context) error {
	for {
		claims, err := b.store.Claim(ctx, dispatcher.ClaimParams{Owner: "test", Destinations: []route.Destination{route.CoreOperations}, Limit: 50, Lease: time.Minute})
		if err != nil || len(claims) == 0 {
			return err
		}
		for _, c := range claims {
			res, err := b.proj.Consume(ctx, c.Delivery())
			if err != nil {
				return err
			}
			if err := b.store.VerifyAndAck(ctx, c, res); err != nil {
				return err
			}
		}
	}
}

func (b *bundle) print(t *testing.T, v int64) Print {
	t.Helper()
	p, err := Fingerprint(t.Context(), b.pool, projector.ProjectionName, v)
	require.NoError(t, err)
	return p
}

func count(t *testing.T, q db.Executor, sql string, args ...any) int64 {
	t.Helper()
	rows, err := q.Query(t.Context(), sql, args...)
	require.NoError(t, err)
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return n
}

// DS-8 shadow rebuild: a shadow of version 2 built from the outbox source
// while admissions and deliveries keep arriving (the active version keeps
// serving) reaches exactly the active version's fingerprint once the source
// is quiet, and the fingerprint does not depend on the version number or
// build order (receipts, refs and application times differ).
func TestDS8ShadowBuiltWhileEventsArriveReachesActiveFingerprint(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 16), t.Context()
	require.NoError(t, b.admit(ctx, 10))
	require.NoError(t, b.deliverAll(ctx))

	live := make(chan error, 1)
	go func() {
		for range 15 {
			if err := b.admit(ctx, 2); err != nil {
				live <- err
				return
			}
			if err := b.deliverAll(ctx); err != nil {
				live <- err
				return
			}
		}
		live <- nil
	}()
	var last ShadowResult
	for done := false; !done; {
		select {
		case err := <-live:
			require.NoError(t, err)
			done = true
		default:
		}
		res, err := Shadow(ctx, b.pool, b.cfg, 2, false, 0)
		require.NoError(t, err)
		last = res
	}
	require.Positive(t, last.Feed.Passes)

	active := b.print(t, 1)
	require.EqualValues(t, 80, active.Receipts, "40 runs, 2 events each")
	require.NotEqual(t, active, b.print(t, 2), "the source moved on after the last shadow pass")
	res, err := Shadow(ctx, b.pool, b.cfg, 2, false, 0)
	require.NoError(t, err)
	require.Equal(t, active.SHA256, res.Fingerprint.SHA256)
	require.Equal(t, active.Receipts, res.Fingerprint.Receipts)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM operations.applied_receipts a JOIN operations.applied_receipts s
		ON s.event_id = a.event_id AND s.projection_version = 2 AND a.projection_version = 1 WHERE a.receipt_digest = s.receipt_digest`),
		"receipts of the two versions are distinct objects")

	// The active pointer never moved; the version is not ready.
	st, err := ReadStatus(ctx, b.pool, "")
	require.NoError(t, err)
	require.EqualValues(t, 1, st.ActiveVersion)
	require.Len(t, st.Builds, 1)
	require.Equal(t, "building", st.Builds[0].State)
}

// DS-8 cutover racing live deliveries: admissions keep arriving and two real
// dispatchers keep delivering (their projectors build versions 1 and 2)
// while the shadow is built and the cutover runs all five steps. Nothing is
// lost (every delivery acknowledged, every source event has exactly one
// receipt of version 2 without any extra catch-up), nothing is applied twice
// (receipts ↔ mutations 1:1, aggregate revisions match), deliveries frozen
// before the switch were acknowledged with version 1 receipts and those
// after with version 2, and version 2 is proved complete and
// verified_current. Run with -race.
func TestDS8CutoverRacingLiveDeliveriesLosesNoneAppliesNoneTwice(t *testing.T) {
	t.Parallel()
	const admitters = 4
	b, ctx := setup(t, 48), t.Context()
	require.NoError(t, b.admit(ctx, 20))

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	runErrs := make(chan error, 2)
	for i := range 2 {
		p, err := projector.New(b.pool, projector.Config{Versions: []int64{1, 2}, BillingReads: operationstest.Found()})
		require.NoError(t, err)
		tr := transport.NewInProcess(map[route.Destination]transport.ConsumerFunc{route.CoreOperations: p.Consume})
		d, err := dispatcher.New(b.pool, tr, dispatcher.Config{
			WorkerID: fmt.Sprintf("race-%d", i), Destinations: []route.Destination{route.CoreOperations},
			BatchSize: 10, Concurrency: 4, LeaseDuration: 30 * time.Second,
			BackoffBase: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
			PollInterval: 10 * time.Millisecond, DrainTimeout: 10 * time.Second,
		}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(t, err)
		wg.Add(1)
		go func() { defer wg.Done(); runErrs <- d.Run(runCtx) }()
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	// Admitters run during the shadow build and the cutover; the freeze
	// hook admits behind the boundary (frozen to version 1, not in the
	// candidate); after the switch more admissions freeze version 2.
	admitErrs := make(chan error, admitters)
	for range admitters {
		go func() { admitErrs <- b.admit(ctx, 30) }()
	}
	_, err := Shadow(ctx, b.pool, b.cfg, 2, false, 0)
	require.NoError(t, err)
	res, err := Cutover(ctx, b.pool, b.cfg, 2, Hooks{AfterFreeze: func(ctx context.Context, _, _ string) error {
		return b.admit(ctx, 3)
	}})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.PreviousVersion)
	require.Positive(t, res.CandidateMembers)
	for range admitters {
		require.NoError(t, <-admitErrs)
	}
	require.NoError(t, b.admit(ctx, 10))
	total := count(t, b.pool, `SELECT count(*) FROM outbox.outbox_events`)
	t.Logf("%d events; candidate %d members, caught up %d, after the switch %d", total, res.CandidateMembers, res.CatchUp.Applied, res.AfterSwitch.Applied)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		n := int64(0)
		rows, err := b.pool.Query(ctx, `SELECT count(*) FROM outbox.outbox_deliveries WHERE status = 'acknowledged'`)
		require.NoError(c, err)
		n, err = pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
		require.NoError(c, err)
		require.Equal(c, total, n)
	}, 2*time.Minute, 20*time.Millisecond, "every delivery acknowledged")
	stop()
	wg.Wait()
	close(runErrs)
	for err := range runErrs {
		require.NoError(t, err)
	}

	report := outboxtest.RequireDrained(t, b.pool)
	require.EqualValues(t, total, report.Events)
	require.Equal(t, total, count(t, b.pool, `SELECT count(*) FROM operations.applied_receipts WHERE projection_version = 2`),
		"every source event has its version 2 receipt")
	require.Equal(t, total, count(t, b.pool, `SELECT count(*) FROM operations.projected_events WHERE projection_version = 2`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM outbox.outbox_deliveries d
		JOIN operations.applied_receipts r ON r.receipt_ref = d.ack_receipt_key
		WHERE r.projection_version <> d.required_projection_version`), "each ack names a receipt of its frozen version")
	require.Positive(t, count(t, b.pool, `SELECT count(*) FROM outbox.outbox_deliveries WHERE required_projection_version = 2`),
		"admissions after the switch froze version 2")

	rm := readmodel.New(b.pool)
	proof, err := rm.ProveCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, operationstest.Target(2), proof.Projection)
	require.Equal(t, readmodel.CompleteForSupportedScope, proof.ProjectionCompleteness, "reasons %v", proof.Reasons)
	c, err := rm.Completeness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, readmodel.VerifiedCurrent, c.SnapshotCurrency)
	require.Zero(t, proof.Inputs.Semantic.Violations())

	// The proof is content addressed and immutable.
	st, err := ReadStatus(ctx, b.pool, "")
	require.NoError(t, err)
	require.EqualValues(t, 2, st.ActiveVersion)
	require.Equal(t, "cut_over", st.Builds[0].State)
	require.NotNil(t, st.Builds[0].ProofBody)
	d, err := digest.OfJSON(digest.JCSSHA256V1, []byte(*st.Builds[0].ProofBody))
	require.NoError(t, err)
	require.Equal(t, res.ProofDigest, d.Value)
	_, err = b.pool.Exec(ctx, `UPDATE operations.readiness_proofs SET member_count = 0`)
	require.Equal(t, SQLStateInsertOnly, db.SQLState(err))
}

// DS-8 fencing by the database: after the freeze the pre-freeze shadow
// token is refused (OP003) and a mutation outside the frozen candidate is
// refused even with the new token (OP004); after the switch every shadow
// token is refused (OP003) while the new active version is written without one.
func TestDS8OldShadowTokenRefusedAfterSwitch(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()
	require.NoError(t, b.admit(ctx, 3))
	require.NoError(t, b.deliverAll(ctx))
	_, err := Shadow(ctx, b.pool, b.cfg, 2, false, 0)
	require.NoError(t, err)
	oldToken := token(t, b.pool)

	cfg := b.cfg.withDefaults()
	var frozenToken string
	_, err = Cutover(ctx, b.pool, b.cfg, 2, Hooks{AfterFreeze: func(ctx context.Context, _, tok string) error {
		frozenToken = tok
		if err := b.admit(ctx, 1); err != nil { // after the boundary
			return err
		}
		_, err := feed(ctx, b.pool, cfg, 2, oldToken, "")
		if db.SQLState(err) != SQLStateShadowFence || !errors.Is(err, ErrFenced) {
			return fmt.Errorf("pre-freeze token: want OP003, got %w", err)
		}
		_, err = feed(ctx, b.pool, cfg, 2, tok, "")
		if db.SQLState(err) != SQLStateOutsideBoundary {
			return fmt.Errorf("outside the candidate: want OP004, got %w", err)
		}
		return nil
	}})
	require.NoError(t, err)
	require.NotEmpty(t, frozenToken)

	require.NoError(t, b.admit(ctx, 1))
	// The projector's least-privileged role is refused by the database too.
	ops := rolePool(t, b.dsn, operationsschema.RoleOperations)
	for _, tok := range []string{oldToken, frozenToken} {
		for _, pool := range []*pgxpool.Pool{b.pool, ops} {
			_, err = feed(ctx, pool, cfg, 2, tok, "")
			require.ErrorIs(t, err, ErrFenced)
			require.Equal(t, SQLStateShadowFence, db.SQLState(err))
		}
	}
	// A shadow write by hand, as the least-privileged projector role would
	// issue it, is refused by the trigger as well.
	err = db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('oceanway.shadow_token', $1, true)`, frozenToken); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO operations.unsupported_events (projection_name, projection_version, event_id, event_type,
			event_schema_version, event_envelope_digest_algorithm_version, event_envelope_sha256, reason_code, first_seen_at, last_seen_at)
			VALUES ($1, 2, $2, 'x', '1', 'jcs-sha256-v1', repeat('0', 64), 'x', now(), now())`, projector.ProjectionName, uuid.NewString())
		return err
	})
	require.Equal(t, SQLStateShadowFence, db.SQLState(err))
	// Without a token the new active version catches up (as the role).
	f, err := CatchUp(ctx, ops, b.cfg, 2)
	require.NoError(t, err)
	require.EqualValues(t, 2, f.Applied)
}

// rolePool connects to dsn and runs every session as role.
func rolePool(t *testing.T, dsn, role string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = 4
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET ROLE "+pgx.Identifier{role}.Sanitize())
		return err
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func token(t *testing.T, q db.Executor) string {
	t.Helper()
	rows, err := q.Query(t.Context(), `SELECT claim_token::text FROM operations.shadow_builds WHERE projection_version = 2`)
	require.NoError(t, err)
	tok, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return tok
}

// DS-8 / OPS-4: a readiness proof with a gap is refused. A finalization
// whose wallet event is missing leaves version 2 with an unresolved
// revision gap: the cutover stops with ErrNotReady before anything is
// switched, and a proof row written anyway is refused by the database
// (OP005). The active pointer stays at version 1.
func TestDS8ReadinessProofWithGapRefused(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()
	require.NoError(t, b.admit(ctx, 2))
	o := operationstest.Sample(7)
	require.NoError(t, db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		// The sample finalization event has no billing fact behind it (a
		// projection fixture, not a forgery test): Billing's guard that a
		// fact event is appended only with its fact (BL009) is switched
		// off by the table owner inside this transaction only.
		if _, err := tx.Exec(ctx, "ALTER TABLE outbox.outbox_events DISABLE TRIGGER billing_fact_events_proven"); err != nil {
			return err
		}
		_, err := release.AppendTx(ctx, tx, *o.Run, *o.Finalization)
		return err
	}))
	_, err := Shadow(ctx, b.pool, b.cfg, 2, false, 0)
	require.NoError(t, err)

	var candidate string
	_, err = Cutover(ctx, b.pool, b.cfg, 2, Hooks{AfterFreeze: func(_ context.Context, c, _ string) error {
		candidate = c
		return nil
	}})
	require.ErrorIs(t, err, ErrNotReady)
	require.ErrorContains(t, err, "1 unresolved gaps")

	err = db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		return insertProof(ctx, tx, projector.ProjectionName, 2, candidate, 6,
			digest.Digest{Algorithm: digest.JCSSHA256V1, Value: fmt.Sprintf("%064x", 1)}, []byte(`{}`))
	})
	require.ErrorIs(t, err, ErrProofRefused)
	require.Equal(t, SQLStateProofRefused, db.SQLState(err))

	st, err := ReadStatus(ctx, b.pool, "")
	require.NoError(t, err)
	require.EqualValues(t, 1, st.ActiveVersion)
	require.Equal(t, "catching_up", st.Builds[0].State)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM operations.readiness_proofs`))
}
