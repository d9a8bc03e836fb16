package finalization_test

import (
	"context"
	"sync"
	"time"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	excontract "github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/settlement"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/billing/finalization"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/ownerread"
	"github.com/oceanway/core/internal/ownerread/executionread"
	"github.com/oceanway/core/internal/ownerread/gatewayread"
	"github.com/oceanway/core/internal/ownerread/meteringread"
)

var at = time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)

func quad(ref string, fill byte) strict.Quadruple {
	d := make([]byte, 64)
	for i := range d {
		d[i] = fill
	}
	return strict.Quadruple{Ref: ref, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: string(d)}
}

func ptr(x strict.Quadruple) *strict.Quadruple { return &x }

// world is a consistent set of owner facts for one run: a closed attempt
// set and the settlement inputs Metering holds for it. The fake owners
// answer from it and count the calls.
type world struct {
	mu        sync.Mutex
	closure   finalization.Closure
	fact      *excontract.RunExecutionFinalizationFact
	closed    bool
	inputs    map[string][]*meteringread.SettlementInput // by attempt
	notCurrnt map[string]bool                            // settlement dimension → Metering says not current
	gwAnswer  ownerread.Answer
	gwExtra   []string // usage dimensions the Gateway holds beyond Metering's
	gwCalls   int
	mtCalls   []finalization.SettlementValidation
	// registered is the charge dimension set each dispatched attempt's
	// manifest froze (by attempt id).
	registered map[string][]string
}

const (
	account     = "0195f4a8-0000-7000-8000-000000000040"
	reservation = "0195f4a8-0000-7000-8000-000000000041"
	run         = "0195f4a8-0000-7000-8000-000000000020"
	fence       = "0195f4a8-0000-7000-8000-000000000042"
	step        = "0195f4a8-0000-7000-8000-000000000050"
	dispatched  = "0195f4a8-0000-7000-8000-000000000060"
	rejected    = "0195f4a8-0000-7000-8000-000000000061"
)

// newWorld: attempt 1 dispatched with text.input_tokens and
// text.output_tokens, attempt 2 rejected before binding (terminal none);
// reserved 1500 credits.
func newWorld(inQty, outQty string) *world {
	items := []excontract.AttemptSetItem{
		{RunStepID: step, ExecutionAttemptID: dispatched, AttemptManifest: quad("aem-1", 'a'), EligibilityFact: quad("eef-1", 'e'), DispatchDisposition: excontract.DispositionDispatched},
		{RunStepID: step, ExecutionAttemptID: rejected, AttemptManifest: quad("aem-2", 'b'), EligibilityFact: quad("eef-2", 'f'), DispatchDisposition: excontract.DispositionNotDispatched},
	}
	w := &world{
		closure: finalization.Closure{
			Tenant:           billing.Tenant{Kind: "organization", TenantID: "0195f4a8-0000-7000-8000-000000000030", WorkspaceID: "0195f4a8-0000-7000-8000-000000000031"},
			BillingAccountID: account, BillingReservationID: reservation, RunID: run, FenceID: fence,
			RunAdmissionManifest: quad("ram-1", '1'), ReservedAmount: "1500", ClosureOperationID: "0195f4a8-0000-7000-8000-000000000070",
			Finalization: quad("ref-1", '2'), StateVersion: 2, AttemptSet: quad("ras-1", '3'), AttemptCount: 2,
		},
		closed: true, inputs: map[string][]*meteringread.SettlementInput{}, notCurrnt: map[string]bool{}, gwAnswer: ownerread.Found,
		registered: map[string][]string{dispatched: {"text.input_tokens", "text.output_tokens"}},
	}
	w.fact = &excontract.RunExecutionFinalizationFact{Fact: w.closure.Finalization, ClosureOperationID: w.closure.ClosureOperationID,
		StateVersion: 2, AttemptSet: w.closure.AttemptSet, Attempts: items,
		RunClosure: excontract.RunClosure{BillingAccountID: account, BillingReservationID: reservation, RunID: run, RunAdmissionManifest: w.closure.RunAdmissionManifest}}
	w.setUsage("text.input_tokens", inQty, 1)
	w.setUsage("text.output_tokens", outQty, 1)
	nd := w.snapshot(rejected, settlement.ChargeDimensionNotDispatched, settlement.DispositionNotDispatched, items[1])
	nd.Decision = settlement.Decision{Decision: settlement.DecisionIneligible, RuleVersion: settlement.DecisionRuleVersion, ReasonCode: "not_dispatched", Ref: quad("med-2", '8')}
	nd.Basis = settlement.UsageBasis{Kind: settlement.BasisNotDispatched, NotDispatchedFact: quad("and-1", '7')}
	nd.Quantity, nd.TargetNetAmount, nd.ReconciliationState = "0", "0", settlement.ReconciliationNotRequired
	w.put(nd)
	return w
}

