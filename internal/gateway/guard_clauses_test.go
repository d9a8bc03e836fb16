package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/gateway"
	gatewayschema "github.com/oceanway/core/internal/gateway/schema"
)

// Issue 37: every refusal clause of the Gateway guards (docs/guard-clauses.md)
// has a test that fails when only that clause is disabled. The tests here
// cover the clauses that finality_guards_test.go does not already tell apart
// from their absence; each names its clause ID at its assertion.

// forgeMsg is forge that also returns the refusal's message.
func forgeMsg(t *testing.T, pool *pgxpool.Pool, steps ...step) (string, string) {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, s := range steps {
		if err = s(ctx, tx); err != nil {
			break
		}
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, pgErr.Message
	}
	require.NoError(t, err)
	return "", ""
}

// passes runs steps as pool's role and requires each to succeed, then
// rolls back: a control that the forged rows pass every immediate guard.
func passes(t *testing.T, pool *pgxpool.Pool, steps ...step) {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, s := range steps {
		require.NoError(t, s(ctx, tx))
	}
}

// nameSlot makes a body name the slot of a dispatch_slots row image.
func nameSlot(t *testing.T, slotRow string) func(map[string]any) {
	t.Helper()
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(slotRow), &s))
	return func(b map[string]any) {
		b["executionAttemptId"] = s["execution_attempt_id"]
		b["gatewayDeploymentId"] = s["gateway_deployment_id"]
		b["attemptExecutionManifestRef"] = s["attempt_execution_manifest_ref"]
		b["attemptExecutionManifestSchemaVersion"] = s["attempt_execution_manifest_schema_version"]
		b["attemptExecutionManifestDigestAlgorithmVersion"] = s["attempt_execution_manifest_digest_algorithm_version"]
		b["attemptExecutionManifestDigest"] = s["attempt_execution_manifest_digest"]
	}
}

func queryRow(t *testing.T, pool *pgxpool.Pool, q string, args ...any) string {
	t.Helper()
	var row string
	require.NoError(t, pool.QueryRow(t.Context(), q, args...).Scan(&row))
	return row
}

// Issue 37, GW-1: the slot guards (gateway migration 00001,
// gateway.guard_slot and gateway.guard_exclusive_terminal; 00005,
// gateway.guard_terminal_fact), driven as oceanway_gateway with the real
// code's rows, moved to a fresh reserved slot so that each forgery passes
// every other guard of its write.
func TestGW002SlotClauses(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	role := dbtest.RolePool(t, pool.Config().ConnString(), gatewayschema.RoleGateway)
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	r, rbody := manifest(t)
	_, err = svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: rbody, Decision: gateway.Decision{RejectReason: "no_capacity"}})
	require.NoError(t, err)
	byAttempt := func(table, id string) string {
		return queryRow(t, pool, "SELECT to_jsonb(x)::text FROM "+table+" x WHERE execution_attempt_id = $1", id)
	}
	boundSlot, rejectedSlot := byAttempt(tSlots, m.ExecutionAttemptID), byAttempt(tSlots, r.ExecutionAttemptID)
	routeRow, bindingRow := byAttempt("gateway.route_snapshots", m.ExecutionAttemptID), byAttempt("gateway.attempt_route_bindings", m.ExecutionAttemptID)
	rejectionRow := byAttempt(tRejection, r.ExecutionAttemptID)

	// A fresh reserved slot (the bound slot's key under another attempt) and
	// a route snapshot, binding and rejection that describe it.
	other := uuid.NewString()
	slotRow := editRow(t, boundSlot, map[string]any{"execution_attempt_id": other, "attempt_execution_manifest_ref": "aem-" + other,
		"state": "reserved", "reply_body": nil, "terminal_at": nil}, "", nil)
	names := nameSlot(t, slotRow)
	slot := rowImage{table: tSlots, row: slotRow}
	snapshot := rowImage{table: "gateway.route_snapshots", row: editRow(t, routeRow,
		map[string]any{"execution_attempt_id": other, "gateway_route_snapshot_ref": "grs-" + other}, "snapshot_body",
		func(b map[string]any) { names(b); b["gatewayRouteSnapshotRef"] = "grs-" + other })}
	binding := rowImage{table: "gateway.attempt_route_bindings", row: editRow(t, bindingRow,
		map[string]any{"execution_attempt_id": other, "attempt_route_binding_ref": "arb-" + other, "gateway_route_snapshot_ref": "grs-" + other}, "binding_body",
		func(b map[string]any) {
			names(b)
			b["attemptRouteBindingRef"], b["gatewayRouteSnapshotRef"] = "arb-"+other, "grs-"+other
		})}
	rejection := rowImage{table: tRejection, row: editRow(t, rejectionRow,
		map[string]any{"execution_attempt_id": other, "gateway_pre_binding_rejection_fact_ref": "gpr-" + other}, "fact_body",
		func(b map[string]any) { names(b); b["gatewayPreBindingRejectionFactRef"] = "gpr-" + other })}
	// Controls: each terminal fact alone passes the insert guards.
	passes(t, role, rows(slot, snapshot, binding))
	passes(t, role, rows(slot, rejection))

	// GW002.binding-after-rejection
	code, msg := forgeMsg(t, role, rows(slot, rejection, snapshot, binding))
	require.Equal(t, gateway.CodeIllegalSlotTransition, code)
	require.Contains(t, msg, "is terminal_rejected: no binding")

	// GW002.rejection-after-binding
	code, msg = forgeMsg(t, role, rows(slot, snapshot, binding, rejection))
	require.Equal(t, gateway.CodeIllegalSlotTransition, code)
	require.Contains(t, msg, "is bound: no pre-binding rejection")

	// GW002.slot-terminal-absorbs: the bound slot moved to terminal_rejected.
	code, msg = forgeMsg(t, role, sqlStep("UPDATE gateway.dispatch_slots SET state = 'terminal_rejected' WHERE execution_attempt_id = $1", m.ExecutionAttemptID))
	require.Equal(t, gateway.CodeIllegalSlotTransition, code)
	require.Contains(t, msg, "cannot move bound")

	// GW002.slot-key-immutable: the legal reserved → bound that also changes
	// the slot's run. oceanway_gateway may update only state, reply_body and
	// terminal_at (its grant refuses this write first, 42501), so the
	// superuser drives it.
	code, msg = forgeMsg(t, pool, rows(slot), sqlStep("UPDATE gateway.dispatch_slots SET state = 'bound', reply_body = '{}', terminal_at = now(), run_id = gen_random_uuid() WHERE execution_attempt_id = $1", other))
	require.Equal(t, gateway.CodeIllegalSlotTransition, code)
	require.Contains(t, msg, "is immutable")

	// GW010.fact-slot-not-reserved: a route snapshot that describes the
	// terminal_rejected slot (its key, its own columns), after the fact.
	late := rowImage{table: "gateway.route_snapshots", row: editRow(t, routeRow,
		map[string]any{"execution_attempt_id": r.ExecutionAttemptID, "gateway_route_snapshot_ref": "grs-late-" + r.ExecutionAttemptID}, "snapshot_body",
		func(b map[string]any) {
			nameSlot(t, rejectedSlot)(b)
			b["gatewayRouteSnapshotRef"] = "grs-late-" + r.ExecutionAttemptID
		})}
	code, msg = forgeMsg(t, role, rows(late))
	require.Equal(t, gateway.CodeTerminalFact, code)
	require.Contains(t, msg, "terminal facts only while the slot is reserved")
}

