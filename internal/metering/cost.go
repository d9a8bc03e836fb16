package metering

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/digest"
	contract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
)

// Provider cost processing (issue 14 item 4; ME-2; docs/metering.md "Provider
// cost"): one claimed provider_cost Work reads its Gateway cost availability
// (event-bound owner reads, before any lock) and commits exactly one strict
// result under the attempt's input fence lock and the Work's latest token:
//
//	available              ProviderCostFact@1 + ProviderCostAvailabilityProcessingFact@1 (available_applied)
//	pending                processing fact waiting_for_evidence
//	not_reported|unavailable  processing fact no_cost_evidence (never a zero cost)
//	conflicting            processing fact reconciliation_required (Metering's reconciliation anchor)
//
// each with the Work's availability_processed finish and the lane's
// coordination CAS; or, for a proven local deterministic conflict,
// ProviderCostProcessingConflictEvidence@1 + MeteringInputWorkAttemptBlocked@1
// with the same Work kept queued (lease released) and retried by a new
// attempt after the fix. Cost never writes anything the eligibility lane or
// customer charging reads.

var (
	qCostLaneRead       = statements.Get("cost_lane_read")
	qCostCoordSelect    = statements.Get("cost_coordination_select")
	qCostCoordCAS       = statements.Get("cost_coordination_cas")
	qCostFactInsert     = statements.Get("cost_fact_insert")
	qCostProcessing     = statements.Get("cost_processing_insert")
	qCostBlockInsert    = statements.Get("cost_block_insert")
	qCostWorkRelease    = statements.Get("cost_work_release")
	qCostWorkResult     = statements.Get("cost_work_result")
	qCostDiagnostics    = statements.Get("cost_diagnostics")
	unsignedIntegerText = regexp.MustCompile(`^(0|[1-9][0-9]{0,29})$`)
)

var (
	// ErrNotCostWork: the attempt's Work is not of the provider_cost lane.
	ErrNotCostWork = errors.New("metering: not a provider cost work")
	// ErrCostSourceUnavailable: an owner read failed or does not (yet) have
	// the object (retryable: nothing was written, the lease runs out).
	ErrCostSourceUnavailable = errors.New("metering: provider cost source read unavailable")
	// ErrCostSourceConflict: Gateway or Execution answered conflicting for
	// the availability or manifest itself. No Gateway conflict fact exists to
	// bind yet, so nothing is written; the Work is retried after its lease.
	ErrCostSourceConflict = errors.New("metering: provider cost source read answered conflicting")
	// ErrCostLaneMoved: the cost lane's committed coordination differs from
	// this result (another generation finished or the same one differently).
	ErrCostLaneMoved = errors.New("metering: cost lane coordination moved")
	// ErrCostLaneUnbound: the cost lane has no attempt manifest to read with.
	ErrCostLaneUnbound = errors.New("metering: cost lane has no attempt manifest")
)

// SQLStateCostCoordination: a cost lane coordination change PostgreSQL
// refuses (an older generation, or a finished generation changing result).
const SQLStateCostCoordination = "ME010"

// CostUnit maps one provider cost source dimension to money: amount =
// provider quantity / 10^Scale in Currency.
type CostUnit struct {
	Currency string
	Scale    int64
}

// DefaultCostMappings is Metering's provider cost mapping of the source
// dimensions the Gateway adapters report.
var DefaultCostMappings = map[string]CostUnit{
	"cost.usd_micros": {Currency: "USD", Scale: 6},
	"cost.usd_cents":  {Currency: "USD", Scale: 2},
	"cost.usd":        {Currency: "USD", Scale: 0},
}

// CostReads is the event-bound bootstrap read of a provider_cost Work: the
// cost availability snapshot its lane names, the attempt manifest, and the
// available evidence the snapshot names. Requests and answers are plain
// values, so an implementation may call the owners over any transport.
type CostReads interface {
	ReadCostSource(ctx context.Context, req CostSourceRead) (CostSource, error)
}

