package metering

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/outbox/transport"
)

// workOperationDerivation derives a Work generation's operation id, so a
// replay of the same generation names the same operation.
const workOperationDerivation = "metering_input_work@1"

// workSpec is one Work generation of one lane.
type workSpec struct {
	AttemptID     string
	Lane          string // receipt.LaneEligibility | receipt.LaneProviderCost
	DeploymentID  string // cost lane only
	DimensionKey  string // cost lane only
	Generation    int64
	FenceRevision int64
	Trigger       digest.Digest
}

func (s workSpec) laneJSON() map[string]any {
	m := map[string]any{"kind": s.Lane}
	if s.Lane == receipt.LaneProviderCost {
		m["gatewayDeploymentId"] = s.DeploymentID
		m["sourceEvidenceDimensionKey"] = s.DimensionKey
	}
	return m
}

func (s workSpec) operationID() string {
	return envelope.DeriveID(workOperationDerivation, map[string]any{
		"executionAttemptId": s.AttemptID, "lane": s.laneJSON(), "workGeneration": s.Generation,
	})
}

// candidate is the Work's content-addressed body without its ref: which
// attempt and lane, which generation, the fence revision that scheduled it
// and the lane trigger digest (the inputs the worker must find current).
func (s workSpec) candidate() map[string]any {
	return map[string]any{
		"meteringInputWorkSchemaVersion":    receipt.SchemaVersion1,
		"executionAttemptId":                s.AttemptID,
		"lane":                              s.laneJSON(),
		"workGeneration":                    s.Generation,
		"meteringInputWorkOperationId":      s.operationID(),
		"scheduledAtFenceRevision":          s.FenceRevision,
		"laneTriggerDigestAlgorithmVersion": string(s.Trigger.Algorithm),
		"laneTriggerDigest":                 s.Trigger.Value,
	}
}

// insertWork inserts the Work generation or compares it with the stored
// one: a stored generation with another digest is non_retryable.
func insertWork(ctx context.Context, tx pgx.Tx, s workSpec) (receipt.WorkBinding, error) {
	cand := s.candidate()
	d, err := digest.Of(digest.JCSSHA256V1, cand)
	if err != nil {
		return receipt.WorkBinding{}, fmt.Errorf("work digest: %w", err)
	}
	ref := "miw-" + uuid.Must(uuid.NewV7()).String()
	body := map[string]any{}
	for k, v := range cand {
		body[k] = v
	}
	q := strict.Quadruple{Ref: ref, SchemaVersion: receipt.SchemaVersion1, DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: d.Value}
	q.Put(body, "meteringInputWork")
	canonical, err := jcs.Marshal(body)
	if err != nil {
		return receipt.WorkBinding{}, fmt.Errorf("work body: %w", err)
	}
	var storedRef, storedDigest string
	err = tx.QueryRow(ctx, qWorkInsert, pgx.NamedArgs{
		"work_ref": ref, "work_digest": d.Value, "attempt_id": s.AttemptID, "lane_kind": s.Lane,
		"deployment_id": s.DeploymentID, "dimension_key": s.DimensionKey, "generation": s.Generation,
		"operation_id": s.operationID(), "trigger_digest": s.Trigger.Value, "work_body": string(canonical),
	}).Scan(&storedRef, &storedDigest)
	if err != nil {
		return receipt.WorkBinding{}, fmt.Errorf("insert work: %w", err)
	}
	// guard ME-1.work-generation-conflict
	if storedDigest != d.Value {
		return receipt.WorkBinding{}, transport.NonRetryable(CodeWorkConflict, fmt.Errorf("%w: %s generation %d", ErrWorkConflict, s.AttemptID, s.Generation))
	}
	q.Ref = storedRef
	if _, err := tx.Exec(ctx, qWorkEnqueue, pgx.NamedArgs{"work_ref": storedRef}); err != nil {
		return receipt.WorkBinding{}, fmt.Errorf("enqueue work: %w", err)
	}
	if err := supersedeStartedTx(ctx, tx, s); err != nil {
		return receipt.WorkBinding{}, err
	}
	return receipt.WorkBinding{Generation: s.Generation, OperationID: s.operationID(), Work: q}, nil
}

type workRow struct {
	WorkRef        string `db:"work_ref"`
	WorkDigest     string `db:"work_digest"`
	OperationID    string `db:"operation_id"`
	WorkGeneration int64  `db:"work_generation"`
}

// latestWork reads the binding of one stored generation.
func latestWork(ctx context.Context, tx pgx.Tx, attemptID, lane, deploymentID, dimension string, generation int64) (receipt.WorkBinding, error) {
	rows, err := tx.Query(ctx, qWorkLatest, pgx.NamedArgs{"attempt_id": attemptID, "lane_kind": lane,
		"deployment_id": deploymentID, "dimension_key": dimension, "generation": generation})
	if err != nil {
		return receipt.WorkBinding{}, fmt.Errorf("read work: %w", err)
	}
	w, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[workRow])
	if err != nil {
		return receipt.WorkBinding{}, fmt.Errorf("read work %s/%s generation %d: %w", attemptID, lane, generation, err)
	}
	return receipt.WorkBinding{Generation: w.WorkGeneration, OperationID: w.OperationID, Work: strict.Quadruple{
		Ref: w.WorkRef, SchemaVersion: receipt.SchemaVersion1, DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: w.WorkDigest}}, nil
}
