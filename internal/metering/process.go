package metering

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/release"
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
	// ErrOwnerConflictUnbound: an owner read answered conflicting. Blocked@1
	// names that owner's conflict fact (execution_eligibility_owner_conflict,
	// gateway_usage_owner_conflict, gateway_binding_owner_conflict), which
	// the owner reads do not return yet; rather than forge one, the attempt
	// writes nothing and the Work is handed back (it wraps ErrOwnerConflict).
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

// dimensionInput is everything one charge dimension's snapshot is built from.
type dimensionInput struct {
	// availability is the strictly decoded snapshot of the bootstrap read
	// (nil for not_dispatched): what the current validation names.
	availability *contract.AvailabilitySnapshot
	key          string
	price        settlement.Price
	basis        settlement.UsageBasis
	quantity     string // "0" unless available
	evidence     *contract.ProviderEvidence
}

// eligibilityInputs is the bootstrap of one eligibility Work.
type eligibilityInputs struct {
	source eligibilitySource
	fact   *contract.ExecutionEligibilityFact
	// economic is the identity the cited RunAdmissionManifest froze.
	economic settlement.EconomicIdentity
	dims     []dimensionInput
}

func (p *Processor) processEligibilityWork(ctx context.Context, a *Attempt) (Outcome, error) {
	h := a.Head
	// Bootstrap read: the fence and usage watermarks the Work was scheduled on.
	fence, usage, err := p.peek(ctx, h.ExecutionAttemptID)
	if err != nil {
		return Outcome{}, err
	}
	if fence.LatestEligibilityWorkGeneration > h.WorkGeneration {
		f, err := FinishSupersededIfMoved(ctx, p.pool, a)
		return Outcome{Finished: f}, err
	}
	in, err := p.eligibilityInputs(ctx, h.ExecutionAttemptID, fence, usage)
	var c *conflict
	if errors.As(err, &c) {
		return p.block(ctx, a, in, c)
	}
	if err != nil {
		return Outcome{}, err
	}
	// Second stage: the bootstrap answers cannot complete the Work; the
	// Gateway's operation-bound Current Receipt of every availability the
	// basis uses must say current.
	err = p.validateUsage(ctx, h, in)
	if errors.As(err, &c) {
		return p.block(ctx, a, in, c)
	}
	if errors.Is(err, ErrAvailabilityNotCurrent) {
		// A newer availability is Current: if its event already moved the
		// lane, this Work is superseded (the same finish body the input
		// processor writes); if not, it is on its way: nothing is written.
		f, serr := FinishSupersededIfMoved(ctx, p.pool, a)
		if serr == nil {
			return Outcome{Finished: f}, nil
		}
		if !errors.Is(serr, ErrNotSuperseded) {
			return Outcome{}, serr
		}
		return Outcome{}, err
	}
	if err != nil {
		return Outcome{}, err
	}
	out, err := p.applyEligibility(ctx, a, in)
	// A conflict found inside the processing transaction (an amount that
	// cannot be computed, a snapshot that does not seal) is as deterministic
	// as one found by the reads: its transaction rolled back, so the attempt
	// writes Blocked@1 in its own transaction instead of retrying forever.
	if errors.As(err, &c) {
		return p.block(ctx, a, in, c)
	}
	return out, err
}

func (p *Processor) peek(ctx context.Context, attemptID string) (*fenceRow, []usageRow, error) {
	type peeked struct {
		f *fenceRow
		u []usageRow
	}
	r, err := db.WithTxV(ctx, p.pool, func(ctx context.Context, tx pgx.Tx) (peeked, error) {
		rows, err := tx.Query(ctx, qFencePeek, pgx.NamedArgs{"attempt_id": attemptID})
		if err != nil {
			return peeked{}, fmt.Errorf("read input fence: %w", err)
		}
		f, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[fenceRow])
		if err != nil {
			return peeked{}, fmt.Errorf("read input fence %s: %w", attemptID, err)
		}
		u, err := usageOf(ctx, tx, attemptID)
		return peeked{f, u}, err
	})
	return r.f, r.u, err
}

