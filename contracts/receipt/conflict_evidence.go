package receipt

import (
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/strict"
)

// EligibilityProcessingConflictEvidence@1 validationStage literals.
var eligibilityValidationStages = []string{
	"eligibility_basis", "availability_validation_receipt", "eligibility_decision", "meter_event", "settlement_input",
}

// EligibilityProcessingConflictEvidence is EligibilityProcessingConflictEvidence@1:
// a proven local deterministic conflict while processing an eligibility
// work. Its candidate excludes the ref, observedAt and the digest.
type EligibilityProcessingConflictEvidence struct {
	Evidence                   strict.Quadruple
	RunID                      string
	RunStepID                  string
	ExecutionAttemptID         string
	AttemptExecutionManifest   strict.Quadruple
	ExecutionEligibilityFact   strict.Quadruple
	Work                       strict.Quadruple
	OperationID                string // meteringInputWorkOperationId
	WorkGeneration             int64
	LaneTriggerDigest          digest.Digest
	ValidationStage            string
	ConflictingCandidateDigest digest.Digest
	ReasonCode                 string
	ObservedAt                 time.Time
}

// DecodeEligibilityProcessingConflictEvidence strictly decodes and validates the evidence.
func DecodeEligibilityProcessingConflictEvidence(doc []byte) (*EligibilityProcessingConflictEvidence, error) {
	return decode(doc, EligibilityEvidenceDef, readEligibilityProcessingConflictEvidence)
}

