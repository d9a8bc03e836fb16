package finalization

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	contract "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	excontract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

// DerivationSettlementValidationOp derives the operation of one Metering
// validation of one manifest dimension.
const DerivationSettlementValidationOp = "billing_finalization_settlement_validation_operation@1"

// Closure is what the coordinator applied for a fence: the closure event's
// identities and quadruples, and the reservation's amount.
type Closure struct {
	Tenant               contract.Tenant
	BillingAccountID     string
	BillingReservationID string
	RunID                string
	FenceID              string
	RunAdmissionManifest strict.Quadruple
	ReservedAmount       string
	ClosureOperationID   string
	Finalization         strict.Quadruple
	StateVersion         int64
	AttemptSet           strict.Quadruple
	AttemptCount         int64
	// Recorded are the settlement inputs the coordinator recorded for the
	// reservation (its settlement-input watermarks), by settlement
	// dimension id: the manifest covers exactly these, and only when they
	// equal what Metering answers as the attempts' whole current set.
	Recorded map[string]settlement.Ref
	// CorrelationID is the run's correlation id (not part of any object).
	CorrelationID string
}

// Receipt is one owner receipt the evaluation obtained: its quadruple and
// canonical body (stored by Billing insert-or-compare).
type Receipt struct {
	Kind string
	Quad strict.Quadruple
	Body []byte
}

// Evaluation is one finalization evaluation: manifest → receipts → bundle
// (successes only) → decision. Every object is content-addressed with a
// content-derived ref, so equal inputs give byte-identical digests.
type Evaluation struct {
	Manifest     *contract.FinalizationInputManifest
	ManifestBody []byte
	Receipts     []Receipt
	Bundle       *contract.FinalizationValidationBundle // nil unless the decision succeeded
	BundleBody   []byte
	Decision     *contract.BillingFinalizationDecision
	DecisionBody []byte
	// CorrelationID is the run's correlation (events the commit appends).
	CorrelationID string
}

// ErrInvalidClosure marks a closure the worker cannot evaluate (a Billing
// programming or data error, never an owner answer).
var ErrInvalidClosure = errors.New("finalization: invalid closure")

// Evaluate runs one evaluation of c through the owners. Owner reads happen
// here, outside any Billing transaction (ADR-031: Billing never locks or
// re-reads another owner's rows in its own transaction); an owner that
// cannot be reached is an error (retry), never an answer.
func Evaluate(ctx context.Context, o Owners, c Closure, now time.Time) (*Evaluation, error) {
	if _, err := contract.SumAmounts(c.ReservedAmount); err != nil {
		return nil, fmt.Errorf("%w: reserved amount: %w", ErrInvalidClosure, err)
	}
	e := &evaluator{o: o, c: c, now: now.UTC().Truncate(time.Microsecond), op: contract.FinalizationOperationID(c.FenceID)}
	e.ev.CorrelationID = c.CorrelationID
	return e.run(ctx)
}

type evaluator struct {
	o   Owners
	c   Closure
	now time.Time
	op  string
	ev  Evaluation
	// executionConflict is the Execution owner's stored
	// RunExecutionFinalizationConflictFact@1 when it answered conflicting.
	executionConflict strict.Quadruple
}

