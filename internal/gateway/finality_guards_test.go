package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
	"github.com/oceanway/core/internal/ownerread"
)

// Issue 30 (finality safety), Gateway half: an attacker with a psql session
// as oceanway_gateway tries forged writes against a state the real Gateway
// code built (Dispatch, Observe, ValidateAvailabilityCurrent), each in its
// own transaction ending in COMMIT; PostgreSQL refuses each with its own
// SQLSTATE.

var errCaptured = errors.New("captured, rolled back")

// rowImage is one row as jsonb text, with the columns to insert.
type rowImage struct {
	table string
	row   string
	cols  []string // nil: every column of the image
}

// captureRows runs fn on a service whose hook, at step, copies one row per
// query out of the real transaction and rolls it back: the exact rows the
// real code writes, for an attacker to replay in pieces.
func captureRows(t *testing.T, pool *pgxpool.Pool, step string, queries map[string]string, fn func(*gateway.Service) error) map[string]string {
	t.Helper()
	svc := gateway.New(pool)
	out := map[string]string{}
	svc.SetHooks(gateway.Hooks{AfterStep: func(ctx context.Context, tx pgx.Tx, s string) error {
		if s != step {
			return nil
		}
		for name, q := range queries {
			var row string
			if err := tx.QueryRow(ctx, q).Scan(&row); err != nil {
				return err
			}
			out[name] = row
		}
		return errCaptured
	}})
	require.ErrorIs(t, fn(svc), errCaptured)
	return out
}

func (r rowImage) insert(ctx context.Context, tx pgx.Tx) error {
	cols := r.cols
	if cols == nil {
		var m map[string]any
		if err := json.Unmarshal([]byte(r.row), &m); err != nil {
			return err
		}
		for k := range m {
			cols = append(cols, k)
		}
		sort.Strings(cols)
	}
	list := strings.Join(cols, ", ")
	_, err := tx.Exec(ctx, "INSERT INTO "+r.table+" ("+list+") SELECT "+list+" FROM jsonb_populate_record(NULL::"+r.table+", $1::jsonb)", r.row)
	return err
}

