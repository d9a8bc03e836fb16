package readmodel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/operations/readmodel"
	"github.com/oceanway/core/internal/retention"
)

// RET-1 with OPS-4: archiving closed history does not make completeness
// lie. The archived deliveries stay in the proof's source view
// (outbox.delivery_facts, outbox 00093), so after a retention run the last
// proof still describes the snapshot exactly (verified_current,
// complete_for_supported_scope, no receipt without source), a new proof run
// records nothing (same inputs digest), and a new unapplied event is still
// a determined gap.
func TestRET1_OPS4_CompletenessUnchangedByArchive(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()
	b.admit(t, 3)
	b.deliverAll(t)
	proof, recorded, err := b.rm.RecordCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.True(t, recorded)
	require.Equal(t, readmodel.CompleteForSupportedScope, proof.ProjectionCompleteness)

	scratch := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 4})
	res, err := retention.Archive(ctx, b.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: t.TempDir(), Drill: scratch.Core()})
	require.NoError(t, err)
	require.EqualValues(t, 6, res.Counts.Events, "every delivered event of the three admissions left the hot tables")
	var hot int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events`).Scan(&hot))
	require.Zero(t, hot)

	c := b.completeness(t)
	require.Equal(t, readmodel.Verified, c.VerificationState)
	require.Equal(t, readmodel.VerifiedCurrent, c.SnapshotCurrency)
	require.Equal(t, readmodel.CompleteForSupportedScope, c.ProjectionCompleteness)
	again, recorded, err := b.rm.RecordCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.False(t, recorded, "the archive changed no proof input")
	require.Equal(t, proof.SnapshotID, again.SnapshotID)
	require.Zero(t, again.Inputs.Semantic.ReceiptsWithoutSource)
	require.EqualValues(t, 6, again.Inputs.SourceEvents.Count)

	b.admit(t, 1)
	c = b.completeness(t)
	require.Equal(t, readmodel.Stale, c.SnapshotCurrency)
	require.Equal(t, readmodel.PartialSourceGap, c.ProjectionCompleteness)
}
