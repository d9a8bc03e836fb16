package metering

import (
	"context"
	"errors"
	"fmt"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/internal/db"
)

var (
	qFencePeek           = statements.Get("fence_peek")
	qDecisionInsert      = statements.Get("decision_insert")
	qMeterEventInsert    = statements.Get("meter_event_insert")
	qSettlementLock      = statements.Get("settlement_current_lock")
	qSnapshotInsert      = statements.Get("settlement_snapshot_insert")
	qCurrentInsert       = statements.Get("settlement_current_insert")
	qCurrentCAS          = statements.Get("settlement_current_cas")
	qBlockInsert         = statements.Get("block_insert")
	qBlockLatest         = statements.Get("block_latest")
	qOwnerBlockInsert    = statements.Get("owner_block_insert")
	qOwnerBlockLatest    = statements.Get("owner_block_latest")
	settlementEventDeriv = "metering_settlement_input_current_changed@1"
)

var (
	// ErrRetryable: an owner read or lock was unavailable; nothing was written
	// (no fact, no finish, no CAS) and the Work is handed back.
	ErrRetryable = errors.New("metering: retryable work failure")
	// ErrLaneNotBuilt: the worker has no processor for the Work's lane.
	ErrLaneNotBuilt = errors.New("metering: no processor for this lane")
	// ErrPointerMoved: a settlement input pointer CAS found another version.
	ErrPointerMoved = errors.New("metering: settlement input pointer moved")
	// ErrOwnerConflictUnbound: an owner read answered conflicting without a
	// stored conflict fact. Blocked@1 names that owner's conflict fact
	// (execution_eligibility_owner_conflict, gateway_usage_owner_conflict,
	// gateway_binding_owner_conflict); when the owner returns it (the
	// Gateway's GatewayEvidenceConflictFact@1, issue 32) the attempt writes
	// Blocked@1 on it, and when it does not (Execution's eligibility read, a
	// stored object that does not recompute), rather than forge one the
	// attempt writes nothing and the Work is handed back (it wraps
	// ErrOwnerConflict).
	ErrOwnerConflictUnbound = fmt.Errorf("%w (no owner conflict fact to bind Blocked@1 to)", ErrOwnerConflict)
	// ErrEligibilitySource: the Work's input fence has no readable eligibility
	// source (a fence from before it was stored, or damaged data). An operator
	// must look: the worker cannot name the run, step, manifest or fact, so it
	// writes nothing rather than evidence with made-up identities.
	ErrEligibilitySource = errors.New("metering: input fence has no readable eligibility source")
)

// ProcessorConfig configures the worker's processing.
type ProcessorConfig struct {
	// Reads are the owner reads (required).
	Reads OwnerReads
	// FailAt, when set, is called at named points inside the processing
	// transaction ("decision", "snapshot", "pointer", "append", "finish");
	// an error aborts the transaction (tests inject failures with it).
	FailAt func(stage string) error
}

// Processor runs claimed Work attempts: bootstrap reads, operation-bound
// owner reads, then one transaction with every fact, event and the finish.
type Processor struct {
	pool   db.Beginner
	reads  OwnerReads
	failAt func(stage string) error
}

// NewProcessor builds the processor over the metering database.
func NewProcessor(pool db.Beginner, cfg ProcessorConfig) (*Processor, error) {
	if cfg.Reads == nil {
		return nil, errors.New("metering: owner reads are required")
	}
	return &Processor{pool: pool, reads: cfg.Reads, failAt: cfg.FailAt}, nil
}

// Outcome is what one processed attempt wrote.
type Outcome struct {
	// Finished is the Work's finish (applied or superseded), nil when blocked.
	Finished *receipt.MeteringInputWorkAttemptFinished
	// Blocked is the attempt's Blocked@1 (the Work stays active).
	Blocked *receipt.MeteringInputWorkAttemptBlocked
	// NewSnapshots counts the settlement input versions this attempt appended.
	NewSnapshots int
	// Awaiting are the registered charge dimensions without Gateway usage
	// yet (awaiting_evidence): the Work stays active, nothing else written.
	Awaiting []string
}

// Process runs one claimed attempt by its lane: the eligibility lane here,
// the provider-cost lane in worker_cost.go.
func (p *Processor) Process(ctx context.Context, a *Attempt) (Outcome, error) {
	switch a.Head.Lane.Kind {
	case receipt.LaneEligibility:
		return p.processEligibilityWork(ctx, a)
	case receipt.LaneProviderCost:
		return p.processCostWork(ctx, a)
	default:
		return Outcome{}, fmt.Errorf("%w: %q", ErrLaneNotBuilt, a.Head.Lane.Kind)
	}
}

func (p *Processor) stage(name string) error {
	if p.failAt == nil {
		return nil
	}
	return p.failAt(name)
}

// retryable marks an owner read that did not answer (or answered not_found).
func retryable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRetryable, fmt.Sprintf(format, args...))
}

// conflict is a local deterministic conflict: the attempt writes Blocked@1
// with EligibilityProcessingConflictEvidence@1 and the Work stays active.
type conflict struct {
	stage     string // EligibilityProcessingConflictEvidence@1 validationStage
	reason    string
	candidate any // what was being validated (its digest is recorded)
}

func (c *conflict) Error() string { return "metering: local conflict at " + c.stage + ": " + c.reason }
