package execution

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// KindExecutionEligibilityConflictFact is Execution's durable conflict
// about one attempt's eligibility fact (issue 32): the quadruple a
// MeteringInputWorkAttemptBlocked@1 of cause
// execution_eligibility_owner_conflict names.
const KindExecutionEligibilityConflictFact = "ExecutionEligibilityConflictFact@1"

// PrefixExecutionEligibilityConflictFact is the fact's own quadruple prefix
// (the spec's executionEligibilityConflictFact{Ref,...}).
const PrefixExecutionEligibilityConflictFact = "executionEligibilityConflictFact"

// Reason codes of ExecutionEligibilityConflictFact@1.
const (
	EligibilityConflictStoredInvalid    = "stored_eligibility_invalid"
	EligibilityConflictFactDiffers      = "eligibility_fact_differs"
	EligibilityConflictIdentityDiffers  = "eligibility_identity_differs"
	prefixRequestedEligibilityFact      = "requestedExecutionEligibilityFact"
	prefixRequestedAttemptManifest      = "requestedAttemptExecutionManifest"
	fieldStoredEligibilityFactReference = "storedExecutionEligibilityFactRef"
)

var eligibilityConflictSelf = strict.SelfAddressed{Prefix: PrefixExecutionEligibilityConflictFact, TimeFields: []string{"detectedAt"}}

// ExecutionEligibilityConflictFact is ExecutionEligibilityConflictFact@1:
// readExecutionEligibilityFact found a stored fact that does not recompute
// or does not equal the request.
//
//	executionEligibilityConflictFact quadruple     self (ref repository-owned)
//	runId / runStepId / executionAttemptId         the request's identities
//	requestedExecutionEligibilityFact quadruple    what the reader asked about
//	requestedAttemptExecutionManifest quadruple
//	storedExecutionEligibilityFactRef?             the stored fact, when it decodes
//	reasonCode
//	detectedAt                                     excluded from the digest
type ExecutionEligibilityConflictFact struct {
	Fact               strict.Quadruple
	RunID              string
	RunStepID          string
	ExecutionAttemptID string
	RequestedFact      strict.Quadruple
	RequestedManifest  strict.Quadruple
	StoredRef          string
	ReasonCode         string
	DetectedAt         time.Time
}

func (*ExecutionEligibilityConflictFact) Kind() string              { return KindExecutionEligibilityConflictFact }
func (f *ExecutionEligibilityConflictFact) Quad() *strict.Quadruple { return &f.Fact }

// ToJSON returns the full JSON form.
func (f *ExecutionEligibilityConflictFact) ToJSON() map[string]any {
	out := map[string]any{"runId": f.RunID, "runStepId": f.RunStepID, "executionAttemptId": f.ExecutionAttemptID,
		"reasonCode": f.ReasonCode, "detectedAt": strict.FormatTimestamp(f.DetectedAt)}
	if f.StoredRef != "" {
		out[fieldStoredEligibilityFactReference] = f.StoredRef
	}
	f.RequestedFact.Put(out, prefixRequestedEligibilityFact)
	f.RequestedManifest.Put(out, prefixRequestedAttemptManifest)
	f.Fact.Put(out, PrefixExecutionEligibilityConflictFact)
	return out
}

// DecodeExecutionEligibilityConflictFact strictly decodes the fact and verifies its digest.
func DecodeExecutionEligibilityConflictFact(doc []byte) (*ExecutionEligibilityConflictFact, error) {
	m, err := decodeMap(KindExecutionEligibilityConflictFact, doc)
	if err != nil {
		return nil, err
	}
	return &ExecutionEligibilityConflictFact{Fact: quad(m, PrefixExecutionEligibilityConflictFact), RunID: str(m, "runId"),
		RunStepID: str(m, "runStepId"), ExecutionAttemptID: str(m, "executionAttemptId"),
		RequestedFact: quad(m, prefixRequestedEligibilityFact), RequestedManifest: quad(m, prefixRequestedAttemptManifest),
		StoredRef: str(m, fieldStoredEligibilityFactReference), ReasonCode: str(m, "reasonCode"), DetectedAt: timeOf(m, "detectedAt")}, nil
}

// ExecutionEligibilityConflictFactDef describes ExecutionEligibilityConflictFact@1.
var ExecutionEligibilityConflictFactDef = &schema.Def{Name: "ExecutionEligibilityConflictFactV1", Doc: "ExecutionEligibilityConflictFact@1: readExecutionEligibilityFact found a stored eligibility fact that does not recompute or does not equal the request; stored once per (attempt, requested fact, reason).",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixExecutionEligibilityConflictFact, "assigned by Execution; excluded from the digest candidate"),
		schema.F("runId", schema.UUID{}, ""),
		schema.F("runStepId", schema.UUID{}, ""),
		schema.F("executionAttemptId", schema.UUID{}, ""),
		schema.Quad(prefixRequestedEligibilityFact, "the eligibility fact quadruple the reader asked about"),
		schema.Quad(prefixRequestedAttemptManifest, "the attempt manifest quadruple the reader holds"),
		schema.Opt(fieldStoredEligibilityFactReference, schema.RefText, "the stored fact, when it decodes"),
		schema.F("reasonCode", schema.Enum{Values: []string{EligibilityConflictStoredInvalid, EligibilityConflictFactDiffers, EligibilityConflictIdentityDiffers}}, ""),
		schema.F("detectedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