// editRow changes columns of a row image and, with bodyEdits, fields of its
// JSON body column.
func editRow(t *testing.T, row string, fields map[string]any, body string, bodyEdits func(map[string]any)) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(row), &m))
	for k, v := range fields {
		m[k] = v
	}
	if bodyEdits != nil {
		var bm map[string]any
		require.NoError(t, json.Unmarshal([]byte(m[body].(string)), &bm))
		bodyEdits(bm)
		out, err := json.Marshal(bm)
		require.NoError(t, err)
		m[body] = string(out)
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

type step = func(ctx context.Context, tx pgx.Tx) error

func sqlStep(sql string, args ...any) step {
	return func(ctx context.Context, tx pgx.Tx) error { _, err := tx.Exec(ctx, sql, args...); return err }
}

func rows(images ...rowImage) step {
	return func(ctx context.Context, tx pgx.Tx) error {
		for _, r := range images {
			if err := r.insert(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	}
}

// forge runs steps as pool's role in one transaction ending in COMMIT and
// returns the SQLSTATE of the refusal ("" when it committed).
func forge(t *testing.T, pool *pgxpool.Pool, steps ...step) string {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, s := range steps {
		if err := s(ctx, tx); err != nil {
			return db.SQLState(err)
		}
	}
	return db.SQLState(tx.Commit(ctx))
}

// The producer's insert grants on the outbox (an attacker replays events
// through them).
var (
	eventCols = []string{"event_id", "event_type", "schema_version", "delivery_set_version", "delivery_set_definition_schema_version",
		"delivery_set_definition_digest_algorithm_version", "delivery_set_definition_digest", "aggregate_type", "aggregate_id",
		"aggregate_revision", "tenant_kind", "tenant_id", "workspace_id", "project_id", "correlation_id", "causation_id", "operation_id",
		"event_envelope", "event_payload", "event_envelope_digest_algorithm_version", "event_envelope_sha256", "occurred_at"}
	deliveryCols = []string{"event_id", "delivery_set_version", "destination", "consumer_name", "expected_receipt_type",
		"expected_receipt_schema_version", "required_projection_name", "required_projection_version", "mandatory"}
)

const (
	tSlots     = "gateway.dispatch_slots"
	tRejection = "gateway.pre_binding_rejections"
	tSnapshots = "gateway.availability_snapshots"
	tEvidence  = "gateway.provider_evidence"
	tReceipts  = "gateway.availability_validation_receipts"
)

// Issue 30 class 14, GW-2: an availability advance is evidence, snapshot,
// pointer and gateway.evidence-availability.current-changed@1 in one
// transaction, and the snapshot's columns are its body's fields.
func TestGW2ForgedAvailabilityAdvancesAreRefused(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	role := dbtest.RolePool(t, pool.Config().ConnString(), gatewayschema.RoleGateway)
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	pending := gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityPending, ReasonCode: "awaiting_provider_report"}
	_ = observe(t, svc, m.ExecutionAttemptID, pending)
	available := gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityAvailable, ReasonCode: "provider_available", Quantity: "42", ReportID: "report-1"}

	chainID := envelope.GatewayAvailabilityChainID(m.ExecutionAttemptID, m.GatewayDeploymentID, available.EvidenceKind, available.DimensionKey)
	// The rows of the real v2 advance, after its event was appended (rolled back).
	snapQ := "SELECT to_jsonb(s)::text FROM gateway.availability_snapshots s WHERE chain_id = '" + chainID + "' AND state_version = 2"
	captured := captureRows(t, pool, "append", map[string]string{
		"snapshot": snapQ,
		"evidence": "SELECT to_jsonb(e)::text FROM gateway.provider_evidence e JOIN gateway.availability_snapshots s ON s.provider_evidence_ref = e.provider_evidence_ref WHERE s.chain_id = '" + chainID + "' AND s.state_version = 2",
		"event":    "SELECT to_jsonb(o)::text FROM outbox.outbox_events o JOIN gateway.availability_snapshots s ON s.event_id = o.event_id WHERE s.chain_id = '" + chainID + "' AND s.state_version = 2",
		"delivery": "SELECT to_jsonb(d)::text FROM outbox.outbox_deliveries d JOIN gateway.availability_snapshots s ON s.event_id = d.event_id WHERE s.chain_id = '" + chainID + "' AND s.state_version = 2",
	}, func(s *gateway.Service) error { _, err := s.Observe(ctx, m.ExecutionAttemptID, available); return err })
	var snap struct {
		Ref string `json:"current_availability_ref"`
	}
	require.NoError(t, json.Unmarshal([]byte(captured["snapshot"]), &snap))
	evidence := rowImage{table: tEvidence, row: captured["evidence"]}
	snapshot := rowImage{table: tSnapshots, row: captured["snapshot"]}
	event := rowImage{table: "outbox.outbox_events", row: captured["event"], cols: eventCols}
	delivery := rowImage{table: "outbox.outbox_deliveries", row: captured["delivery"], cols: deliveryCols}
	movePointer := sqlStep("UPDATE gateway.availability_currents SET current_availability_ref = $1, current_state_version = 2 WHERE chain_id = $2", snap.Ref, chainID)

	t.Run("GW005 columns say unavailable while the body says available, pointer moved, no event", func(t *testing.T) {
		forged := editRow(t, captured["snapshot"], map[string]any{"availability_state": "unavailable", "provider_evidence_ref": nil}, "", nil)
		// GW005.snapshot-content (the message tells it from GW005.pointer-identity)
		code, msg := forgeMsg(t, role, rows(evidence, rowImage{table: tSnapshots, row: forged}), movePointer)
		require.Equal(t, gateway.CodeSnapshotContent, code)
		require.Contains(t, msg, "does not describe what it stores")
	})
	t.Run("GW005 a body that skips its predecessor", func(t *testing.T) {
		forged := editRow(t, captured["snapshot"], nil, "snapshot_body", func(b map[string]any) { b["predecessor"] = map[string]any{"state": "none"} })
		// GW005.snapshot-content (the message tells it from GW005.pointer-identity)
		code, msg := forgeMsg(t, role, rows(evidence, rowImage{table: tSnapshots, row: forged}), movePointer)
		require.Equal(t, gateway.CodeSnapshotContent, code)
		require.Contains(t, msg, "does not describe what it stores")
	})
	t.Run("GW006 the real snapshot and pointer move without the event", func(t *testing.T) {
		// GW006.advance-without-event
		require.Equal(t, gateway.CodeAdvanceWithoutEvent, forge(t, role, rows(evidence, snapshot), movePointer))
	})
	t.Run("GW007 the real snapshot and its event, the pointer left behind", func(t *testing.T) {
		// GW007.snapshot-not-head
		require.Equal(t, gateway.CodeSnapshotNotHead, forge(t, role, rows(evidence, snapshot, event, delivery)))
	})
	// Control: the same rows replayed whole are the legitimate advance.
	require.Empty(t, forge(t, role, rows(evidence, snapshot, event, delivery), movePointer))
}

// Issue 30 class 15, GW-2 / migration 00004: a validation receipt says
// current only for the snapshot the pointer names, not_current only with the
// real head.
func TestGW2ForgedValidationReceiptsAreRefused(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	role := dbtest.RolePool(t, pool.Config().ConnString(), gatewayschema.RoleGateway)
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	obs := gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityPending, ReasonCode: "awaiting_provider_report"}
	v1 := observe(t, svc, m.ExecutionAttemptID, obs)
	basis := "6666666666666666666666666666666666666666666666666666666666666666"
	res, err := gateway.ValidateAvailabilityCurrent(ctx, role, validationRequest(m, v1.Snapshot, uuid.NewString(), basis))
	require.NoError(t, err)
	require.Equal(t, ownerread.Found, res.Answer)
	require.True(t, res.Value.Current)
	obs.State, obs.ReasonCode = contract.AvailabilityUnavailable, "provider_unavailable"
	v2 := observe(t, svc, m.ExecutionAttemptID, obs)
	head, err := gateway.ValidateAvailabilityCurrent(ctx, role, validationRequest(m, v2.Snapshot, uuid.NewString(), basis))
	require.NoError(t, err)
	require.True(t, head.Value.Current)

	receipt := func(ref string) string {
		var row string
		require.NoError(t, pool.QueryRow(ctx, "SELECT to_jsonb(r)::text FROM gateway.availability_validation_receipts r WHERE receipt_ref = $1", ref).Scan(&row))
		return row
	}
	// A receipt under a fresh operation (same content otherwise).
	reissue := func(row string, bodyEdits func(map[string]any)) rowImage {
		op := uuid.NewString()
		return rowImage{table: tReceipts, row: editRow(t, row, map[string]any{"validation_operation_id": op, "receipt_ref": "gacvr-" + op}, "receipt_body",
			func(b map[string]any) {
				b["validationOperationId"], b["availabilityCurrentValidationReceiptRef"] = op, "gacvr-"+op
				if bodyEdits != nil {
					bodyEdits(b)
				}
			})}
	}

	t.Run("GW008 current for the superseded snapshot v1", func(t *testing.T) {
		// GW008.receipt-not-truth
		require.Equal(t, gateway.CodeReceiptNotHead, forge(t, role, rows(reissue(receipt(res.Value.Receipt.Ref), nil))))
	})
	t.Run("GW008 not_current for the head", func(t *testing.T) {
		// GW008.receipt-not-truth
		forged := reissue(receipt(head.Value.Receipt.Ref), func(b map[string]any) {
			b["result"] = map[string]any{"state": "not_current", "currentAvailabilitySnapshotRef": v1.Snapshot.Snapshot.Ref,
				"currentAvailabilitySnapshotSchemaVersion": "1", "currentAvailabilitySnapshotDigestAlgorithmVersion": "jcs-sha256-v1",
				"currentAvailabilitySnapshotDigest": v1.Snapshot.Snapshot.Digest, "currentStateVersion": 1}
		})
		forged.row = editRow(t, forged.row, map[string]any{"result_state": "not_current"}, "", nil)
		require.Equal(t, gateway.CodeReceiptNotHead, forge(t, role, rows(forged)))
	})
	// Control: the head's receipt reissued under a fresh operation commits.
	require.Empty(t, forge(t, role, rows(reissue(receipt(head.Value.Receipt.Ref), nil))))
}

