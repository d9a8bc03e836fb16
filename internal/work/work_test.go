package work_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/work"
)

// The primitive is tested on a queue of its own shape in a scratch schema:
// a queue row with a lease, an insert-only attempt log with fresh tokens,
// and a finish table whose trigger refuses any token but the latest (the
// guard every real queue carries: ME003, BC006).
const scratchSchema = `
CREATE SCHEMA wq;
CREATE TABLE wq.items (
  item_id     bigint PRIMARY KEY,
  queued_at   timestamptz NOT NULL DEFAULT now(),
  lease_until timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX items_claim ON wq.items (lease_until, item_id);
CREATE TABLE wq.attempts (
  item_id        bigint NOT NULL,
  attempt_number bigint NOT NULL,
  fencing_token  uuid   NOT NULL UNIQUE,
  PRIMARY KEY (item_id, attempt_number)
);
CREATE TABLE wq.finishes (
  item_id       bigint PRIMARY KEY,
  fencing_token uuid NOT NULL
);
CREATE FUNCTION wq.latest_token_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT fencing_token FROM wq.attempts WHERE item_id = NEW.item_id ORDER BY attempt_number DESC LIMIT 1)
     IS DISTINCT FROM NEW.fencing_token THEN
    RAISE EXCEPTION 'not the latest attempt' USING ERRCODE = 'WQ001';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER finishes_latest BEFORE INSERT ON wq.finishes FOR EACH ROW EXECUTE FUNCTION wq.latest_token_only();
`

var items = work.Claimable{
	Table: "wq.items", Key: []string{"item_id"},
	Where: "q.lease_until <= now()", Order: "q.lease_until, q.item_id", Lease: "lease_until", Now: "now()",
	Owner: `(SELECT a.fencing_token FROM wq.attempts a WHERE a.item_id = q.item_id
       ORDER BY a.attempt_number DESC LIMIT 1) = @fencing_token::uuid`,
	Age: "q.queued_at",
}

const startAttempts = `, started AS (
  INSERT INTO wq.attempts (item_id, attempt_number, fencing_token)
  SELECT c.item_id, coalesce((SELECT max(a.attempt_number) FROM wq.attempts a WHERE a.item_id = c.item_id), 0) + 1, gen_random_uuid()
  FROM claimed c
  RETURNING item_id, attempt_number, fencing_token::text AS fencing_token
)
SELECT item_id, attempt_number, fencing_token FROM started`

type attempt struct {
	ItemID        int64  `db:"item_id"`
	AttemptNumber int64  `db:"attempt_number"`
	FencingToken  string `db:"fencing_token"`
}

func (a attempt) args() pgx.NamedArgs {
	return pgx.NamedArgs{"item_id": a.ItemID, "fencing_token": a.FencingToken}
}

// queue is the scratch queue; work decides each attempt's result.
type queue struct {
	pool  *pgxpool.Pool
	store *work.Store
	work  func(ctx context.Context, a attempt) work.Result
}

func (q *queue) Claim(ctx context.Context, limit int, lease time.Duration) ([]attempt, error) {
	return work.Claim[attempt](ctx, q.store, limit, lease, nil)
}
func (q *queue) Work(ctx context.Context, a attempt) work.Result { return q.work(ctx, a) }
func (q *queue) Release(ctx context.Context, a attempt, after time.Duration) error {
	return q.store.Release(ctx, a.args(), after)
}
func (q *queue) Renew(ctx context.Context, a attempt, lease time.Duration) error {
	return q.store.Renew(ctx, a.args(), lease)
}
func (q *queue) Backlog(ctx context.Context) (work.Backlog, error) { return q.store.Backlog(ctx, nil) }

// finish writes the item's one finish under the attempt's token.
func (q *queue) finish(ctx context.Context, a attempt) error {
	_, err := q.pool.Exec(ctx, `INSERT INTO wq.finishes (item_id, fencing_token) VALUES ($1, $2);
		`, a.ItemID, a.FencingToken)
	if err != nil {
		return err
	}
	_, err = q.pool.Exec(ctx, `DELETE FROM wq.items WHERE item_id = $1`, a.ItemID)
	return err
}

