// Package billingtest holds fixtures shared by billing's test packages.
package billingtest

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oceanway/core/contracts/strict"

	"github.com/oceanway/core/internal/billing"
)

// StoreDecisionTx stores in tx what the finalization pipeline stores before
// it commits a success (internal/billing/finalization.StoreTx): the input
// manifest, the validation bundle and the success decision d names, each
// insert-or-compare by ref. A committed finalization proves its decision at
// commit (BL007), so a test that calls billing.CommitFinalizationTx with a
// hand-made Decision stores it first. Like the pipeline, it stores nothing
// for a fence that is already committed (no decision follows a success,
// BL008): the commit's replay path answers there. The fence is locked first,
// as the pipeline's claim does. A malformed Decision stores nothing, so the
// commit's own validation answers.
func StoreDecisionTx(ctx context.Context, tx pgx.Tx, d billing.Decision) error {
	for _, q := range []strict.Quadruple{d.InputManifest, d.ValidationBundle, d.DecisionObject} {
		if q.Validate() != nil {
			return nil
		}
	}
	var reservationID, state, reserved string
	err := tx.QueryRow(ctx, `SELECT f.billing_reservation_id, f.coordination_state, r.reserved_amount::text
		  FROM billing.billing_finalization_fences f
		  JOIN billing.reservation_states r USING (billing_reservation_id)
		 WHERE f.billing_finalization_fence_id = $1
		   FOR UPDATE OF f`, d.FenceID).Scan(&reservationID, &state, &reserved)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // the commit answers ErrFenceNotFound
	}
	if err != nil {
		return fmt.Errorf("billingtest: read fence %s: %w", d.FenceID, err)
	}
	if state == billing.FenceCommitted {
		return nil
	}
	// A decision whose amounts its own table refuses (23514) is one the
	// commit refuses too: roll back to before it and let the commit answer.
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if err := storeSteps(ctx, sp, d, reservationID, reserved); err != nil {
		var pg *pgconn.PgError
		if errors.As(err, &pg) && pg.Code == pgerrcode.CheckViolation {
			return sp.Rollback(ctx)
		}
		return err
	}
	return sp.Commit(ctx)
}

func storeSteps(ctx context.Context, tx pgx.Tx, d billing.Decision, reservationID, reserved string) error {
	m, bd, dq := d.InputManifest, d.ValidationBundle, d.DecisionObject
	if _, err := tx.Exec(ctx, `INSERT INTO billing.finalization_input_manifests (manifest_ref, manifest_schema_version,
		    manifest_digest_algorithm_version, manifest_digest, billing_finalization_fence_id, billing_reservation_id, dimension_count,
		    target_total, manifest_body)
		VALUES ($1, $2, $3, $4, $5, $6, 0, $7::numeric, '{}') ON CONFLICT (manifest_ref) DO NOTHING`,
		m.Ref, m.SchemaVersion, string(m.DigestAlgorithmVersion), m.Digest, d.FenceID, reservationID, d.SettledAmount); err != nil {
		return fmt.Errorf("billingtest: store manifest: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO billing.finalization_validation_bundles (bundle_ref, bundle_schema_version,
		    bundle_digest_algorithm_version, bundle_digest, manifest_ref, bundle_body)
		VALUES ($1, $2, $3, $4, $5, '{}') ON CONFLICT (bundle_ref) DO NOTHING`,
		bd.Ref, bd.SchemaVersion, string(bd.DigestAlgorithmVersion), bd.Digest, m.Ref); err != nil {
		return fmt.Errorf("billingtest: store bundle: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO billing.finalization_decisions (decision_ref, decision_schema_version,
		    decision_digest_algorithm_version, decision_digest, billing_finalization_fence_id, manifest_ref, bundle_ref, decision,
		    reserved_amount, settled_amount, released_amount, decision_body)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::numeric, $10::numeric, $11::numeric, '{}') ON CONFLICT (decision_ref) DO NOTHING`,
		dq.Ref, dq.SchemaVersion, string(dq.DigestAlgorithmVersion), dq.Digest, d.FenceID, m.Ref, bd.Ref, d.Outcome,
		reserved, d.SettledAmount, d.ReleasedAmount); err != nil {
		return fmt.Errorf("billingtest: store decision: %w", err)
	}
	return nil
}