// Issue 37, GW-2: the chain guards (gateway migration 00001,
// gateway.guard_snapshot_insert and gateway.guard_current; 00006,
// gateway.prove_snapshot_advance), driven as oceanway_gateway.
func TestGW004ChainClauses(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	role := dbtest.RolePool(t, pool.Config().ConnString(), gatewayschema.RoleGateway)
	m, body := manifest(t)
	_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
	require.NoError(t, err)
	r, rbody := manifest(t)
	_, err = svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: rbody, Decision: gateway.Decision{RejectReason: "no_capacity"}})
	require.NoError(t, err)
	v1 := observe(t, svc, m.ExecutionAttemptID, gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.input_tokens",
		State: contract.AvailabilityPending, ReasonCode: "awaiting_provider_report"})

	// GW003.snapshot-slot-not-bound
	code, msg := forgeMsg(t, role, sqlStep(`INSERT INTO gateway.availability_snapshots VALUES ('gas-x', '1', 'jcs-sha256-v1', repeat('a', 64),
		gen_random_uuid(), $1, 1, 'pending', NULL, '{}', gen_random_uuid(), now())`, r.ExecutionAttemptID))
	require.Equal(t, gateway.CodeSlotNotBound, code)
	require.Contains(t, msg, "that is not bound")

	// GW004.snapshot-chain-gap
	code, msg = forgeMsg(t, role, sqlStep(`INSERT INTO gateway.availability_snapshots VALUES ('gas-y', '1', 'jcs-sha256-v1', repeat('a', 64),
		gen_random_uuid(), $1, 7, 'pending', NULL, '{}', gen_random_uuid(), now())`, m.ExecutionAttemptID))
	require.Equal(t, gateway.CodeChainNotDense, code)
	require.Contains(t, msg, "has no state version 6")

	// GW004.chain-starts-at-one: a new chain's pointer at version 2.
	code, msg = forgeMsg(t, role, sqlStep(`INSERT INTO gateway.availability_currents VALUES (gen_random_uuid(), $1, $2, 'provider_usage', 'forged.dimension', $3, 2)`,
		m.ExecutionAttemptID, m.GatewayDeploymentID, v1.Snapshot.Snapshot.Ref))
	require.Equal(t, gateway.CodeChainNotDense, code)
	require.Contains(t, msg, "starts at state version 1")

	// GW004.pointer-advances-by-one: the pointer jumps by two.
	code, msg = forgeMsg(t, role, sqlStep(`UPDATE gateway.availability_currents SET current_state_version = current_state_version + 2`))
	require.Equal(t, gateway.CodeChainNotDense, code)
	require.Contains(t, msg, "must advance by one")

	// GW005.pointer-identity: the rows of the real first advance of a new
	// chain (rolled back), replayed with the pointer under another
	// dimension than its snapshot's.
	obs := gateway.Observation{EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: "text.output_tokens",
		State: contract.AvailabilityPending, ReasonCode: "awaiting_provider_report"}
	chainID := envelope.GatewayAvailabilityChainID(m.ExecutionAttemptID, m.GatewayDeploymentID, obs.EvidenceKind, obs.DimensionKey)
	bySnap := " JOIN gateway.availability_snapshots s ON s.event_id = x.event_id WHERE s.chain_id = '" + chainID + "' AND s.state_version = 1"
	captured := captureRows(t, pool, "append", map[string]string{
		"snapshot": "SELECT to_jsonb(s)::text FROM gateway.availability_snapshots s WHERE chain_id = '" + chainID + "' AND state_version = 1",
		"pointer":  "SELECT to_jsonb(c)::text FROM gateway.availability_currents c WHERE chain_id = '" + chainID + "'",
		"event":    "SELECT to_jsonb(x)::text FROM outbox.outbox_events x" + bySnap,
		"delivery": "SELECT to_jsonb(x)::text FROM outbox.outbox_deliveries x" + bySnap,
	}, func(s *gateway.Service) error { _, err := s.Observe(ctx, m.ExecutionAttemptID, obs); return err })
	snapshot := rowImage{table: tSnapshots, row: captured["snapshot"]}
	event := rowImage{table: "outbox.outbox_events", row: captured["event"], cols: eventCols}
	delivery := rowImage{table: "outbox.outbox_deliveries", row: captured["delivery"], cols: deliveryCols}
	forged := rowImage{table: "gateway.availability_currents", row: editRow(t, captured["pointer"], map[string]any{"evidence_dimension_key": "forged.dimension"}, "", nil)}
	code, msg = forgeMsg(t, role, rows(snapshot, forged, event, delivery))
	require.Equal(t, gateway.CodeSnapshotContent, code)
	require.Contains(t, msg, "is not a complete advance at COMMIT")
	require.Contains(t, msg, ": GW005")
	// Control: the same rows with the real pointer are the legitimate advance.
	require.Empty(t, forge(t, role, rows(snapshot, rowImage{table: "gateway.availability_currents", row: captured["pointer"]}, event, delivery)))
}

