package metering

import (
	"context"
	"fmt"
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
	"github.com/oceanway/core/internal/release"
)

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
		// A dispatched attempt finishes applied only with every dimension
		// its manifest registered (PostgreSQL checks it too, ME014).
		if in.registered != nil {
			if err := storeRegisteredTx(ctx, tx, h.ExecutionAttemptID, in.registered); err != nil {
				return Outcome{}, err
			}
		}
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
	// The version names its one event (ME-1; PostgreSQL refuses an event no
	// version names, ME008, and a version without its event, ME005).
	ev := settlementEvent(s)
	args := pgx.NamedArgs{"event_id": ev.EventID, "settlement_dimension_id": dimID, "state_version": s.StateVersion, "snapshot_ref": s.Snapshot.Ref,
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
	return s.Current(), ev, nil
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
