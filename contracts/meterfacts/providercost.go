package meterfacts

import (
	"errors"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Contract names.
const (
	KindProviderCostFact                       = "ProviderCostFact@1"
	KindProviderCostAvailabilityProcessingFact = "ProviderCostAvailabilityProcessingFact@1"
)

// Prefixes of the quadruples these facts carry. The processing prefix is the
// one MeteringInputProcessorConsumerReceipt@1 and
// MeteringInputWorkAttemptFinished@1 bind (providerCostAvailabilityProcessing*).
const (
	PrefixProviderCostFact      = "providerCostFact"
	PrefixProcessing            = "providerCostAvailabilityProcessing"
	PrefixWork                  = "meteringInputWork"
	PrefixAttemptManifest       = "attemptExecutionManifest"
	PrefixAttemptRouteBinding   = "attemptRouteBinding"
	PrefixGatewayRouteSnapshot  = "gatewayRouteSnapshot"
	PrefixCostAvailability      = "costAvailability"
	PrefixProviderEvidence      = "providerEvidence"
	CustomerChargingImpactNone  = "none"
	AvailabilityAvailable       = "available"
	AvailabilityPending         = "pending"
	AvailabilityNotReported     = "not_reported"
	AvailabilityUnavailable     = "unavailable"
	AvailabilityConflicting     = "conflicting"
	OutcomeAvailableApplied     = "available_applied"
	OutcomeWaitingForEvidence   = "waiting_for_evidence"
	OutcomeNoCostEvidence       = "no_cost_evidence"
	OutcomeReconciliationNeeded = "reconciliation_required"
)

var (
	costFactSelf   = strict.SelfAddressed{Prefix: PrefixProviderCostFact, TimeFields: []string{"recordedAt"}}
	processingSelf = strict.SelfAddressed{Prefix: PrefixProcessing, TimeFields: []string{"processedAt"}}

	availabilityStates = []string{AvailabilityAvailable, AvailabilityPending, AvailabilityNotReported, AvailabilityUnavailable, AvailabilityConflicting}
)

// OutcomeFor is the one processing outcome of each Gateway availability
// state (ME-2): available → available_applied (a ProviderCostFact),
// pending → waiting_for_evidence, not_reported | unavailable →
// no_cost_evidence (never a zero cost), conflicting → reconciliation_required.
func OutcomeFor(availabilityState string) (string, bool) {
	o, ok := map[string]string{
		AvailabilityAvailable:   OutcomeAvailableApplied,
		AvailabilityPending:     OutcomeWaitingForEvidence,
		AvailabilityNotReported: OutcomeNoCostEvidence,
		AvailabilityUnavailable: OutcomeNoCostEvidence,
		AvailabilityConflicting: OutcomeReconciliationNeeded,
	}[availabilityState]
	return o, ok
}

// ErrOutcomeState marks a processing fact whose outcome is not the one its
// availability state fixes.
var ErrOutcomeState = errors.New("meterfacts: processing outcome does not match the availability state")

// UnsignedIntegerText is a provider's reported quantity: a non-negative
// integer in canonical decimal text (never a JSON number).
var UnsignedIntegerText = schema.Text{MaxLength: 30, Pattern: `^(0|[1-9][0-9]{0,29})$`}

// ProviderCostFact is ProviderCostFact@1, Metering's (sole writer, ME-1)
// supply cost of one attempt's provider cost dimension, written only from
// an available Gateway cost availability (ME-2). It feeds supply cost,
// reconciliation and margin analysis only: it carries no customer price and
// says so (customerChargingImpact = none).
//
//	providerCostFact quadruple                   self (ref repository-owned)
//	meteringInputWork quadruple, operation id,   the provider_cost Work that wrote it
//	  workGeneration                             (one fact per Work)
//	runId / runStepId / executionAttemptId       whose supply cost it is
//	gatewayDeploymentId, sourceEvidenceDimensionKey  the cost lane
//	attemptExecutionManifest quadruple           the attempt identity the slot was bound with
//	attemptRouteBinding, gatewayRouteSnapshot    the route that incurred the cost
//	costAvailability quadruple + state version   the Gateway Current it was read from
//	providerEvidence quadruple                   the evidence whose quantity it normalizes
//	providerQuantity                             the provider's reported integer, verbatim
//	currency, quantityScale, amount              the normalization: amount = providerQuantity / 10^quantityScale, exact decimal text
//	customerChargingImpact = none                cost never triggers or blocks customer charging
//	recordedAt                                   excluded from the digest
type ProviderCostFact struct {
	Fact                         strict.Quadruple
	Work                         strict.Quadruple
	OperationID                  string
	WorkGeneration               int64
	RunID                        string
	RunStepID                    string
	ExecutionAttemptID           string
	GatewayDeploymentID          string
	SourceEvidenceDimensionKey   string
	AttemptManifest              strict.Quadruple
	AttemptRouteBinding          strict.Quadruple
	GatewayRouteSnapshot         strict.Quadruple
	CostAvailability             strict.Quadruple
	CostAvailabilityStateVersion int64
	ProviderEvidence             strict.Quadruple
	ProviderQuantity             string
	Currency                     string
	QuantityScale                int64
	Amount                       string
	RecordedAt                   time.Time
}

func (*ProviderCostFact) Kind() string              { return KindProviderCostFact }
func (f *ProviderCostFact) Quad() *strict.Quadruple { return &f.Fact }

// ToJSON returns the full JSON form.
func (f *ProviderCostFact) ToJSON() map[string]any {
	m := map[string]any{
		"meteringInputWorkOperationId": f.OperationID, "workGeneration": f.WorkGeneration,
		"runId": f.RunID, "runStepId": f.RunStepID, "executionAttemptId": f.ExecutionAttemptID,
		"gatewayDeploymentId": f.GatewayDeploymentID, "sourceEvidenceDimensionKey": f.SourceEvidenceDimensionKey,
		"costAvailabilityStateVersion": f.CostAvailabilityStateVersion,
		"providerQuantity":             f.ProviderQuantity, "currency": f.Currency, "quantityScale": f.QuantityScale, "amount": f.Amount,
		"customerChargingImpact": CustomerChargingImpactNone,
		"recordedAt":             strict.FormatTimestamp(f.RecordedAt),
	}
	f.Fact.Put(m, PrefixProviderCostFact)
	f.Work.Put(m, PrefixWork)
	f.AttemptManifest.Put(m, PrefixAttemptManifest)
	f.AttemptRouteBinding.Put(m, PrefixAttemptRouteBinding)
	f.GatewayRouteSnapshot.Put(m, PrefixGatewayRouteSnapshot)
	f.CostAvailability.Put(m, PrefixCostAvailability)
	f.ProviderEvidence.Put(m, PrefixProviderEvidence)
	return m
}

// DecodeProviderCostFact strictly decodes a fact and verifies its digest.
func DecodeProviderCostFact(doc []byte) (*ProviderCostFact, error) {
	m, err := decodeMap(KindProviderCostFact, doc)
	if err != nil {
		return nil, err
	}
	return &ProviderCostFact{
		Fact: quad(m, PrefixProviderCostFact), Work: quad(m, PrefixWork), OperationID: str(m, "meteringInputWorkOperationId"),
		WorkGeneration: i64(m, "workGeneration"), RunID: str(m, "runId"), RunStepID: str(m, "runStepId"),
		ExecutionAttemptID: str(m, "executionAttemptId"), GatewayDeploymentID: str(m, "gatewayDeploymentId"),
		SourceEvidenceDimensionKey: str(m, "sourceEvidenceDimensionKey"), AttemptManifest: quad(m, PrefixAttemptManifest),
		AttemptRouteBinding: quad(m, PrefixAttemptRouteBinding), GatewayRouteSnapshot: quad(m, PrefixGatewayRouteSnapshot),
		CostAvailability: quad(m, PrefixCostAvailability), CostAvailabilityStateVersion: i64(m, "costAvailabilityStateVersion"),
		ProviderEvidence: quad(m, PrefixProviderEvidence), ProviderQuantity: str(m, "providerQuantity"),
		Currency: str(m, "currency"), QuantityScale: i64(m, "quantityScale"), Amount: str(m, "amount"),
		RecordedAt: timeOf(m, "recordedAt"),
	}, nil
}

func workFields() []schema.Field {
	return schema.Fields(
		refQuad(PrefixWork, "the provider_cost MeteringInputWork@1 that processed the availability"),
		schema.F("meteringInputWorkOperationId", schema.UUID{}, "the Work's deterministic operation"),
		schema.F("workGeneration", schema.Int{Min: 1}, "the Work's generation in its lane"),
	)
}

func laneFields() []schema.Field {
	return schema.Fields(
		schema.F("executionAttemptId", schema.UUID{}, ""),
		schema.F("gatewayDeploymentId", schema.KeyText, "never trimmed"),
		schema.F("sourceEvidenceDimensionKey", schema.KeyText, "never trimmed"),
		refQuad(PrefixAttemptManifest, "the attempt's AttemptExecutionManifest@1"),
	)
}

func availabilityFields() []schema.Field {
	return schema.Fields(
		refQuad(PrefixCostAvailability, "the Gateway cost GatewayEvidenceAvailabilitySnapshot@1 read (event-bound)"),
		schema.F("costAvailabilityStateVersion", schema.Int{Min: 1}, ""),
	)
}

// ProviderCostFactDef describes ProviderCostFact@1.
var ProviderCostFactDef = &schema.Def{Name: "ProviderCostFactV1", Doc: "ProviderCostFact@1: Metering's supply cost of one attempt's provider cost dimension, from an available Gateway cost availability only; never a customer charge.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixProviderCostFact, "repository-owned; excluded from the digest candidate"),
		workFields(),
		schema.F("runId", schema.UUID{}, ""),
		schema.F("runStepId", schema.UUID{}, ""),
		laneFields(),
		refQuad(PrefixAttemptRouteBinding, "the binding that incurred the cost"),
		refQuad(PrefixGatewayRouteSnapshot, "the route that incurred the cost"),
		availabilityFields(),
		refQuad(PrefixProviderEvidence, "the available GatewayProviderEvidence@1"),
		schema.F("providerQuantity", UnsignedIntegerText, "the provider's reported quantity, verbatim"),
		schema.F("currency", schema.CurrencyText, "from Metering's provider cost mapping of the source dimension"),
		schema.F("quantityScale", schema.Int{Min: 0, Max: 17}, "amount = providerQuantity / 10^quantityScale"),
		schema.F("amount", schema.AmountText, "exact decimal text, never a float"),
		schema.F("customerChargingImpact", schema.Literal{Value: CustomerChargingImpactNone}, "ME-2: cost never triggers or blocks customer charging"),
		schema.F("recordedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// ProviderCostAvailabilityProcessingFact is
// ProviderCostAvailabilityProcessingFact@1: the one strict result of one
// provider_cost Work for the Gateway availability it read (ADR-031 "Cost
// Work对五种Availability都有严格收敛结果"). Its quadruple is what the Work's
// availability_processed finish and the lane's terminal state bind; for
// conflicting it is Metering's durable reconciliation anchor.
//
//	providerCostAvailabilityProcessing quadruple  self
//	meteringInputWork quadruple, operation id,    the Work (one processing fact per Work)
//	  workGeneration, laneTriggerDigest
//	executionAttemptId, gatewayDeploymentId,      the cost lane and attempt identity
//	  sourceEvidenceDimensionKey, attemptExecutionManifest
//	costAvailability quadruple + state version,   what the Gateway said, verbatim
//	  availabilityState, stateReasonCode
//	outcome = { processingOutcome=available_applied; providerCostFact quadruple }
//	        | { processingOutcome=waiting_for_evidence }          (pending)
//	        | { processingOutcome=no_cost_evidence }              (not_reported | unavailable: no cost, never zero)
//	        | { processingOutcome=reconciliation_required }       (conflicting)
//	processedAt                                   excluded from the digest
type ProviderCostAvailabilityProcessingFact struct {
	Processing                   strict.Quadruple
	Work                         strict.Quadruple
	OperationID                  string
	WorkGeneration               int64
	LaneTriggerDigest            digest.Digest
	ExecutionAttemptID           string
	GatewayDeploymentID          string
	SourceEvidenceDimensionKey   string
	AttemptManifest              strict.Quadruple
	CostAvailability             strict.Quadruple
	CostAvailabilityStateVersion int64
	AvailabilityState            string
	StateReasonCode              string
	Outcome                      string
	ProviderCostFact             *strict.Quadruple // available_applied only
	ProcessedAt                  time.Time
}

func (*ProviderCostAvailabilityProcessingFact) Kind() string {
	return KindProviderCostAvailabilityProcessingFact
}
func (f *ProviderCostAvailabilityProcessingFact) Quad() *strict.Quadruple { return &f.Processing }

// ToJSON returns the full JSON form.
func (f *ProviderCostAvailabilityProcessingFact) ToJSON() map[string]any {
	m := map[string]any{
		"meteringInputWorkOperationId": f.OperationID, "workGeneration": f.WorkGeneration,
		"laneTriggerDigestAlgorithmVersion": string(f.LaneTriggerDigest.Algorithm), "laneTriggerDigest": f.LaneTriggerDigest.Value,
		"executionAttemptId": f.ExecutionAttemptID, "gatewayDeploymentId": f.GatewayDeploymentID,
		"sourceEvidenceDimensionKey":   f.SourceEvidenceDimensionKey,
		"costAvailabilityStateVersion": f.CostAvailabilityStateVersion,
		"availabilityState":            f.AvailabilityState, "stateReasonCode": f.StateReasonCode,
		"processedAt": strict.FormatTimestamp(f.ProcessedAt),
	}
	f.Processing.Put(m, PrefixProcessing)
	f.Work.Put(m, PrefixWork)
	f.AttemptManifest.Put(m, PrefixAttemptManifest)
	f.CostAvailability.Put(m, PrefixCostAvailability)
	out := map[string]any{"processingOutcome": f.Outcome}
	if f.ProviderCostFact != nil {
		f.ProviderCostFact.Put(out, PrefixProviderCostFact)
	}
	m["outcome"] = out
	return m
}

// DecodeProviderCostAvailabilityProcessingFact strictly decodes a fact and verifies its digest.
func DecodeProviderCostAvailabilityProcessingFact(doc []byte) (*ProviderCostAvailabilityProcessingFact, error) {
	m, err := decodeMap(KindProviderCostAvailabilityProcessingFact, doc)
	if err != nil {
		return nil, err
	}
	out := obj(m, "outcome")
	f := &ProviderCostAvailabilityProcessingFact{
		Processing: quad(m, PrefixProcessing), Work: quad(m, PrefixWork), OperationID: str(m, "meteringInputWorkOperationId"),
		WorkGeneration: i64(m, "workGeneration"), LaneTriggerDigest: digestOf(m, "laneTriggerDigestAlgorithmVersion", "laneTriggerDigest"),
		ExecutionAttemptID: str(m, "executionAttemptId"), GatewayDeploymentID: str(m, "gatewayDeploymentId"),
		SourceEvidenceDimensionKey: str(m, "sourceEvidenceDimensionKey"), AttemptManifest: quad(m, PrefixAttemptManifest),
		CostAvailability: quad(m, PrefixCostAvailability), CostAvailabilityStateVersion: i64(m, "costAvailabilityStateVersion"),
		AvailabilityState: str(m, "availabilityState"), StateReasonCode: str(m, "stateReasonCode"),
		Outcome: str(out, "processingOutcome"), ProcessedAt: timeOf(m, "processedAt"),
	}
	if f.Outcome == OutcomeAvailableApplied {
		q := quad(out, PrefixProviderCostFact)
		f.ProviderCostFact = &q
	}
	return f, nil
}

// processingRules: the outcome is the one the availability state fixes.
func processingRules(m map[string]any) error {
	want, _ := OutcomeFor(str(m, "availabilityState"))
	if got := str(obj(m, "outcome"), "processingOutcome"); got != want {
		return fmt.Errorf("%w: availability %s, outcome %s", ErrOutcomeState, str(m, "availabilityState"), got)
	}
	return nil
}

var processingOutcomeDef = &schema.Def{Name: "ProviderCostProcessingOutcomeV1", Doc: "The strict result of one provider cost availability: a ProviderCostFact only when available; no cost (never zero) otherwise.",
	Type: schema.Union{Discriminator: "processingOutcome", Branches: []schema.Branch{
		{Value: OutcomeAvailableApplied, Doc: "availability available: the ProviderCostFact@1 written in the same transaction",
			Fields: refQuad(PrefixProviderCostFact, "the ProviderCostFact@1")},
		{Value: OutcomeWaitingForEvidence, Doc: "availability pending: this generation ends; a later Gateway Current schedules the next"},
		{Value: OutcomeNoCostEvidence, Doc: "availability not_reported or unavailable: no cost evidence, never a zero cost"},
		{Value: OutcomeReconciliationNeeded, Doc: "availability conflicting: this fact is Metering's durable reconciliation anchor"},
	}}}

// ProcessingFactDef describes ProviderCostAvailabilityProcessingFact@1.
var ProcessingFactDef = &schema.Def{Name: "ProviderCostAvailabilityProcessingFactV1", Doc: "ProviderCostAvailabilityProcessingFact@1: the strict result of one provider cost Work for the Gateway cost availability it read.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixProcessing, "repository-owned; excluded from the digest candidate"),
		workFields(),
		schema.DigestPairFields("laneTriggerDigestAlgorithmVersion", "laneTriggerDigest", "the Work's lane trigger digest"),
		laneFields(),
		availabilityFields(),
		schema.F("availabilityState", schema.Enum{Values: availabilityStates}, "the Gateway availability state, verbatim"),
		schema.F("stateReasonCode", schema.CodeText, "the Gateway's reason, verbatim"),
		schema.F("outcome", schema.Ref{Def: processingOutcomeDef}, "fixed by availabilityState"),
		schema.F("processedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