func setup(t *testing.T, n int) *queue {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 12})
	pool := b.Core()
	_, err := pool.Exec(t.Context(), scratchSchema)
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `INSERT INTO wq.items (item_id, queued_at) SELECT g, now() - make_interval(secs => $1 - g) FROM generate_series(1, $1) g`, n)
	require.NoError(t, err)
	return &queue{pool: pool, store: work.NewStore(pool, items, startAttempts, nil)}
}

func leaseOf(t *testing.T, q *queue, id int64) time.Duration {
	t.Helper()
	var secs float64
	require.NoError(t, q.pool.QueryRow(t.Context(), `SELECT extract(epoch FROM lease_until - now()) FROM wq.items WHERE item_id = $1`, id).Scan(&secs))
	return time.Duration(secs * float64(time.Second))
}

// OB-CLAIM-1 for Work (MET, BSC, BI-1 queues): concurrent sessions never
// claim the same Work, and every Work is claimed:
// the claim's SKIP LOCKED skips rows another session holds and its
// re-check skips rows another session claimed and committed meanwhile.
func TestClaimIsExclusiveAcrossConcurrentSessions(t *testing.T) {
	t.Parallel()
	const n, sessions = 300, 8
	q := setup(t, n)
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for range sessions {
		wg.Go(func() {
			for {
				got, err := work.Claim[attempt](context.Background(), q.store, 3, time.Hour, nil)
				if !assertNoError(t, err) || len(got) == 0 {
					return
				}
				mu.Lock()
				for _, a := range got {
					seen[a.ItemID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, n, "every item claimed")
	for id, c := range seen {
		require.Equal(t, 1, c, "item %d claimed %d times under a live lease", id, c)
	}
	var attempts int
	require.NoError(t, q.pool.QueryRow(t.Context(), `SELECT count(*) FROM wq.attempts`).Scan(&attempts))
	require.Equal(t, n, attempts, "one attempt started per claim")
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// OB-CLAIM-2 for Work: a claimed Work is claimable again only after its lease; the next claim
// starts attempt 2 with a new token, and from then on the first attempt's
// release, renewal and finish are refused (release and renewal match
// nothing; the database refuses the finish). A renewal that matched nothing
// is ErrLeaseLost, never a silent success (OB-CLAIM-2.work-renew-lease-lost).
func TestStaleAttemptReleasesRenewsAndFinishesNothing(t *testing.T) {
	t.Parallel()
	q := setup(t, 1)
	ctx := t.Context()
	first, err := work.Claim[attempt](ctx, q.store, 1, time.Hour, nil)
	require.NoError(t, err)
	require.Len(t, first, 1)
	none, err := work.Claim[attempt](ctx, q.store, 1, time.Hour, nil)
	require.NoError(t, err)
	require.Empty(t, none, "a live lease is not claimable")

	_, err = q.pool.Exec(ctx, `UPDATE wq.items SET lease_until = now() - interval '1 second'`) // the lease ran out
	require.NoError(t, err)
	second, err := work.Claim[attempt](ctx, q.store, 1, time.Hour, nil)
	require.NoError(t, err)
	require.Len(t, second, 1)
	require.Equal(t, int64(2), second[0].AttemptNumber)
	require.NotEqual(t, first[0].FencingToken, second[0].FencingToken)

	require.NoError(t, q.store.Release(ctx, first[0].args(), 0))
	require.Greater(t, leaseOf(t, q, 1), 50*time.Minute, "the stale release moved nothing")
	require.ErrorIs(t, q.store.Renew(ctx, first[0].args(), 2*time.Hour), work.ErrLeaseLost)
	require.Less(t, leaseOf(t, q, 1), 61*time.Minute, "the stale renewal moved nothing")
	require.Error(t, q.finish(ctx, first[0]), "the database refuses the old token's finish")

	require.NoError(t, q.store.Renew(ctx, second[0].args(), 2*time.Hour))
	require.Greater(t, leaseOf(t, q, 1), 110*time.Minute, "the latest attempt renews")
	require.NoError(t, q.finish(ctx, second[0]))
}

func TestBackoffDoublesAndCaps(t *testing.T) {
	t.Parallel()
	b := work.Backoff{Base: time.Second, Max: 5 * time.Second}
	for n, want := range map[int64]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 40: 5 * time.Second} {
		require.Equal(t, want, b.After(n), "after %d", n)
	}
}

// OBS-1, OBS-2: the Runner acts on each Result: a finish leaves the queue; a retry and a
// block are released with their delay; a fenced attempt releases nothing;
// and the metrics count each under the queue's name only.
func TestRunnerActsOnResults(t *testing.T) {
	t.Parallel()
	q := setup(t, 4)
	reg := prometheus.NewRegistry()
	m := work.NewMetrics(reg)
	q.work = func(ctx context.Context, a attempt) work.Result {
		switch a.ItemID {
		case 1:
			if err := q.finish(ctx, a); err != nil {
				return work.FailedAfter(err, 0)
			}
			return work.Done("applied")
		case 2:
			return work.RetryAfter(10 * time.Minute)
		case 3:
			return work.BlockedFor(20 * time.Minute)
		default:
			return work.FencedOut()
		}
	}
	r := work.NewRunner[attempt](q, work.Config{Name: "scratch", Metrics: m})
	results, err := r.Pass(t.Context(), 10)
	require.NoError(t, err)
	require.Len(t, results, 4)

	var left int
	require.NoError(t, q.pool.QueryRow(t.Context(), `SELECT count(*) FROM wq.items`).Scan(&left))
	require.Equal(t, 3, left, "the finished Work left the queue")
	require.InDelta(t, (10 * time.Minute).Seconds(), leaseOf(t, q, 2).Seconds(), 30, "retry released with its delay")
	require.InDelta(t, (20 * time.Minute).Seconds(), leaseOf(t, q, 3).Seconds(), 30, "block released with its delay")
	require.InDelta(t, (30 * time.Second).Seconds(), leaseOf(t, q, 4).Seconds(), 30, "a fenced attempt releases nothing: its lease stands")

	require.Equal(t, 4.0, testutil.ToFloat64(mustCounter(t, reg, "oceanway_work_attempts_total", "scratch")))
	for name, want := range map[string]float64{"oceanway_work_blocked_total": 1} {
		require.Equal(t, want, testutil.ToFloat64(mustCounter(t, reg, name, "scratch")))
	}
	// OBS-2: the only labels are the queue, the result kind and the outcome.
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				require.Contains(t, []string{"queue", "result", "outcome", "le"}, l.GetName(), "%s carries label %s", f.GetName(), l.GetName())
			}
		}
	}
	require.Contains(t, gatherText(t, reg), `oceanway_work_depth{queue="scratch"} 0`, "nothing is claimable now")
}

func mustCounter(t *testing.T, reg *prometheus.Registry, name, queue string) prometheus.Collector {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "queue" && l.GetValue() == queue {
					return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x"}, m.GetCounter().GetValue)
				}
			}
		}
	}
	t.Fatalf("no %s{queue=%q}", name, queue)
	return nil
}

