package metering_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/metering"
)

// claimAll claims every claimable Work (one attempt each).
func claimAll(t *testing.T, b *bundle, lease time.Duration) map[string]*metering.Attempt {
	t.Helper()
	out := map[string]*metering.Attempt{}
	for {
		a, err := metering.Claim(t.Context(), b.pool, lease)
		if errors.Is(err, metering.ErrNoWork) {
			return out
		}
		require.NoError(t, err)
		out[a.Head.Lane.Kind] = a
	}
}

func finishes(t *testing.T, b *bundle) (rows int, digests int) {
	t.Helper()
	require.NoError(t, b.pool.QueryRow(t.Context(),
		`SELECT count(*), count(DISTINCT finished_digest) FROM metering.work_finishes`).Scan(&rows, &digests))
	return rows, digests
}

// TestMET7ClaimSkipLockedConcurrentWorkers: concurrent workers on real
// sessions never claim the same Work (FOR UPDATE SKIP LOCKED), a live lease
// keeps a started Work from being claimed again, and each start is a fenced
// attempt with its own token.
func TestMET7ClaimSkipLockedConcurrentWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const attempts = 4
	for n := range attempts {
		a := newAttempt(100 + n)
		b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
		b.ack(t, a.availability(b.owners, usage, "tokens.output", 1, contract.AvailabilityAvailable, ""))
		b.ack(t, a.availability(b.owners, cost, "cost.usd", 1, contract.AvailabilityAvailable, ""))
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				a, err := metering.Claim(context.Background(), b.pool, time.Hour)
				if errors.Is(err, metering.ErrNoWork) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				claimed[a.Head.Work.Ref]++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, claimed, 2*attempts, "every Work claimed")
	for ref, n := range claimed {
		require.Equal(t, 1, n, "work %s claimed once", ref)
	}
	var tokens int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(DISTINCT fencing_token) FROM metering.work_attempts`).Scan(&tokens))
	require.Equal(t, 2*attempts, tokens)
}

// TestMET8SupersededFinishRace: A1 running → A2 event → A1 late finish, for
// both lanes, with the new event and the late finish racing on real
// sessions: exactly one `superseded` finish per old Work with one digest,
// bound to A1's token, and the late worker gets the same body.
func TestMET8SupersededFinishRace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	b.ack(t, a.availability(b.owners, usage, "tokens.output", 1, contract.AvailabilityAvailable, ""))
	b.ack(t, a.availability(b.owners, cost, "cost.usd", 1, contract.AvailabilityPending, ""))
	running := claimAll(t, b, time.Hour)
	require.Len(t, running, 2)
	for _, r := range running {
		_, err := metering.FinishSupersededIfMoved(t.Context(), b.pool, r)
		require.ErrorIs(t, err, metering.ErrNotSuperseded, "the lane did not move: nothing written")
	}
	rows, _ := finishes(t, b)
	require.Zero(t, rows)

	events := []func(){
		func() {
			b.ack(t, a.availability(b.owners, usage, "tokens.output", 2, contract.AvailabilityAvailable, ""))
		},
		func() { b.ack(t, a.availability(b.owners, cost, "cost.usd", 2, contract.AvailabilityAvailable, "")) },
	}
	late := map[string]*receipt.MeteringInputWorkAttemptFinished{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, ev := range events {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; ev() }()
	}
	for kind, r := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				f, err := metering.FinishSupersededIfMoved(context.Background(), b.pool, r)
				if errors.Is(err, metering.ErrNotSuperseded) {
					continue // the new event has not committed yet
				}
				if err != nil {
					t.Errorf("late finish %s: %v", kind, err)
					return
				}
				mu.Lock()
				late[kind] = f
				mu.Unlock()
				return
			}
		}()
	}
	close(start)
	wg.Wait()
	require.Len(t, late, 2)
	rows, digests := finishes(t, b)
	require.Equal(t, 2, rows, "exactly one finish per old Work")
	require.Equal(t, 2, digests)
	for kind, r := range running {
		f := late[kind]
		require.NoError(t, f.VerifyDigest())
		require.Equal(t, receipt.FinishSuperseded, f.Outcome.State)
		require.Equal(t, int64(2), f.Outcome.SupersededByWorkGeneration)
		require.Equal(t, r.Head.FencingToken, f.FencingToken)
		require.Equal(t, r.Head.Work, f.Work)
		var stored string
		require.NoError(t, b.pool.QueryRow(t.Context(),
			`SELECT finished_digest FROM metering.work_finishes WHERE work_ref = $1`, r.Head.Work.Ref).Scan(&stored))
		require.Equal(t, stored, f.Finished.Digest, "the late worker's body is the stored one")
	}
	var queued int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM metering.pending_works`).Scan(&queued))
	require.Equal(t, 2, queued, "only the new generations stay queued")
	// The new generations are claimable; the superseded ones are not.
	next := claimAll(t, b, time.Hour)
	require.Len(t, next, 2)
	for _, n := range next {
		require.Equal(t, int64(2), n.Head.WorkGeneration)
	}
}

