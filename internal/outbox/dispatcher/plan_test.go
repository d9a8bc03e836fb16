package dispatcher_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/dispatcher"
)

// ackAll delivers every claim to the consumer and records the verified acks
// in one batch.
func (b *bundle) ackAll(t *testing.T, claims []dispatcher.Claimed) {
	t.Helper()
	ctx := t.Context()
	acks := b.verifiedAcks(t, claims)
	for i, err := range b.store.AckBatch(ctx, acks) {
		require.NoError(t, err, "ack %d", i)
	}
}

// indexTuplesReturned runs sql inside tx and returns how many index
// entries of index it read (this transaction's own counter).
func indexTuplesReturned(t *testing.T, tx pgx.Tx, index, sql string, args ...any) int64 {
	t.Helper()
	ctx := t.Context()
	read := func() int64 {
		var n int64
		require.NoError(t, tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_returned($1::regclass)`, index).Scan(&n))
		return n
	}
	before := read()
	rows, err := tx.Query(ctx, sql, args...)
	require.NoError(t, err)
	rows.Close()
	require.NoError(t, rows.Err())
	return read() - before
}

// OB-CLAIM-3 (issue 17: flat cost per delivery): every lease that ended
// leaves an entry in outbox_deliveries_claim_leased, keyed by its old expiry,
// until vacuum. The dispatcher's recovery scan is bounded below by the floor
// of its last complete scan, so it reads only the leases that expired since
// (here: the one still leased), not the acknowledged history; the plan has
// both bounds as index conditions. The unbounded scan (run periodically)
// does read the history: the bound is what keeps the per-round cost flat.
func TestRecovery_OBCLAIM3_BoundedScanSkipsEndedLeases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	const history = 200
	b.appendRuns(t, history)
	acked := b.claim(t, "w", history, 3*time.Second)
	require.Len(t, acked, history)
	b.ackAll(t, acked)
	b.waitLeaseExpired(t, acked[history-1].EventID) // the ended leases' keys are now in the past

	var floor time.Time
	require.NoError(t, b.producer.QueryRow(ctx, `SELECT now()`).Scan(&floor))
	live := b.appendRuns(t, 1)[0]
	require.Len(t, b.claim(t, "w", 1, time.Hour), 1)
	_, err := b.producer.Exec(ctx, `UPDATE outbox.outbox_deliveries SET lease_expires_at = clock_timestamp() WHERE event_id = $1`, live)
	require.NoError(t, err)
	b.waitLeaseExpired(t, live)

	const index = "outbox.outbox_deliveries_claim_leased"
	sql, args := dispatcher.RecoverStatement(nil, 100, &floor)
	rows, err := b.producer.Query(ctx, `EXPLAIN (FORMAT TEXT) `+sql, args...)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	text := strings.Join(plan, "\n")
	require.Contains(t, text, "Index Scan using outbox_deliveries_claim_leased", text)
	require.Regexp(t, `Index Cond: \(\(lease_expires_at <= now\(\)\) AND \(lease_expires_at > `, text)

	err = db.WithTx(ctx, b.producer, func(ctx context.Context, tx pgx.Tx) error {
		read := indexTuplesReturned(t, tx, index, sql, args...)
		require.LessOrEqual(t, read, int64(1), "the bounded scan reads the expired lease, not the %d ended ones", history)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "pending", b.delivery(t, live).Status, "the bounded scan recovered the expired lease")

	unbounded, uargs := dispatcher.RecoverStatement(nil, 100, nil)
	err = db.WithTx(ctx, b.producer, func(ctx context.Context, tx pgx.Tx) error {
		read := indexTuplesReturned(t, tx, index, unbounded, uargs...)
		require.Greater(t, read, int64(1), "without the bound the scan walks the ended leases' entries")
		return nil
	})
	require.NoError(t, err)
	b.invariants(t)
}

// OB-PUB-1 (issue 17: flat cost per delivery): every statement an ack runs,
// alone or in a batch, including those inside outbox.record_publication and
// the deferred publication proof at COMMIT, finds the event by its primary
// key (or by the row id a primary-key probe just returned); none
// reads the partial index of all unpublished events (which grows with the
// backlog). The plans are taken with auto_explain on nested statements,
// under statistics that say almost every event is published (the state in
// which the planner preferred the partial index).
func TestAck_OBPUB1_PublicationPlansUsePrimaryKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	// A history of 1,000 acknowledged deliveries: the functions plan each
	// call for the tables as they are, and below a few pages a sequential
	// scan is the right plan; at this size only a probe is.
	const history = 1000
	b.appendRuns(t, history)
	b.ackAll(t, b.claim(t, "w", history, time.Hour))
	_, err := b.producer.Exec(ctx, `ANALYZE outbox.outbox_events; ANALYZE outbox.outbox_deliveries`)
	require.NoError(t, err)
	b.appendRuns(t, 50)
	claims := b.claim(t, "w", 10, time.Hour)
	require.Len(t, claims, 10)

	var mu sync.Mutex
	var plans []string
	cfg, err := pgx.ParseConfig(b.producerDSN)
	require.NoError(t, err)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, n.Message)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(context.WithoutCancel(ctx))) }()
	_, err = conn.Exec(ctx, `LOAD 'auto_explain'`)
	require.NoError(t, err, "auto_explain ships with the PostgreSQL server; the test role must be allowed to LOAD it")
	for _, set := range []string{
		`SET auto_explain.log_min_duration = 0`, `SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_level = notice`, `SET auto_explain.log_triggers = on`,
		// The dispatcher's pooled connections run prepared statements on
		// generic plans after a few executions: check those.
		`SET plan_cache_mode = force_generic_plan`,
	} {
		_, err = conn.Exec(ctx, set)
		require.NoError(t, err)
	}
	// Half of the claims acked one by one (a batch of one), the rest in one
	// batch: both shapes run on the generic plans checked below.
	var batch []dispatcher.VerifiedAck
	for i, c := range claims {
		res, err := b.consumer.Deliver(ctx, c.Delivery())
		require.NoError(t, err)
		v, err := dispatcher.VerifyResult(c, res)
		require.NoError(t, err)
		if i%2 == 1 {
			batch = append(batch, v)
			continue
		}
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		require.NoError(t, err)
		require.NoError(t, dispatcher.AckTx(ctx, tx, v))
		require.NoError(t, tx.Commit(ctx))
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	require.NoError(t, err)
	out, err := dispatcher.AckBatchTx(ctx, tx, batch)
	require.NoError(t, err)
	for i, e := range out {
		require.NoError(t, e, "ack %d of the batch", i)
	}
	require.NoError(t, tx.Commit(ctx))
	_, err = conn.Exec(ctx, `LOAD 'auto_explain'; SET auto_explain.log_min_duration = -1`)
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	var ackBatch, cas, validate int
	for _, p := range plans {
		if strings.Contains(p, `Query Text: SELECT 1 FROM ONLY "outbox".`) {
			// PostgreSQL's own foreign-key checks: a probe of the referenced
			// key, which it reads sequentially only while the table is a few
			// pages long (as here, once autovacuum analyzed it).
			continue
		}
		require.NotContains(t, p, "outbox_events_unpublished", "a per-ack lookup reads the unpublished backlog:\n%s", p)
		require.NotContains(t, p, "Seq Scan on outbox_", p)
		if strings.Contains(p, "fenced AS (") { // the statement inside outbox.ack_delivery_batch
			ackBatch++
			require.Contains(t, p, "Index Scan using outbox_deliveries_pkey", "the fenced ack probes the primary key:\n%s", p)
			require.Contains(t, p, "Tid Scan on outbox_deliveries", "the fenced ack updates the probed rows by row id:\n%s", p)
			require.NotContains(t, p, "outbox_deliveries_claim_leased", "the fenced ack walks the leased index:\n%s", p)
		}
		if strings.Contains(p, "SET published_at = now()") {
			cas++
			require.True(t, strings.Contains(p, "Tid Scan on outbox_events") || strings.Contains(p, "Index Scan using outbox_events_pkey"),
				"the CAS updates the locked rows by row id or primary key:\n%s", p)
		}
		if strings.Contains(p, "Every row checked as the one-ack function") || strings.Contains(p, "'unknown event'") {
			validate++
			require.Contains(t, p, "Index Scan using outbox_deliveries_pkey", p)
			require.Contains(t, p, "Index Scan using outbox_events_pkey", p)
		}
	}
	require.Equal(t, len(claims)/2+1, ackBatch, "every fenced ack statement was explained")
	require.Equal(t, len(claims)/2+1, validate, "every publication validation was explained")
	require.Positive(t, cas, "the published_at CAS ran and was explained")
	b.invariants(t)
}

// OB-STORE-6 (issue 17: flat cost per delivery): the transition guard's
// statement (outbox.deliveries_prove_transitions) has no parameters, so a
// session plans it once and keeps that plan. Here one session plans it (an
// ack batch) while
// the attempt tables hold two rows (where a sequential scan is the cheapest
// plan), then a history of 500 acknowledged deliveries is written by other
// sessions, and the same session acknowledges again: every plan
// of the guard it ran, the first and the cached one, reads the attempt start and finish by
// primary key and never scans an outbox table.
func TestTransitionGuard_OBSTORE6_PlansProbeWhateverTheSizeWhenPlanned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	var mu sync.Mutex
	var plans []string
	cfg, err := pgx.ParseConfig(b.producerDSN)
	require.NoError(t, err)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, n.Message)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(context.WithoutCancel(ctx))) }()
	for _, set := range []string{
		`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`, `SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_level = notice`, `SET plan_cache_mode = force_generic_plan`,
	} {
		_, err = conn.Exec(ctx, set)
		require.NoError(t, err)
	}
	// claimAndAck claims n deliveries and acknowledges them with held in
	// one batch on conn (the fenced ack statement fires the guard there).
	claimAndAck := func(held []dispatcher.Claimed, n int) {
		t.Helper()
		claims := append(held, b.claim(t, "w", n, time.Hour)...)
		require.Len(t, claims, len(held)+n)
		acks := b.verifiedAcks(t, claims)
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		require.NoError(t, err)
		out, err := dispatcher.AckBatchTx(ctx, tx, acks)
		require.NoError(t, err)
		for i, e := range out {
			require.NoError(t, e, "ack %d", i)
		}
		require.NoError(t, tx.Commit(ctx))
	}

	b.appendRuns(t, 2)
	held := b.claim(t, "w", 1, time.Hour)
	require.Len(t, held, 1)
	// Statistics of one-page attempt tables (autovacuum takes them just so
	// on a young database): a sequential scan is then the cheapest plan.
	_, err = b.producer.Exec(ctx, `ANALYZE outbox.outbox_delivery_attempt_starts; ANALYZE outbox.outbox_delivery_attempt_finishes;
		ANALYZE outbox.outbox_deliveries`)
	require.NoError(t, err)
	claimAndAck(held, 1) // the guard's plan is made now, in this session
	const history = 500
	b.appendRuns(t, history)
	b.ackAll(t, b.claim(t, "other", history, time.Hour))
	b.appendRuns(t, 5)
	claimAndAck(nil, 5)

	mu.Lock()
	defer mu.Unlock()
	var guard int
	for _, p := range plans {
		if !strings.Contains(p, "FROM old_rows o") {
			continue
		}
		guard++
		require.NotContains(t, p, "Seq Scan on outbox_", "the transition guard scans a table:\n%s", p)
		require.NotContains(t, p, "JIT:", "the transition guard's probes are JIT-compiled:\n%s", p)
		require.Contains(t, p, "Index Scan using outbox_delivery_attempt_starts_pkey", p)
		if strings.Contains(p, "acknowledged") {
			require.Contains(t, p, "outbox_delivery_attempt_finishes_pkey", p)
		}
	}
	require.Equal(t, 2, guard, "the guard ran (and was explained) for both ack batches")
	b.invariants(t)
}

// OB-PUB-1 (issue 17: CPU per delivery): in the ack batch's transaction the
// published_at function does not read again the attempt finishes that the
// transition guard read for the rows this transaction acknowledged (the
// guard proved them at the end of the fenced statement; 00097). Over a batch
// of acks that each complete their event, the finishes' primary key is read
// once per ack — by the guard — where the function used to read it twice
// more per ack (its row check and its sibling proof).
func TestAckBatch_OBPUB1_PublicationTrustsItsOwnTransactionsGuard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	const n = 6
	b.appendRuns(t, n)
	claims := b.claim(t, "w", n, time.Hour)
	require.Len(t, claims, n)
	acks := b.verifiedAcks(t, claims)
	err := db.WithTxOptions(ctx, b.producer, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		out, err := dispatcher.AckBatchTx(ctx, tx, acks)
		require.NoError(t, err)
		for i, e := range out {
			require.NoError(t, e, "ack %d", i)
		}
		var read int64
		require.NoError(t, tx.QueryRow(ctx,
			`SELECT pg_stat_get_xact_tuples_returned('outbox.outbox_delivery_attempt_finishes_pkey'::regclass)`).Scan(&read))
		require.Equal(t, int64(n), read, "finish reads in the ack transaction: one per ack, the transition guard's")
		return nil
	})
	require.NoError(t, err)
	for _, c := range claims {
		require.True(t, b.delivery(t, c.EventID).Published, "every event was completed and published")
	}
	b.invariants(t)
}

// OBS-1 (issue 35): the open-delivery gauge reads the open deliveries
// through the two partial indexes, not the acknowledged history: with 200
// acknowledged deliveries, one pending and one leased, the scrape's statement
// reads no row of outbox_deliveries sequentially. With one IN over both
// statuses the plan was a sequential scan of the whole table on every
// scrape.
func TestOpenCount_OBS1_ReadsOpenDeliveriesOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	const history = 200
	b.appendRuns(t, history)
	acked := b.claim(t, "w", history, time.Minute)
	require.Len(t, acked, history)
	b.ackAll(t, acked)
	b.appendRuns(t, 2)
	require.Len(t, b.claim(t, "w", 1, time.Minute), 1)

	stmt, err := os.ReadFile("queries/open_deliveries.sql")
	require.NoError(t, err)
	require.NoError(t, db.WithTx(ctx, b.producer, func(ctx context.Context, tx pgx.Tx) error {
		seqRead := func() int64 {
			var n int64
			require.NoError(t, tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_returned('outbox.outbox_deliveries'::regclass)`).Scan(&n))
			return n
		}
		before := seqRead()
		rows, err := tx.Query(ctx, string(stmt))
		require.NoError(t, err)
		open := map[string]int64{}
		for rows.Next() {
			var dest, status string
			var n int64
			var age float64
			require.NoError(t, rows.Scan(&dest, &status, &n, &age))
			open[status] += n
		}
		require.NoError(t, rows.Err())
		require.Equal(t, map[string]int64{"pending": 1, "leased": 1}, open)
		require.Zero(t, seqRead()-before, "rows of outbox_deliveries read sequentially")
		return nil
	}))
}