func gatherText(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var out string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "oceanway_work_depth" {
				out += fmt.Sprintf("oceanway_work_depth{queue=%q} %g\n", m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
			}
		}
	}
	return out
}

// OB-CLAIM-2 for Work: a running attempt renews its lease; when a renewal finds the Work taken
// by a newer attempt, the attempt is cancelled, counts as a lease expiry
// and comes out Fenced.
func TestRunnerRenewsAndLosesTheLease(t *testing.T) {
	t.Parallel()
	q := setup(t, 1)
	reg := prometheus.NewRegistry()
	renewed := make(chan struct{})
	q.work = func(ctx context.Context, a attempt) work.Result {
		// Wait until the lease was renewed once, then let a newer attempt
		// take the Work (as after an expiry), then wait for the Runner to
		// cancel this attempt.
		var claimedUntil time.Time
		require.NoError(t, q.pool.QueryRow(ctx, `SELECT lease_until FROM wq.items WHERE item_id = $1`, a.ItemID).Scan(&claimedUntil))
		require.Eventually(t, func() bool {
			var until time.Time
			require.NoError(t, q.pool.QueryRow(ctx, `SELECT lease_until FROM wq.items WHERE item_id = $1`, a.ItemID).Scan(&until))
			return until.After(claimedUntil)
		}, 10*time.Second, 20*time.Millisecond, "the running attempt's lease was renewed")
		close(renewed)
		_, err := q.pool.Exec(context.Background(), `INSERT INTO wq.attempts (item_id, attempt_number, fencing_token) VALUES ($1, $2, gen_random_uuid())`,
			a.ItemID, a.AttemptNumber+1)
		if err != nil {
			return work.FailedAfter(err, 0)
		}
		<-ctx.Done()
		return work.FailedAfter(ctx.Err(), 0)
	}
	r := work.NewRunner[attempt](q, work.Config{Name: "scratch", Lease: 1500 * time.Millisecond, Metrics: work.NewMetrics(reg)})
	results, err := r.Pass(t.Context(), 1)
	require.NoError(t, err)
	<-renewed
	require.Equal(t, []work.Result{work.FencedOut()}, results)
	require.Equal(t, 1.0, testutil.ToFloat64(mustCounter(t, reg, "oceanway_work_lease_expired_total", "scratch")))
}