func (w *world) snapshot(attempt, dim, disposition string, item excontract.AttemptSetItem) *settlement.Snapshot {
	s := &settlement.Snapshot{
		Snapshot:         strict.Quadruple{Ref: "sis-" + attempt[len(attempt)-2:] + "-" + dim},
		Tenant:           settlement.Tenant{Kind: "organization", ID: w.closure.Tenant.TenantID, WorkspaceID: w.closure.Tenant.WorkspaceID},
		BillingAccountID: account, BillingReservationID: reservation, RunID: run, RunStepID: step, ExecutionAttemptID: attempt,
		ChargeDimensionKey: dim, StateVersion: 1, EligibilityFact: item.EligibilityFact, DispatchDisposition: disposition,
		AttemptManifest:  item.AttemptManifest,
		Pricing:          settlement.Pricing{PriceBookVersion: settlement.PriceBookVersion, BillingPolicyVersion: settlement.BillingPolicyVersion, RunAdmissionManifest: w.closure.RunAdmissionManifest},
		EconomicIdentity: settlement.EconomicIdentity{Kind: "credits"}, RecordedAt: at,
	}
	s.SettlementDimensionID = envelope.SettlementDimensionID(reservation, run, step, attempt, dim)
	p, _ := settlement.PriceOf(dim)
	s.Pricing.UnitPrice, s.Unit = p.UnitPrice, p.Unit
	return s
}

// setUsage sets the dispatched attempt's input of dim: qty "" is pending,
// "conflict" is a conflicting availability, else available with qty.
func (w *world) setUsage(dim, qty string, version int64) {
	s := w.snapshot(dispatched, dim, settlement.DispositionDispatched, w.fact.Attempts[0])
	s.Decision = settlement.Decision{Decision: settlement.DecisionEligible, RuleVersion: settlement.DecisionRuleVersion, ReasonCode: "dispatched", Ref: quad("med-1", '7')}
	state := map[string]string{"": "pending", "conflict": "conflicting"}[qty]
	if state == "" {
		state = "available"
	}
	s.Basis = settlement.UsageBasis{Kind: settlement.BasisGatewayUsage, GatewayDeploymentID: "gw-eu-1", AttemptRouteBinding: quad("arb-1", 'c'),
		GatewayRouteSnapshot: quad("grs-1", 'd'), CurrentAvailability: quad("gas-"+dim, '4'), AvailabilityStateVersion: version, AvailabilityState: state,
		AvailabilityValidationReceipt: quad("gacvr-"+dim, '9'), AvailabilityValidationOperationID: "0195f4a8-0000-7000-8000-0000000000c1"}
	s.Quantity, s.TargetNetAmount, s.ReconciliationState = "0", "0", settlement.ReconciliationAwaitingEvidence
	switch state {
	case "available":
		s.Basis.ProviderEvidence, s.MeterEvent = ptr(quad("gpe-"+dim, '5')), ptr(quad("mev-"+dim, '6'))
		s.Quantity, s.ReconciliationState = qty, settlement.ReconciliationNotRequired
		s.TargetNetAmount, _ = settlement.Multiply(qty, s.Pricing.UnitPrice)
	case "conflicting":
		s.ReconciliationState = settlement.ReconciliationRequired
	}
	if version > 1 {
		s.Snapshot.Ref += "-v2"
		for _, in := range w.inputs[dispatched] {
			if in.Snapshot.ChargeDimensionKey == dim {
				s.Predecessor = &settlement.Ref{Snapshot: in.Ref.Snapshot, StateVersion: in.Ref.StateVersion}
			}
		}
		s.StateVersion = version
	}
	w.put(s)
}