// Issue 37: TRUNCATE of each gateway table with only that table's statement
// trigger left to refuse it. oceanway_gateway has no TRUNCATE grant (42501
// first), so the superuser drives it; TRUNCATE … CASCADE also truncates the
// tables that reference the table, whose own triggers would refuse it too,
// so the transaction disables the other tables' statement triggers first.
func TestGW001TruncateClauses(t *testing.T) {
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

	noTruncate := map[string]string{ // table → its trigger
		tSlots:                           "dispatch_slots_no_truncate",                   // GW001.slots-no-truncate
		"gateway.route_snapshots":        "route_snapshots_no_truncate",                  // GW001.route-snapshots-no-truncate
		"gateway.attempt_route_bindings": "attempt_route_bindings_no_truncate",           // GW001.bindings-no-truncate
		tRejection:                       "pre_binding_rejections_no_truncate",           // GW001.rejections-no-truncate
		tEvidence:                        "provider_evidence_no_truncate",                // GW001.provider-evidence-no-truncate
		tSnapshots:                       "availability_snapshots_no_truncate",           // GW001.snapshots-no-truncate
		"gateway.availability_currents":  "availability_currents_no_truncate",            // GW001.currents-no-truncate
		tReceipts:                        "availability_validation_receipts_no_truncate", // GW001.receipts-no-truncate
	}
	for table := range noTruncate {
		require.Positive(t, count(t, pool, table), table)
		var steps []step
		for other, trigger := range noTruncate {
			if other != table {
				steps = append(steps, sqlStep("ALTER TABLE "+other+" DISABLE TRIGGER "+trigger))
			}
		}
		steps = append(steps, sqlStep("TRUNCATE "+table+" CASCADE"))
		code, msg := forgeMsg(t, pool, steps...)
		require.Equal(t, gateway.CodeImmutable, code, "TRUNCATE %s", table)
		require.Contains(t, msg, "TRUNCATE on "+table, "TRUNCATE %s", table)
	}
}
