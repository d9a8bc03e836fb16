package legacy_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/legacy"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/release"
)

// legacyExample is docs/examples/legacy-outbox.sql.
func legacyExample(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "examples", "legacy-outbox.sql"))
	require.NoError(t, err)
	return string(b)
}

// newLegacyCore is a migrated core database with the first release active
// and the legacy example loaded.
func newLegacyCore(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}}).Core()
	_, err := release.Bootstrap(t.Context(), pool, release.BootstrapParams{
		ProjectionName: "operations_read_model", ProjectionVersion: 1, ReadinessProofRef: "test", SourceRelease: "test"})
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), legacyExample(t))
	require.NoError(t, err)
	return pool
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

// OB-BOOT-1: the example adopts 4 published and 4 open events under an
// explicit bootstrap definition, quarantines the 4 rows that cannot be
// adopted with their reason class, and a second run changes nothing.
func TestAdoptLegacy_OBBOOT1_ClassifiesAndIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := newLegacyCore(t)

	ev, err := legacy.Adopt(ctx, pool, legacy.Params{})
	require.NoError(t, err)
	require.Equal(t, 12, ev.Scope.LegacyRows)
	require.Equal(t, 4, ev.Counts["adopted_published"])
	require.Equal(t, 4, ev.Counts["adopted_open"])
	require.Equal(t, 2, ev.Counts[legacy.ClassUnparseable])
	require.Equal(t, 1, ev.Counts[legacy.ClassUnsupported])
	require.Equal(t, 1, ev.Counts[legacy.ClassDigestConflict])
	require.Equal(t, 8, ev.AdoptedTotal)
	require.Equal(t, 4, ev.QuarantineTotal)
	require.Empty(t, ev.GoldenRun.Failures)
	require.Positive(t, ev.GoldenRun.Passed)
	require.Regexp(t, `^[0-9a-f]{64}$`, ev.SetDigest)
	require.Regexp(t, `^[0-9a-f]{64}$`, ev.Bootstrap.DeliverySetDefinitionDigest)
	require.NotEqual(t, ev.Bootstrap.DeliverySetVersion, ev.OpenDefinition.DeliverySetVersion)

	// Every unadoptable row is visible with its reason, keyed by the legacy row.
	type q struct {
		Row   int64
		Class string
	}
	rows, err := pool.Query(ctx, `SELECT legacy_row_id, reason_class FROM outbox.legacy_quarantine ORDER BY legacy_row_id`)
	require.NoError(t, err)
	var got []q
	for rows.Next() {
		var r q
		require.NoError(t, rows.Scan(&r.Row, &r.Class))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []q{{9, legacy.ClassUnparseable}, {10, legacy.ClassUnsupported}, {11, legacy.ClassDigestConflict}, {12, legacy.ClassUnparseable}}, got)

	// The bootstrap definition is registered, immutable, never active.
	require.Equal(t, "registered", func() string {
		var s string
		require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM outbox.delivery_set_versions WHERE delivery_set_version = $1`,
			ev.Bootstrap.DeliverySetVersion).Scan(&s))
		return s
	}())
	// Published events: bootstrap quadruple, no delivery row, published at
	// adoption, the legacy time kept as evidence. Open events: pending rows.
	require.Equal(t, 4, count(t, pool, `SELECT count(*) FROM outbox.outbox_events e JOIN outbox.legacy_adoptions a USING (event_id)
		WHERE a.class = 'published' AND e.delivery_set_version = $1 AND e.published_at IS NOT NULL AND a.legacy_published_at < e.published_at
		  AND NOT EXISTS (SELECT 1 FROM outbox.outbox_deliveries d WHERE d.event_id = e.event_id)`, ev.Bootstrap.DeliverySetVersion))
	require.Equal(t, 4, count(t, pool, `SELECT count(DISTINCT e.event_id) FROM outbox.outbox_events e JOIN outbox.legacy_adoptions a USING (event_id)
		JOIN outbox.outbox_deliveries d USING (event_id)
		WHERE a.class = 'open' AND e.delivery_set_version = $1 AND e.published_at IS NULL AND d.status = 'pending'`, ev.OpenDefinition.DeliverySetVersion))
	// No event without a delivery set: every event freezes a registered quadruple (FK) and the digests match the adoption record.
	require.Zero(t, count(t, pool, `SELECT count(*) FROM outbox.legacy_adoptions a JOIN outbox.outbox_events e USING (event_id)
		WHERE a.event_envelope_sha256 <> e.event_envelope_sha256`))

	events := count(t, pool, `SELECT count(*) FROM outbox.outbox_events`)
	deliveries := count(t, pool, `SELECT count(*) FROM outbox.outbox_deliveries`)
	again, err := legacy.Adopt(ctx, pool, legacy.Params{})
	require.NoError(t, err)
	require.Equal(t, ev.SetDigest, again.SetDigest)
	require.Equal(t, ev.Bootstrap, again.Bootstrap)
	require.Equal(t, 8, again.Counts["already_adopted"])
	require.Equal(t, 4, again.Counts["already_quarantined"])
	require.Zero(t, again.Counts["adopted_published"]+again.Counts["adopted_open"])
	require.Equal(t, events, count(t, pool, `SELECT count(*) FROM outbox.outbox_events`))
	require.Equal(t, deliveries, count(t, pool, `SELECT count(*) FROM outbox.outbox_deliveries`))
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM outbox.bootstrap_definitions`))
}