// CostSourceRead names the exact objects of one cost lane generation.
type CostSourceRead struct {
	ExecutionAttemptID  string
	GatewayDeploymentID string
	DimensionKey        string
	AttemptManifest     strict.Quadruple
	StateVersion        int64
	Availability        strict.Quadruple
}

// CostSource is the answer of each owner read (Evidence is zero when the
// availability names no evidence).
type CostSource struct {
	Availability gatewayread.AvailabilityResult
	Manifest     ownerread.Result[*contract.AttemptExecutionManifest]
	Evidence     gatewayread.ProviderEvidenceResult
}

// ReadCostSource reads the cost source from the owners: Gateway's
// readEvidenceAvailabilitySnapshot@1 and readGatewayProviderEvidence@1, and
// Execution's readAttemptExecutionManifest@1 (compared by quadruple).
func (o Owners) ReadCostSource(ctx context.Context, req CostSourceRead) (CostSource, error) {
	var src CostSource
	var err error
	src.Availability, err = o.Gateway.ReadAvailabilitySnapshot(ctx, gatewayread.AvailabilitySnapshotRead{
		ContractVersion: gatewayread.ReadAvailabilitySnapshotV1, Audience: gatewayread.AudienceMeteringInput,
		ExecutionAttemptID: req.ExecutionAttemptID, GatewayDeploymentID: req.GatewayDeploymentID, AttemptManifest: req.AttemptManifest,
		EvidenceKind: contract.EvidenceProviderCost, DimensionKey: req.DimensionKey, StateVersion: req.StateVersion, Snapshot: req.Availability,
	})
	if err != nil || src.Availability.Answer != ownerread.Found {
		return src, err
	}
	src.Manifest, err = o.Execution.ReadAttemptManifest(ctx, executionread.AttemptManifestRead{
		ContractVersion: executionread.ReadAttemptManifestV1, Audience: executionread.AudienceMeteringInput,
		ExecutionAttemptID: req.ExecutionAttemptID, AttemptManifest: req.AttemptManifest,
	})
	if err != nil {
		return src, err
	}
	if ev := src.Availability.Value.Evidence; ev.Ref != "" && src.Manifest.Answer == ownerread.Found {
		src.Evidence, err = o.Gateway.ReadProviderEvidence(ctx, gatewayread.ProviderEvidenceRead{
			ContractVersion: gatewayread.ReadProviderEvidenceV1, Audience: gatewayread.AudienceMeteringInput,
			ExecutionAttemptID: req.ExecutionAttemptID, GatewayDeploymentID: req.GatewayDeploymentID, Binding: src.Availability.Value.Binding,
			EvidenceKind: contract.EvidenceProviderCost, DimensionKey: req.DimensionKey, Evidence: ev,
		})
	}
	return src, err
}

// CostConfig configures provider cost processing.
type CostConfig struct {
	// Reads are the event-bound cost source reads (required).
	Reads CostReads
	// Mappings maps source dimensions to money (nil: DefaultCostMappings).
	Mappings map[string]CostUnit
	// BlockedRetry is how long a blocked Work waits before a new attempt may
	// claim it (the lease is released; 0 = at once).
	BlockedRetry time.Duration
}

// CostResult is what one provider cost attempt committed.
type CostResult struct {
	// State is the lane state it committed: availability_processed,
	// waiting_for_evidence, no_cost_evidence, reconciliation_required,
	// blocked_on_processing_conflict, or superseded (a newer generation).
	State      string
	Finished   *receipt.MeteringInputWorkAttemptFinished
	Processing *meterfacts.ProviderCostAvailabilityProcessingFact
	Cost       *meterfacts.ProviderCostFact
	Blocked    *receipt.MeteringInputWorkAttemptBlocked
	Evidence   *receipt.ProviderCostProcessingConflictEvidence
}

