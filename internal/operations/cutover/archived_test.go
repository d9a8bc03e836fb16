package cutover

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	"github.com/oceanway/core/internal/retention"
)

// RET-1 with DS-8 (outbox document: deletion must not affect a Shadow
// Rebuild; 错/缺归档仍声明 Complete/Cutover must be refused): the shadow
// build reads hot events only (outbox.projection_source_events), so once
// retention archived part of the projection's source, a cutover would
// freeze a candidate and prove readiness over fewer events than the source
// holds. The freeze refuses it (ErrArchivedSource), nothing is switched and
// no readiness proof is written; a new shadow claim is refused too. The
// projector's least-privileged role can read the archived source it needs.
func TestRET1_DS8CutoverOverArchivedRangeRefused(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()
	require.NoError(t, b.admit(ctx, 2))
	require.NoError(t, b.deliverAll(ctx))
	_, err := Shadow(ctx, b.pool, b.cfg, 2, false, 0)
	require.NoError(t, err)
	hot := count(t, b.pool, `SELECT count(*) FROM outbox.projection_source_events WHERE projection_name = $1`, projector.ProjectionName)
	require.Positive(t, hot)

	scratch := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 4})
	res, err := retention.Archive(ctx, b.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: t.TempDir(), Drill: scratch.Core()})
	require.NoError(t, err)
	require.Positive(t, res.Counts.Events)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM outbox.projection_source_events WHERE projection_name = $1`, projector.ProjectionName),
		"the shadow's source lost the archived events")
	require.Equal(t, hot, count(t, b.pool, `SELECT count(*) FROM outbox.projection_archived_source_events
		WHERE destination = 'core_operations' AND projection_name = $1`, projector.ProjectionName))

	_, err = Cutover(ctx, b.pool, b.cfg, 2, Hooks{})
	require.ErrorIs(t, err, ErrArchivedSource)
	active, err := activeVersion(ctx, b.pool, projector.ProjectionName)
	require.NoError(t, err)
	require.EqualValues(t, 1, active, "nothing switched")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM operations.readiness_proofs`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM operations.cutover_candidates`), "no candidate frozen over the hot part only")

	_, err = Shadow(ctx, b.pool, b.cfg, 3, false, 0)
	require.ErrorIs(t, err, ErrArchivedSource)

	ops := rolePool(t, b.dsn, operationsschema.RoleOperations)
	require.ErrorIs(t, refuseArchivedSource(ctx, ops, projector.ProjectionName, ""), ErrArchivedSource)
}

// RET-1 with DS-8: events archived after the candidate was frozen are
// candidate members the shadow had already covered; the final transaction
// counts them (no archived source event outside the candidate) and the
// readiness proof holds every one of them — hot and archived.
func TestRET1_DS8ArchiveAfterFreezeStaysInTheProof(t *testing.T) {
	t.Parallel()
	b, ctx := setup(t, 8), t.Context()
	require.NoError(t, b.admit(ctx, 2))
	require.NoError(t, b.deliverAll(ctx))
	_, err := Shadow(ctx, b.pool, b.cfg, 2, false, 0)
	require.NoError(t, err)
	members := count(t, b.pool, `SELECT count(*) FROM outbox.projection_source_events WHERE projection_name = $1`, projector.ProjectionName)

	scratch := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, MaxConns: 4})
	res, err := Cutover(ctx, b.pool, b.cfg, 2, Hooks{BeforeFinal: func(ctx context.Context) error {
		_, err := retention.Archive(ctx, b.pool, retention.ArchiveParams{OlderThan: time.Microsecond, Dir: t.TempDir(), Drill: scratch.Core()})
		return err
	}})
	require.NoError(t, err)
	require.Equal(t, members, res.CandidateMembers)
	require.Equal(t, members, count(t, b.pool, `SELECT count(*) FROM outbox.projection_archived_source_events
		WHERE destination = 'core_operations' AND projection_name = $1`, projector.ProjectionName), "the whole candidate was archived")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM operations.readiness_proofs WHERE member_count = $1`, members))
}
