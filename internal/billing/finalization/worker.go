package finalization

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/work"
)

// runnableWork is where runnable finalization Work is: a fence in
// pending_evaluation whose closure is applied and whose active Work is
// pending (the partial index billing_finalization_fences_pending keeps the
// claim independent of history). The claim's row lock on the fence is held
// for the evaluation's whole transaction (a locked work queue), so the Work
// generation and fence revision read here are the ones the commit writes
// under; concurrent workers take other fences.
var runnableWork = work.Claimable{
	Table: "billing.billing_finalization_fences",
	Key:   []string{"billing_finalization_fence_id"},
	// A lateral probe of the active Work by its key, one per candidate
	// fence: a join leaves the planner free to hash the whole Work history
	// (it did, with the statistics of a young table).
	Join: `CROSS JOIN LATERAL (SELECT w.billing_finalization_operation_id FROM billing.billing_finalization_works w
    WHERE w.billing_finalization_fence_id = q.billing_finalization_fence_id AND w.work_generation = q.active_work_generation
      AND w.work_state = 'pending' LIMIT 1) w`,
	Where: "q.coordination_state = 'pending_evaluation' AND q.closure_watermark_state = 'applied'",
	// Oldest fence first (ids are time-ordered), read in the order of the
	// partial index: without an order, LIMIT 1 let the planner expect a
	// match early in a sequential scan, which read the committed history
	// before the first runnable fence (measured at 3,000 runs).
	Order:   "q.billing_finalization_fence_id",
	Columns: "q.billing_finalization_fence_id, q.active_work_generation, q.finalization_fence_revision, w.billing_finalization_operation_id",
	Now:     "now()",
	Age:     "q.updated_at",
}

var (
	qWorkClaim     = runnableWork.LockedClaim()
	qClosureSelect = statements.Get("closure_select")
	qRecorded      = statements.Get("recorded_inputs")
)

// Work is the claimed active Work of a fence.
type Work struct {
	FenceID       string
	Generation    int64
	FenceRevision int64
	// OperationID is the Work generation's own operation id (the Billing
	// core's key for its evaluation and committed rows); the objects of
	// this package use the fence's finalization operation.
	OperationID string
}

// Ledger is the Billing core's seam the worker commits through, in the
// worker's transaction (the fence row is locked by the claim).
type Ledger interface {
	// CommitTx writes a success: ledger postings, reservation and fence
	// terminal states, BillingFinalizationCommitted@1 and
	// billing.finalization.committed@1 with its deliveries.
	CommitTx(ctx context.Context, tx pgx.Tx, w Work, ev *Evaluation) error
	// RecordTx records an evaluation without economic effect (blocked, or
	// reconciliation deferred) and leaves the fence waiting with its reason.
	RecordTx(ctx context.Context, tx pgx.Tx, w Work, ev *Evaluation) error
}

// Config tunes the worker loop.
type Config struct {
	// Idle is the pause when no Work is runnable (default 50ms).
	Idle time.Duration
	// Concurrency is the number of claim loops (default 2).
	Concurrency int
	// Now is the clock of the objects' own time fields (default time.Now).
	Now func() time.Time
	// Metrics receives the Work metrics of queue billing_finalization (nil:
	// unregistered ones).
	Metrics *work.Metrics
	// Counters counts the decisions this worker commits (nil: none).
	Counters *billing.Counters
}

// QueueName is the Work metrics' label of finalization Work.
const QueueName = "billing_finalization"

// Worker claims runnable finalization Work, evaluates it through the owners
// and commits the decision in one Billing transaction.
type Worker struct {
	core   db.Beginner
	owners Owners
	ledger Ledger
	cfg    Config
	log    *slog.Logger
	runner *work.Runner
}