// TestMET9OldTokenFenced: an attempt whose lease expired is taken over by a
// new attempt; the old token writes nothing, the new one finishes.
func TestMET9OldTokenFenced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	b.ack(t, a.availability(b.owners, cost, "cost.usd", 1, contract.AvailabilityPending, ""))
	old, err := metering.Claim(t.Context(), b.pool, 0)
	require.NoError(t, err)
	cur, err := metering.Claim(t.Context(), b.pool, time.Hour)
	require.NoError(t, err, "an expired lease makes the Work claimable again")
	require.Equal(t, old.Head.Work, cur.Head.Work)
	require.Equal(t, old.Head.AttemptNumber+1, cur.Head.AttemptNumber)
	_, err = metering.Claim(t.Context(), b.pool, time.Hour)
	require.ErrorIs(t, err, metering.ErrNoWork, "a live lease is not claimed")

	b.ack(t, a.availability(b.owners, cost, "cost.usd", 2, contract.AvailabilityAvailable, ""))
	_, err = metering.FinishSupersededIfMoved(t.Context(), b.pool, old)
	require.ErrorIs(t, err, metering.ErrFenced)
	f, err := metering.FinishSupersededIfMoved(t.Context(), b.pool, cur)
	require.NoError(t, err)
	require.Equal(t, cur.Head.FencingToken, f.FencingToken, "the input processor bound the finish to the latest attempt")
	rows, _ := finishes(t, b)
	require.Equal(t, 1, rows)
}

// TestMETWorkAttemptGuards: attempts and finishes are insert-only (ME001),
// the role cannot change them, and a Work has at most one finish (primary key).
func TestMETWorkAttemptGuards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAttempt(1)
	b.ack(t, a.availability(b.owners, cost, "cost.usd", 1, contract.AvailabilityPending, ""))
	r, err := metering.Claim(t.Context(), b.pool, time.Hour)
	require.NoError(t, err)
	b.ack(t, a.availability(b.owners, cost, "cost.usd", 2, contract.AvailabilityAvailable, ""))
	_, err = metering.FinishSupersededIfMoved(t.Context(), b.pool, r)
	require.NoError(t, err)
	for _, c := range []struct {
		sql, state string
		asRole     bool
	}{
		{"UPDATE metering.work_finishes SET outcome_state = 'applied'", pgerrcode.InsufficientPrivilege, true},
		{"DELETE FROM metering.work_attempts", pgerrcode.InsufficientPrivilege, true},
		{"UPDATE metering.input_works SET work_ref = work_ref", pgerrcode.InsufficientPrivilege, true},
		{"UPDATE metering.work_finishes SET outcome_state = 'applied'", metering.SQLStateInsertOnly, false},
		{"DELETE FROM metering.work_attempts", metering.SQLStateInsertOnly, false},
		{`INSERT INTO metering.work_finishes (work_ref, attempt_number, fencing_token, finished_ref, finished_digest, outcome_state, finished_body)
		  SELECT work_ref, attempt_number, fencing_token, 'other', repeat('a', 64), 'superseded', '{}' FROM metering.work_attempts`, pgerrcode.UniqueViolation, true},
	} {
		err := pgx.BeginFunc(t.Context(), b.pool, func(tx pgx.Tx) error {
			if c.asRole {
				if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE oceanway_metering"); err != nil {
					return err
				}
			}
			_, err := tx.Exec(t.Context(), c.sql)
			return err
		})
		require.Equal(t, c.state, db.SQLState(err), "%s: %v", c.sql, err)
	}
}