func (e *evaluator) run(ctx context.Context) (*Evaluation, error) {
	pre, err := e.o.Execution.ReadRunFinalizationPrecondition(ctx, executionread.RunFinalizationPreconditionRead{
		ContractVersion: executionread.ReadRunFinalizationPreconditionV1, Audience: executionread.AudienceBillingFinalization,
		RunID: e.c.RunID, BillingReservationID: e.c.BillingReservationID, BillingAccountID: e.c.BillingAccountID,
		RunAdmissionManifest: e.c.RunAdmissionManifest, Finalization: e.c.Finalization, StateVersion: e.c.StateVersion,
		AttemptSet: e.c.AttemptSet, AttemptCount: e.c.AttemptCount,
	})
	if err != nil {
		return nil, fmt.Errorf("read run finalization precondition: %w", err)
	}
	switch pre.Answer {
	case executionread.PreconditionNotClosed, executionread.PreconditionRunNotFound:
		return e.evaluationOnly(nil, contract.DecisionBlocked, contract.ReasonExecutionNotClosed)
	case executionread.PreconditionConflicting:
		if pre.Conflict == nil { // the owner always answers with its stored fact (issue 32): fail closed
			return nil, fmt.Errorf("%w: execution answered conflicting without its conflict fact", ErrInvalidClosure)
		}
		e.executionConflict = pre.Conflict.Fact
		return e.evaluationOnly(nil, contract.DecisionReconciliationRequired, contract.ReasonExecutionConflicting)
	}
	dims, reason, err := e.dimensions(ctx, pre.Fact.Attempts)
	if err != nil {
		return nil, err
	}
	if err := e.sealManifest(dims); err != nil {
		return nil, err
	}
	if reason.outcome != "" {
		return e.decide(reason.outcome, reason.code)
	}
	if c, _ := contract.CompareAmounts(e.ev.Manifest.TargetTotal, e.c.ReservedAmount); c > 0 {
		return e.decide(contract.DecisionReconciliationRequired, contract.ReasonTargetAboveReservation)
	}
	bundle, reason, err := e.receipts(ctx, pre.Fact)
	if err != nil {
		return nil, err
	}
	if reason.outcome != "" {
		return e.decide(reason.outcome, reason.code)
	}
	bundle.AssembledAt = e.now
	if e.ev.BundleBody, err = contract.SealAddressed(bundle, "fvb-"); err != nil {
		return nil, fmt.Errorf("seal validation bundle: %w", err)
	}
	e.ev.Bundle = bundle
	if e.ev.Manifest.TargetTotal == "0" {
		return e.decide(contract.DecisionReleaseAll, "")
	}
	return e.decide(contract.DecisionSettleAndReleaseRemainder, "")
}

type why struct{ outcome, code string }

// worse keeps the strongest reason: reconciliation beats a wait.
func (w *why) worse(outcome, code string) {
	if w.outcome == contract.DecisionReconciliationRequired {
		return
	}
	if w.outcome == "" || outcome == contract.DecisionReconciliationRequired {
		w.outcome, w.code = outcome, code
	}
}