// On stop the Runner claims nothing more and the in-flight attempt runs to
// its finish on a context that was not cancelled with the Runner's.
func TestRunnerDrainsInFlightAttemptsOnStop(t *testing.T) {
	t.Parallel()
	q := setup(t, 2)
	started := make(chan struct{}, 2)
	proceed := make(chan struct{})
	q.work = func(ctx context.Context, a attempt) work.Result {
		started <- struct{}{}
		<-proceed
		if err := q.finish(ctx, a); err != nil {
			return work.FailedAfter(err, 0)
		}
		return work.Done("applied")
	}
	ctx, cancel := context.WithCancel(t.Context())
	r := work.NewRunner[attempt](q, work.Config{Name: "scratch", Slots: 1, Idle: time.Millisecond})
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	<-started
	cancel()
	close(proceed)
	<-done
	var finished, attempts int
	require.NoError(t, q.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM wq.finishes), (SELECT count(*) FROM wq.attempts)`).Scan(&finished, &attempts))
	require.Equal(t, 1, finished, "the in-flight attempt finished after stop")
	require.Equal(t, 1, attempts, "nothing was claimed after stop")
}

// The leased claim reads the claimable range only, at two backlog sizes:
// leased and backed-off rows are never walked.
func TestLeasedClaimReadsOnlyClaimableRows(t *testing.T) {
	t.Parallel()
	for _, leased := range []int{1000, 20000} {
		q := setup(t, 0)
		ctx := t.Context()
		_, err := q.pool.Exec(ctx, `INSERT INTO wq.items (item_id, lease_until)
			SELECT g, CASE WHEN g = $1 THEN '-infinity'::timestamptz ELSE now() + interval '1 hour' END FROM generate_series(1, $1) g`, leased+1)
		require.NoError(t, err)
		_, err = q.pool.Exec(ctx, `ANALYZE wq.items`)
		require.NoError(t, err)
		err = pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
			read := func() int64 {
				var n int64
				require.NoError(t, tx.QueryRow(ctx, `SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid))::bigint FROM pg_index
					WHERE indrelid = 'wq.items'::regclass`).Scan(&n))
				return n
			}
			before := read()
			rows, err := tx.Query(ctx, q.store.ClaimSQL(), pgx.NamedArgs{"limit": 1, "lease_seconds": 60.0})
			require.NoError(t, err)
			got, err := pgx.CollectRows(rows, pgx.RowToStructByName[attempt])
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, int64(leased+1), got[0].ItemID)
			require.LessOrEqual(t, read()-before, int64(2), "the claim read the claimable entry, not the %d leased ones", leased)
			return errors.New("roll back")
		})
		require.EqualError(t, err, "roll back")
	}
}