// TestMETClaimReadsOnlyClaimableWork (review finding 8; common rule "no hot
// path statement reads more as history grows"): with 2000 Work under a live
// lease (leased, backed off or blocked) and one claimable, the lane claim
// is an index range on lease_until: it reads the one claimable entry, not
// the leased ones, and the plan has lease_until as an index condition.
func TestMETClaimReadsOnlyClaimableWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	const leased = 2000
	_, err := b.pool.Exec(ctx, `
		INSERT INTO metering.input_fences (execution_attempt_id)
		SELECT md5('plan-' || g)::uuid FROM generate_series(0, $1) g;
		`, leased)
	require.NoError(t, err)
	// The Works and their queue rows commit together (ME013).
	err = db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
		INSERT INTO metering.input_works (work_ref, work_schema_version, work_digest_algorithm_version, work_digest,
		  execution_attempt_id, lane_kind, work_generation, operation_id, trigger_digest, work_body)
		SELECT 'miw-plan-' || g, '1', 'jcs-sha256-v1', repeat('a', 64), md5('plan-' || g)::uuid,
		  'eligibility_and_settlement_input', 1, md5('op-' || g)::uuid, repeat('b', 64), '{}'
		FROM generate_series(0, $1) g`, leased); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
		INSERT INTO metering.pending_works (work_ref, lane_kind, queued_at, lease_until)
		SELECT 'miw-plan-' || g, 'eligibility_and_settlement_input', now() - make_interval(secs => $1 - g),
		  CASE WHEN g = $1 THEN '-infinity'::timestamptz ELSE now() + interval '1 hour' END
		FROM generate_series(0, $1) g`, leased)
		return err
	})
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `ANALYZE metering.pending_works`)
	require.NoError(t, err)

	args := pgx.NamedArgs{"lease_seconds": 60.0, "lane_kind": receipt.LaneEligibility, "limit": 1}
	rows, err := b.pool.Query(ctx, `EXPLAIN (FORMAT TEXT) `+metering.WorkClaimLaneSQL, args)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	text := strings.Join(plan, "\n")
	require.NotContains(t, text, "Seq Scan on pending_works q", text)
	require.Regexp(t, `Index Scan using pending_works_(lane_)?claim on pending_works q[^\n]*\n\s*Index Cond: [^\n]*lease_until <= now\(\)`, text)

	err = db.WithTx(ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		read := func() int64 {
			var n int64
			require.NoError(t, tx.QueryRow(ctx, `SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid))::bigint FROM pg_index
				WHERE indrelid = 'metering.pending_works'::regclass`).Scan(&n))
			return n
		}
		before := read()
		var ref string
		require.NoError(t, tx.QueryRow(ctx, metering.WorkClaimLaneSQL, args).Scan(&ref, new(string), new(string), new(string),
			new(string), new(string), new(int64), new(string), new(string), new(int64), new(string)))
		require.Equal(t, fmt.Sprintf("miw-plan-%d", leased), ref, "the one claimable Work")
		require.LessOrEqual(t, read()-before, int64(2), "the claim reads the claimable entry, not the %d leased ones", leased)
		return errors.New("roll back")
	})
	require.EqualError(t, err, "roll back")
}

// TestMETBlockedWorkOneBlockedAndBackoff (review finding 7): a Work blocked
// on the same conflict keeps its one Blocked@1 and evidence however often
// it is retried (each attempt returns the stored one), and the worker hands
// it back with an exponential backoff instead of reclaiming it at once.
func TestMETBlockedWorkOneBlockedAndBackoff(t *testing.T) {
	t.Parallel()
	b := workerSetup(t)
	a := newAttempt(16)
	b.ack(t, a.eligibility(b.owners, contract.DispositionDispatched))
	b.ack(t, a.availability(b.owners, usage, "tokens.unpriced", 1, contract.AvailabilityAvailable, ""))
	p := processor(t, b, nil)
	var first *receipt.MeteringInputWorkAttemptBlocked
	for range 3 {
		out, err := p.Process(t.Context(), claimEligibility(t, b, 0))
		require.NoError(t, err)
		require.NotNil(t, out.Blocked)
		if first == nil {
			first = out.Blocked
		}
		require.Equal(t, first, out.Blocked, "the stored Blocked@1")
	}
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`))

	w, err := metering.NewWorker(b.pool, metering.WorkerConfig{Processor: metering.ProcessorConfig{Reads: b.owners},
		Idle: 10 * time.Millisecond, Lease: time.Hour})
	require.NoError(t, err)
	backoff := func() time.Duration {
		t.Helper()
		_, err := b.pool.Exec(t.Context(), `UPDATE metering.pending_works SET lease_until = '-infinity'`)
		require.NoError(t, err)
		require.NoError(t, w.RunOnce(t.Context()), "one claim, then nothing claimable: no spin")
		var ms float64
		require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT extract(epoch FROM lease_until - now()) * 1000 FROM metering.pending_works`).Scan(&ms))
		return time.Duration(ms) * time.Millisecond
	}
	b4, b5 := backoff(), backoff()
	require.Less(t, b4, time.Hour, "released with a backoff, not left under its lease")
	require.Greater(t, b4, 100*time.Millisecond, "attempt 4 waits 10 idle × 2³")
	require.Greater(t, b5, b4+b4/2, "the backoff doubles per attempt")
	require.Equal(t, int64(2), w.Stats().Blocked)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM metering.work_blocks`))
	require.Zero(t, factCount(t, b.pool, ""))
}