// readEligibilityProcessingConflictEvidence binds the evidence from a parsed object.
func readEligibilityProcessingConflictEvidence(o *strict.Object) *EligibilityProcessingConflictEvidence {
	return &EligibilityProcessingConflictEvidence{
		Evidence:                   readSelf(o, prefixEligibilityEvidence),
		RunID:                      o.UUID("runId"),
		RunStepID:                  o.UUID("runStepId"),
		ExecutionAttemptID:         o.UUID("executionAttemptId"),
		AttemptExecutionManifest:   o.Quadruple(prefixAttemptManifest),
		ExecutionEligibilityFact:   o.Quadruple(prefixEligibilityFact),
		Work:                       o.Quadruple(prefixWork),
		OperationID:                o.String("meteringInputWorkOperationId"),
		WorkGeneration:             o.IntMin("workGeneration", 1),
		LaneTriggerDigest:          o.DigestPair("laneTriggerDigestAlgorithmVersion", "laneTriggerDigest"),
		ValidationStage:            o.Enum("validationStage", eligibilityValidationStages...),
		ConflictingCandidateDigest: o.DigestPair("conflictingCandidateDigestAlgorithmVersion", "conflictingCandidateDigest"),
		ReasonCode:                 o.String("reasonCode"),
		ObservedAt:                 o.Timestamp("observedAt"),
	}
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (x *EligibilityProcessingConflictEvidence) Validate() error {
	return validateObject(x, EligibilityEvidenceDef)
}

// rules checks the refinement rules of a value whose shape is valid.
func (x *EligibilityProcessingConflictEvidence) rules(v *strict.Reader) {
	checkTime(v, "$.observedAt", x.ObservedAt)
}

// ToJSON returns the full JSON form.
func (x *EligibilityProcessingConflictEvidence) ToJSON() map[string]any {
	m := map[string]any{
		"runId":                        x.RunID,
		"runStepId":                    x.RunStepID,
		"executionAttemptId":           x.ExecutionAttemptID,
		"meteringInputWorkOperationId": x.OperationID,
		"workGeneration":               x.WorkGeneration,
		"validationStage":              x.ValidationStage,
		"reasonCode":                   x.ReasonCode,
		"observedAt":                   strict.FormatTimestamp(x.ObservedAt),
	}
	x.Evidence.Put(m, prefixEligibilityEvidence)
	x.AttemptExecutionManifest.Put(m, prefixAttemptManifest)
	x.ExecutionEligibilityFact.Put(m, prefixEligibilityFact)
	x.Work.Put(m, prefixWork)
	putDigest(m, "laneTriggerDigestAlgorithmVersion", "laneTriggerDigest", x.LaneTriggerDigest)
	putDigest(m, "conflictingCandidateDigestAlgorithmVersion", "conflictingCandidateDigest", x.ConflictingCandidateDigest)
	return m
}

func (x *EligibilityProcessingConflictEvidence) selfAddress() (strict.SelfAddressed, *strict.Quadruple) {
	return eligibilityEvidenceSelf, &x.Evidence
}

// Seal, Digest and VerifyDigest: see sealObject, candidateOf and verifyObject.
func (x *EligibilityProcessingConflictEvidence) Seal() error { return sealObject(x) }
func (x *EligibilityProcessingConflictEvidence) Digest() (digest.Digest, error) {
	return candidateOf(x)
}
func (x *EligibilityProcessingConflictEvidence) VerifyDigest() error { return verifyObject(x) }

// ProviderCostProcessingConflictEvidence@1 cause kinds and validation stages.
const (
	CostCauseGatewayOwnerConflict            = "gateway_owner_conflict"
	CostCauseGatewayBindingOwnerConflict     = "gateway_binding_owner_conflict"
	CostCauseMeteringDeterministicValidation = "metering_deterministic_validation"
)

var providerCostValidationStages = []string{
	"source_schema", "source_identity", "provider_cost_mapping", "provider_cost_normalization",
	"availability_validation_receipt", "route_validation_receipt", "provider_cost_repository",
}

// ProviderCostCause is the cause union:
//
//	{ kind=gateway_owner_conflict; gatewayEvidenceConflictFact quadruple }
//	| { kind=gateway_binding_owner_conflict; gatewayBindingConflictFact quadruple }
//	| { kind=metering_deterministic_validation; validationStage; conflictingCandidate digest; reasonCode }
type ProviderCostCause struct {
	Kind                       string
	Fact                       *strict.Quadruple // the two owner-conflict branches
	ValidationStage            string            // metering_deterministic_validation
	ConflictingCandidateDigest digest.Digest     // metering_deterministic_validation
	ReasonCode                 string            // metering_deterministic_validation
}

var costCausePrefix = map[string]string{
	CostCauseGatewayOwnerConflict:        "gatewayEvidenceConflictFact",
	CostCauseGatewayBindingOwnerConflict: "gatewayBindingConflictFact",
}

// ProviderCostProcessingConflictEvidence is ProviderCostProcessingConflictEvidence@1.
// Its candidate excludes the ref, detectedAt and the digest.
type ProviderCostProcessingConflictEvidence struct {
	Evidence                   strict.Quadruple
	Work                       strict.Quadruple
	OperationID                string // meteringInputWorkOperationId
	WorkGeneration             int64
	RunID                      string
	RunStepID                  string
	ExecutionAttemptID         string
	GatewayDeploymentID        string
	SourceEvidenceDimensionKey string
	AttemptExecutionManifest   strict.Quadruple
	AttemptRouteBinding        strict.Quadruple
	GatewayRouteSnapshot       strict.Quadruple
	CostAvailability           strict.Quadruple
	CostAvailabilityVersion    int64 // costAvailabilityStateVersion
	Cause                      ProviderCostCause
	DetectedAt                 time.Time
}

// DecodeProviderCostProcessingConflictEvidence strictly decodes and validates the evidence.
func DecodeProviderCostProcessingConflictEvidence(doc []byte) (*ProviderCostProcessingConflictEvidence, error) {
	return decode(doc, ProviderCostEvidenceDef, readProviderCostProcessingConflictEvidence)
}

// readProviderCostProcessingConflictEvidence binds the evidence from a parsed object.
func readProviderCostProcessingConflictEvidence(o *strict.Object) *ProviderCostProcessingConflictEvidence {
	x := &ProviderCostProcessingConflictEvidence{Evidence: readSelf(o, prefixProviderCostEvidence)}
	x.Work = o.Quadruple(prefixWork)
	x.OperationID = o.String("meteringInputWorkOperationId")
	x.WorkGeneration = o.IntMin("workGeneration", 1)
	x.RunID = o.UUID("runId")
	x.RunStepID = o.UUID("runStepId")
	x.ExecutionAttemptID = o.UUID("executionAttemptId")
	x.GatewayDeploymentID = o.String("gatewayDeploymentId")
	x.SourceEvidenceDimensionKey = o.String("sourceEvidenceDimensionKey")
	x.AttemptExecutionManifest = o.Quadruple(prefixAttemptManifest)
	x.AttemptRouteBinding = o.Quadruple("attemptRouteBinding")
	x.GatewayRouteSnapshot = o.Quadruple("gatewayRouteSnapshot")
	x.CostAvailability = o.Quadruple("costAvailability")
	x.CostAvailabilityVersion = o.IntMin("costAvailabilityStateVersion", 1)
	c := o.Object("cause")
	owner := func(prefix string) func(*strict.Object) {
		return func(b *strict.Object) {
			q := b.Quadruple(prefix)
			x.Cause.Fact = &q
		}
	}
	x.Cause.Kind = c.Union("kind", map[string]func(*strict.Object){
		CostCauseGatewayOwnerConflict:        owner(costCausePrefix[CostCauseGatewayOwnerConflict]),
		CostCauseGatewayBindingOwnerConflict: owner(costCausePrefix[CostCauseGatewayBindingOwnerConflict]),
		CostCauseMeteringDeterministicValidation: func(b *strict.Object) {
			x.Cause.ValidationStage = b.Enum("validationStage", providerCostValidationStages...)
			x.Cause.ConflictingCandidateDigest = b.DigestPair("conflictingCandidateDigestAlgorithmVersion", "conflictingCandidateDigest")
			x.Cause.ReasonCode = b.String("reasonCode")
		},
	})
	x.DetectedAt = o.Timestamp("detectedAt")
	return x
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (x *ProviderCostProcessingConflictEvidence) Validate() error {
	return validateObject(x, ProviderCostEvidenceDef)
}

// rules checks the refinement rules of a value whose shape is valid.
func (x *ProviderCostProcessingConflictEvidence) rules(v *strict.Reader) {
	if x.GatewayDeploymentID == "" {
		v.Fail("$.gatewayDeploymentId", ErrCostEvidenceTrimmed, "")
	}
	if x.SourceEvidenceDimensionKey == "" {
		v.Fail("$.sourceEvidenceDimensionKey", ErrCostEvidenceTrimmed, "")
	}
	c := x.Cause
	switch c.Kind {
	case CostCauseGatewayOwnerConflict, CostCauseGatewayBindingOwnerConflict:
		if c.Fact == nil || c.ValidationStage != "" || c.ReasonCode != "" || c.ConflictingCandidateDigest != (digest.Digest{}) {
			v.Fail("$.cause", strict.ErrMixedUnion, "owner conflict branch carries only its conflict fact quadruple")
		}
	case CostCauseMeteringDeterministicValidation:
		if c.Fact != nil {
			v.Fail("$.cause", strict.ErrMixedUnion, "local validation branch carries an owner conflict fact")
		}
	default:
		v.Fail("$.cause.kind", strict.ErrUnknownEnum, c.Kind)
	}
	checkTime(v, "$.detectedAt", x.DetectedAt)
}

// ToJSON returns the full JSON form.
func (x *ProviderCostProcessingConflictEvidence) ToJSON() map[string]any {
	m := map[string]any{
		"meteringInputWorkOperationId": x.OperationID,
		"workGeneration":               x.WorkGeneration,
		"runId":                        x.RunID,
		"runStepId":                    x.RunStepID,
		"executionAttemptId":           x.ExecutionAttemptID,
		"gatewayDeploymentId":          x.GatewayDeploymentID,
		"sourceEvidenceDimensionKey":   x.SourceEvidenceDimensionKey,
		"costAvailabilityStateVersion": x.CostAvailabilityVersion,
		"detectedAt":                   strict.FormatTimestamp(x.DetectedAt),
	}
	x.Evidence.Put(m, prefixProviderCostEvidence)
	x.Work.Put(m, prefixWork)
	x.AttemptExecutionManifest.Put(m, prefixAttemptManifest)
	x.AttemptRouteBinding.Put(m, "attemptRouteBinding")
	x.GatewayRouteSnapshot.Put(m, "gatewayRouteSnapshot")
	x.CostAvailability.Put(m, "costAvailability")
	c := map[string]any{"kind": x.Cause.Kind}
	switch x.Cause.Kind {
	case CostCauseMeteringDeterministicValidation:
		c["validationStage"] = x.Cause.ValidationStage
		putDigest(c, "conflictingCandidateDigestAlgorithmVersion", "conflictingCandidateDigest", x.Cause.ConflictingCandidateDigest)
		c["reasonCode"] = x.Cause.ReasonCode
	default:
		if x.Cause.Fact != nil {
			x.Cause.Fact.Put(c, costCausePrefix[x.Cause.Kind])
		}
	}
	m["cause"] = c
	return m
}

func (x *ProviderCostProcessingConflictEvidence) selfAddress() (strict.SelfAddressed, *strict.Quadruple) {
	return providerCostEvidenceSelf, &x.Evidence
}

// Seal, Digest and VerifyDigest: see sealObject, candidateOf and verifyObject.
func (x *ProviderCostProcessingConflictEvidence) Seal() error { return sealObject(x) }
func (x *ProviderCostProcessingConflictEvidence) Digest() (digest.Digest, error) {
	return candidateOf(x)
}
func (x *ProviderCostProcessingConflictEvidence) VerifyDigest() error { return verifyObject(x) }
