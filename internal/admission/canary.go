package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

// CanaryProof is one stored CanaryProof@1 (admission.canary_proofs): the
// canonical JSON Core wrote when the canary asked it to check the loop, and
// its content address, which PostgreSQL recomputes on insert.
type CanaryProof struct {
	Proof                strict.Quadruple
	RunID                string
	BillingReservationID string
	Verdict              string // passed | failed
	JSON                 []byte
	RecordedAt           time.Time
}

// RecordCanaryProof stores a proof; the same proof again (same ref) is
// the one stored.
func RecordCanaryProof(ctx context.Context, q db.Executor, p CanaryProof) error {
	_, err := q.Exec(ctx, `INSERT INTO admission.canary_proofs
		(canary_proof_ref, canary_proof_schema_version, canary_proof_digest_algorithm_version, canary_proof_digest,
		 run_id, billing_reservation_id, verdict, proof_json, recorded_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (canary_proof_ref) DO NOTHING`,
		p.Proof.Ref, p.Proof.SchemaVersion, string(p.Proof.DigestAlgorithmVersion), p.Proof.Digest,
		p.RunID, p.BillingReservationID, p.Verdict, string(p.JSON), p.RecordedAt)
	if err != nil {
		return fmt.Errorf("record canary proof: %w", err)
	}
	return nil
}

// PassedCanaryProof reports the latest passed proof's ref ("" when none):
// public admission may be enabled only on a deployment that has one.
func PassedCanaryProof(ctx context.Context, q db.Executor) (string, error) {
	var ref string
	err := q.QueryRow(ctx, `SELECT canary_proof_ref FROM admission.canary_proofs
		WHERE verdict = 'passed' ORDER BY recorded_at DESC LIMIT 1`).Scan(&ref)
	if err != nil {
		if errors.Is(db.NotFound(err), db.ErrNotFound) {
			return "", nil
		}
		return "", fmt.Errorf("read canary proofs: %w", err)
	}
	return ref, nil
}

// AdmittedThroughAPI reports whether caller admitted run through the
// platform API (its stored admitRun response names the run): the canary
// proves only a run it drove.
func AdmittedThroughAPI(ctx context.Context, q db.Executor, caller, runID string) (bool, error) {
	var found bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM admission.api_idempotency_keys
		WHERE caller_workload = $1 AND operation_id = 'admitRun'
		  AND convert_from(response_body, 'UTF8')::jsonb ->> 'runId' = $2)`, caller, runID).Scan(&found)
	if err != nil {
		return false, fmt.Errorf("read the caller's admissions: %w", err)
	}
	return found, nil
}