// eligibilityInputs makes the event-bound owner reads (outside any
// transaction): the eligibility fact, then for a dispatched attempt every
// usage availability snapshot and, when available, its provider evidence.
// A read that does not answer is retryable; a conflicting answer or a
// mapping the price book refuses is a local conflict (Blocked@1).
func (p *Processor) eligibilityInputs(ctx context.Context, attemptID string, f *fenceRow, usage []usageRow) (*eligibilityInputs, error) {
	if f.EligibilitySource == nil || f.DispatchDisposition == nil {
		return nil, fmt.Errorf("%w: %s", ErrEligibilitySource, attemptID)
	}
	src, err := decodeSource(*f.EligibilitySource)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrEligibilitySource, attemptID, err)
	}
	in := &eligibilityInputs{source: src}
	req := execution.EligibilityFactRead{ContractVersion: execution.ReadEligibilityFactV1, Audience: execution.AudienceMeteringInput,
		BillingReservationID: src.BillingReservationID, BillingAccountID: src.BillingAccountID, RunID: src.RunID,
		RunStepID: src.RunStepID, ExecutionAttemptID: src.ExecutionAttemptID, AttemptManifest: src.AttemptManifest, Fact: src.Fact}
	res, err := p.reads.ReadEligibilityFact(ctx, req)
	if err != nil {
		if errors.Is(err, ownerread.ErrInvalidRequest) {
			return in, &conflict{stage: "eligibility_basis", reason: "eligibility_read_invalid", candidate: eligibilityReadDoc(req)}
		}
		return in, retryable("eligibility read: %v", err)
	}
	switch res.Answer {
	case ownerread.Found:
	case ownerread.NotFound:
		return in, retryable("eligibility fact %s not found", src.Fact.Ref)
	default:
		return in, ownerConflict(receipt.CauseExecutionEligibilityOwnerConflict, res.Reason)
	}
	in.fact = res.Value
	if in.fact.Disposition != *f.DispatchDisposition {
		return in, &conflict{stage: "eligibility_basis", reason: "disposition_differs", candidate: in.fact.ToJSON()}
	}
	if in.economic, err = p.economicIdentity(ctx, src, in.fact); err != nil {
		return in, err
	}
	if in.fact.Disposition == contract.DispositionNotDispatched {
		price, err := settlement.PriceOf(settlement.ChargeDimensionNotDispatched)
		if err != nil {
			return in, &conflict{stage: "settlement_input", reason: "charge_dimension_not_registered", candidate: map[string]any{"chargeDimensionKey": settlement.ChargeDimensionNotDispatched}}
		}
		in.dims = []dimensionInput{{key: settlement.ChargeDimensionNotDispatched, price: price, quantity: "0",
			basis: settlement.UsageBasis{Kind: settlement.BasisNotDispatched, NotDispatchedFact: in.fact.NotDispatched}}}
		return in, nil
	}
	seen := map[string]bool{}
	for _, u := range usage {
		d, err := p.usageDimension(ctx, src, u)
		if err != nil {
			return in, err
		}
		if seen[d.key] {
			return in, &conflict{stage: "settlement_input", reason: "charge_dimension_ambiguous", candidate: map[string]any{"chargeDimensionKey": d.key}}
		}
		seen[d.key] = true
		in.dims = append(in.dims, d)
	}
	sort.Slice(in.dims, func(i, j int) bool { return in.dims[i].key < in.dims[j].key })
	return in, nil
}