// costLane is the cost lane as the worker reads it before its owner reads.
type costLane struct {
	StateVersion          int64  `db:"state_version"`
	AvailabilityRef       string `db:"current_availability_ref"`
	AvailabilityDigest    string `db:"current_availability_digest"`
	AvailabilityState     string `db:"availability_state"`
	LatestWorkGeneration  int64  `db:"latest_work_generation"`
	TriggerDigest         string `db:"trigger_digest"`
	ManifestRef           string `db:"attempt_manifest_ref"`
	ManifestSchemaVersion string `db:"attempt_manifest_schema_version"`
	ManifestAlgorithm     string `db:"attempt_manifest_digest_algorithm_version"`
	ManifestDigest        string `db:"attempt_manifest_digest"`
}

func (l costLane) manifest() strict.Quadruple {
	return strict.Quadruple{Ref: l.ManifestRef, SchemaVersion: l.ManifestSchemaVersion,
		DigestAlgorithmVersion: digest.Algorithm(l.ManifestAlgorithm), Digest: l.ManifestDigest}
}

func (l costLane) availability() strict.Quadruple {
	return strict.Quadruple{Ref: l.AvailabilityRef, SchemaVersion: contract.SchemaVersion1,
		DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: l.AvailabilityDigest}
}

// costPlan is the decided result, before any write: exactly one of
// processing (with cost when available) or conflict.
type costPlan struct {
	snapshot   *contract.AvailabilitySnapshot
	manifest   *contract.AttemptExecutionManifest
	processing *meterfacts.ProviderCostAvailabilityProcessingFact
	cost       *meterfacts.ProviderCostFact
	conflict   *costConflict
}

// costConflict is a proven local deterministic conflict
// (metering_deterministic_validation branch of the evidence cause).
type costConflict struct {
	stage     string
	reason    string
	candidate digest.Digest
}

// ProcessCostWork processes one claimed provider_cost Work attempt (the
// worker's provider_cost lane). A Work whose lane has a newer generation
// gets its superseded finish. Owner reads that fail or answer not_found are
// ErrCostSourceUnavailable with nothing written; an old token is ErrFenced
// with nothing written.
func ProcessCostWork(ctx context.Context, pool db.Beginner, cfg CostConfig, a *Attempt) (CostResult, error) {
	h := a.Head
	if h.Lane.Kind != receipt.LaneProviderCost {
		return CostResult{}, fmt.Errorf("%w: %s", ErrNotCostWork, h.Lane.Kind)
	}
	if cfg.Reads == nil {
		return CostResult{}, errors.New("metering: cost reads are required")
	}
	lane, err := db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (costLane, error) { return readCostLane(ctx, tx, h) })
	if err != nil {
		return CostResult{}, err
	}
	if lane.LatestWorkGeneration > h.WorkGeneration {
		f, err := FinishSupersededIfMoved(ctx, pool, a)
		if err != nil {
			return CostResult{}, err
		}
		return CostResult{State: receipt.FinishSuperseded, Finished: f}, nil
	}
	if lane.ManifestRef == "" {
		return CostResult{}, fmt.Errorf("%w: %s", ErrCostLaneUnbound, h.Work.Ref)
	}
	src, err := cfg.Reads.ReadCostSource(ctx, CostSourceRead{
		ExecutionAttemptID: h.ExecutionAttemptID, GatewayDeploymentID: h.Lane.GatewayDeploymentID,
		DimensionKey: h.Lane.SourceEvidenceDimensionKey, AttemptManifest: lane.manifest(),
		StateVersion: lane.StateVersion, Availability: lane.availability(),
	})
	if err != nil {
		return CostResult{}, fmt.Errorf("%w: %w", ErrCostSourceUnavailable, err)
	}
	mappings := cfg.Mappings
	if mappings == nil {
		mappings = DefaultCostMappings
	}
	plan, err := decideCost(h, lane, src, mappings)
	if err != nil {
		return CostResult{}, err
	}
	return db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (CostResult, error) {
		return commitCost(ctx, tx, a, plan, cfg.BlockedRetry)
	})
}