// dimensions enumerates, for every attempt of the closed set, the current
// settlement input of each of its charge dimensions (Metering answers the
// attempt's whole set: its usage work writes every dimension in one
// transaction) and classifies whether the inputs are closed.
func (e *evaluator) dimensions(ctx context.Context, attempts []excontract.AttemptSetItem) ([]contract.ManifestDimension, why, error) {
	var out []contract.ManifestDimension
	var reason why
	unmatched := map[string]bool{}
	for id := range e.c.Recorded {
		unmatched[id] = true
	}
	for _, a := range attempts {
		inputs, err := e.o.Metering.ReadAttemptSettlementInputs(ctx, a.ExecutionAttemptID)
		if err != nil {
			return nil, why{}, fmt.Errorf("read settlement inputs of %s: %w", a.ExecutionAttemptID, err)
		}
		if a.DispatchDisposition == excontract.DispositionDispatched {
			// The charge dimensions the attempt's manifest froze (issue 32
			// part 4): the manifest waits for every one of them, and an
			// input of a dimension the attempt never registered conflicts.
			if err := e.registeredDimensions(ctx, a, inputs, &reason); err != nil {
				return nil, why{}, err
			}
		}
		if len(inputs) == 0 {
			reason.worse(contract.DecisionBlocked, contract.ReasonInputsNotClosed)
			continue
		}
		// Metering settles an attempt's dimensions as their evidence
		// arrives: the manifest waits until every usage dimension the
		// Gateway holds for a dispatched attempt has its settlement input.
		if a.DispatchDisposition == excontract.DispositionDispatched {
			keys, err := e.o.Gateway.ReadAttemptUsageDimensions(ctx, a.ExecutionAttemptID)
			if err != nil {
				return nil, why{}, fmt.Errorf("read usage dimensions of %s: %w", a.ExecutionAttemptID, err)
			}
			settled := map[string]bool{}
			for _, in := range inputs {
				settled[in.Snapshot.ChargeDimensionKey] = true
			}
			for _, k := range keys {
				if !settled[k] {
					reason.worse(contract.DecisionBlocked, contract.ReasonInputsNotClosed)
				}
			}
		}
		for _, in := range inputs {
			s := in.Snapshot
			rec, observed := e.c.Recorded[s.SettlementDimensionID]
			delete(unmatched, s.SettlementDimensionID)
			switch {
			case !observed || rec.StateVersion < in.Ref.StateVersion:
				// Its current-changed event has not reached Billing yet: it
				// is on its way and wakes the fence.
				reason.worse(contract.DecisionBlocked, contract.ReasonInputsNotClosed)
			case rec != in.Ref:
				reason.worse(contract.DecisionReconciliationRequired, contract.ReasonInputConflicting)
			}
			d := contract.ManifestDimension{
				RunStepID: s.RunStepID, ExecutionAttemptID: s.ExecutionAttemptID, ChargeDimensionKey: s.ChargeDimensionKey,
				SettlementDimensionID: s.SettlementDimensionID, DispatchDisposition: s.DispatchDisposition,
				SettlementInput: in.Ref.Snapshot, SettlementStateVer: in.Ref.StateVersion,
				EconomicIdentity: contract.EconomicIdentity{Kind: s.EconomicIdentity.Kind, EntitlementKey: s.EconomicIdentity.EntitlementKey,
					Unit: s.EconomicIdentity.Unit, Currency: s.EconomicIdentity.Currency},
				InputState: inputState(s), TargetAmount: s.TargetNetAmount,
			}
			if s.Basis.Kind == settlement.BasisGatewayUsage {
				d.Availability = &contract.Availability{GatewayDeploymentID: s.Basis.GatewayDeploymentID,
					ProviderEvidenceKind: excontract.EvidenceProviderUsage, EvidenceDimensionKey: s.ChargeDimensionKey,
					StateVersion: s.Basis.AvailabilityStateVersion, Snapshot: s.Basis.CurrentAvailability}
			}
			switch {
			case s.BillingReservationID != e.c.BillingReservationID || s.RunID != e.c.RunID || s.RunStepID != a.RunStepID ||
				s.AttemptManifest != a.AttemptManifest || s.EligibilityFact != a.EligibilityFact:
				return nil, why{}, fmt.Errorf("%w: settlement input %s names another run, step or attempt", ErrInvalidClosure, s.SettlementDimensionID)
			case s.DispatchDisposition != a.DispatchDisposition || (d.Availability != nil) != (s.DispatchDisposition == settlement.DispositionDispatched):
				// Recorded as Metering answered it, shaped so the manifest stays
				// well-formed; the evaluation goes no further than the decision.
				reason.worse(contract.DecisionReconciliationRequired, contract.ReasonInputConflicting)
				d.DispatchDisposition = excontract.DispositionNotDispatched
				if d.Availability != nil {
					d.DispatchDisposition = excontract.DispositionDispatched
				}
			case d.EconomicIdentity != contract.Credits:
				reason.worse(contract.DecisionReconciliationRequired, contract.ReasonEconomicIdentityDiffer)
			case d.InputState == contract.InputConflicting:
				reason.worse(contract.DecisionReconciliationRequired, contract.ReasonInputConflicting)
			case d.InputState == contract.InputPending:
				reason.worse(contract.DecisionBlocked, contract.ReasonInputsNotClosed)
			}
			out = append(out, d)
		}
	}
	if len(unmatched) > 0 {
		// Billing recorded an input Metering does not hold for the closed
		// attempt set.
		reason.worse(contract.DecisionReconciliationRequired, contract.ReasonInputConflicting)
	}
	sort.Slice(out, func(i, j int) bool { return lessKey(out[i].Key(), out[j].Key()) })
	return out, reason, nil
}

