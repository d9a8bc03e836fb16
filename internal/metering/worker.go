package metering

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
)

var (
	qAttemptLatest = statements.Get("attempt_latest")
	qFinishInsert  = statements.Get("finish_insert")
	qLaneLatest    = statements.Get("lane_latest")
	qStartedOlder  = statements.Get("work_started_older")
	qWorkEnqueue   = statements.Get("work_enqueue")
	qWorkDequeue   = statements.Get("work_dequeue")
	qWorkLock      = statements.Get("work_lock")
)

var (
	// ErrNoWork: no unfinished Work is claimable.
	ErrNoWork = errors.New("metering: no claimable work")
	// ErrFenced: the attempt's token is not the Work's latest (a newer attempt
	// took the Work over); the old token writes nothing.
	ErrFenced = errors.New("metering: work attempt fenced by a newer attempt")
	// ErrFinishConflict: the Work's stored finish has another digest.
	ErrFinishConflict = errors.New("metering: work already finished with another body")
	// ErrNotSuperseded: the lane has no newer generation than the Work.
	ErrNotSuperseded = errors.New("metering: work is the lane's latest generation")
)

// Attempt is one started, fenced attempt of one Work generation.
type Attempt struct {
	Head receipt.WorkAttemptHead
}

type claimRow struct {
	WorkRef            string `db:"work_ref"`
	WorkDigest         string `db:"work_digest"`
	ExecutionAttemptID string `db:"execution_attempt_id"`
	LaneKind           string `db:"lane_kind"`
	DeploymentID       string `db:"gateway_deployment_id"`
	DimensionKey       string `db:"source_evidence_dimension_key"`
	WorkGeneration     int64  `db:"work_generation"`
	OperationID        string `db:"operation_id"`
	TriggerDigest      string `db:"trigger_digest"`
}

// FinishSupersededIfMoved is the late worker's check: under the attempt's
// input fence lock, when the lane scheduled a newer generation than the
// attempt's Work, it writes (or finds) the Work's one `superseded` finish,
// with the same body whoever writes it. A token that is not the Work's
// latest attempt is ErrFenced and writes nothing; a lane that did not move
// is ErrNotSuperseded and writes nothing.
func FinishSupersededIfMoved(ctx context.Context, pool db.Beginner, a *Attempt) (*receipt.MeteringInputWorkAttemptFinished, error) {
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (*receipt.MeteringInputWorkAttemptFinished, error) {
		if _, err := lockFence(ctx, tx, a.Head.ExecutionAttemptID); err != nil {
			return nil, err
		}
		latest, err := laneLatest(ctx, tx, a.Head)
		if err != nil {
			return nil, err
		}
		if latest <= a.Head.WorkGeneration {
			return nil, ErrNotSuperseded
		}
		return finishSupersededTx(ctx, tx, a.Head)
	})
}

func laneLatest(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead) (int64, error) {
	var latest *int64
	if err := tx.QueryRow(ctx, qLaneLatest, pgx.NamedArgs{"lane_kind": h.Lane.Kind, "attempt_id": h.ExecutionAttemptID,
		"deployment_id": h.Lane.GatewayDeploymentID, "dimension_key": h.Lane.SourceEvidenceDimensionKey}).Scan(&latest); err != nil {
		return 0, fmt.Errorf("read lane generation: %w", err)
	}
	if latest == nil {
		return 0, nil
	}
	return *latest, nil
}

// finishSupersededTx writes the Work's superseded finish under the caller's
// input fence lock; the head must carry the Work's latest attempt token.
// supersededByWorkGeneration is always the next generation (generations are
// dense), so the input processor and a late worker compute the same body
// however far the lane has moved since.
func finishSupersededTx(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead) (*receipt.MeteringInputWorkAttemptFinished, error) {
	if err := fenceLatestAttemptTx(ctx, tx, h); err != nil {
		return nil, err
	}
	return finishTx(ctx, tx, h, receipt.FinishOutcome{Kind: h.Lane.Kind, State: receipt.FinishSuperseded, SupersededByWorkGeneration: h.WorkGeneration + 1})
}

type startedRow struct {
	claimRow
	AttemptNumber int64  `db:"attempt_number"`
	FencingToken  string `db:"fencing_token"`
}

