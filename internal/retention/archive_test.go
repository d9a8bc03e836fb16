package retention_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/retention"
)

type fixture struct {
	bundle *dbtest.Bundle
	pool   *pgxpool.Pool
}

// setupHistory appends closed runs (delivered and acknowledged by the
// Operations destination) and open runs (never delivered).
func setupHistory(t *testing.T, closed, open int) fixture {
	t.Helper()
	ctx := t.Context()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution}, MaxConns: 8})
	pool := b.Core()
	_, err := release.Bootstrap(ctx, pool, release.BootstrapParams{
		ProjectionName: "operations_read_model", ProjectionVersion: 1, ReadinessProofRef: "test", SourceRelease: "test"})
	require.NoError(t, err)
	appendRuns(t, pool, closed)
	consumer := outboxtest.NewConsumer(t, b.Execution())
	d, err := dispatcher.New(pool, consumer.Transport(), dispatcher.Config{
		Destinations: []route.Destination{route.CoreOperations}, PollInterval: 5 * time.Millisecond,
	}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	require.Eventually(t, func() bool {
		return count(t, pool, `SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL`) == closed
	}, 30*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done)
	appendRuns(t, pool, open)
	return fixture{bundle: b, pool: pool}
}

func count(t *testing.T, q db.Executor, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, q.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

// historyRows renders every hot history row (payload included) as sorted
// JSON text, to compare a database before archiving with a restored one.
func historyRows(t *testing.T, pool *pgxpool.Pool, where string) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT 'e ' || to_jsonb(e)::text FROM outbox.outbox_events e WHERE `+where+`
		UNION ALL SELECT 'd ' || to_jsonb(d)::text FROM outbox.outbox_deliveries d JOIN outbox.outbox_events e USING (event_id) WHERE `+where+`
		UNION ALL SELECT 's ' || to_jsonb(s)::text FROM outbox.outbox_delivery_attempt_starts s JOIN outbox.outbox_events e USING (event_id) WHERE `+where+`
		UNION ALL SELECT 'f ' || to_jsonb(f)::text FROM outbox.outbox_delivery_attempt_finishes f
		  JOIN outbox.outbox_delivery_attempt_starts s USING (attempt_id) JOIN outbox.outbox_events e USING (event_id) WHERE `+where+`
		ORDER BY 1`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

func deliveryFacts(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT to_jsonb(f)::text FROM outbox.delivery_facts f ORDER BY 1`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// RET-1: only closed history leaves, batched, after the archive is written
// and verified; the run is recorded with its counts and manifest digest;
// the completeness source (outbox.delivery_facts) is unchanged; `verify`
// passes; the restore drill reproduces the archived rows exactly in a
// scratch database.
func TestRetentionArchive_RET1_ClosedHistoryLeavesVerifiedAndRestored(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := setupHistory(t, 5, 2)
	closedBefore := historyRows(t, f.pool, "e.published_at IS NOT NULL")
	factsBefore := deliveryFacts(t, f.pool)
	dir := t.TempDir()
	// the batches' drills run in it and roll back: it stays a scratch for the full restore below
	scratch := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 4})

	res, err := retention.Archive(ctx, f.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir, BatchSize: 2, Drill: scratch.Core()})
	require.NoError(t, err)
	require.Len(t, res.Runs, 3, "5 events in batches of 2")
	require.Equal(t, retention.Counts{Events: 5, Deliveries: 5, AttemptStarts: 5, AttemptFinishes: 5}, res.Counts)

	require.Equal(t, 2, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events`), "the open events stay")
	require.Zero(t, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL`))
	require.Zero(t, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_delivery_attempt_starts`))
	require.Equal(t, 3, count(t, f.pool, `SELECT count(*) FROM outbox.retention_runs`))
	require.Equal(t, 5, count(t, f.pool, `SELECT sum(events) FROM outbox.retention_runs`))
	for _, r := range res.Runs {
		require.Equal(t, 1, count(t, f.pool, `SELECT count(*) FROM outbox.retention_runs WHERE manifest_sha256 = $1 AND events = $2`,
			r.ManifestSHA256, r.Counts.Events))
	}
	require.Equal(t, factsBefore, deliveryFacts(t, f.pool), "the completeness source keeps the archived deliveries")

	v, err := retention.Verify(dir)
	require.NoError(t, err)
	require.Equal(t, res.Counts, v.Counts)
	require.Len(t, v.Manifests, 3)

	// nothing closed is left: a second archive is a no-op
	again, err := retention.Archive(ctx, f.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir, Drill: scratch.Core()})
	require.NoError(t, err)
	require.Empty(t, again.Runs)

	drill, err := retention.Restore(ctx, scratch.Core(), dir)
	require.NoError(t, err)
	require.True(t, drill.Reproduced)
	require.Equal(t, res.Counts, drill.Counts)
	require.Equal(t, closedBefore, historyRows(t, scratch.Core(), "true"), "the drill reproduces the archived rows")

	// a second drill into the same (no longer scratch) database is refused
	_, err = retention.Restore(ctx, scratch.Core(), dir)
	require.ErrorIs(t, err, retention.ErrRestoreTarget)
	// and so is a drill into the source database
	_, err = retention.Restore(ctx, f.pool, dir)
	require.ErrorIs(t, err, retention.ErrRestoreTarget)
}

// RET-1: a run that stops between its verified files and the controlled
// delete removed nothing (run here as oceanway_retention, the operator's
// least-privileged role); its manifest describes no recorded run, and the
// next archive sweeps it and archives the rows once, so the directory never
// holds two manifests of one event. A second archive command on the same
// database is refused while one runs.
func TestRetentionArchive_RET1_InterruptedRunIsSweptAndRedone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := setupHistory(t, 3, 0)
	dir := t.TempDir()
	scratch := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 4})
	errStop := errors.New("process stopped")
	_, err := retention.Archive(ctx, f.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir, Drill: scratch.Core(),
		StopBeforeDeleteFunc: func() error { return errStop }})
	require.ErrorIs(t, err, errStop)
	require.Equal(t, 3, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events`), "nothing left the hot tables")
	stale, err := filepath.Glob(filepath.Join(dir, "manifests", "*.json"))
	require.NoError(t, err)
	require.Len(t, stale, 1)

	// another archive command holds the lock: refused, nothing touched
	holder, err := f.pool.Acquire(ctx)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(hashtext('oceanway.retention.archive'))`)
	require.NoError(t, err)
	_, err = retention.Archive(ctx, f.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir, Drill: scratch.Core()})
	require.ErrorIs(t, err, retention.ErrArchiveBusy)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('oceanway.retention.archive'))`)
	require.NoError(t, err)
	holder.Release()

	// the operator's least-privileged role is enough for a whole run
	operator := dbtest.RolePool(t, f.bundle.DSNs[boundary.Core], outboxschema.RoleRetention)
	res, err := retention.Archive(ctx, operator, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir, Drill: scratch.Core()})
	require.NoError(t, err)
	require.Equal(t, []string{strings.TrimSuffix(filepath.Base(stale[0]), ".json")}, res.Swept)
	require.Len(t, res.Runs, 1)
	require.Zero(t, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events`))
	v, err := retention.Verify(dir)
	require.NoError(t, err)
	require.Equal(t, []string{res.Runs[0].ManifestSHA256}, v.Manifests)
	require.EqualValues(t, 3, v.Counts.Events)

	drill, err := retention.Restore(ctx, scratch.Core(), dir)
	require.NoError(t, err)
	require.EqualValues(t, 3, drill.Counts.Events)
}

// RET-1: `verify` recomputes every digest and fails on one changed byte in
// any file of the archive (manifest, segment, definition), on a file no
// manifest lists and on a missing file.
func TestRetentionVerify_RET1_OneChangedByteFails(t *testing.T) {
	t.Parallel()
	f := setupHistory(t, 2, 0)
	dir := t.TempDir()
	scratch := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 4})
	_, err := retention.Archive(t.Context(), f.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir, Drill: scratch.Core()})
	require.NoError(t, err)
	_, err = retention.Verify(dir)
	require.NoError(t, err)

	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	}))
	require.Len(t, files, 3, "one manifest, one segment, one definition")
	for _, file := range files {
		rel, err := filepath.Rel(dir, file)
		require.NoError(t, err)
		for _, offset := range []int{0, -1, 40} {
			copyDir := t.TempDir()
			require.NoError(t, os.CopyFS(copyDir, os.DirFS(dir)))
			target := filepath.Join(copyDir, rel)
			b, err := os.ReadFile(target)
			require.NoError(t, err)
			i := offset
			if i < 0 {
				i = len(b) + offset
			}
			b[i] ^= 0x01
			require.NoError(t, os.Chmod(target, 0o600))
			require.NoError(t, os.WriteFile(target, b, 0o600))
			_, err = retention.Verify(copyDir)
			require.ErrorIs(t, err, retention.ErrArchiveInvalid, "%s byte %d changed", rel, i)
		}
	}

	extra := t.TempDir()
	require.NoError(t, os.CopyFS(extra, os.DirFS(dir)))
	require.NoError(t, os.WriteFile(filepath.Join(extra, "objects", "notes.txt"), []byte("x"), 0o600))
	_, err = retention.Verify(extra)
	require.ErrorIs(t, err, retention.ErrArchiveInvalid, "a file that is not content-addressed")

	missing := t.TempDir()
	require.NoError(t, os.CopyFS(missing, os.DirFS(dir)))
	objects, err := filepath.Glob(filepath.Join(missing, "objects", "*.json"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(objects[0]))
	_, err = retention.Verify(missing)
	require.ErrorIs(t, err, retention.ErrArchiveInvalid, "a listed file is missing")
}

// RET-1: history leaves the hot tables only through
// outbox.retention_archive. A direct DELETE is refused for the
// least-privileged roles (no grant: 42501) and, by the delete guard, for
// anyone else (OW002); TRUNCATE is refused; the operator's role cannot
// write a run itself; the function refuses events that are not closed,
// digests that are not the stored ones and counts that do not match the
// hot rows; an archived event id cannot be appended again.
func TestRetentionDelete_RET1_OnlyThroughTheControlledFunction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := setupHistory(t, 2, 1)
	dsn := f.bundle.DSNs[boundary.Core]
	tables := []string{"outbox.outbox_delivery_attempt_finishes", "outbox.outbox_delivery_attempt_starts",
		"outbox.outbox_deliveries", "outbox.outbox_events"}

	for _, role := range []string{outboxschema.RoleProducer, outboxschema.RoleDispatcher, outboxschema.RoleRetention} {
		rp := dbtest.RolePool(t, dsn, role)
		for _, table := range tables {
			_, err := rp.Exec(ctx, "DELETE FROM "+table)
			require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err), "%s deleting from %s", role, table)
		}
		_, err := rp.Exec(ctx, `INSERT INTO outbox.retention_runs (run_id, manifest_digest_algorithm_version, manifest_sha256,
			cutoff, events, deliveries, attempt_starts, attempt_finishes, verified_at)
			VALUES (gen_random_uuid(), 'jcs-sha256-v1', repeat('a', 64), now(), 1, 0, 0, 0, now())`)
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err), "%s writing a retention run", role)
		if role != outboxschema.RoleRetention {
			_, err = rp.Exec(ctx, `SELECT outbox.retention_archive(gen_random_uuid(), repeat('a', 64), now(), now(),
				ARRAY[gen_random_uuid()], ARRAY[repeat('a', 64)], 0, 0, 0)`)
			require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err), "%s executing the retention function", role)
		}
	}
	for _, table := range tables {
		_, err := f.pool.Exec(ctx, "DELETE FROM "+table)
		require.Equal(t, outbox.CodeAppendOnly, db.SQLState(err), "owner deleting from %s", table)
		_, err = f.pool.Exec(ctx, "TRUNCATE "+table+" CASCADE")
		require.Equal(t, outbox.CodeAppendOnly, db.SQLState(err), "owner truncating %s", table)
	}

	type ev struct {
		ID  string `db:"event_id"`
		SHA string `db:"event_envelope_sha256"`
	}
	rows, err := f.pool.Query(ctx, `SELECT event_id::text, event_envelope_sha256 FROM outbox.outbox_events
		ORDER BY published_at NULLS FIRST, event_id`)
	require.NoError(t, err)
	evs, err := pgx.CollectRows(rows, pgx.RowToStructByName[ev])
	require.NoError(t, err)
	require.Len(t, evs, 3)
	open, closed := evs[0], evs[1:]
	rp := dbtest.RolePool(t, dsn, outboxschema.RoleRetention)
	// each call comes with a recorded drill of its manifest over exactly its
	// arguments (outbox 00096), so the function's own checks are reached
	call := func(ids, shas []string, deliveries, starts, finishes int) error {
		manifest := recordDrill(t, rp, ids, shas, deliveries, starts, finishes)
		_, err := rp.Exec(ctx, `SELECT outbox.retention_archive(gen_random_uuid(), $6, now(), now(), $1::uuid[], $2::text[], $3, $4, $5)`,
			ids, shas, deliveries, starts, finishes, manifest)
		return err
	}
	// not closed: unpublished (its delivery is pending)
	require.Equal(t, retention.CodeNotClosed, db.SQLState(call([]string{open.ID}, []string{open.SHA}, 1, 0, 0)))
	// the archive's digest is not the stored one
	require.Equal(t, retention.CodeArchiveMismatch, db.SQLState(call([]string{closed[0].ID}, []string{open.SHA}, 1, 1, 1)))
	// the archive's counts are not the hot rows'
	require.Equal(t, retention.CodeArchiveMismatch, db.SQLState(call([]string{closed[0].ID}, []string{closed[0].SHA}, 1, 0, 0)))
	require.Equal(t, 3, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events`), "refused runs removed nothing")
	require.Zero(t, count(t, f.pool, `SELECT count(*) FROM outbox.retention_runs`))

	var archivedRow string
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT to_jsonb(e)::text FROM outbox.outbox_events e WHERE event_id = $1`, closed[0].ID).Scan(&archivedRow))

	// the function itself, as the operator's role, with matching counts
	require.NoError(t, call([]string{closed[0].ID, closed[1].ID}, []string{closed[0].SHA, closed[1].SHA}, 2, 2, 2))
	require.Equal(t, 1, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events`))
	require.Equal(t, 2, count(t, f.pool, `SELECT count(*) FROM outbox.archived_events`))

	// an archived event id cannot come back
	err = db.WithTx(ctx, f.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_events (event_id, event_type, schema_version, delivery_set_version,
			delivery_set_definition_schema_version, delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
			aggregate_type, aggregate_id, aggregate_revision, tenant_kind, tenant_id, workspace_id, project_id, correlation_id,
			causation_id, operation_id, event_envelope, event_payload, event_envelope_digest_algorithm_version,
			event_envelope_sha256, occurred_at)
			SELECT event_id, event_type, schema_version, delivery_set_version,
			delivery_set_definition_schema_version, delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
			aggregate_type, aggregate_id, aggregate_revision, tenant_kind, tenant_id, workspace_id, project_id, correlation_id,
			causation_id, operation_id, event_envelope, event_payload, event_envelope_digest_algorithm_version,
			event_envelope_sha256, occurred_at
			  FROM jsonb_populate_record(NULL::outbox.outbox_events, $1::jsonb)`, archivedRow)
		return err
	})
	require.ErrorIs(t, retention.TranslateError(err), retention.ErrEventArchived)
}