func readCostLane(ctx context.Context, q db.Executor, h receipt.WorkAttemptHead) (costLane, error) {
	rows, err := q.Query(ctx, qCostLaneRead, pgx.NamedArgs{"attempt_id": h.ExecutionAttemptID,
		"deployment_id": h.Lane.GatewayDeploymentID, "dimension_key": h.Lane.SourceEvidenceDimensionKey})
	if err != nil {
		return costLane{}, fmt.Errorf("read cost lane: %w", err)
	}
	l, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[costLane])
	if err != nil {
		return costLane{}, fmt.Errorf("read cost lane of %s: %w", h.Work.Ref, db.NotFound(err))
	}
	return l, nil
}

// readAnswer turns a non-found owner answer into the worker's error:
// not_found is retryable (the owner is behind), conflicting writes nothing.
func readAnswer(what string, a ownerread.Answer, reason string) error {
	switch a {
	case ownerread.Found:
		return nil
	case ownerread.NotFound:
		return fmt.Errorf("%w: %s not found", ErrCostSourceUnavailable, what)
	default:
		return fmt.Errorf("%w: %s: %s", ErrCostSourceConflict, what, reason)
	}
}

// decideCost is the pure decision: which processing fact (and cost fact),
// or which deterministic conflict, the owner answers call for.
func decideCost(h receipt.WorkAttemptHead, lane costLane, src CostSource, mappings map[string]CostUnit) (*costPlan, error) {
	if err := readAnswer("cost availability", src.Availability.Answer, src.Availability.Reason); err != nil {
		return nil, err
	}
	if err := readAnswer("attempt manifest", src.Manifest.Answer, src.Manifest.Reason); err != nil {
		return nil, err
	}
	s, m := src.Availability.Value, src.Manifest.Value
	plan := &costPlan{snapshot: s, manifest: m}
	fail := func(stage, reason string, candidate any) (*costPlan, error) {
		d, err := digest.Of(digest.JCSSHA256V1, candidate)
		if err != nil {
			return nil, fmt.Errorf("conflict candidate: %w", err)
		}
		plan.conflict = &costConflict{stage: stage, reason: reason, candidate: d}
		return plan, nil
	}
	// source_identity: the snapshot must be the lane's, of this attempt,
	// deployment, kind, dimension and state version.
	if s.Snapshot != lane.availability() || s.ExecutionAttemptID != h.ExecutionAttemptID || s.GatewayDeploymentID != h.Lane.GatewayDeploymentID ||
		s.EvidenceKind != contract.EvidenceProviderCost || s.DimensionKey != h.Lane.SourceEvidenceDimensionKey || s.StateVersion != lane.StateVersion ||
		m.ExecutionAttemptID != h.ExecutionAttemptID {
		return fail("source_identity", "availability_identity_mismatch", map[string]any{
			"currentAvailabilityRef": s.Snapshot.Ref, "currentAvailabilityDigest": s.Snapshot.Digest, "executionAttemptId": s.ExecutionAttemptID,
			"gatewayDeploymentId": s.GatewayDeploymentID, "providerEvidenceKind": s.EvidenceKind, "evidenceDimensionKey": s.DimensionKey,
			"stateVersion": s.StateVersion})
	}
	outcome, known := meterfacts.OutcomeFor(s.State)
	if !known {
		return fail("source_schema", "unknown_availability_state", map[string]any{"availabilityState": s.State})
	}
	p := &meterfacts.ProviderCostAvailabilityProcessingFact{
		Processing: strict.Quadruple{Ref: "pcap-" + uuid.Must(uuid.NewV7()).String()},
		Work:       h.Work, OperationID: h.OperationID, WorkGeneration: h.WorkGeneration, LaneTriggerDigest: h.LaneTriggerDigest,
		ExecutionAttemptID: h.ExecutionAttemptID, GatewayDeploymentID: h.Lane.GatewayDeploymentID,
		SourceEvidenceDimensionKey: h.Lane.SourceEvidenceDimensionKey, AttemptManifest: s.AttemptManifest,
		CostAvailability: s.Snapshot, CostAvailabilityStateVersion: s.StateVersion,
		AvailabilityState: s.State, StateReasonCode: s.ReasonCode, Outcome: outcome,
	}
	plan.processing = p
	if outcome != meterfacts.OutcomeAvailableApplied {
		return plan, nil
	}
	if err := readAnswer("provider evidence", src.Evidence.Answer, src.Evidence.Reason); err != nil {
		if errors.Is(err, ErrCostSourceConflict) {
			// The Gateway proved its stored evidence does not match what the
			// snapshot names: a deterministic identity conflict of the source.
			return fail("source_identity", "gateway_evidence_conflicting", map[string]any{
				"providerEvidenceRef": s.Evidence.Ref, "providerEvidenceDigest": s.Evidence.Digest})
		}
		return nil, err
	}
	ev := src.Evidence.Value
	if ev.Evidence != s.Evidence || ev.Binding != s.Binding {
		return fail("source_identity", "evidence_identity_mismatch", map[string]any{
			"providerEvidenceRef": ev.Evidence.Ref, "providerEvidenceDigest": ev.Evidence.Digest, "attemptRouteBindingRef": ev.Binding.Ref})
	}
	unit, mapped := mappings[h.Lane.SourceEvidenceDimensionKey]
	if !mapped {
		return fail("provider_cost_mapping", "no_cost_mapping_for_dimension", map[string]any{
			"gatewayDeploymentId": h.Lane.GatewayDeploymentID, "sourceEvidenceDimensionKey": h.Lane.SourceEvidenceDimensionKey})
	}
	amount, err := scaleQuantity(ev.Quantity, unit.Scale)
	if err != nil || schema.CurrencyText.Check(unit.Currency) != nil {
		return fail("provider_cost_normalization", "quantity_not_normalizable", map[string]any{
			"providerQuantity": ev.Quantity, "currency": unit.Currency, "quantityScale": unit.Scale})
	}
	plan.cost = &meterfacts.ProviderCostFact{
		Fact: strict.Quadruple{Ref: "pcf-" + uuid.Must(uuid.NewV7()).String()},
		Work: h.Work, OperationID: h.OperationID, WorkGeneration: h.WorkGeneration,
		RunID: m.RunID, RunStepID: m.RunStepID, ExecutionAttemptID: h.ExecutionAttemptID,
		GatewayDeploymentID: h.Lane.GatewayDeploymentID, SourceEvidenceDimensionKey: h.Lane.SourceEvidenceDimensionKey,
		AttemptManifest: s.AttemptManifest, AttemptRouteBinding: s.Binding, GatewayRouteSnapshot: s.RouteSnapshot,
		CostAvailability: s.Snapshot, CostAvailabilityStateVersion: s.StateVersion, ProviderEvidence: ev.Evidence,
		ProviderQuantity: ev.Quantity, Currency: unit.Currency, QuantityScale: unit.Scale, Amount: amount,
	}
	return plan, nil
}

// scaleQuantity returns quantity / 10^scale as canonical exact decimal text
// (no float ever): "90000", 6 → "0.09".
func scaleQuantity(quantity string, scale int64) (string, error) {
	if !unsignedIntegerText.MatchString(quantity) || scale < 0 || scale > 17 {
		return "", fmt.Errorf("quantity %q scale %d", quantity, scale)
	}
	digits := quantity
	if pad := int(scale) + 1 - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	whole, frac := digits[:len(digits)-int(scale)], strings.TrimRight(digits[len(digits)-int(scale):], "0")
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if err := schema.AmountText.Check(out); err != nil {
		return "", err
	}
	return out, nil
}
