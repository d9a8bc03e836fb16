package billing_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/operationstest"
	"github.com/oceanway/core/internal/operations/projector"
	operationsschema "github.com/oceanway/core/internal/operations/schema"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/coreread"
	"github.com/oceanway/core/internal/release"
)

func readOf(t *testing.T, b *bundle, eventID string) (coreread.FinalizationCommittedRead, *envelope.Envelope) {
	t.Helper()
	var text, sha string
	require.NoError(t, b.admin.QueryRow(t.Context(), "SELECT event_envelope, event_envelope_sha256 FROM outbox.outbox_events WHERE event_id = $1", eventID).Scan(&text, &sha))
	env, err := envelope.DecodeEnvelope([]byte(text))
	require.NoError(t, err)
	p, err := envelope.PayloadOf[envelope.BillingFinalizationCommittedV1Payload](env)
	require.NoError(t, err)
	return coreread.FinalizationCommittedRead{Committed: p.BillingFinalizationCommitted(), EventID: env.EventID,
		EventEnvelopeDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: sha}, BillingReservationID: p.BillingReservationID,
		BillingAccountID: p.BillingAccountID, RunID: p.RunID, FenceID: p.BillingFinalizationFenceID, OperationID: p.BillingFinalizationOperationID,
		FenceRevision: p.FinalizationFenceRevision, Decision: p.BillingFinalizationDecision, SettledAmount: p.SettledAmount,
		ReleasedAmount: p.ReleasedAmount}, env
}

// OPS/BI-1 readBillingFinalizationCommitted: found only when the stored
// fact recomputes to the event's quadruple and every identity matches;
// not_found when Billing has no fact for the reservation; conflicting when
// any field differs or the reservation has another fact; a bare request is
// refused.
func TestReadBillingFinalizationCommitted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newRun(1)
	b.closed(t, r)
	res, err := b.commit(t, b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "12.5", "2487.5"), billing.CommitOpts{})
	require.NoError(t, err)
	reads := billing.Reads{DB: b.pool}
	req, _ := readOf(t, b, res.EventID)
	ans, err := reads.ReadBillingFinalizationCommitted(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, ans)

	for name, mutate := range map[string]func(q *coreread.FinalizationCommittedRead){
		"digest":         func(q *coreread.FinalizationCommittedRead) { q.Committed.Digest = quad("x").Digest },
		"event":          func(q *coreread.FinalizationCommittedRead) { q.EventID = id("other-event") },
		"envelope":       func(q *coreread.FinalizationCommittedRead) { q.EventEnvelopeDigest.Value = quad("y").Digest },
		"settled":        func(q *coreread.FinalizationCommittedRead) { q.SettledAmount = "13" },
		"decision":       func(q *coreread.FinalizationCommittedRead) { q.Decision = billingc.SuccessReleaseAll },
		"fence revision": func(q *coreread.FinalizationCommittedRead) { q.FenceRevision++ },
		"other ref":      func(q *coreread.FinalizationCommittedRead) { q.Committed = quad("bfc-other") },
	} {
		q := req
		mutate(&q)
		ans, err := reads.ReadBillingFinalizationCommitted(t.Context(), q)
		require.NoError(t, err, name)
		require.Equal(t, ownerread.Conflicting, ans, name)
	}
	q := req
	q.Committed, q.BillingReservationID = quad("bfc-none"), id("no-such-reservation")
	ans, err = reads.ReadBillingFinalizationCommitted(t.Context(), q)
	require.NoError(t, err)
	require.Equal(t, ownerread.NotFound, ans)
	q.Committed.Ref = ""
	_, err = reads.ReadBillingFinalizationCommitted(t.Context(), q)
	require.ErrorIs(t, err, ownerread.ErrInvalidRequest)
}

// Issue 15 item 4: the Operations projector, given billing.Reads, projects
// billing.finalization.committed@1 (revision 2 of the reservation) instead
// of waiting on owner_read_unavailable: admission → closure → commit →
// run.created, wallet.reserved and the finalization applied in order.
func TestOperationsProjectsCommittedFinalization(t *testing.T) {
	t.Parallel()
	bs := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line(), operationsschema.Line()}, MaxConns: 10})
	admin := bs.Core()
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: projector.ProjectionName, ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	pool := rolePool(t, bs.DSNs[boundary.Core], billingschema.RoleBilling)
	c, err := billing.NewCoordinator(pool, billing.CoordinatorConfig{})
	require.NoError(t, err)
	b := &bundle{admin: admin, pool: pool, c: c}

	adm, err := admission.New(admin).Admit(t.Context(), admission.Request{AdmissionOperationID: id("op"), TenantKind: envelope.TenantOrganization,
		TenantID: id("tenant"), WorkspaceID: id("workspace"), BillingAccountID: id("account"), ReservedCredits: 40})
	require.NoError(t, err)
	r := run{n: 9, runID: adm.RunID, reservationID: adm.BillingReservationID, accountID: adm.BillingAccountID, fenceID: adm.FenceID,
		tenantID: id("tenant"), workspaceID: id("workspace"), manifest: adm.Manifest, reserved: 40}
	_, err = b.deliver(t, r.closure(""))
	require.NoError(t, err)
	res, err := b.commit(t, b.decision(t, r, billingc.SuccessSettleAndReleaseRemainder, "30", "10"), billing.CommitOpts{})
	require.NoError(t, err)

	p, err := projector.New(admin, projector.Config{Inbox: inbox.Config{}, BillingReads: billing.Reads{DB: pool}})
	require.NoError(t, err)
	_, finalization := readOf(t, b, res.EventID)
	for _, eventID := range []string{adm.RunCreatedEventID, adm.WalletReservedEventID} {
		var text string
		require.NoError(t, admin.QueryRow(t.Context(), "SELECT event_envelope FROM outbox.outbox_events WHERE event_id = $1", eventID).Scan(&text))
		e, err := envelope.DecodeEnvelope([]byte(text))
		require.NoError(t, err)
		_, err = p.Consume(t.Context(), operationstest.DeliveryV1(e))
		require.NoError(t, err)
	}
	_, err = p.Consume(t.Context(), operationstest.DeliveryV1(finalization))
	require.NoError(t, err)
	var decision, settled, released string
	require.NoError(t, admin.QueryRow(t.Context(), `SELECT billing_finalization_decision, settled_amount, released_amount
		FROM operations.operation_summaries WHERE run_id = $1`, adm.RunID).Scan(&decision, &settled, &released))
	require.Equal(t, []string{"settle_and_release_remainder", "30", "10"}, []string{decision, settled, released})
}
