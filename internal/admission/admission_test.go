package admission_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/outbox"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

const projection = "operations_read_model"

func setup(t *testing.T, bootstrap bool) (*pgxpool.Pool, *admission.Service) {
	t.Helper()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core}, Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line()}, MaxConns: 10}).Core()
	if bootstrap {
		_, err := release.Bootstrap(t.Context(), pool, release.BootstrapParams{
			ProjectionName: projection, ProjectionVersion: 1, SourceRelease: "test",
		})
		require.NoError(t, err)
	}
	return pool, admission.New(pool)
}

func request() admission.Request {
	return admission.Request{
		AdmissionOperationID: uuid.NewString(),
		TenantKind:           envelope.TenantOrganization,
		TenantID:             uuid.NewString(),
		WorkspaceID:          uuid.NewString(),
		ProjectID:            uuid.NewString(),
		BillingAccountID:     uuid.NewString(),
		ReservedCredits:      2500,
	}
}

var tables = []string{"admission.admission_requests", "admission.run_admission_manifests", "admission.runs",
	"admission.reservations", "billing.reservation_states", "billing.ledger_posting_groups",
	"billing.billing_finalization_fences", "billing.billing_finalization_trigger_snapshots",
	"billing.billing_finalization_works", "outbox.outbox_events", "outbox.outbox_deliveries"}

func counts(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tbl := range tables {
		var n int
		require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM "+tbl).Scan(&n))
		out[tbl] = n
	}
	return out
}

