package retention_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/retention"
)

// recordDrill records, as q, a drill document of a fresh manifest digest
// over exactly these events and counts, and returns the manifest digest.
// (The database cannot see a drill run elsewhere: the baseline holds the
// evidence and who recorded it; the drill itself is DrillManifest.)
func recordDrill(t *testing.T, q db.Executor, ids, shas []string, deliveries, starts, finishes int) string {
	t.Helper()
	manifest := sha(uuid.NewString())
	_, err := q.Exec(t.Context(), `SELECT outbox.retention_record_drill(jsonb_build_object(
		'kind', 'oceanway.outbox-recovery-drill@1', 'manifestSha256', $1::text,
		'eventsSha256', outbox.retention_event_set_sha256($2::uuid[], $3::text[]),
		'counts', jsonb_build_object('events', cardinality($2::uuid[]), 'deliveries', $4::int, 'attemptStarts', $5::int, 'attemptFinishes', $6::int),
		'scratchDatabase', 'scratch_of_test', 'runtimeVersion', 'test', 'drilledAt', now(), 'reproduced', true)::text)`,
		manifest, ids, shas, deliveries, starts, finishes)
	require.NoError(t, err)
	return manifest
}

func sha(s string) string {
	return retention.SHA256Hex([]byte(s))
}