func (p *Processor) usageDimension(ctx context.Context, src eligibilitySource, u usageRow) (dimensionInput, error) {
	snapQ := strict.Quadruple{Ref: u.CurrentAvailabilityRef, SchemaVersion: contract.SchemaVersion1,
		DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: u.CurrentAvailabilityDigest}
	req := gateway.AvailabilitySnapshotRead{ContractVersion: gateway.ReadAvailabilitySnapshotV1, Audience: gateway.AudienceMeteringInput,
		ExecutionAttemptID: src.ExecutionAttemptID, GatewayDeploymentID: u.GatewayDeploymentID, AttemptManifest: src.AttemptManifest,
		EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: u.EvidenceDimensionKey, StateVersion: u.StateVersion, Snapshot: snapQ}
	res, err := p.reads.ReadAvailabilitySnapshot(ctx, req)
	switch {
	case err != nil && errors.Is(err, ownerread.ErrInvalidRequest):
		return dimensionInput{}, &conflict{stage: "eligibility_basis", reason: "availability_read_invalid", candidate: availabilityReadDoc(req)}
	case err != nil:
		return dimensionInput{}, retryable("availability read: %v", err)
	case res.Answer == ownerread.NotFound:
		return dimensionInput{}, retryable("availability %s not found", snapQ.Ref)
	case res.Answer != ownerread.Found:
		return dimensionInput{}, ownerConflict(receipt.CauseGatewayUsageOwnerConflict, res.Reason)
	}
	snap := res.Value
	price, err := settlement.PriceOf(u.EvidenceDimensionKey)
	if err != nil {
		return dimensionInput{}, &conflict{stage: "meter_event", reason: "charge_dimension_not_registered", candidate: map[string]any{"chargeDimensionKey": u.EvidenceDimensionKey}}
	}
	d := dimensionInput{availability: snap, key: u.EvidenceDimensionKey, price: price, quantity: "0", basis: settlement.UsageBasis{
		Kind: settlement.BasisGatewayUsage, GatewayDeploymentID: u.GatewayDeploymentID, AttemptRouteBinding: snap.Binding,
		GatewayRouteSnapshot: snap.RouteSnapshot, CurrentAvailability: snap.Snapshot, AvailabilityStateVersion: snap.StateVersion,
		AvailabilityState: snap.State}}
	if snap.State != contract.AvailabilityAvailable {
		return d, nil
	}
	ereq := gateway.ProviderEvidenceRead{ContractVersion: gateway.ReadProviderEvidenceV1, Audience: gateway.AudienceMeteringInput,
		ExecutionAttemptID: src.ExecutionAttemptID, GatewayDeploymentID: u.GatewayDeploymentID, Binding: snap.Binding,
		EvidenceKind: contract.EvidenceProviderUsage, DimensionKey: u.EvidenceDimensionKey, Evidence: snap.Evidence}
	eres, err := p.reads.ReadProviderEvidence(ctx, ereq)
	switch {
	case err != nil && errors.Is(err, ownerread.ErrInvalidRequest):
		return d, &conflict{stage: "meter_event", reason: "evidence_read_invalid", candidate: evidenceReadDoc(ereq)}
	case err != nil:
		return d, retryable("evidence read: %v", err)
	case eres.Answer == ownerread.NotFound:
		return d, retryable("evidence %s not found", snap.Evidence.Ref)
	case eres.Answer != ownerread.Found:
		return d, ownerConflict(receipt.CauseGatewayUsageOwnerConflict, eres.Reason)
	}
	ev := eres.Value
	d.basis.ProviderEvidence = &ev.Evidence
	d.evidence, d.quantity = ev, ev.Quantity
	return d, nil
}

// ownerConflict is an owner read's conflicting answer, by the Blocked@1
// cause it belongs to (never recorded as Metering's own processing conflict).
func ownerConflict(cause, reason string) error {
	return fmt.Errorf("%w: %s: %s", ErrOwnerConflictUnbound, cause, reason)
}

// The read request documents below are the JCS form of what Metering asked
// an owner; an invalid request is Metering's own deterministic conflict, and
// the digest of this form is the evidence's conflicting candidate digest.

func eligibilityReadDoc(r execution.EligibilityFactRead) map[string]any {
	m := map[string]any{"contractVersion": r.ContractVersion, "audience": r.Audience, "billingReservationId": r.BillingReservationID,
		"billingAccountId": r.BillingAccountID, "runId": r.RunID, "runStepId": r.RunStepID, "executionAttemptId": r.ExecutionAttemptID}
	r.AttemptManifest.Put(m, settlement.PrefixAttemptExecutionManifest)
	r.Fact.Put(m, settlement.PrefixExecutionEligibilityFact)
	return m
}

func availabilityReadDoc(r gateway.AvailabilitySnapshotRead) map[string]any {
	m := map[string]any{"contractVersion": r.ContractVersion, "audience": r.Audience, "executionAttemptId": r.ExecutionAttemptID,
		"gatewayDeploymentId": r.GatewayDeploymentID, "providerEvidenceKind": r.EvidenceKind, "evidenceDimensionKey": r.DimensionKey,
		"currentAvailabilityStateVersion": r.StateVersion}
	r.AttemptManifest.Put(m, settlement.PrefixAttemptExecutionManifest)
	r.Snapshot.Put(m, settlement.PrefixCurrentAvailability)
	return m
}

func evidenceReadDoc(r gateway.ProviderEvidenceRead) map[string]any {
	m := map[string]any{"contractVersion": r.ContractVersion, "audience": r.Audience, "executionAttemptId": r.ExecutionAttemptID,
		"gatewayDeploymentId": r.GatewayDeploymentID, "providerEvidenceKind": r.EvidenceKind, "evidenceDimensionKey": r.DimensionKey}
	r.Binding.Put(m, settlement.PrefixAttemptRouteBinding)
	r.Evidence.Put(m, settlement.PrefixProviderEvidence)
	return m
}

// --- the processing transaction -----------------------------------------