func (w *world) put(s *settlement.Snapshot) {
	body, err := settlement.Seal(s)
	if err != nil {
		panic(err)
	}
	in := &meteringread.SettlementInput{Ref: s.Current(), Body: body, Snapshot: s}
	list := w.inputs[s.ExecutionAttemptID]
	for i, x := range list {
		if x.Snapshot.ChargeDimensionKey == s.ChargeDimensionKey {
			list[i] = in
			return
		}
	}
	w.inputs[s.ExecutionAttemptID] = append(list, in)
}

// recordAll records every current input as observed by the coordinator.
func (w *world) recordAll() {
	w.closure.Recorded = map[string]settlement.Ref{}
	for _, list := range w.inputs {
		for _, in := range list {
			w.closure.Recorded[in.Snapshot.SettlementDimensionID] = in.Ref
		}
	}
}

func (w *world) owners() finalization.Owners {
	return finalization.Owners{Execution: fakeExecution{w}, Metering: fakeMetering{w}, Gateway: fakeGateway{w}}
}

type fakeExecution struct{ w *world }

func (f fakeExecution) ReadRunFinalizationPrecondition(_ context.Context, req executionread.RunFinalizationPreconditionRead) (executionread.PreconditionResult, error) {
	if !f.w.closed {
		return executionread.PreconditionResult{Answer: executionread.PreconditionNotClosed}, nil
	}
	if req.Finalization != f.w.fact.Fact {
		// The owner's stored conflict fact (issue 32).
		c := &excontract.RunExecutionFinalizationConflictFact{Fact: strict.Quadruple{Ref: "rfc-" + req.RunID}, RunID: req.RunID,
			Requested: req.Finalization, StoredRef: f.w.fact.Fact.Ref, ReasonCode: "finalization_differs", DetectedAt: f.w.fact.ClosedAt}
		body, err := excontract.Seal(c)
		if err != nil {
			return executionread.PreconditionResult{}, err
		}
		return executionread.PreconditionResult{Answer: executionread.PreconditionConflicting, Conflict: c, ConflictBody: body}, nil
	}
	return executionread.PreconditionResult{Answer: executionread.PreconditionClosed, Fact: f.w.fact}, nil
}

// ReadAttemptManifest answers the attempt's manifest with the charge
// dimension set the world registered for it (not_found for an attempt the
// world does not know).
func (f fakeExecution) ReadAttemptManifest(_ context.Context, req executionread.AttemptManifestRead) (executionread.AttemptManifestResult, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if req.Audience != executionread.AudienceBillingFinalization {
		return executionread.AttemptManifestResult{}, ownerread.ErrInvalidRequest
	}
	for _, a := range f.w.fact.Attempts {
		if a.ExecutionAttemptID != req.ExecutionAttemptID {
			continue
		}
		if a.AttemptManifest != req.AttemptManifest {
			return ownerread.Conflict[*excontract.AttemptExecutionManifest]("the attempt has another manifest"), nil
		}
		return ownerread.FoundWith(&excontract.AttemptExecutionManifest{Manifest: a.AttemptManifest, RunID: run, RunStepID: a.RunStepID,
			ExecutionAttemptID: a.ExecutionAttemptID, ChargeDimensionRegistryVersion: settlement.ChargeDimensionRegistryVersion,
			ChargeDimensionKeys: append([]string(nil), f.w.registered[a.ExecutionAttemptID]...)}, nil), nil
	}
	return ownerread.Missing[*excontract.AttemptExecutionManifest](), nil
}

