package gateway_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/gateway"
)

// gatewaySeries scrapes the Gateway's collector into name → value.
func gatewaySeries(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			require.Empty(t, m.GetLabel(), "OBS-2: the Gateway's gauges carry no label, never an id")
			out[mf.GetName()] = m.GetGauge().GetValue()
		}
	}
	return out
}

func slotsGauges(reserved, age float64) map[string]float64 {
	return map[string]float64{"oceanway_gateway_dispatch_slots_reserved": reserved,
		"oceanway_gateway_oldest_reserved_slot_age_seconds": age, "oceanway_gateway_scrape_ok": 1}
}

// OBS-1 (issue 36): a dispatch reserves its slot and binds or rejects it in
// one transaction (GW-1; GW009 refuses a slot still reserved at COMMIT), so
// a scrape taken while a dispatch holds its slot reserved does not see it,
// and neither a bound nor a rejected slot counts: in normal operation the
// gauge stays 0. The statement itself counts a committed reserved row and
// stops once the row is terminal — shown on a row committed with the
// triggers bypassed (session_replication_role = replica, superuser),
// since GW-1 lets no other path commit one.
func TestCollectorCountsOnlyCommittedReservedSlots(t *testing.T) {
	t.Parallel()
	pool, svc := setup(t)
	ctx := t.Context()
	c := gateway.NewCollector(pool, 5*time.Second)
	require.Equal(t, slotsGauges(0, 0), gatewaySeries(t, c))

	// A dispatch paused right after reserving its slot.
	reached, release := make(chan struct{}), make(chan struct{})
	svc.SetHooks(gateway.Hooks{AfterStep: func(_ context.Context, _ pgx.Tx, step string) error {
		if step == "reserve" {
			close(reached)
			<-release
		}
		return nil
	}})
	m, body := manifest(t)
	done := make(chan error, 1)
	go func() {
		_, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: body, Decision: gateway.Decision{Route: route("channel/eu")}})
		done <- err
	}()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("dispatch ended before reserving: %v", err)
	}
	require.Equal(t, slotsGauges(0, 0), gatewaySeries(t, c), "the reserving transaction has not committed")
	close(release)
	require.NoError(t, <-done)
	svc.SetHooks(gateway.Hooks{})
	ans, err := gateway.ReadDispatchSlot(ctx, pool, slotRead(m))
	require.NoError(t, err)
	require.Equal(t, gateway.SlotBound, ans.Value.State)
	_, rbody := manifest(t)
	rej, err := svc.Dispatch(ctx, gateway.DispatchRequest{Tenant: tenant, ManifestBody: rbody, Decision: gateway.Decision{RejectReason: "no_capacity"}})
	require.NoError(t, err)
	require.Equal(t, gateway.SlotTerminalRejected, rej.State)
	require.Equal(t, slotsGauges(0, 0), gatewaySeries(t, c), "bound and rejected slots do not count")

	// A reserved row committed past the guards (superuser, replica role).
	other := uuid.NewString()
	bypass := func(sql string, args ...any) {
		t.Helper()
		require.NoError(t, db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, sql, args...)
			if err == nil && tag.RowsAffected() != 1 {
				err = errors.New("no row")
			}
			return err
		}))
	}
	bypass(`INSERT INTO gateway.dispatch_slots SELECT (jsonb_populate_record(s, jsonb_build_object(
		'execution_attempt_id', $1::text, 'attempt_execution_manifest_ref', 'aem-' || $1, 'state', 'reserved',
		'reply_body', NULL, 'terminal_at', NULL, 'reserved_at', now() - interval '90 seconds'))).*
		FROM gateway.dispatch_slots s WHERE execution_attempt_id = $2`, other, m.ExecutionAttemptID)
	got := gatewaySeries(t, c)
	require.Equal(t, 1.0, got["oceanway_gateway_dispatch_slots_reserved"])
	require.InDelta(t, 90, got["oceanway_gateway_oldest_reserved_slot_age_seconds"], 30)
	bypass(`UPDATE gateway.dispatch_slots SET state = 'terminal_rejected', reply_body = '{}', terminal_at = now()
		WHERE execution_attempt_id = $1`, other)
	require.Equal(t, slotsGauges(0, 0), gatewaySeries(t, c), "no longer counted once terminal")
}

// OBS-1 (issue 36): the statement reads the partial index of migration
// 00007, off the history of bound and rejected slots.
func TestMetricsStatementUsesPartialIndex(t *testing.T) {
	t.Parallel()
	pool, _ := setup(t)
	stmt, err := os.ReadFile("sql/metrics_slots.sql")
	require.NoError(t, err)
	require.NoError(t, db.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "EXPLAIN (FORMAT TEXT) "+string(stmt))
		if err != nil {
			return err
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		require.Contains(t, strings.Join(plan, "\n"), "dispatch_slots_reserved")
		return nil
	}))
}
