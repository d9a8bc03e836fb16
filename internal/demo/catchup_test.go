package demo

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/dispatcher"
)

// issue 16 item 6: the catch-up invariants of the summary can fail. Rows the
// billing guards would refuse are written as the table owner with triggers
// and foreign keys off (session_replication_role = replica): a transition
// without its predecessor, its event or its exposure, above the reservation,
// and a fence still pending whose revision does not match its transitions.
func TestDemo_CatchUpChecksDetectViolations(t *testing.T) {
	t.Parallel()
	f := setup(t, dispatcher.Config{}, 1)
	core := f.pools[boundary.Core]
	ctx := t.Context()
	require.NoError(t, f.admit(ctx, 0)) // a reservation of 1 credit

	s := &Summary{Passed: true}
	require.NoError(t, summarizeCatchUp(ctx, core, f.pools, s))
	require.True(t, s.Passed, "no catch-up yet: nothing fails")

	hex := strings.Repeat("a", 64)
	dim := uuid.NewString()
	err := db.WithTx(ctx, core, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		var res, account, run string
		if err := tx.QueryRow(ctx, `SELECT billing_reservation_id::text, billing_account_id::text, run_id::text
			FROM billing.reservation_states LIMIT 1`).Scan(&res, &account, &run); err != nil {
			return err
		}
		// from 2 with no step 1 before it: an exposure without its
		// exposure row and an adjustment of 5 on a 1-credit reservation.
		for i, kind := range []string{"late_settlement_exposure", "adjustment"} {
			after := "0"
			if kind == "adjustment" {
				after = "5"
			}
			if _, err := tx.Exec(ctx, `INSERT INTO billing.settlement_transitions (settlement_dimension_id,
				from_settlement_state_revision, to_settlement_state_revision, billing_reservation_id, billing_account_id,
				transition_ref, transition_schema_version, transition_digest_algorithm_version, transition_digest,
				transition_kind, settled_amount_before, settled_amount_after, transition_amount, settlement_input_state_version,
				validation_operation_id, work_generation, event_id, event_envelope_sha256, transition_body, committed_at)
				VALUES ($1, $2::bigint, $2::bigint + 1, $3, $4, $5, '1', 'jcs-sha256-v1', $6, $7, 0, $8, 5, $2::bigint + 1, $9, $2::bigint, $10, $6, '{}', now())`,
				dim, 2+2*i, res, account, "bst-"+uuid.NewString(), hex, kind, after, uuid.NewString(), uuid.NewString()); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO billing.settlement_catch_up_fences (settlement_dimension_id, billing_reservation_id,
			billing_account_id, run_id, run_step_id, execution_attempt_id, charge_dimension_key, economic_identity, tenant_kind,
			tenant_id, workspace_id, correlation_id, finalization_committed_ref, finalization_committed_schema_version,
			finalization_committed_digest_algorithm_version, finalization_committed_digest, finalization_event_id, fence_revision,
			settlement_state_revision, settled_amount, last_evaluated_ref, last_evaluated_schema_version,
			last_evaluated_digest_algorithm_version, last_evaluated_digest, last_evaluated_state_version, last_event_id,
			coordination_state, active_work_generation, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $5, 'text.input_tokens', '{"kind":"credits"}', 'organization', $5, $5, $5, 'bfc-x', '1',
			'jcs-sha256-v1', $6, $5, 1, 9, 0, 'sis-x', '1', 'jcs-sha256-v1', $6, 1, $5, 'pending_verification', 1, now(), now())`,
			dim, res, account, run, uuid.NewString(), hex)
		return err
	})
	require.NoError(t, err)

	s = &Summary{Passed: true}
	require.NoError(t, summarizeCatchUp(ctx, core, f.pools, s))
	require.False(t, s.Passed)
	got := failed(s)
	for _, name := range []string{"transitions_contiguous", "transition_event_once", "settled_within_reserved",
		"exposure_recorded", "catch_up_settled_down"} {
		require.Contains(t, got, name)
	}
	require.NotContains(t, got, "transition_applied_once", "distinct steps and inputs")
	require.EqualValues(t, 1, s.CatchUp.Adjustments)
	require.EqualValues(t, 1, s.CatchUp.FencesPending)
}