func (f fakeExecution) ReadRunExecutionFinalization(_ context.Context, req executionread.RunExecutionFinalizationRead) (executionread.RunExecutionFinalizationResult, error) {
	r := &excontract.RunExecutionFinalizationReceipt{
		Receipt:    strict.Quadruple{Ref: execution.FinalizationReceiptRef(req.FinalizationOperationID, req.InputManifest.Digest)},
		RunClosure: f.w.fact.RunClosure, FinalizationOperationID: req.FinalizationOperationID, InputManifest: req.InputManifest,
		ClosureOperationID: f.w.fact.ClosureOperationID, Finalization: f.w.fact.Fact, StateVersion: 2, AttemptSet: f.w.fact.AttemptSet,
		AttemptCount: int64(len(f.w.fact.Attempts)), ValidatedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
	r.Tenant = excontract.Tenant{Kind: "organization", TenantID: f.w.closure.Tenant.TenantID, WorkspaceID: f.w.closure.Tenant.WorkspaceID}
	body, err := excontract.Seal(r)
	if err != nil {
		return executionread.RunExecutionFinalizationResult{}, err
	}
	return executionread.RunExecutionFinalizationResult{Result: ownerread.FoundWith(r, body)}, nil
}

type fakeMetering struct{ w *world }

func (f fakeMetering) ReadAttemptSettlementInputs(_ context.Context, attempt string) ([]*meteringread.SettlementInput, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	return append([]*meteringread.SettlementInput(nil), f.w.inputs[attempt]...), nil
}

// ValidateSettlementInputCurrent stands in for meter-cost's operation-bound
// validation: current unless told otherwise, with a receipt whose digest
// binds the validation operation, the manifest and the snapshot.
func (f fakeMetering) ValidateSettlementInputCurrent(_ context.Context, req finalization.SettlementValidation) (finalization.SettlementValidationResult, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.mtCalls = append(f.w.mtCalls, req)
	if f.w.notCurrnt[req.SettlementDimensionID] {
		return finalization.SettlementValidationResult{}, nil
	}
	d, err := digest.Of(digest.JCSSHA256V1, map[string]any{"op": req.ValidationOperationID, "manifest": req.InputManifest.Digest, "snapshot": req.Snapshot.Snapshot.Digest})
	if err != nil {
		return finalization.SettlementValidationResult{}, err
	}
	q := strict.Quadruple{Ref: "scr-" + req.ValidationOperationID, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: d.Value}
	return finalization.SettlementValidationResult{Current: true, Receipt: q, ReceiptBody: []byte(`{}`)}, nil
}

type fakeGateway struct{ w *world }

func (f fakeGateway) ReadAttemptUsageDimensions(_ context.Context, attempt string) ([]string, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	keys := append([]string(nil), f.w.gwExtra...)
	for _, in := range f.w.inputs[attempt] {
		if in.Snapshot.DispatchDisposition == settlement.DispositionDispatched {
			keys = append(keys, in.Snapshot.ChargeDimensionKey)
		}
	}
	return keys, nil
}

func (f fakeGateway) ReadAvailabilitySnapshot(_ context.Context, req gatewayread.AvailabilitySnapshotRead) (gatewayread.AvailabilityResult, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	f.w.gwCalls++
	if req.Audience != gatewayread.AudienceBillingFinalization {
		return gatewayread.AvailabilityResult{}, ownerread.ErrInvalidRequest
	}
	return gatewayread.AvailabilityResult{Answer: f.w.gwAnswer}, nil
}