// lockCurrentWork re-checks, under the input fence lock and the Work's queue
// row lock, that the Work is still the lane's latest generation and that a
// is its latest attempt. moved reports a newer generation (the caller
// writes the superseded finish instead).
func lockCurrentWork(ctx context.Context, tx pgx.Tx, a *Attempt) (moved bool, err error) {
	if _, err := lockFence(ctx, tx, a.Head.ExecutionAttemptID); err != nil {
		return false, err
	}
	latest, err := laneLatest(ctx, tx, a.Head)
	if err != nil {
		return false, err
	}
	if latest > a.Head.WorkGeneration {
		return true, nil
	}
	return false, fenceLatestAttemptTx(ctx, tx, a.Head)
}

func (p *Processor) applyEligibility(ctx context.Context, a *Attempt, in *eligibilityInputs) (Outcome, error) {
	return db.WithTxV(ctx, p.pool, func(ctx context.Context, tx pgx.Tx) (Outcome, error) {
		moved, err := lockCurrentWork(ctx, tx, a)
		if err != nil {
			return Outcome{}, err
		}
		if moved {
			f, err := finishSupersededTx(ctx, tx, a.Head)
			return Outcome{Finished: f}, err
		}
		h := a.Head
		decision := settlement.Decision{Decision: settlement.DecisionEligible, RuleVersion: settlement.DecisionRuleVersion, ReasonCode: "dispatched"}
		if in.fact.Disposition == contract.DispositionNotDispatched {
			decision = settlement.Decision{Decision: settlement.DecisionIneligible, RuleVersion: settlement.DecisionRuleVersion, ReasonCode: "not_dispatched"}
		}
		// The snapshot carries the stored decision's quadruple (finding 9).
		if decision.Ref, err = insertDecision(ctx, tx, a, in, decision); err != nil {
			return Outcome{}, err
		}
		if err := p.stage("decision"); err != nil {
			return Outcome{}, err
		}
		out := Outcome{}
		var set receipt.SnapshotSet
		var events []envelope.Envelope
		for _, d := range in.dims {
			cur, ev, err := p.settleDimension(ctx, tx, a, in, decision, d)
			if err != nil {
				return Outcome{}, err
			}
			if ev != nil {
				events = append(events, *ev)
				out.NewSnapshots++
			}
			set.Snapshots = append(set.Snapshots, receipt.SettlementSnapshot{RunStepID: in.source.RunStepID,
				ExecutionAttemptID: h.ExecutionAttemptID, ChargeDimensionKey: d.key, Snapshot: cur.Snapshot, StateVersion: cur.StateVersion})
		}
		set.Count = int64(len(set.Snapshots))
		// Every new version's event with its billing delivery, in this
		// transaction (one append for all of them).
		if len(events) > 0 {
			if _, err := release.ForProducer(boundary.Metering).AppendTx(ctx, tx, events...); err != nil {
				return Outcome{}, fmt.Errorf("append settlement input events: %w", err)
			}
		}
		if err := p.stage("append"); err != nil {
			return Outcome{}, err
		}
		if err := p.stage("finish"); err != nil {
			return Outcome{}, err
		}
		f, err := finishTx(ctx, tx, h, receipt.FinishOutcome{Kind: receipt.LaneEligibility, State: receipt.FinishApplied, Snapshots: &set})
		if err != nil {
			return Outcome{}, err
		}
		out.Finished = f
		return out, nil
	})
}

func insertDecision(ctx context.Context, tx pgx.Tx, a *Attempt, in *eligibilityInputs, d settlement.Decision) (strict.Quadruple, error) {
	doc := map[string]any{
		"eligibilityDecisionSchemaVersion": "1", "executionAttemptId": a.Head.ExecutionAttemptID,
		"decision": d.Decision, "decisionRuleVersion": d.RuleVersion, "reasonCode": d.ReasonCode,
		"dispatchDisposition": in.fact.Disposition,
	}
	in.fact.Fact.Put(doc, settlement.PrefixExecutionEligibilityFact)
	dg, err := digest.Of(digest.JCSSHA256V1, doc)
	if err != nil {
		return strict.Quadruple{}, fmt.Errorf("decision digest: %w", err)
	}
	// Content addressed: the same decision of the same attempt and fact has
	// one ref and one row, whichever generation applies it.
	ref := "med-" + uuid.NewSHA1(uuid.NameSpaceOID, []byte(dg.Value)).String()
	doc["eligibilityDecisionRef"], doc["eligibilityDecisionDigestAlgorithmVersion"], doc["eligibilityDecisionDigest"] =
		ref, string(digest.JCSSHA256V1), dg.Value
	body, err := jcs.Marshal(doc)
	if err != nil {
		return strict.Quadruple{}, fmt.Errorf("decision body: %w", err)
	}
	var stored string
	if err := tx.QueryRow(ctx, qDecisionInsert, pgx.NamedArgs{"decision_ref": ref, "decision_digest": dg.Value,
		"attempt_id": a.Head.ExecutionAttemptID, "decision": d.Decision, "rule_version": d.RuleVersion,
		"work_ref": a.Head.Work.Ref, "attempt_number": a.Head.AttemptNumber, "fencing_token": a.Head.FencingToken,
		"decision_body": string(body)}).Scan(&stored); err != nil {
		return strict.Quadruple{}, fmt.Errorf("insert eligibility decision: %w", err)
	}
	if stored != ref {
		return strict.Quadruple{}, fmt.Errorf("metering: decision digest %s stored under %s, not %s", dg.Value, stored, ref)
	}
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: dg.Value}, nil
}