// EX-1: one admission creates the Run, its content-addressed manifest, the
// credits reservation, the unique fence with its first waiting Work, and
// both admission events with their exact payloads and deliveries.
func TestEX1AdmitCreatesRunReservationFenceWorkAndEvents(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t, true)
	ctx := t.Context()
	req := request()
	res, err := svc.Admit(ctx, req)
	require.NoError(t, err)
	require.False(t, res.Replayed)
	for tbl, n := range counts(t, pool) {
		want := 1
		if tbl == "outbox.outbox_events" || tbl == "outbox.outbox_deliveries" {
			want = 2
		}
		require.Equal(t, want, n, tbl)
	}

	// The manifest is content-addressed: its stored body recomputes to its quadruple.
	var body string
	require.NoError(t, pool.QueryRow(ctx, "SELECT manifest_body FROM admission.run_admission_manifests WHERE run_id = $1", res.RunID).Scan(&body))
	requireSelfAddressed(t, body, "runAdmissionManifest", "admittedAt", res.Manifest)
	require.Contains(t, body, `"reservedAmount":"2500"`)
	require.Contains(t, body, `"reservationEconomicIdentity":{"kind":"credits"}`)

	// Integer credits.
	var credits int64
	var kind, state string
	require.NoError(t, pool.QueryRow(ctx, "SELECT reserved_credits, economic_identity_kind, state FROM admission.reservations WHERE run_id = $1",
		res.RunID).Scan(&credits, &kind, &state))
	require.EqualValues(t, 2500, credits)
	require.Equal(t, "credits", kind)
	require.Equal(t, "reserved", state)

	// The unique fence with generation 1 active and its waiting Work.
	var coordination string
	var active int64
	require.NoError(t, pool.QueryRow(ctx, "SELECT coordination_state, active_work_generation FROM billing.billing_finalization_fences WHERE run_id = $1",
		res.RunID).Scan(&coordination, &active))
	require.Equal(t, "pending_evaluation", coordination)
	require.EqualValues(t, 1, active)
	require.Equal(t, "waiting", res.WorkState)
	require.Equal(t, "closure_event_not_applied", res.WorkWaitingReason)
	var workBody, triggerBody string
	var trigger strict.Quadruple
	var trigAlg string
	require.NoError(t, pool.QueryRow(ctx, `SELECT w.work_body, t.snapshot_body, t.trigger_snapshot_ref, t.trigger_snapshot_schema_version,
		t.trigger_snapshot_digest_algorithm_version, t.trigger_snapshot_digest
		FROM billing.billing_finalization_works w JOIN billing.billing_finalization_trigger_snapshots t USING (trigger_snapshot_ref)
		WHERE w.billing_finalization_fence_id = $1`, res.FenceID).Scan(&workBody, &triggerBody, &trigger.Ref, &trigger.SchemaVersion, &trigAlg, &trigger.Digest))
	trigger.DigestAlgorithmVersion = digest.Algorithm(trigAlg)
	requireSelfAddressed(t, workBody, "billingFinalizationWork", "createdAt", res.Work)
	requireSelfAddressed(t, triggerBody, "billingFinalizationTriggerSnapshot", "capturedAt", trigger)
	require.Equal(t, admission.FinalizationOperationID(res.BillingReservationID, res.RunID, 1, trigger.Digested()), res.FinalizationOperationID)

	// Both events, exact payloads, equal manifest quadruple, causation and correlation.
	rows, err := pool.Query(ctx, "SELECT event_envelope, event_envelope_sha256 FROM outbox.outbox_events ORDER BY event_type")
	require.NoError(t, err)
	envs := map[string]*envelope.Envelope{}
	for rows.Next() {
		var text, sha string
		require.NoError(t, rows.Scan(&text, &sha))
		e, err := envelope.DecodeEnvelope([]byte(text))
		require.NoError(t, err)
		require.NoError(t, e.VerifyDigest(digest.Digest{Algorithm: digest.JCSSHA256V1, Value: sha}))
		envs[e.EventType] = e
	}
	require.NoError(t, rows.Err())
	run, wallet := envs[envelope.RunCreatedV2], envs[envelope.WalletReservedV2]
	require.NotNil(t, run)
	require.NotNil(t, wallet)
	require.Equal(t, res.RunCreatedEventID, run.EventID)
	require.Equal(t, res.WalletReservedEventID, wallet.EventID)
	require.Equal(t, run.EventID, wallet.CausationID, "the reservation is caused by the run admission")
	require.Equal(t, req.AdmissionOperationID, run.OperationID)
	require.Equal(t, req.AdmissionOperationID, wallet.OperationID)
	require.Equal(t, req.AdmissionOperationID, run.CorrelationID, "correlation defaults to the operation id")
	require.Equal(t, run.CorrelationID, wallet.CorrelationID)
	for _, e := range []*envelope.Envelope{run, wallet} {
		require.Equal(t, res.Manifest.Ref, e.Payload["runAdmissionManifestRef"])
		require.Equal(t, res.Manifest.Digest, e.Payload["runAdmissionManifestDigest"])
		require.Equal(t, res.RunID, e.Payload["runId"])
		require.Equal(t, res.BillingReservationID, e.Payload["billingReservationId"])
		require.Equal(t, req.BillingAccountID, e.Payload["billingAccountId"])
	}
	require.Equal(t, "2500", wallet.Payload["reservedAmount"])
	require.Len(t, run.Payload, 7)
	require.Len(t, wallet.Payload, 9)

	var pending int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_deliveries WHERE destination = 'core_operations'
		AND status = 'pending' AND required_projection_name = $1 AND required_projection_version = 1`, projection).Scan(&pending))
	require.Equal(t, 2, pending)

	looked, err := admission.Lookup(ctx, pool, res.RunID)
	require.NoError(t, err)
	res.Replayed = false
	require.Equal(t, res, looked)
}

func requireSelfAddressed(t *testing.T, body, prefix, timeField string, q strict.Quadruple) {
	t.Helper()
	v, err := jcs.Parse([]byte(body))
	require.NoError(t, err)
	m := v.(map[string]any)
	canonical, err := jcs.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, body, string(canonical), "stored body is canonical")
	self := strict.SelfAddressed{Prefix: prefix, TimeFields: []string{timeField}}
	require.NoError(t, self.Verify(m), "%s digest recomputes", prefix)
	f := strict.Fields(prefix)
	require.Equal(t, q.Ref, m[f[0]])
	require.Equal(t, q.SchemaVersion, m[f[1]])
	require.Equal(t, string(q.DigestAlgorithmVersion), m[f[2]])
	require.Equal(t, q.Digest, m[f[3]])
}

// EX-1: idempotent by admission operation id.
func TestEX1AdmitIsIdempotentByOperationID(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t, true)
	ctx := t.Context()
	req := request()
	first, err := svc.Admit(ctx, req)
	require.NoError(t, err)
	before := counts(t, pool)

	again, err := svc.Admit(ctx, req)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	again.Replayed = false
	require.Equal(t, first, again)
	require.Equal(t, before, counts(t, pool))

	other := req
	other.ReservedCredits++
	_, err = svc.Admit(ctx, other)
	require.ErrorIs(t, err, admission.ErrAdmissionConflict) // EX-1.admission-request-conflict
	var conflict *admission.ConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, first.RunID, conflict.RunID)
	require.Equal(t, before, counts(t, pool))
}

// EX-1: concurrent admissions with one operation id create one run.
func TestEX1ConcurrentSameOperationIDCreatesOneRun(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t, true)
	req := request()
	const n = 8
	var wg sync.WaitGroup
	results := make([]admission.Result, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = svc.Admit(t.Context(), req)
		}()
	}
	close(start)
	wg.Wait()
	fresh := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, results[0].RunID, results[i].RunID)
		if !results[i].Replayed {
			fresh++
		}
	}
	require.Equal(t, 1, fresh)
	require.Equal(t, 1, counts(t, pool)["admission.runs"])
}

// EX-1: any failure rolls everything back — after every step of the
// transaction, with no active definition (DS-9), and when the deferred
// delivery-set proof fails at COMMIT.
func TestEX1AdmissionRollsBackWhenAnyPartFails(t *testing.T) {
	t.Parallel()
	empty := map[string]int{}
	for _, tbl := range tables {
		empty[tbl] = 0
	}
	boom := errors.New("injected failure")
	for _, step := range admission.Steps {
		t.Run("after "+step, func(t *testing.T) {
			t.Parallel()
			pool, svc := setup(t, true)
			svc.SetHooks(admission.Hooks{AfterStep: func(_ context.Context, _ pgx.Tx, s string) error {
				if s == step {
					return boom
				}
				return nil
			}})
			_, err := svc.Admit(t.Context(), request())
			require.ErrorIs(t, err, boom)
			require.Equal(t, empty, counts(t, pool))
		})
	}
	t.Run("no active definition", func(t *testing.T) {
		t.Parallel()
		pool, svc := setup(t, false)
		_, err := svc.Admit(t.Context(), request())
		require.ErrorIs(t, err, outbox.ErrNoActiveDefinition)
		require.Equal(t, empty, counts(t, pool))
	})
	t.Run("delivery-set proof fails at commit", func(t *testing.T) {
		t.Parallel()
		pool, svc := setup(t, true)
		svc.SetHooks(admission.Hooks{AfterStep: func(ctx context.Context, tx pgx.Tx, s string) error {
			if s != "append" {
				return nil
			}
			// An extra delivery row the frozen definition does not list.
			_, err := tx.Exec(ctx, `INSERT INTO outbox.outbox_deliveries (event_id, delivery_set_version, destination, consumer_name,
				expected_receipt_type, expected_receipt_schema_version, mandatory)
				SELECT event_id, delivery_set_version, 'metering_input_processor', 'metering_input_processor_consumer',
				       'MeteringInputProcessorConsumerReceipt', '1', true
				  FROM outbox.outbox_events WHERE event_type = 'run.created@2.0'`)
			return err
		}})
		_, err := svc.Admit(t.Context(), request())
		require.ErrorIs(t, err, outbox.ErrDeliverySetMismatch)
		require.Equal(t, outbox.CodeDeliverySetMismatch, db.SQLState(err))
		require.Equal(t, empty, counts(t, pool))
	})
}

func TestAdmitValidatesRequest(t *testing.T) {
	t.Parallel()
	_, svc := setup(t, true)
	for name, c := range map[string]struct {
		edit func(*admission.Request)
		want error
	}{
		"personal tenant": {func(r *admission.Request) { r.TenantKind = envelope.TenantPersonal }, admission.ErrUnsupportedTenant},
		"zero credits":    {func(r *admission.Request) { r.ReservedCredits = 0 }, admission.ErrInvalidRequest},
		"unsafe credits":  {func(r *admission.Request) { r.ReservedCredits = admission.MaxCredits + 1 }, admission.ErrInvalidRequest},
		"uppercase uuid":  {func(r *admission.Request) { r.TenantID = "A0000000-0000-7000-8000-000000000001" }, admission.ErrInvalidRequest},
		"no operation id": {func(r *admission.Request) { r.AdmissionOperationID = "" }, admission.ErrInvalidRequest},
		"bad correlation": {func(r *admission.Request) { r.CorrelationID = "corr-1" }, admission.ErrInvalidRequest},
	} {
		t.Run(name, func(t *testing.T) {
			r := request()
			c.edit(&r)
			_, err := svc.Admit(t.Context(), r)
			require.ErrorIs(t, err, c.want, fmt.Sprint(err))
		})
	}
}
