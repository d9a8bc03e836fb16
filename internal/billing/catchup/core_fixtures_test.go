package catchup_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/billing"
	billingschema "github.com/oceanway/core/internal/billing/schema"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
)

// The Billing core's side of the catch-up tests, copied from the subset of
// internal/billing/fixtures_test.go they use (a test package cannot import
// another's test files): the billing role's pool, and for integration_test.go
// one admitted reservation with its finalization fence, its closure through
// the coordinator, a success decision for the fence's active Work and the
// ledger balances.

var occurred = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// id and quad are the core fixtures' names for cid and cquad (the same functions).
var id, quad = cid, cquad

// run is one admitted reservation with deterministic ids (n).
type run struct {
	n                                        int
	runID, reservationID, accountID, fenceID string
	tenantID, workspaceID                    string
	manifest                                 strict.Quadruple
	reserved                                 int64
}

func newRun(n int) run {
	return run{n: n, runID: id("run", n), reservationID: id("reservation", n), accountID: id("account", n), fenceID: id("fence", n),
		tenantID: id("tenant"), workspaceID: id("workspace"), manifest: quad(fmt.Sprintf("ram-%d", n)), reserved: 2500}
}

// admit writes the admission rows of r (as admission would) and opens its
// billing rows through billing.OpenFinalizationTx.
func admit(t *testing.T, pool *pgxpool.Pool, r run) billing.Opened {
	t.Helper()
	opened, err := db.WithTxV(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) (billing.Opened, error) {
		m := r.manifest
		for _, stmt := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO admission.admission_requests VALUES ($1, 'jcs-sha256-v1', $2, '{}', $3, $4)`,
				[]any{id("admission-op", r.n), m.Digest, r.runID, occurred}},
			{`INSERT INTO admission.run_admission_manifests VALUES ($1, $2, $3, $4, $5, '{}', $6)`,
				[]any{m.Ref, m.SchemaVersion, string(m.DigestAlgorithmVersion), m.Digest, r.runID, occurred}},
			{`INSERT INTO admission.runs VALUES ($1, $2, 'organization', $3, $4, NULL, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
				[]any{r.runID, id("admission-op", r.n), r.tenantID, r.workspaceID, id("correlation", r.n), r.accountID, r.reservationID,
					m.Ref, m.SchemaVersion, string(m.DigestAlgorithmVersion), m.Digest, id("run-created", r.n), occurred}},
			{`INSERT INTO admission.reservations VALUES ($1, $2, $3, 'credits', $4, 'reserved', $5, $6)`,
				[]any{r.reservationID, r.accountID, r.runID, r.reserved, id("wallet-reserved", r.n), occurred}},
		} {
			if _, err := tx.Exec(ctx, stmt.sql, stmt.args...); err != nil {
				return billing.Opened{}, err
			}
		}
		return billing.OpenFinalizationTx(ctx, tx, billing.OpenParams{FenceID: r.fenceID, BillingReservationID: r.reservationID,
			BillingAccountID: r.accountID, RunID: r.runID, ReservedCredits: r.reserved, Manifest: r.manifest, At: occurred})
	})
	require.NoError(t, err)
	return opened
}

// closure is r's execution.run-finalization.closed@1 (variant changes the
// event id and its closure fact).
func (r run) closure(variant string) *envelope.Envelope {
	p := envelope.ExecutionRunFinalizationClosedV1Payload{BillingReservationID: r.reservationID, BillingAccountID: r.accountID,
		RunID: r.runID, ClosureOperationID: id("closure-op", r.n, variant), RunExecutionFinalizationStateVersion: 1, AttemptCount: 2}
	p.SetRunAdmissionManifest(r.manifest)
	p.SetRunExecutionFinalization(quad(fmt.Sprintf("ref-%d%s", r.n, variant)))
	p.SetAttemptSetManifest(quad(fmt.Sprintf("asm-%d%s", r.n, variant)))
	e, err := envelope.Build(envelope.Envelope{
		EventID: id("closure-event", r.n, variant), EventType: envelope.ExecutionRunFinalizationClosedV1, EventSchemaVersion: "1",
		AggregateType: envelope.AggregateRun, AggregateID: r.runID, AggregateRevision: 1,
		TenantKind: envelope.TenantOrganization, TenantID: r.tenantID, WorkspaceID: r.workspaceID,
		CorrelationID: id("correlation", r.n), OperationID: id("closure-op", r.n, variant), OccurredAt: occurred, Payload: p.Map(),
	})
	if err != nil {
		panic(err)
	}
	return e
}

func member(eventType, schemaVersion string) route.Member {
	return route.Member{
		EventType: eventType, EventSchemaVersion: schemaVersion,
		Destination: route.BillingFinalizationCoordinator, ConsumerName: route.BillingFinalizationCoordinatorConsumer,
		ExpectedReceiptType: route.BillingFinalizationCoordinatorConsumerReceipt, ExpectedReceiptSchemaVersion: route.ReceiptSchemaVersion1,
		ProjectionTarget: route.NotApplicable, Mandatory: true,
	}
}

func delivery(e *envelope.Envelope) transport.Delivery {
	return deliveryTo(e, member(e.EventType, e.EventSchemaVersion))
}

type bundle struct {
	admin *pgxpool.Pool // the migrating superuser (fixtures, assertions)
	pool  *pgxpool.Pool // oceanway_billing
	c     *billing.Coordinator
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core},
		Lines: []migrate.Line{outboxschema.Line(), admissionschema.Line(), billingschema.Line()}, MaxConns: 10})
	admin := b.Core()
	_, err := release.Bootstrap(t.Context(), admin, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	pool := dbtest.RolePool(t, b.DSNs[boundary.Core], billingschema.RoleBilling)
	c, err := billing.NewCoordinator(pool, billing.CoordinatorConfig{Inbox: inbox.Config{LockTimeout: 300 * time.Millisecond}})
	require.NoError(t, err)
	return &bundle{admin: admin, pool: pool, c: c}
}

func (b *bundle) deliver(t *testing.T, e *envelope.Envelope) (transport.Result, error) {
	t.Helper()
	return b.c.Consume(t.Context(), delivery(e))
}

// decision is a success decision for the fence's active generation.
func (b *bundle) decision(t *testing.T, r run, outcome, settled, released string) billing.Decision {
	t.Helper()
	var active *int64
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT active_work_generation FROM billing.billing_finalization_fences
		WHERE billing_finalization_fence_id = $1`, r.fenceID).Scan(&active))
	require.NotNil(t, active)
	var op string
	require.NoError(t, b.admin.QueryRow(t.Context(), `SELECT billing_finalization_operation_id FROM billing.billing_finalization_works
		WHERE billing_finalization_fence_id = $1 AND work_generation = $2`, r.fenceID, *active).Scan(&op))
	return billing.Decision{FenceID: r.fenceID, WorkGeneration: *active, OperationID: op, Outcome: outcome,
		SettledAmount: settled, ReleasedAmount: released, InputManifest: quad("fim-" + r.runID),
		ValidationBundle: quad("fvb-" + r.runID), DecisionObject: quad("bfd-" + r.runID)}
}

func (b *bundle) balances(t *testing.T, reservationID string) map[string]string {
	t.Helper()
	rows, err := b.admin.Query(t.Context(), "SELECT account_kind, balance::text FROM billing.ledger_balances WHERE billing_reservation_id = $1", reservationID)
	require.NoError(t, err)
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		require.NoError(t, rows.Scan(&k, &v))
		out[k] = v
	}
	require.NoError(t, rows.Err())
	return out
}
