package metering

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

// costCoordination is one row of metering.cost_lane_coordination.
type costCoordination struct {
	Generation        int64  `db:"work_generation"`
	State             string `db:"state"`
	AvailabilityState string `db:"availability_state"`
	StateReasonCode   string `db:"state_reason_code"`
	ProcessingRef     string `db:"processing_ref"`
	ProcessingDigest  string `db:"processing_digest"`
	FinishedRef       string `db:"finished_ref"`
	FinishedDigest    string `db:"finished_digest"`
	BlockedRef        string `db:"blocked_ref"`
	BlockedDigest     string `db:"blocked_digest"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// casCostCoordination commits the lane's coordination for the Work's
// generation; a replay of the same result is accepted, anything else is
// ErrCostLaneMoved (and PostgreSQL refuses it too, ME003).
func casCostCoordination(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead, c costCoordination) error {
	tag, err := tx.Exec(ctx, qCostCoordCAS, pgx.NamedArgs{"attempt_id": h.ExecutionAttemptID, "deployment_id": h.Lane.GatewayDeploymentID,
		"dimension_key": h.Lane.SourceEvidenceDimensionKey, "generation": c.Generation, "work_ref": h.Work.Ref, "state": c.State,
		"availability_state": nullable(c.AvailabilityState), "state_reason_code": nullable(c.StateReasonCode),
		"processing_ref": nullable(c.ProcessingRef), "processing_digest": nullable(c.ProcessingDigest),
		"finished_ref": nullable(c.FinishedRef), "finished_digest": nullable(c.FinishedDigest),
		"blocked_ref": nullable(c.BlockedRef), "blocked_digest": nullable(c.BlockedDigest)})
	if err != nil {
		return fmt.Errorf("cost lane coordination: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	stored, ok, err := readCostCoordination(ctx, tx, h.ExecutionAttemptID, h.Lane.GatewayDeploymentID, h.Lane.SourceEvidenceDimensionKey)
	if err != nil {
		return err
	}
	if ok && stored == c {
		return nil
	}
	return fmt.Errorf("%w: %s generation %d is %s", ErrCostLaneMoved, h.Work.Ref, stored.Generation, stored.State)
}

func readCostCoordination(ctx context.Context, q db.Executor, attemptID, deploymentID, dimension string) (costCoordination, bool, error) {
	rows, err := q.Query(ctx, qCostCoordSelect, pgx.NamedArgs{"attempt_id": attemptID, "deployment_id": deploymentID, "dimension_key": dimension})
	if err != nil {
		return costCoordination{}, false, fmt.Errorf("read cost lane coordination: %w", err)
	}
	c, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[costCoordination])
	if errors.Is(err, pgx.ErrNoRows) {
		return costCoordination{}, false, nil
	}
	if err != nil {
		return costCoordination{}, false, fmt.Errorf("read cost lane coordination: %w", err)
	}
	return c, true, nil
}

// costCoordinationOf is the receipt's provider cost coordination state for
// the lane's latest generation w: what the worker committed for w, or
// pending when it committed nothing yet for w.
func costCoordinationOf(ctx context.Context, tx pgx.Tx, attemptID, deploymentID, dimension string, w receipt.WorkBinding) (receipt.ProviderCostCoordination, error) {
	c, ok, err := readCostCoordination(ctx, tx, attemptID, deploymentID, dimension)
	if err != nil {
		return receipt.ProviderCostCoordination{}, err
	}
	if !ok || c.Generation != w.Generation {
		return receipt.ProviderCostCoordination{State: receipt.StatePending, ActiveWork: &w}, nil
	}
	q := func(ref, d string) strict.Quadruple {
		return strict.Quadruple{Ref: ref, SchemaVersion: receipt.SchemaVersion1, DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: d}
	}
	if c.State == receipt.StateBlockedOnProcessingConflict {
		b := q(c.BlockedRef, c.BlockedDigest)
		return receipt.ProviderCostCoordination{State: c.State, ActiveWork: &w, Blocked: &b}, nil
	}
	outcome := map[string]string{
		receipt.StateAvailabilityProcessed:  receipt.ProcessingAvailableApplied,
		receipt.StateWaitingForEvidence:     receipt.ProcessingWaitingForEvidence,
		receipt.StateNoCostEvidence:         receipt.ProcessingNoCostEvidence,
		receipt.StateReconciliationRequired: receipt.ProcessingReconciliationRequired,
	}[c.State]
	return receipt.ProviderCostCoordination{State: c.State, ProcessingOutcome: outcome, AvailabilityState: c.AvailabilityState,
		StateReasonCode: c.StateReasonCode, Processed: &receipt.ProcessedWork{Work: w,
			Processing: q(c.ProcessingRef, c.ProcessingDigest), Finished: q(c.FinishedRef, c.FinishedDigest)}}, nil
}

// CostDiagnostics is Metering's directed provider cost diagnostic. It is
// complete only for what Metering itself stores: no Provider Cost
// Processing event exists in the Delivery Set, so Operations has no queue of
// these states and any alert built on this is best effort (ADR-031).
type CostDiagnostics struct {
	// ByState counts cost lanes by their latest committed coordination
	// state; "pending" counts lanes whose latest generation has none yet.
	ByState map[string]int64
	// Completeness is always "incomplete_best_effort" (see Notes).
	Completeness string
	Notes        []string
}

// ReadCostDiagnostics reads the cost lane states (an operator read, not a hot path).
func ReadCostDiagnostics(ctx context.Context, q db.Executor) (CostDiagnostics, error) {
	rows, err := q.Query(ctx, qCostDiagnostics)
	if err != nil {
		return CostDiagnostics{}, fmt.Errorf("cost diagnostics: %w", err)
	}
	d := CostDiagnostics{ByState: map[string]int64{}, Completeness: "incomplete_best_effort", Notes: []string{
		"Metering-local diagnostics only: the Delivery Set has no provider cost processing event, so Operations holds no queue of these states",
		"reconciliation_required is a Metering-owned anchor (the processing fact); no Operations reconciliation case is opened",
		"provider cost never blocks or triggers customer charging",
	}}
	var state string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error { d.ByState[state] = n; return nil }); err != nil {
		return CostDiagnostics{}, fmt.Errorf("cost diagnostics: %w", err)
	}
	return d, nil
}