func closedEvents(t *testing.T, pool *pgxpool.Pool) (ids, shas []string) {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT event_id::text, event_envelope_sha256 FROM outbox.outbox_events
		WHERE published_at IS NOT NULL ORDER BY event_id`)
	require.NoError(t, err)
	for rows.Next() {
		var id, s string
		require.NoError(t, rows.Scan(&id, &s))
		ids, shas = append(ids, id), append(shas, s)
	}
	require.NoError(t, rows.Err())
	return ids, shas
}

// RET-1 (outbox document: 恢复演练 written to the audited 恢复基线 before
// deletion): the controlled delete refuses (OWR04) a run without a recorded
// drill of its manifest, a drill of another manifest, and a drill of the
// same manifest over other events or counts; the old function without the
// check is not executable by the operator's role; the baseline is
// insert-only, written only through outbox.retention_record_drill, which
// refuses (OWR05) a failed drill and a drill into the source database.
// Everything as oceanway_retention, the operator's least-privileged role.
func TestRET1_DeleteRefusedWithoutRecordedRecoveryDrill(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := setupHistory(t, 2, 0)
	rp := dbtest.RolePool(t, f.bundle.DSNs[boundary.Core], outboxschema.RoleRetention)
	ids, shas := closedEvents(t, f.pool)
	require.Len(t, ids, 2)
	archive := func(manifest string, ids, shas []string, n int) error {
		_, err := rp.Exec(ctx, `SELECT outbox.retention_archive(gen_random_uuid(), $1, now(), now(), $2::uuid[], $3::text[], $4, $4, $4)`,
			manifest, ids, shas, n)
		return retention.TranslateError(err)
	}

	// no drill at all (OWR04.no-recorded-drill)
	require.ErrorIs(t, archive(sha("m1"), ids, shas, 2), retention.ErrNoRecoveryDrill)
	// a drill of another manifest
	other := recordDrill(t, rp, ids, shas, 2, 2, 2)
	require.ErrorIs(t, archive(sha("m1"), ids, shas, 2), retention.ErrNoRecoveryDrill)
	// the drilled manifest, but a different event set (one event only) and other counts
	require.ErrorIs(t, archive(other, ids[:1], shas[:1], 1), retention.ErrNoRecoveryDrill)
	subset := recordDrill(t, rp, ids[:1], shas[:1], 1, 1, 1)
	require.ErrorIs(t, archive(subset, ids, shas, 2), retention.ErrNoRecoveryDrill)
	require.Equal(t, 2, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events`), "refused runs removed nothing")

	// the function without the baseline check is the definer's only
	_, err := rp.Exec(ctx, `SELECT outbox.retention_archive_unproven(gen_random_uuid(), $1, now(), now(), $2::uuid[], $3::text[], 2, 2, 2)`,
		other, ids, shas)
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err))

	// the baseline: no direct write, no change, no removal
	_, err = rp.Exec(ctx, `INSERT INTO outbox.retention_recovery_drills SELECT * FROM outbox.retention_recovery_drills LIMIT 1`)
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err))
	for stmt, ownerCode := range map[string]string{
		`UPDATE outbox.retention_recovery_drills SET runtime_version = 'x'`: outbox.CodeInsertOnly,
		`DELETE FROM outbox.retention_recovery_drills`:                      outbox.CodeAppendOnly,
	} {
		_, err = rp.Exec(ctx, stmt)
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err), stmt)
		_, err = f.pool.Exec(ctx, stmt)
		require.Equal(t, ownerCode, db.SQLState(err), "owner: %s", stmt)
	}
	_, err = f.pool.Exec(ctx, `TRUNCATE outbox.retention_recovery_drills`)
	require.Equal(t, outbox.CodeAppendOnly, db.SQLState(err))

	// record_drill refuses what is not a successful drill in another
	// database, each refusal with its own message (one code, OWR05):
	// OWR05.drill-document-invalid, OWR05.drill-in-source-database,
	// OWR05.drill-in-future; a document that is not JSON is the caught
	// parse error, re-raised as OWR05 (OWR05.drill-document-not-json).
	for name, c := range map[string]struct{ doc, fragment string }{
		"not reproduced": {`jsonb_build_object('kind', 'oceanway.outbox-recovery-drill@1', 'manifestSha256', repeat('a', 64),
			'eventsSha256', repeat('b', 64), 'counts', jsonb_build_object('events', 1), 'scratchDatabase', 'x',
			'runtimeVersion', 'test', 'drilledAt', now(), 'reproduced', false)::text`, "not a successful recovery drill document"},
		"drilled in the source": {`jsonb_build_object('kind', 'oceanway.outbox-recovery-drill@1', 'manifestSha256', repeat('a', 64),
			'eventsSha256', repeat('b', 64), 'counts', jsonb_build_object('events', 1), 'scratchDatabase', current_database(),
			'runtimeVersion', 'test', 'drilledAt', now(), 'reproduced', true)::text`, "recovery drill ran in the source database"},
		"drilled in the future": {`jsonb_build_object('kind', 'oceanway.outbox-recovery-drill@1', 'manifestSha256', repeat('a', 64),
			'eventsSha256', repeat('b', 64), 'counts', jsonb_build_object('events', 1, 'deliveries', 0, 'attemptStarts', 0,
			'attemptFinishes', 0), 'scratchDatabase', 'x', 'runtimeVersion', 'test', 'drilledAt', now() + interval '1 day',
			'reproduced', true)::text`, "recovery drill time is in the future"},
		"not json": {`'{'`, "recovery drill document is not JSON"},
	} {
		_, err := rp.Exec(ctx, `SELECT outbox.retention_record_drill(`+c.doc+`)`)
		require.ErrorIs(t, retention.TranslateError(err), retention.ErrDrillRefused, name)
		require.ErrorContains(t, err, c.fragment, name)
	}

	// with the matching drill the run goes through
	drilled := recordDrill(t, rp, ids, shas, 2, 2, 2)
	require.NoError(t, archive(drilled, ids, shas, 2))
	require.Zero(t, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events`))
	require.Equal(t, 1, count(t, f.pool, `SELECT count(*) FROM outbox.retention_runs WHERE manifest_sha256 = $1`, drilled))
}

// RET-1: `archive` drills every batch before its delete — the files
// restored into the scratch database and re-exported to the archived bytes,
// in a transaction rolled back (the scratch stays empty) — and records the
// drill (content-addressed, bound to the manifest digest, with scratch
// database and runtime version) in the source's baseline. Without a drill
// target nothing starts; a drill that fails (here: the "scratch" is the
// source database itself, which holds events) leaves every row hot, records
// nothing and removes the run's files.
func TestRET1_ArchiveDrillsAndRecordsEachBatchBeforeDelete(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := setupHistory(t, 3, 0)
	scratch := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 4})
	dir := t.TempDir()

	_, err := retention.Archive(ctx, f.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir})
	require.ErrorIs(t, err, retention.ErrNoDrillTarget)

	_, err = retention.Archive(ctx, f.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir, Drill: f.pool})
	require.ErrorIs(t, err, retention.ErrRestoreTarget)
	require.Equal(t, 3, count(t, f.pool, `SELECT count(*) FROM outbox.outbox_events`))
	require.Zero(t, count(t, f.pool, `SELECT count(*) FROM outbox.retention_recovery_drills`))
	manifests, err := filepath.Glob(filepath.Join(dir, "manifests", "*.json"))
	require.NoError(t, err)
	require.Empty(t, manifests, "the refused run's files are gone")

	operator := dbtest.RolePool(t, f.bundle.DSNs[boundary.Core], outboxschema.RoleRetention)
	res, err := retention.Archive(ctx, operator, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: dir, BatchSize: 2, Drill: scratch.Core()})
	require.NoError(t, err)
	require.Len(t, res.Runs, 2)
	var scratchDB string
	require.NoError(t, scratch.Core().QueryRow(ctx, `SELECT current_database()`).Scan(&scratchDB))
	for _, r := range res.Runs {
		type row struct {
			Manifest string `db:"manifest_sha256"`
			Events   int64  `db:"events"`
			Scratch  string `db:"scratch_database"`
			Runtime  string `db:"runtime_version"`
			Document string `db:"drill_document"`
		}
		rows, err := f.pool.Query(ctx, `SELECT manifest_sha256, events, scratch_database, runtime_version, drill_document
			FROM outbox.retention_recovery_drills WHERE drill_sha256 = $1`, r.DrillSHA256)
		require.NoError(t, err)
		got, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[row])
		require.NoError(t, err)
		require.Equal(t, r.ManifestSHA256, got.Manifest)
		require.Equal(t, r.Counts.Events, got.Events)
		require.Equal(t, scratchDB, got.Scratch)
		require.NotEmpty(t, got.Runtime)
		require.Equal(t, r.DrillSHA256, retention.SHA256Hex([]byte(got.Document)), "content-addressed")
		require.Contains(t, got.Document, `"reproduced":true`)
		// the drill was recorded before the run (the delete's transaction)
		require.Equal(t, 1, count(t, f.pool, `SELECT count(*) FROM outbox.retention_recovery_drills d
			JOIN outbox.retention_runs r USING (manifest_sha256) WHERE d.drill_sha256 = $1 AND d.recorded_txid < r.recorded_txid`, r.DrillSHA256))
	}
	require.Zero(t, count(t, scratch.Core(), `SELECT count(*) FROM outbox.outbox_events`), "the drills rolled back")

	// a periodic re-drill of the directory records one new drill per manifest
	again, err := retention.Drill(ctx, operator, scratch.Core(), dir)
	require.NoError(t, err)
	require.Len(t, again, 2)
	require.Equal(t, 4, count(t, f.pool, `SELECT count(*) FROM outbox.retention_recovery_drills`))
}