// registeredDimensions reads the dispatched attempt's manifest from
// Execution (its quadruple from the closed attempt set, never a bare id) and
// compares its frozen charge dimension set with Metering's inputs: a
// registered dimension without an input is a wait (blocked, no ledger
// write); an input of a dimension the manifest does not register, or a
// manifest Execution cannot answer for the closed set, needs reconciliation.
func (e *evaluator) registeredDimensions(ctx context.Context, a excontract.AttemptSetItem, inputs []*meteringread.SettlementInput, reason *why) error {
	res, err := e.o.Execution.ReadAttemptManifest(ctx, executionread.AttemptManifestRead{ContractVersion: executionread.ReadAttemptManifestV1,
		Audience: executionread.AudienceBillingFinalization, ExecutionAttemptID: a.ExecutionAttemptID, AttemptManifest: a.AttemptManifest})
	if err != nil {
		return fmt.Errorf("read attempt manifest of %s: %w", a.ExecutionAttemptID, err)
	}
	if res.Answer != ownerread.Found || res.Value.Manifest != a.AttemptManifest || len(res.Value.ChargeDimensionKeys) == 0 {
		reason.worse(contract.DecisionReconciliationRequired, contract.ReasonExecutionConflicting)
		return nil
	}
	registered := map[string]bool{}
	for _, k := range res.Value.ChargeDimensionKeys {
		registered[k] = true
	}
	present := map[string]bool{}
	for _, in := range inputs {
		present[in.Snapshot.ChargeDimensionKey] = true
		// guard BI-1.dimension-not-registered
		if !registered[in.Snapshot.ChargeDimensionKey] {
			reason.worse(contract.DecisionReconciliationRequired, contract.ReasonInputConflicting)
		}
	}
	for _, k := range res.Value.ChargeDimensionKeys {
		// guard BI-1.registered-dimension-missing
		if !present[k] {
			reason.worse(contract.DecisionBlocked, contract.ReasonInputsNotClosed)
		}
	}
	return nil
}

func lessKey(a, b [3]string) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// inputState maps a snapshot to the manifest's closed vocabulary: only
// metered and terminal_none are closed inputs.
func inputState(s *settlement.Snapshot) string {
	switch {
	case s.ReconciliationState == settlement.ReconciliationRequired:
		return contract.InputConflicting
	case s.ReconciliationState == settlement.ReconciliationAwaitingEvidence:
		return contract.InputPending
	case s.MeterEvent != nil:
		return contract.InputMetered
	}
	return contract.InputTerminalNone
}

func (e *evaluator) sealManifest(dims []contract.ManifestDimension) error {
	targets := make([]string, 0, len(dims))
	for _, d := range dims {
		targets = append(targets, d.TargetAmount)
	}
	total, err := contract.SumAmounts(targets...)
	if err != nil {
		return fmt.Errorf("%w: target amounts: %w", ErrInvalidClosure, err)
	}
	if dims == nil {
		dims = []contract.ManifestDimension{}
	}
	m := &contract.FinalizationInputManifest{
		Tenant: e.c.Tenant, BillingAccountID: e.c.BillingAccountID, BillingReservationID: e.c.BillingReservationID, RunID: e.c.RunID,
		FenceID: e.c.FenceID, FinalizationOperationID: e.op, RunAdmissionManifest: e.c.RunAdmissionManifest,
		ReservedAmount: e.c.ReservedAmount, ClosureOperationID: e.c.ClosureOperationID, Finalization: e.c.Finalization,
		FinalizationStateVer: e.c.StateVersion, AttemptSet: e.c.AttemptSet, AttemptCount: e.c.AttemptCount,
		Dimensions: dims, TargetTotal: total, CreatedAt: e.now,
	}
	body, err := contract.SealAddressed(m, "fim-")
	if err != nil {
		return fmt.Errorf("seal input manifest: %w", err)
	}
	e.ev.Manifest, e.ev.ManifestBody = m, body
	return nil
}