// OB-BOOT-1: the database is the second guard. An event freezing the
// bootstrap definition outside outbox.adopt_legacy_published is refused at
// commit (it is not active), adoption rows and quarantine rows are
// immutable, and the adoption function is not executable by the producer.
func TestAdoptLegacy_OBBOOT1_DatabaseGuards(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := newLegacyCore(t)
	ev, err := legacy.Adopt(ctx, pool, legacy.Params{})
	require.NoError(t, err)

	_, err = pool.Exec(ctx, `DELETE FROM outbox.legacy_quarantine`)
	require.Error(t, err)
	_, err = pool.Exec(ctx, `UPDATE outbox.legacy_adoptions SET class = 'open', legacy_published_at = NULL`)
	require.Error(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM outbox.bootstrap_definitions`)
	require.Error(t, err)

	// Copy a published event under a new id with the bootstrap quadruple,
	// directly: the deferred proof refuses it (OW006, not active).
	_, err = pool.Exec(ctx, `INSERT INTO outbox.outbox_events (event_id, event_type, schema_version, delivery_set_version,
	    delivery_set_definition_schema_version, delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
	    aggregate_type, aggregate_id, aggregate_revision, tenant_kind, tenant_id, workspace_id, project_id, correlation_id,
	    causation_id, operation_id, event_envelope, event_payload, event_envelope_digest_algorithm_version, event_envelope_sha256, occurred_at)
	  SELECT '0190a000-0000-7000-8000-000000009999', event_type, schema_version, delivery_set_version,
	    delivery_set_definition_schema_version, delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest,
	    aggregate_type, aggregate_id, aggregate_revision, tenant_kind, tenant_id, workspace_id, project_id, correlation_id,
	    causation_id, operation_id, replace(event_envelope, event_id::text, '0190a000-0000-7000-8000-000000009999'),
	    event_payload, event_envelope_digest_algorithm_version, event_envelope_sha256, occurred_at
	  FROM outbox.outbox_events WHERE delivery_set_version = $1 LIMIT 1`, ev.Bootstrap.DeliverySetVersion)
	require.Equal(t, outbox.CodeDefinitionNotActive, db.SQLState(err))

	// The producer role cannot call the adoption path.
	err = db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE oceanway_producer`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT outbox.adopt_legacy_published('x', 1, '{}', repeat('0', 64), now(), $1)`, ev.Bootstrap.DeliverySetVersion)
		return err
	})
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err))
}

// OB-BOOT-1: adoption needs an active definition for the open events; without
// one nothing is written.
func TestAdoptLegacy_OBBOOT1_RequiresActiveDefinition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}}).Core()
	_, err := pool.Exec(ctx, legacyExample(t))
	require.NoError(t, err)
	_, err = legacy.Adopt(ctx, pool, legacy.Params{})
	require.ErrorIs(t, err, legacy.ErrNoActiveDefinition)
	require.Zero(t, count(t, pool, `SELECT count(*) FROM outbox.outbox_events`))
	require.Zero(t, count(t, pool, `SELECT count(*) FROM outbox.legacy_quarantine`))
}