type currentRow struct {
	StateVersion                   int64  `db:"state_version"`
	SnapshotRef                    string `db:"snapshot_ref"`
	SnapshotSchemaVersion          string `db:"snapshot_schema_version"`
	SnapshotDigestAlgorithmVersion string `db:"snapshot_digest_algorithm_version"`
	SnapshotDigest                 string `db:"snapshot_digest"`
	ContentDigest                  string `db:"content_digest"`
}

// settleDimension builds the dimension's snapshot and, when its content
// differs from the Current one, appends the next version in the caller's
// transaction: MeterEvent (when measured), snapshot and pointer CAS. It
// returns that version's metering.settlement-input.current-changed@1, which
// the caller appends with its billing delivery in the same transaction
// (ME-1); nil when nothing changed.
func (p *Processor) settleDimension(ctx context.Context, tx pgx.Tx, a *Attempt, in *eligibilityInputs, decision settlement.Decision, d dimensionInput) (settlement.Ref, *envelope.Envelope, error) {
	h, src := a.Head, in.source
	dimID := envelope.SettlementDimensionID(src.BillingReservationID, src.RunID, src.RunStepID, h.ExecutionAttemptID, d.key)
	rows, err := tx.Query(ctx, qSettlementLock, pgx.NamedArgs{"settlement_dimension_id": dimID})
	if err != nil {
		return settlement.Ref{}, nil, fmt.Errorf("lock settlement input: %w", err)
	}
	curRows, err := pgx.CollectRows(rows, pgx.RowToStructByName[currentRow])
	if err != nil {
		return settlement.Ref{}, nil, fmt.Errorf("lock settlement input: %w", err)
	}
	s := &settlement.Snapshot{
		Snapshot:         strict.Quadruple{Ref: "sis-" + uuid.Must(uuid.NewV7()).String()},
		Tenant:           settlement.Tenant{Kind: src.TenantKind, ID: src.TenantID, WorkspaceID: src.WorkspaceID, ProjectID: src.ProjectID},
		BillingAccountID: src.BillingAccountID, BillingReservationID: src.BillingReservationID, RunID: src.RunID,
		RunStepID: src.RunStepID, ExecutionAttemptID: h.ExecutionAttemptID, ChargeDimensionKey: d.key, SettlementDimensionID: dimID,
		StateVersion: 1, EligibilityFact: in.fact.Fact, DispatchDisposition: in.fact.Disposition, AttemptManifest: in.fact.AttemptManifest,
		Decision: decision, Basis: d.basis, EconomicIdentity: in.economic,
		Pricing: settlement.Pricing{PriceBookVersion: settlement.PriceBookVersion, UnitPrice: d.price.UnitPrice,
			BillingPolicyVersion: settlement.BillingPolicyVersion, RunAdmissionManifest: in.fact.RunAdmissionManifest},
		Quantity: d.quantity, Unit: d.price.Unit, RecordedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	switch {
	case in.fact.Disposition == contract.DispositionNotDispatched || d.basis.AvailabilityState == contract.AvailabilityAvailable:
		s.ReconciliationState = settlement.ReconciliationNotRequired
	case d.basis.AvailabilityState == contract.AvailabilityPending:
		s.ReconciliationState = settlement.ReconciliationAwaitingEvidence
	default: // not_reported, unavailable, conflicting: a dispatched attempt without trustworthy usage
		s.ReconciliationState = settlement.ReconciliationRequired
	}
	if s.TargetNetAmount, err = settlement.Multiply(s.Quantity, s.Pricing.UnitPrice); err != nil {
		return settlement.Ref{}, nil, &conflict{stage: "settlement_input", reason: "amount_not_computable", candidate: map[string]any{"quantity": s.Quantity}}
	}
	if d.evidence != nil {
		q, err := insertMeterEvent(ctx, tx, a, dimID, d)
		if err != nil {
			return settlement.Ref{}, nil, err
		}
		s.MeterEvent = &q
	}
	content, err := settlement.ContentDigest(s)
	if err != nil {
		return settlement.Ref{}, nil, fmt.Errorf("settlement content digest: %w", err)
	}
	if len(curRows) == 1 {
		c := curRows[0]
		cur := settlement.Ref{StateVersion: c.StateVersion, Snapshot: strict.Quadruple{Ref: c.SnapshotRef, SchemaVersion: c.SnapshotSchemaVersion,
			DigestAlgorithmVersion: digest.Algorithm(c.SnapshotDigestAlgorithmVersion), Digest: c.SnapshotDigest}}
		if c.ContentDigest == content.Value {
			return cur, nil, nil // nothing changed: no new version, no event
		}
		s.StateVersion, s.Predecessor = c.StateVersion+1, &cur
	}
	body, err := settlement.Seal(s)
	if err != nil {
		return settlement.Ref{}, nil, &conflict{stage: "settlement_input", reason: "snapshot_invalid", candidate: s.ToJSON()}
	}
	args := pgx.NamedArgs{"settlement_dimension_id": dimID, "state_version": s.StateVersion, "snapshot_ref": s.Snapshot.Ref,
		"snapshot_digest": s.Snapshot.Digest, "content_digest": content.Value, "predecessor_state_version": nil,
		"predecessor_snapshot_ref": nil, "billing_reservation_id": src.BillingReservationID, "run_id": src.RunID,
		"run_step_id": src.RunStepID, "attempt_id": h.ExecutionAttemptID, "charge_dimension_key": d.key,
		"target_net_amount": s.TargetNetAmount, "reconciliation_state": s.ReconciliationState, "work_ref": h.Work.Ref,
		"attempt_number": h.AttemptNumber, "fencing_token": h.FencingToken, "snapshot_body": string(body)}
	if s.Predecessor != nil {
		args["predecessor_state_version"], args["predecessor_snapshot_ref"] = s.Predecessor.StateVersion, s.Predecessor.Snapshot.Ref
	}
	if _, err := tx.Exec(ctx, qSnapshotInsert, args); err != nil {
		return settlement.Ref{}, nil, fmt.Errorf("insert settlement input snapshot: %w", err)
	}
	if err := p.stage("snapshot"); err != nil {
		return settlement.Ref{}, nil, err
	}
	cas := qCurrentCAS
	if s.StateVersion == 1 {
		cas = qCurrentInsert
	}
	tag, err := tx.Exec(ctx, cas, pgx.NamedArgs{"settlement_dimension_id": dimID, "state_version": s.StateVersion,
		"snapshot_ref": s.Snapshot.Ref, "attempt_id": h.ExecutionAttemptID, "charge_dimension_key": d.key})
	if err != nil {
		return settlement.Ref{}, nil, fmt.Errorf("settlement input pointer: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return settlement.Ref{}, nil, fmt.Errorf("%w: %s to version %d", ErrPointerMoved, dimID, s.StateVersion)
	}
	if err := p.stage("pointer"); err != nil {
		return settlement.Ref{}, nil, err
	}
	return s.Current(), settlementEvent(s), nil
}

// settlementEvent is metering.settlement-input.current-changed@1 of a new
// snapshot version: aggregate = settlement dimension id, revision = state
// version, current and predecessor five-tuples.
func settlementEvent(s *settlement.Snapshot) *envelope.Envelope {
	p := envelope.MeteringSettlementInputCurrentChangedV1Payload{
		BillingReservationID: s.BillingReservationID, BillingAccountID: s.BillingAccountID, RunID: s.RunID, RunStepID: s.RunStepID,
		ExecutionAttemptID: s.ExecutionAttemptID, ChargeDimensionKey: s.ChargeDimensionKey, SettlementDimensionID: s.SettlementDimensionID,
		SettlementEconomicIdentity: envelope.SettlementEconomicIdentityV1{Kind: s.EconomicIdentity.Kind, EntitlementKey: s.EconomicIdentity.EntitlementKey,
			Unit: s.EconomicIdentity.Unit, Currency: s.EconomicIdentity.Currency},
		SettlementInputStateVersion: s.StateVersion,
		PredecessorSettlementInput:  envelope.SettlementInputPredecessorV1{State: settlement.HeadNone},
	}
	p.SetSettlementInputSnapshot(s.Snapshot)
	if pr := s.Predecessor; pr != nil {
		p.PredecessorSettlementInput = envelope.SettlementInputPredecessorV1{State: settlement.HeadPresent,
			SettlementInputSnapshotRef: pr.Snapshot.Ref, SettlementInputSnapshotSchemaVersion: pr.Snapshot.SchemaVersion,
			SettlementInputSnapshotDigestAlgorithmVersion: string(pr.Snapshot.DigestAlgorithmVersion),
			SettlementInputSnapshotDigest:                 pr.Snapshot.Digest, SettlementInputStateVersion: pr.StateVersion}
	}
	key := map[string]any{"settlementDimensionId": s.SettlementDimensionID, "settlementInputStateVersion": s.StateVersion}
	return &envelope.Envelope{
		EventID: envelope.DeriveID(settlementEventDeriv, key), EventType: envelope.MeteringSettlementInputCurrentChangedV1,
		EventSchemaVersion: "1", AggregateType: envelope.AggregateSettlementInputDimension, AggregateID: s.SettlementDimensionID,
		AggregateRevision: s.StateVersion, TenantKind: s.Tenant.Kind, TenantID: s.Tenant.ID, WorkspaceID: s.Tenant.WorkspaceID,
		ProjectID: s.Tenant.ProjectID, CorrelationID: s.RunID, OperationID: envelope.DeriveID("metering_settlement_input_advance@1", key),
		OccurredAt: s.RecordedAt, Payload: p.Map(),
	}
}

// insertMeterEvent inserts (or finds, by content) the MeterEvent of a
// measured dimension: quantity and unit from one Gateway evidence.
func insertMeterEvent(ctx context.Context, tx pgx.Tx, a *Attempt, dimID string, d dimensionInput) (strict.Quadruple, error) {
	doc := map[string]any{
		"meterEventSchemaVersion": "1", "settlementDimensionId": dimID, "executionAttemptId": a.Head.ExecutionAttemptID,
		"chargeDimensionKey": d.key, "quantity": d.quantity, "unit": d.price.Unit,
	}
	d.evidence.Evidence.Put(doc, settlement.PrefixProviderEvidence)
	dg, err := digest.Of(digest.JCSSHA256V1, doc)
	if err != nil {
		return strict.Quadruple{}, fmt.Errorf("meter event digest: %w", err)
	}
	ref := "mev-" + uuid.Must(uuid.NewV7()).String()
	body, err := jcs.Marshal(doc)
	if err != nil {
		return strict.Quadruple{}, fmt.Errorf("meter event body: %w", err)
	}
	var stored string
	if err := tx.QueryRow(ctx, qMeterEventInsert, pgx.NamedArgs{"meter_event_ref": ref, "meter_event_digest": dg.Value,
		"settlement_dimension_id": dimID, "attempt_id": a.Head.ExecutionAttemptID, "charge_dimension_key": d.key,
		"quantity": d.quantity, "unit": d.price.Unit, "work_ref": a.Head.Work.Ref, "attempt_number": a.Head.AttemptNumber,
		"fencing_token": a.Head.FencingToken, "meter_event_body": string(body)}).Scan(&stored); err != nil {
		return strict.Quadruple{}, fmt.Errorf("insert meter event: %w", err)
	}
	return strict.Quadruple{Ref: stored, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: dg.Value}, nil
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
	if storedDigest != f.Finished.Digest {
		return nil, fmt.Errorf("%w: %s", ErrFinishConflict, h.Work.Ref)
	}
	if _, err := tx.Exec(ctx, qWorkDequeue, pgx.NamedArgs{"work_ref": h.Work.Ref}); err != nil {
		return nil, fmt.Errorf("dequeue finished work: %w", err)
	}
	return receipt.DecodeMeteringInputWorkAttemptFinished([]byte(storedBody))
}

// block writes the attempt's Blocked@1 with its
// EligibilityProcessingConflictEvidence@1; the Work stays queued (active)
// and a later attempt retries it once the cause is fixed.
func (p *Processor) block(ctx context.Context, a *Attempt, in *eligibilityInputs, c *conflict) (Outcome, error) {
	h := a.Head
	cand, err := digest.Of(digest.JCSSHA256V1, c.candidate)
	if err != nil {
		return Outcome{}, fmt.Errorf("conflict candidate digest: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	ev := &receipt.EligibilityProcessingConflictEvidence{
		Evidence: strict.Quadruple{Ref: "mepce-" + uuid.Must(uuid.NewV7()).String()}, ExecutionAttemptID: h.ExecutionAttemptID,
		Work: h.Work, OperationID: h.OperationID, WorkGeneration: h.WorkGeneration, LaneTriggerDigest: h.LaneTriggerDigest,
		ValidationStage: c.stage, ConflictingCandidateDigest: cand, ReasonCode: c.reason, ObservedAt: now,
	}
	if in == nil {
		return Outcome{}, fmt.Errorf("%w: %s", ErrEligibilitySource, h.ExecutionAttemptID) // never forged identities
	}
	src := in.source
	ev.RunID, ev.RunStepID, ev.AttemptExecutionManifest, ev.ExecutionEligibilityFact = src.RunID, src.RunStepID, src.AttemptManifest, src.Fact
	if err := ev.Seal(); err != nil {
		return Outcome{}, fmt.Errorf("seal conflict evidence: %w", err)
	}
	b := &receipt.MeteringInputWorkAttemptBlocked{
		Blocked: strict.Quadruple{Ref: "miwb-" + uuid.Must(uuid.NewV7()).String()}, WorkAttemptHead: h,
		BlockingCause: receipt.BlockingCause{Kind: receipt.CauseEligibilityProcessingConflict, Fact: ev.Evidence}, BlockedAt: now,
	}
	if err := b.Seal(); err != nil {
		return Outcome{}, fmt.Errorf("seal blocked: %w", err)
	}
	evBody, err := jcs.Marshal(ev.ToJSON())
	if err != nil {
		return Outcome{}, err
	}
	bBody, err := jcs.Marshal(b.ToJSON())
	if err != nil {
		return Outcome{}, err
	}
	return db.WithTxV(ctx, p.pool, func(ctx context.Context, tx pgx.Tx) (Outcome, error) {
		moved, err := lockCurrentWork(ctx, tx, a)
		if err != nil {
			return Outcome{}, err
		}
		if moved {
			f, err := finishSupersededTx(ctx, tx, h)
			return Outcome{Finished: f}, err
		}
		if prev, err := sameBlock(ctx, tx, h, ev); prev != nil || err != nil {
			return Outcome{Blocked: prev}, err
		}
		var stored string
		if err := tx.QueryRow(ctx, qBlockInsert, pgx.NamedArgs{"work_ref": h.Work.Ref, "attempt_number": h.AttemptNumber,
			"fencing_token": h.FencingToken, "blocked_ref": b.Blocked.Ref, "blocked_digest": b.Blocked.Digest,
			"blocked_body": string(bBody), "evidence_ref": ev.Evidence.Ref, "evidence_digest": ev.Evidence.Digest,
			"evidence_body": string(evBody)}).Scan(&stored); err != nil {
			return Outcome{}, fmt.Errorf("insert blocked: %w", err)
		}
		got, err := receipt.DecodeMeteringInputWorkAttemptBlocked([]byte(stored))
		if err != nil {
			return Outcome{}, fmt.Errorf("stored blocked: %w", err)
		}
		return Outcome{Blocked: got}, nil
	})
}

// sameBlock returns the Work's latest Blocked@1 when its evidence records
// the same conflict (stage, reason, candidate digest) as ev: a Work retried
// while its cause persists keeps that one Blocked and evidence rather than
// adding a pair on every lease. nil when there is none or it differs.
func sameBlock(ctx context.Context, tx pgx.Tx, h receipt.WorkAttemptHead, ev *receipt.EligibilityProcessingConflictEvidence) (*receipt.MeteringInputWorkAttemptBlocked, error) {
	var blockedBody, evidenceBody string
	err := tx.QueryRow(ctx, qBlockLatest, pgx.NamedArgs{"work_ref": h.Work.Ref}).Scan(&blockedBody, &evidenceBody)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read latest blocked: %w", err)
	}
	prev, err := receipt.DecodeEligibilityProcessingConflictEvidence([]byte(evidenceBody))
	if err != nil {
		return nil, fmt.Errorf("stored conflict evidence: %w", err)
	}
	if prev.ValidationStage != ev.ValidationStage || prev.ReasonCode != ev.ReasonCode || prev.ConflictingCandidateDigest != ev.ConflictingCandidateDigest {
		return nil, nil
	}
	b, err := receipt.DecodeMeteringInputWorkAttemptBlocked([]byte(blockedBody))
	if err != nil {
		return nil, fmt.Errorf("stored blocked: %w", err)
	}
	return b, nil
}