// Issue 30, GW-1: a slot is reserved and made terminal (bound with its
// binding, or terminal_rejected with its rejection) in one transaction; a
// terminal fact describes its slot.
func TestGW1ForgedSlotsAndTerminalFactsAreRefused(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	role := dbtest.RolePool(t, pool.Config().ConnString(), gatewayschema.RoleGateway)
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{RejectReason: "no_capacity"}})
	require.NoError(t, err)
	var slotRow, rejectionRow string
	require.NoError(t, pool.QueryRow(ctx, "SELECT to_jsonb(s)::text FROM gateway.dispatch_slots s WHERE execution_attempt_id = $1", m.ExecutionAttemptID).Scan(&slotRow))
	require.NoError(t, pool.QueryRow(ctx, "SELECT to_jsonb(r)::text FROM gateway.pre_binding_rejections r WHERE execution_attempt_id = $1", m.ExecutionAttemptID).Scan(&rejectionRow))
	other := uuid.NewString()
	otherKey := map[string]any{"execution_attempt_id": other, "attempt_execution_manifest_ref": "aem-" + other}
	reservedOther := editRow(t, slotRow, mergeMaps(otherKey, map[string]any{"state": "reserved", "reply_body": nil, "terminal_at": nil}), "", nil)

	t.Run("GW009 a slot inserted terminal", func(t *testing.T) {
		// GW009.slot-born-reserved
		forged := editRow(t, slotRow, otherKey, "", nil)
		code, msg := forgeMsg(t, role, rows(rowImage{table: tSlots, row: forged}))
		require.Equal(t, gateway.CodeSlotNotAtomic, code)
		require.Contains(t, msg, "must be inserted reserved")
	})
	t.Run("GW009 a slot left reserved at COMMIT", func(t *testing.T) {
		// GW009.slot-reserved-at-commit
		code, msg := forgeMsg(t, role, rows(rowImage{table: tSlots, row: reservedOther}))
		require.Equal(t, gateway.CodeSlotNotAtomic, code)
		require.Contains(t, msg, "is still reserved at the end of the transaction")
	})
	t.Run("GW010 a rejection that names another slot", func(t *testing.T) {
		// GW010.fact-content
		forged := editRow(t, rejectionRow, map[string]any{"execution_attempt_id": other, "gateway_pre_binding_rejection_fact_ref": "gpr-" + other}, "", nil)
		code, msg := forgeMsg(t, role, rows(rowImage{table: tSlots, row: reservedOther}, rowImage{table: tRejection, row: forged}))
		require.Equal(t, gateway.CodeTerminalFact, code)
		require.Contains(t, msg, "does not describe its slot or its own columns")
	})
	t.Run("GW010 a slot made bound without a binding", func(t *testing.T) {
		// GW010.terminal-without-fact
		code, msg := forgeMsg(t, role, rows(rowImage{table: tSlots, row: reservedOther}),
			sqlStep("UPDATE gateway.dispatch_slots SET state = 'bound', reply_body = '{}', terminal_at = now() WHERE execution_attempt_id = $1", other))
		require.Equal(t, gateway.CodeTerminalFact, code)
		require.Contains(t, msg, "without its terminal fact")
	})
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// Issue 30: the immutable Gateway tables refuse UPDATE, DELETE and TRUNCATE
// for every role, the superuser (the admin pool) included.
//
// Issue 37: oceanway_gateway has no DELETE grant on any gateway table and
// no UPDATE grant on the immutable ones, so the superuser is the role for
// which these triggers are the refusal: GW001.slot-no-delete,
// GW001.current-no-delete, GW001.route-snapshots-immutable,
// GW001.bindings-immutable, GW001.rejections-immutable,
// GW001.provider-evidence-immutable, GW001.snapshots-immutable,
// GW001.receipts-immutable (DELETE and UPDATE of each). TRUNCATE is proven
// table by table in TestGW001TruncateClauses.
func TestGatewayTablesRefuseChangesEvenForTheSuperuser(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	role := dbtest.RolePool(t, pool.Config().ConnString(), gatewayschema.RoleGateway)
	_, rbody := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: rbody, Decision: gateway.Decision{RejectReason: "no_capacity"}})
	require.NoError(t, err)
	m, body := manifest(t)
	_, err = svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	v1 := observe(t, svc, m.ExecutionAttemptID, gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityAvailable, ReasonCode: "provider_available", Quantity: "7", ReportID: "r-1"})
	_, err = gateway.ValidateAvailabilityCurrent(ctx, role, validationRequest(m, v1.Snapshot, uuid.NewString(), "6666666666666666666666666666666666666666666666666666666666666666"))
	require.NoError(t, err)
	var super bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super))
	require.True(t, super, "the admin pool is the superuser")

	tables := map[string]string{ // table → a column to "update"
		tSlots: "execution_attempt_id", "gateway.route_snapshots": "execution_attempt_id", "gateway.attempt_route_bindings": "execution_attempt_id",
		tRejection: "execution_attempt_id", tEvidence: "execution_attempt_id", tSnapshots: "execution_attempt_id",
		"gateway.availability_currents": "execution_attempt_id", tReceipts: "validation_operation_id",
	}
	for table, col := range tables {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
		require.Positive(t, n, table)
		require.Equal(t, gateway.CodeImmutable, forge(t, pool, sqlStep("TRUNCATE "+table+" CASCADE")), "TRUNCATE %s", table)
		require.Equal(t, gateway.CodeImmutable, forge(t, pool, sqlStep("DELETE FROM "+table)), "DELETE %s", table)
		want := gateway.CodeImmutable
		switch table {
		case tSlots:
			want = gateway.CodeIllegalSlotTransition
		case "gateway.availability_currents":
			want = gateway.CodeChainNotDense
		}
		require.Equal(t, want, forge(t, pool, sqlStep("UPDATE "+table+" SET "+col+" = "+col)), "UPDATE %s", table)
	}
}