// receipts obtains the three receipt sets for the sealed manifest: the one
// Execution closure receipt, one Metering current receipt per dimension and
// one Gateway answer per distinct availability (none for not-dispatched
// dimensions).
func (e *evaluator) receipts(ctx context.Context, fact *excontract.RunExecutionFinalizationFact) (*contract.FinalizationValidationBundle, why, error) {
	m := e.ev.Manifest
	var reason why
	ex, err := e.o.Execution.ReadRunExecutionFinalization(ctx, executionread.RunExecutionFinalizationRead{
		ContractVersion: excontract.ReadRunExecutionFinalizationV1, Audience: executionread.AudienceBillingFinalization,
		Purpose: excontract.PurposeBillingFinalization, FinalizationOperationID: e.op, InputManifest: m.Manifest,
		RunID: e.c.RunID, BillingReservationID: e.c.BillingReservationID, BillingAccountID: e.c.BillingAccountID,
		RunAdmissionManifest: e.c.RunAdmissionManifest, Finalization: e.c.Finalization, StateVersion: e.c.StateVersion,
		AttemptSet: e.c.AttemptSet, AttemptCount: e.c.AttemptCount,
	})
	if err != nil {
		return nil, why{}, fmt.Errorf("read run execution finalization: %w", err)
	}
	switch ex.Answer {
	case ownerread.NotFound:
		return nil, why{contract.DecisionBlocked, contract.ReasonExecutionNotClosed}, nil
	case ownerread.Conflicting:
		if ex.Conflict == nil { // the owner always answers with its stored fact (issue 32): fail closed
			return nil, why{}, fmt.Errorf("%w: execution answered conflicting without its conflict fact", ErrInvalidClosure)
		}
		e.executionConflict = ex.Conflict.Fact
		return nil, why{contract.DecisionReconciliationRequired, contract.ReasonExecutionConflicting}, nil
	}
	e.ev.Receipts = append(e.ev.Receipts, Receipt{Kind: excontract.KindRunExecutionFinalizationReceipt, Quad: ex.Value.Receipt, Body: ex.Body})
	b := &contract.FinalizationValidationBundle{
		BillingReservationID: e.c.BillingReservationID, RunID: e.c.RunID, FinalizationOperationID: e.op, InputManifest: m.Manifest,
		Execution: contract.ExecutionEntry{Finalization: ex.Value.Finalization, AttemptSet: ex.Value.AttemptSet,
			AttemptCount: ex.Value.AttemptCount, Receipt: ex.Value.Receipt},
		Metering: []contract.MeteringEntry{}, Gateway: []contract.GatewayEntry{},
	}
	manifests := map[string]strict.Quadruple{}
	for _, a := range fact.Attempts {
		manifests[a.ExecutionAttemptID] = a.AttemptManifest
	}
	seen := map[contract.GatewayEntry]bool{}
	for _, d := range m.Dimensions {
		ref := settlement.Ref{Snapshot: d.SettlementInput, StateVersion: d.SettlementStateVer}
		v, err := e.o.Metering.ValidateSettlementInputCurrent(ctx, SettlementValidation{
			FinalizationOperationID: e.op, InputManifest: m.Manifest, SettlementDimensionID: d.SettlementDimensionID, Snapshot: ref,
			ValidationOperationID: envelope.DeriveID(DerivationSettlementValidationOp, map[string]any{
				"billingFinalizationOperationId": e.op, "settlementDimensionId": d.SettlementDimensionID,
				"finalizationInputManifestDigest": m.Manifest.Digest,
			}),
		})
		if err != nil {
			return nil, why{}, fmt.Errorf("validate settlement input %s: %w", d.SettlementDimensionID, err)
		}
		if !v.Current {
			reason.worse(contract.DecisionBlocked, contract.ReasonInputsNotClosed)
			continue
		}
		e.ev.Receipts = append(e.ev.Receipts, Receipt{Kind: meterfacts.KindSettlementInputCurrentValidationReceipt, Quad: v.Receipt, Body: v.ReceiptBody})
		b.Metering = append(b.Metering, contract.MeteringEntry{RunStepID: d.RunStepID, ExecutionAttemptID: d.ExecutionAttemptID,
			ChargeDimensionKey: d.ChargeDimensionKey, SettlementInput: d.SettlementInput, SettlementStateVer: d.SettlementStateVer, Receipt: v.Receipt})
		if d.Availability == nil {
			continue // not dispatched: no Gateway receipt may be requested
		}
		g := contract.GatewayEntry{ExecutionAttemptID: d.ExecutionAttemptID, Availability: *d.Availability}
		if seen[g] {
			continue
		}
		seen[g] = true
		a, err := e.o.Gateway.ReadAvailabilitySnapshot(ctx, gatewayread.AvailabilitySnapshotRead{
			ContractVersion: gatewayread.ReadAvailabilitySnapshotV1, Audience: gatewayread.AudienceBillingFinalization,
			ExecutionAttemptID: d.ExecutionAttemptID, GatewayDeploymentID: g.GatewayDeploymentID,
			AttemptManifest: manifests[d.ExecutionAttemptID], EvidenceKind: g.ProviderEvidenceKind, DimensionKey: g.EvidenceDimensionKey,
			StateVersion: g.StateVersion, Snapshot: g.Snapshot,
		})
		if err != nil {
			return nil, why{}, fmt.Errorf("read availability %s: %w", g.Snapshot.Ref, err)
		}
		switch a.Answer {
		case ownerread.NotFound:
			reason.worse(contract.DecisionBlocked, contract.ReasonInputsNotClosed)
		case ownerread.Conflicting:
			reason.worse(contract.DecisionReconciliationRequired, contract.ReasonInputConflicting)
		default:
			b.Gateway = append(b.Gateway, g)
		}
	}
	contract.SortGatewayEntries(b.Gateway)
	return b, reason, nil
}