func (w claimRow) head(number int64, token string) receipt.WorkAttemptHead {
	return receipt.WorkAttemptHead{
		Work: strict.Quadruple{Ref: w.WorkRef, SchemaVersion: receipt.SchemaVersion1,
			DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: w.WorkDigest},
		OperationID:        w.OperationID,
		ExecutionAttemptID: w.ExecutionAttemptID,
		WorkGeneration:     w.WorkGeneration,
		Lane: receipt.MeteringInputWorkLane{Kind: w.LaneKind, GatewayDeploymentID: w.DeploymentID,
			SourceEvidenceDimensionKey: w.DimensionKey},
		LaneTriggerDigest: digest.Digest{Algorithm: digest.JCSSHA256V1, Value: w.TriggerDigest},
		AttemptNumber:     number,
		FencingToken:      token,
	}
}

// supersedeStartedTx runs in the input processor's transaction (under the
// input fence lock) after it scheduled generation s.Generation: every older
// Started, unfinished Work of the lane gets its one superseded finish,
// bound to its latest attempt (the body a late worker recomputes).
func supersedeStartedTx(ctx context.Context, tx pgx.Tx, s workSpec) error {
	rows, err := tx.Query(ctx, qStartedOlder, pgx.NamedArgs{"attempt_id": s.AttemptID, "lane_kind": s.Lane,
		"deployment_id": s.DeploymentID, "dimension_key": s.DimensionKey, "generation": s.Generation})
	if err != nil {
		return fmt.Errorf("read started work: %w", err)
	}
	started, err := pgx.CollectRows(rows, pgx.RowToStructByName[startedRow])
	if err != nil {
		return fmt.Errorf("read started work: %w", err)
	}
	for _, w := range started {
		if _, err := finishSupersededTx(ctx, tx, w.head(w.AttemptNumber, w.FencingToken)); err != nil {
			return err
		}
	}
	return nil
}

// finishTx writes (or finds) the Work's one finish under the caller's locks (fence,
// queue row, latest attempt checked) and dequeues it.
func finishTx(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead, o receipt.FinishOutcome) (*receipt.MeteringInputWorkAttemptFinished, error) {
	f := &receipt.MeteringInputWorkAttemptFinished{
		Finished: strict.Quadruple{Ref: "miwf-" + uuid.Must(uuid.NewV7()).String()}, WorkAttemptHead: h, Outcome: o,
		FinishedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	if err := f.Seal(); err != nil {
		return nil, fmt.Errorf("seal finish: %w", err)
	}
	body, err := jcs.Marshal(f.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("finish body: %w", err)
	}
	var storedRef, storedDigest, storedBody string
	if err := tx.QueryRow(ctx, qFinishInsert, pgx.NamedArgs{"work_ref": h.Work.Ref, "attempt_number": h.AttemptNumber,
		"fencing_token": h.FencingToken, "finished_ref": f.Finished.Ref, "finished_digest": f.Finished.Digest,
		"outcome_state": f.Outcome.State, "finished_body": string(body)}).Scan(&storedRef, &storedDigest, &storedBody); err != nil {
		return nil, fmt.Errorf("insert finish: %w", err)
	}
	// guard ME-1.finish-conflict
	if storedDigest != f.Finished.Digest {
		return nil, fmt.Errorf("%w: %s", ErrFinishConflict, h.Work.Ref)
	}
	if _, err := tx.Exec(ctx, qWorkDequeue, pgx.NamedArgs{"work_ref": h.Work.Ref}); err != nil {
		return nil, fmt.Errorf("dequeue finished work: %w", err)
	}
	return receipt.DecodeMeteringInputWorkAttemptFinished([]byte(storedBody))
}

// fenceLatestAttemptTx locks the Work's queue row and checks that the attempt
// holds the Work's latest token (an older token writes nothing).
func fenceLatestAttemptTx(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead) error {
	if _, err := tx.Exec(ctx, qWorkLock, pgx.NamedArgs{"work_ref": h.Work.Ref}); err != nil {
		return fmt.Errorf("lock queued work: %w", err)
	}
	var number int64
	var token string
	if err := tx.QueryRow(ctx, qAttemptLatest, pgx.NamedArgs{"work_ref": h.Work.Ref}).Scan(&number, &token); err != nil {
		return fmt.Errorf("read latest attempt: %w", db.NotFound(err))
	}
	if number != h.AttemptNumber || token != h.FencingToken {
		return fmt.Errorf("%w: %s attempt %d (latest %d)", ErrFenced, h.Work.Ref, h.AttemptNumber, number)
	}
	return nil
}