// NewWorker builds a worker on the core database.
func NewWorker(core db.Beginner, owners Owners, ledger Ledger, cfg Config, log *slog.Logger) *Worker {
	if cfg.Idle == 0 {
		cfg.Idle = 50 * time.Millisecond
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 2
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	w := &Worker{core: core, owners: owners, ledger: ledger, cfg: cfg, log: log}
	w.runner = work.NewLockedRunner(lockedQueue{w}, work.Config{Name: QueueName, Slots: cfg.Concurrency, Idle: cfg.Idle,
		Metrics: cfg.Metrics, Outcomes: []string{contract.DecisionSettleAndReleaseRemainder, contract.DecisionReleaseAll}, Log: log})
	return w
}

// ErrNoWork: no fence has runnable Work right now.
var ErrNoWork = errors.New("finalization: no runnable work")

// Result is what one processed Work decided.
type Result struct {
	Work     Work
	Decision *contract.BillingFinalizationDecision
}

// ProcessOne claims one runnable Work and processes it in one transaction:
// claim (fence row locked), load the applied closure, evaluate through the
// owners, store every step, then commit (success) or record (evaluation).
// ErrNoWork when nothing is runnable. Any failure rolls everything back;
// the Work stays runnable and the same inputs give the same objects.
func (w *Worker) ProcessOne(ctx context.Context) (Result, error) {
	return db.WithTxV(ctx, w.core, func(ctx context.Context, tx pgx.Tx) (Result, error) {
		var work Work
		err := tx.QueryRow(ctx, qWorkClaim).Scan(&work.FenceID, &work.Generation, &work.FenceRevision, &work.OperationID)
		if errors.Is(err, pgx.ErrNoRows) {
			return Result{}, ErrNoWork
		}
		if err != nil {
			return Result{}, fmt.Errorf("claim finalization work: %w", err)
		}
		c, err := loadClosure(ctx, tx, work.FenceID)
		if err != nil {
			return Result{}, err
		}
		ev, err := Evaluate(ctx, w.owners, c, w.cfg.Now())
		if err != nil {
			return Result{}, fmt.Errorf("evaluate fence %s: %w", work.FenceID, err)
		}
		if err := StoreTx(ctx, tx, ev); err != nil {
			return Result{}, err
		}
		if ev.Decision.Succeeded() {
			err = w.ledger.CommitTx(ctx, tx, work, ev)
		} else {
			err = w.ledger.RecordTx(ctx, tx, work, ev)
		}
		if err != nil {
			return Result{}, fmt.Errorf("finalize fence %s: %w", work.FenceID, err)
		}
		return Result{Work: work, Decision: ev.Decision}, nil
	})
}

// Run processes Work until ctx ends: Concurrency slots, each claiming
// while Work is runnable, then pausing Idle. Failures are logged and the
// Work retried (a transient owner or database failure changes nothing).
func (w *Worker) Run(ctx context.Context) error {
	w.runner.Run(ctx)
	return nil
}

// lockedQueue is finalization Work as a work.LockedQueue.
type lockedQueue struct{ w *Worker }

func (q lockedQueue) WorkNext(ctx context.Context) (work.Result, error) {
	res, err := q.w.ProcessOne(ctx)
	switch {
	case errors.Is(err, ErrNoWork):
		return work.Result{}, work.ErrEmpty
	case err != nil:
		return work.Result{}, err
	}
	q.w.cfg.Counters.DecisionCommitted(res.Decision.Outcome)
	if res.Decision.Succeeded() {
		return work.Done(res.Decision.Outcome), nil
	}
	// Blocked or reconciliation deferred: the evaluation is recorded and
	// the fence waits visibly until an input event wakes it.
	return work.Result{Kind: work.Blocked}, nil
}

func (q lockedQueue) Backlog(ctx context.Context) (work.Backlog, error) {
	return work.NewStore(q.w.core, runnableWork, "", nil).Backlog(ctx, nil)
}

func loadClosure(ctx context.Context, tx pgx.Tx, fenceID string) (Closure, error) {
	var c Closure
	var project *string
	var ram, fin, set [4]string
	err := tx.QueryRow(ctx, qClosureSelect, pgx.NamedArgs{"fence_id": fenceID}).Scan(
		&c.FenceID, &c.BillingReservationID, &c.RunID, &c.BillingAccountID, &c.CorrelationID,
		&c.Tenant.Kind, &c.Tenant.TenantID, &c.Tenant.WorkspaceID, &project,
		&ram[0], &ram[1], &ram[2], &ram[3], &c.ReservedAmount, &c.ClosureOperationID,
		&fin[0], &fin[1], &fin[2], &fin[3], &c.StateVersion, &set[0], &set[1], &set[2], &set[3], &c.AttemptCount)
	if err != nil {
		return Closure{}, fmt.Errorf("load closure of fence %s: %w", fenceID, db.NotFound(err))
	}
	if project != nil {
		c.Tenant.ProjectID = *project
	}
	q := func(v [4]string) strict.Quadruple {
		return strict.Quadruple{Ref: v[0], SchemaVersion: v[1], DigestAlgorithmVersion: digest.Algorithm(v[2]), Digest: v[3]}
	}
	c.RunAdmissionManifest, c.Finalization, c.AttemptSet = q(ram), q(fin), q(set)
	rows, err := tx.Query(ctx, qRecorded, pgx.NamedArgs{"reservation_id": c.BillingReservationID})
	if err != nil {
		return Closure{}, fmt.Errorf("load recorded settlement inputs: %w", err)
	}
	c.Recorded = map[string]settlement.Ref{}
	var dim string
	var v [4]string
	var version int64
	_, err = pgx.ForEachRow(rows, []any{&dim, &v[0], &v[1], &v[2], &v[3], &version}, func() error {
		c.Recorded[dim] = settlement.Ref{Snapshot: q(v), StateVersion: version}
		return nil
	})
	if err != nil {
		return Closure{}, fmt.Errorf("load recorded settlement inputs: %w", err)
	}
	return c, nil
}
