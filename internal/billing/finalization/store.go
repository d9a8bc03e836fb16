package finalization

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = db.MustLoadStatements("billing/finalization", sqlFiles, "sql")

var (
	qManifestInsert = statements.Get("manifest_insert")
	qManifestDigest = statements.Get("manifest_digest")
	qReceiptInsert  = statements.Get("receipt_insert")
	qReceiptDigest  = statements.Get("receipt_digest")
	qBundleInsert   = statements.Get("bundle_insert")
	qBundleDigest   = statements.Get("bundle_digest")
	qDecisionInsert = statements.Get("decision_insert")
	qDecisionDigest = statements.Get("decision_digest")
)

// ErrStepConflict: a step's ref is already stored with another digest (a
// content-derived ref never should be: fail closed, nothing written).
var ErrStepConflict = errors.New("finalization: stored step differs")

func quadArgs(q strict.Quadruple, extra pgx.NamedArgs) pgx.NamedArgs {
	extra["ref"], extra["schema_version"] = q.Ref, q.SchemaVersion
	extra["digest_algorithm_version"], extra["digest"] = string(q.DigestAlgorithmVersion), q.Digest
	return extra
}

// insertOrCompare inserts a content-addressed row; when the ref exists, the
// stored digest must be the same (the first body stays: a replay reads
// byte-identical objects).
func insertOrCompare(ctx context.Context, tx pgx.Tx, what, insert, digestOf string, q strict.Quadruple, args pgx.NamedArgs) error {
	tag, err := tx.Exec(ctx, insert, quadArgs(q, args))
	if err != nil {
		return fmt.Errorf("store %s %s: %w", what, q.Ref, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var stored string
	if err := tx.QueryRow(ctx, digestOf, pgx.NamedArgs{"ref": q.Ref}).Scan(&stored); err != nil {
		return fmt.Errorf("compare %s %s: %w", what, q.Ref, err)
	}
	// guard BI-1.step-conflict
	if stored != q.Digest {
		return fmt.Errorf("%w: %s %s stored with digest %s, not %s", ErrStepConflict, what, q.Ref, stored, q.Digest)
	}
	return nil
}

// StoreTx writes every step of an evaluation in the caller's transaction:
// manifest, owner receipts, bundle (successes) and decision, each
// insert-or-compare.
func StoreTx(ctx context.Context, tx pgx.Tx, ev *Evaluation) error {
	m := ev.Manifest
	if err := insertOrCompare(ctx, tx, "input manifest", qManifestInsert, qManifestDigest, m.Manifest, pgx.NamedArgs{
		"fence_id": m.FenceID, "reservation_id": m.BillingReservationID, "dimension_count": len(m.Dimensions),
		"target_total": m.TargetTotal, "body": string(ev.ManifestBody),
	}); err != nil {
		return err
	}
	for _, r := range ev.Receipts {
		if err := insertOrCompare(ctx, tx, "owner receipt", qReceiptInsert, qReceiptDigest, r.Quad, pgx.NamedArgs{
			"kind": r.Kind, "manifest_ref": m.Manifest.Ref, "body": string(r.Body),
		}); err != nil {
			return err
		}
	}
	d := ev.Decision
	var bundleRef, reason, settled, released *string
	if ev.Bundle != nil {
		if err := insertOrCompare(ctx, tx, "validation bundle", qBundleInsert, qBundleDigest, ev.Bundle.Bundle, pgx.NamedArgs{
			"manifest_ref": m.Manifest.Ref, "body": string(ev.BundleBody),
		}); err != nil {
			return err
		}
		bundleRef, settled, released = &ev.Bundle.Bundle.Ref, &d.SettledAmount, &d.ReleasedAmount
	} else {
		reason = &d.ReasonCode
	}
	return insertOrCompare(ctx, tx, "decision", qDecisionInsert, qDecisionDigest, d.Decision, pgx.NamedArgs{
		"fence_id": d.FenceID, "manifest_ref": m.Manifest.Ref, "bundle_ref": bundleRef, "decision": d.Outcome,
		"reason_code": reason, "reserved_amount": d.ReservedAmount, "settled_amount": settled, "released_amount": released,
		"body": string(ev.DecisionBody),
	})
}