// evaluationOnly records a decision over a manifest without dimensions (the
// Execution precondition did not answer closed).
func (e *evaluator) evaluationOnly(dims []contract.ManifestDimension, outcome, code string) (*Evaluation, error) {
	if err := e.sealManifest(dims); err != nil {
		return nil, err
	}
	return e.decide(outcome, code)
}

func (e *evaluator) decide(outcome, code string) (*Evaluation, error) {
	m := e.ev.Manifest
	d := &contract.BillingFinalizationDecision{
		BillingAccountID: e.c.BillingAccountID, BillingReservationID: e.c.BillingReservationID, RunID: e.c.RunID,
		FenceID: e.c.FenceID, FinalizationOperationID: e.op, InputManifest: m.Manifest, ReservedAmount: e.c.ReservedAmount,
		TargetTotal: m.TargetTotal, Outcome: outcome, ReasonCode: code, DecidedAt: e.now,
	}
	if outcome == contract.DecisionReconciliationRequired && code == contract.ReasonExecutionConflicting {
		// The decision binds the Execution owner's stored conflict fact (issue 32).
		d.ExecutionConflict = e.executionConflict
	}
	if d.Succeeded() {
		released, err := contract.SubtractAmounts(e.c.ReservedAmount, m.TargetTotal)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidClosure, err)
		}
		d.Bundle, d.SettledAmount, d.ReleasedAmount = e.ev.Bundle.Bundle, m.TargetTotal, released
	} else {
		e.ev.Bundle, e.ev.BundleBody = nil, nil
	}
	body, err := contract.SealAddressed(d, "bfd-")
	if err != nil {
		return nil, fmt.Errorf("seal decision: %w", err)
	}
	e.ev.Decision, e.ev.DecisionBody = d, body
	return &e.ev, nil
}
