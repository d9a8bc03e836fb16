package readmodel_test

import (
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/operations/readmodel"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

// rolePool connects to dsn and runs every session as role.
func rolePool(t *testing.T, dsn, role string) *pgxpool.Pool { return dbtest.RolePool(t, dsn, role) }

// The least-privilege roles are enough: admission appends as
// oceanway_admission, the dispatcher delivers as oceanway_dispatcher, the
// projector, the directed read and the read model run as
// oceanway_operations; the operations role cannot write the outbox.
func TestRolesAreSufficient(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bundle := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: lines.All()})
	def, err := release.Bootstrap(ctx, bundle.Core(), release.BootstrapParams{
		ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "test",
	})
	require.NoError(t, err)
	dsn := bundle.DSNs[boundary.Core]
	admPool := rolePool(t, dsn, admissionschema.RoleAdmission)
	dispPool := rolePool(t, dsn, outboxschema.RoleDispatcher)
	opsPool := rolePool(t, dsn, operationsschema.RoleOperations)

	res, err := admission.New(admPool).Admit(ctx, admitRequest())
	require.NoError(t, err)

	p, err := projector.New(opsPool, projector.Config{BillingReads: operationstest.Found()})
	require.NoError(t, err)
	store := dispatcher.NewStore(dispPool, 5*time.Second)
	var last dispatcher.Claimed
	for {
		claims, err := store.Claim(ctx, dispatcher.ClaimParams{Owner: "roles", Destinations: []route.Destination{route.CoreOperations}, Limit: 10, Lease: time.Minute})
		require.NoError(t, err)
		if len(claims) == 0 {
			break
		}
		for _, c := range claims {
			out, err := p.Consume(ctx, c.Delivery())
			require.NoError(t, err)
			require.NoError(t, store.VerifyAndAck(ctx, c, out))
			last = c
			rr, err := projector.ReadOperationsProjectionAppliedReceipt(ctx, opsPool, projector.ReceiptReadRequest{
				Receipt: out.Ack.AppliedReceipt.Receipt, Definition: def.Quadruple(), Member: c.Member, Workload: "roles-test",
				EventID: c.EventID, EventType: c.EventType, EventSchemaVersion: c.EventSchemaVersion, EventEnvelopeDigest: c.EnvelopeDigest,
			})
			require.NoError(t, err)
			require.Equal(t, projector.ReceiptFound, rr.State)
		}
	}
	require.NotEmpty(t, last.EventID)

	rm := readmodel.New(opsPool)
	s, err := rm.Operation(ctx, res.RunID, readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, readmodel.ReservationReserved, s.Reservation.State)
	_, err = rm.ProveCompleteness(ctx, readmodel.Params{})
	require.NoError(t, err)
	c, err := rm.Completeness(ctx, readmodel.Params{})
	require.NoError(t, err)
	require.Equal(t, readmodel.VerifiedCurrent, c.SnapshotCurrency)
	require.Equal(t, readmodel.CompleteForSupportedScope, c.ProjectionCompleteness)

	_, err = opsPool.Exec(ctx, "UPDATE outbox.outbox_deliveries SET status = 'pending'")
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err))
	_, err = opsPool.Exec(ctx, "DELETE FROM operations.applied_receipts")
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err))
	// Operations reads outbox state only through the outbox-owned read
	// views (outbox migration 00090), never the outbox tables.
	for _, table := range []string{"outbox_events", "outbox_deliveries", "delivery_set_members", "projection_pointers"} {
		_, err = opsPool.Exec(ctx, "SELECT 1 FROM outbox."+table+" LIMIT 1")
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(err), table)
	}
}
