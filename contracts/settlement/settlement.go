// Package settlement holds SettlementInputSnapshot@1 (ADR-031 "Metering
// 先形成单一结算快照"; ME-1): the one content-addressed settlement input of an
// attempt × charge dimension that Metering writes and Billing validates,
// and the price book the target amount is computed with. Standard library
// only; described once (package schema), listed in contracts/kinds.
//
// The documents list what the snapshot fixes but not its fields; the fields
// below are this project's definition, each with its reason:
//
//	settlementInputSnapshot quadruple     the snapshot's own content address (ref assigned by Metering)
//	tenant*, billingAccountId,            who is charged and against which reservation: Billing
//	billingReservationId                  settles without another read
//	runId, runStepId, executionAttemptId, the dimension (attempt × charge dimension) and its derived
//	chargeDimensionKey,                   id, the chain's aggregate; a mismatched id is refused
//	settlementDimensionId
//	settlementInputStateVersion,          the chain position, dense from 1, and the exact previous
//	predecessorSettlementInput            five-tuple (none for 1): corrections append, never rewrite
//	executionEligibilityFact quadruple,   the eligibility fact: Execution's word on whether the attempt
//	dispatchDisposition                   reached a provider
//	attemptExecutionManifest quadruple    the attempt identity the fact and the usage are bound to
//	eligibilityDecision                   Metering's decision, its rule version (eligible/ineligible) and
//	                                      the stored content-addressed decision's quadruple
//	meterEventHead                        the MeterEvent the quantity comes from, or an explicit none
//	usageBasis                            gateway usage (binding, route, availability, evidence, and the
//	                                      Gateway's Current Receipt of that availability with its
//	                                      operation) or the not-dispatched fact that proves a zero
//	pricing                               price book version, unit price, billing policy version and the
//	                                      admission manifest that froze the economic identity
//	settlementEconomicIdentity            credits | entitlement | money: the unit Billing may sum in
//	quantity, unit                        the strict union {kind=measured; quantity} | {kind=none} and the
//	                                      unit: measured exactly when the MeterEvent head is present
//	targetNetAmount                       quantity × unitPrice, exact decimal string, never a float
//	reconciliationState                   not_required (settle), awaiting_evidence (the Gateway has not
//	                                      reported yet), reconciliation_required (no trustworthy usage)
//	recordedAt                            excluded from the digest candidate
//
// The digest candidate is the full JSON form without the ref, recordedAt
// and the digest (CT-3).
package settlement

import (
	"errors"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Kind is the contract name.
const Kind = "SettlementInputSnapshot@1"

// SchemaVersion1 is the snapshot's schema version.
const SchemaVersion1 = "1"

// Prefixes of the snapshot's quadruples.
const (
	PrefixSnapshot                 = "settlementInputSnapshot"
	PrefixMeterEvent               = "meterEvent"
	PrefixProviderEvidence         = "providerEvidence"
	PrefixAttemptRouteBinding      = "attemptRouteBinding"
	PrefixGatewayRouteSnapshot     = "gatewayRouteSnapshot"
	PrefixCurrentAvailability      = "currentAvailability"
	PrefixAttemptNotDispatchedFact = "attemptNotDispatchedFact"
	PrefixExecutionEligibilityFact = "executionEligibilityFact"
	PrefixAttemptExecutionManifest = "attemptExecutionManifest"
	PrefixRunAdmissionManifest     = "runAdmissionManifest"
	PrefixEligibilityDecision      = "eligibilityDecision"
	// PrefixAvailabilityValidationReceipt names the Gateway's Current
	// Receipt of the usage availability (the second stage after the
	// event-bound bootstrap read).
	PrefixAvailabilityValidationReceipt = "availabilityCurrentValidationReceipt"
	// FieldAvailabilityValidationOperation is that receipt's operation.
	FieldAvailabilityValidationOperation = "availabilityValidationOperationId"
)

// Enumerations.
const (
	DecisionEligible   = "eligible"
	DecisionIneligible = "ineligible"
	// DecisionRuleVersion: dispatched → eligible, not_dispatched → ineligible.
	DecisionRuleVersion = "metering-eligibility-rule@1"

	HeadNone    = "none"
	HeadPresent = "present"

	BasisGatewayUsage  = "gateway_usage"
	BasisNotDispatched = "not_dispatched"

	DispositionDispatched    = "dispatched"
	DispositionNotDispatched = "not_dispatched"

	QuantityMeasured = "measured"
	QuantityNone     = "none"

	ReconciliationNotRequired      = "not_required"
	ReconciliationAwaitingEvidence = "awaiting_evidence"
	ReconciliationRequired         = "reconciliation_required"
)

// ErrSnapshotRule marks a snapshot that breaks a refinement rule (derived
// dimension id, chain position, terminal-none, amount arithmetic).
var ErrSnapshotRule = errors.New("settlement: snapshot rule")

// ErrInvalidObject marks a Go-built snapshot Seal refuses.
var ErrInvalidObject = errors.New("settlement: invalid object")

var self = strict.SelfAddressed{Prefix: PrefixSnapshot, TimeFields: []string{"recordedAt"}}

// Ref is a settlement input five-tuple: the snapshot quadruple and its state version.
type Ref struct {
	Snapshot     strict.Quadruple
	StateVersion int64
}

// Tenant is the tenant the charge belongs to.
type Tenant struct {
	Kind, ID, WorkspaceID, ProjectID string // ProjectID optional
}

// EconomicIdentity is SettlementEconomicIdentity@1.
type EconomicIdentity struct {
	Kind, EntitlementKey, Unit, Currency string
}

// Decision is the eligibility decision the snapshot fixes: its content and
// the quadruple of the stored, content-addressed EligibilityDecision.
type Decision struct {
	Decision, RuleVersion, ReasonCode string
	Ref                               strict.Quadruple
}

// UsageBasis is the gateway usage basis or the not-dispatched fact.
type UsageBasis struct {
	Kind string // BasisGatewayUsage | BasisNotDispatched
	// gateway_usage
	GatewayDeploymentID      string
	AttemptRouteBinding      strict.Quadruple
	GatewayRouteSnapshot     strict.Quadruple
	CurrentAvailability      strict.Quadruple
	AvailabilityStateVersion int64
	AvailabilityState        string
	ProviderEvidence         *strict.Quadruple // nil: none
	// AvailabilityValidationReceipt is the Gateway's current receipt of
	// CurrentAvailability under AvailabilityValidationOperationID: proof
	// that the basis was Current when the snapshot was written. It is
	// outside ContentDigest: a re-validation of unchanged usage is not new
	// settlement content.
	AvailabilityValidationReceipt     strict.Quadruple
	AvailabilityValidationOperationID string
	// not_dispatched
	NotDispatchedFact strict.Quadruple
}

// Pricing is the price and policy applied.
type Pricing struct {
	PriceBookVersion     string
	UnitPrice            string
	BillingPolicyVersion string
	RunAdmissionManifest strict.Quadruple
}

// Snapshot is SettlementInputSnapshot@1.
type Snapshot struct {
	Snapshot              strict.Quadruple
	Tenant                Tenant
	BillingAccountID      string
	BillingReservationID  string
	RunID                 string
	RunStepID             string
	ExecutionAttemptID    string
	ChargeDimensionKey    string
	SettlementDimensionID string
	StateVersion          int64
	Predecessor           *Ref // nil for state version 1
	EligibilityFact       strict.Quadruple
	DispatchDisposition   string
	AttemptManifest       strict.Quadruple
	Decision              Decision
	MeterEvent            *strict.Quadruple // nil: none
	Basis                 UsageBasis
	Pricing               Pricing
	EconomicIdentity      EconomicIdentity
	// Quantity is the measured quantity; "0" (or "") with no MeterEvent,
	// where the JSON form is the explicit {kind=none}.
	Quantity            string
	Unit                string
	TargetNetAmount     string
	ReconciliationState string
	RecordedAt          time.Time
}

// Current is the snapshot's own five-tuple.
func (s *Snapshot) Current() Ref { return Ref{Snapshot: s.Snapshot, StateVersion: s.StateVersion} }

// ToJSON returns the full JSON form.
func (s *Snapshot) ToJSON() map[string]any {
	out := map[string]any{
		"tenantKind": s.Tenant.Kind, "tenantId": s.Tenant.ID, "workspaceId": s.Tenant.WorkspaceID,
		"billingAccountId": s.BillingAccountID, "billingReservationId": s.BillingReservationID,
		"runId": s.RunID, "runStepId": s.RunStepID, "executionAttemptId": s.ExecutionAttemptID,
		"chargeDimensionKey": s.ChargeDimensionKey, "settlementDimensionId": s.SettlementDimensionID,
		"settlementInputStateVersion": s.StateVersion, "dispatchDisposition": s.DispatchDisposition,
		"eligibilityDecision": s.decisionJSON(),
		"quantity":            s.quantityJSON(), "unit": s.Unit, "targetNetAmount": s.TargetNetAmount,
		"reconciliationState": s.ReconciliationState, "recordedAt": strict.FormatTimestamp(s.RecordedAt),
	}
	if s.Tenant.ProjectID != "" {
		out["projectId"] = s.Tenant.ProjectID
	}
	pred := map[string]any{"state": HeadNone}
	if s.Predecessor != nil {
		pred = map[string]any{"state": HeadPresent, "settlementInputStateVersion": s.Predecessor.StateVersion}
		s.Predecessor.Snapshot.Put(pred, PrefixSnapshot)
	}
	out["predecessorSettlementInput"] = pred
	head := map[string]any{"state": HeadNone}
	if s.MeterEvent != nil {
		head["state"] = HeadPresent
		s.MeterEvent.Put(head, PrefixMeterEvent)
	}
	out["meterEventHead"] = head
	basis := map[string]any{"kind": s.Basis.Kind}
	switch s.Basis.Kind {
	case BasisGatewayUsage:
		basis["gatewayDeploymentId"] = s.Basis.GatewayDeploymentID
		s.Basis.AttemptRouteBinding.Put(basis, PrefixAttemptRouteBinding)
		s.Basis.GatewayRouteSnapshot.Put(basis, PrefixGatewayRouteSnapshot)
		s.Basis.CurrentAvailability.Put(basis, PrefixCurrentAvailability)
		basis["availabilityStateVersion"] = s.Basis.AvailabilityStateVersion
		basis["availabilityState"] = s.Basis.AvailabilityState
		ev := map[string]any{"state": HeadNone}
		if s.Basis.ProviderEvidence != nil {
			ev["state"] = HeadPresent
			s.Basis.ProviderEvidence.Put(ev, PrefixProviderEvidence)
		}
		basis["providerEvidence"] = ev
		s.Basis.AvailabilityValidationReceipt.Put(basis, PrefixAvailabilityValidationReceipt)
		basis[FieldAvailabilityValidationOperation] = s.Basis.AvailabilityValidationOperationID
	case BasisNotDispatched:
		s.Basis.NotDispatchedFact.Put(basis, PrefixAttemptNotDispatchedFact)
	}
	out["usageBasis"] = basis
	pricing := map[string]any{"priceBookVersion": s.Pricing.PriceBookVersion, "unitPrice": s.Pricing.UnitPrice,
		"billingPolicyVersion": s.Pricing.BillingPolicyVersion}
	s.Pricing.RunAdmissionManifest.Put(pricing, PrefixRunAdmissionManifest)
	out["pricing"] = pricing
	out["settlementEconomicIdentity"] = envelope.SettlementEconomicIdentityV1{Kind: s.EconomicIdentity.Kind,
		EntitlementKey: s.EconomicIdentity.EntitlementKey, Unit: s.EconomicIdentity.Unit, Currency: s.EconomicIdentity.Currency}.Map()
	s.EligibilityFact.Put(out, PrefixExecutionEligibilityFact)
	s.AttemptManifest.Put(out, PrefixAttemptExecutionManifest)
	s.Snapshot.Put(out, PrefixSnapshot)
	return out
}

// Measured reports whether the quantity is measured (a MeterEvent exists).
func (s *Snapshot) Measured() bool { return s.MeterEvent != nil }

// quantityJSON is the quantity union: measured when a MeterEvent exists or a
// quantity other than zero is set (so a quantity without its MeterEvent is
// refused by the rules, never dropped), else none.
func (s *Snapshot) quantityJSON() map[string]any {
	if s.MeterEvent != nil || (s.Quantity != "" && s.Quantity != "0") {
		return map[string]any{"kind": QuantityMeasured, "quantity": s.Quantity}
	}
	return map[string]any{"kind": QuantityNone}
}

func (s *Snapshot) decisionJSON() map[string]any {
	m := map[string]any{"decision": s.Decision.Decision, "decisionRuleVersion": s.Decision.RuleVersion, "reasonCode": s.Decision.ReasonCode}
	s.Decision.Ref.Put(m, PrefixEligibilityDecision)
	return m
}

// Seal sets schema version 1, jcs-sha256-v1 and the candidate digest, checks
// the description and every rule, and returns the canonical body. The ref
// must already be set.
func Seal(s *Snapshot) ([]byte, error) {
	s.Snapshot.SchemaVersion = SchemaVersion1
	s.Snapshot.DigestAlgorithmVersion = digest.JCSSHA256V1
	s.Snapshot.Digest = ""
	d, err := self.Compute(digest.JCSSHA256V1, s.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", Kind, err)
	}
	s.Snapshot.Digest = d.Value
	body, err := jcs.Marshal(s.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", Kind, err)
	}
	if _, err := decodeMap(body); err != nil {
		return nil, fmt.Errorf("seal %s: %w: %w", Kind, ErrInvalidObject, err)
	}
	return body, nil
}

// ContentDigest is the digest of what the snapshot says about the dimension,
// without its chain position (state version, predecessor) and own address:
// Metering appends a new state version only when this changes.
func ContentDigest(s *Snapshot) (digest.Digest, error) {
	m := self.CandidateOf(s.ToJSON())
	delete(m, "settlementInputStateVersion")
	delete(m, "predecessorSettlementInput")
	if b, ok := m["usageBasis"].(map[string]any); ok {
		for _, f := range strict.Fields(PrefixAvailabilityValidationReceipt) {
			delete(b, f)
		}
		delete(b, FieldAvailabilityValidationOperation)
	}
	return digest.Of(digest.JCSSHA256V1, m)
}

func decodeMap(doc []byte) (map[string]any, error) {
	m, err := schema.DecodeDocument(doc, schema.Ref{Def: SnapshotDef})
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", Kind, err)
	}
	if err := rules(m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", Kind, err)
	}
	if err := self.Verify(m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", Kind, err)
	}
	return m, nil
}

// Decode strictly decodes a snapshot, checks every rule and verifies its digest.
func Decode(doc []byte) (*Snapshot, error) {
	m, err := decodeMap(doc)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{
		Snapshot: quadOf(m, PrefixSnapshot),
		Tenant: Tenant{Kind: str(m, "tenantKind"), ID: str(m, "tenantId"), WorkspaceID: str(m, "workspaceId"),
			ProjectID: str(m, "projectId")},
		BillingAccountID: str(m, "billingAccountId"), BillingReservationID: str(m, "billingReservationId"),
		RunID: str(m, "runId"), RunStepID: str(m, "runStepId"), ExecutionAttemptID: str(m, "executionAttemptId"),
		ChargeDimensionKey: str(m, "chargeDimensionKey"), SettlementDimensionID: str(m, "settlementDimensionId"),
		StateVersion: i64(m, "settlementInputStateVersion"), EligibilityFact: quadOf(m, PrefixExecutionEligibilityFact),
		DispatchDisposition: str(m, "dispatchDisposition"), AttemptManifest: quadOf(m, PrefixAttemptExecutionManifest),
		Quantity: "0", Unit: str(m, "unit"), TargetNetAmount: str(m, "targetNetAmount"),
		ReconciliationState: str(m, "reconciliationState"),
	}
	if q := obj(m, "quantity"); str(q, "kind") == QuantityMeasured {
		s.Quantity = str(q, "quantity")
	}
	s.RecordedAt, _ = strict.ParseTimestamp(str(m, "recordedAt"))
	if p := obj(m, "predecessorSettlementInput"); str(p, "state") == HeadPresent {
		s.Predecessor = &Ref{Snapshot: quadOf(p, PrefixSnapshot), StateVersion: i64(p, "settlementInputStateVersion")}
	}
	d := obj(m, "eligibilityDecision")
	s.Decision = Decision{Decision: str(d, "decision"), RuleVersion: str(d, "decisionRuleVersion"), ReasonCode: str(d, "reasonCode"),
		Ref: quadOf(d, PrefixEligibilityDecision)}
	if h := obj(m, "meterEventHead"); str(h, "state") == HeadPresent {
		q := quadOf(h, PrefixMeterEvent)
		s.MeterEvent = &q
	}
	b := obj(m, "usageBasis")
	s.Basis.Kind = str(b, "kind")
	switch s.Basis.Kind {
	case BasisGatewayUsage:
		s.Basis.GatewayDeploymentID = str(b, "gatewayDeploymentId")
		s.Basis.AttemptRouteBinding = quadOf(b, PrefixAttemptRouteBinding)
		s.Basis.GatewayRouteSnapshot = quadOf(b, PrefixGatewayRouteSnapshot)
		s.Basis.CurrentAvailability = quadOf(b, PrefixCurrentAvailability)
		s.Basis.AvailabilityStateVersion = i64(b, "availabilityStateVersion")
		s.Basis.AvailabilityState = str(b, "availabilityState")
		if ev := obj(b, "providerEvidence"); str(ev, "state") == HeadPresent {
			q := quadOf(ev, PrefixProviderEvidence)
			s.Basis.ProviderEvidence = &q
		}
		s.Basis.AvailabilityValidationReceipt = quadOf(b, PrefixAvailabilityValidationReceipt)
		s.Basis.AvailabilityValidationOperationID = str(b, FieldAvailabilityValidationOperation)
	case BasisNotDispatched:
		s.Basis.NotDispatchedFact = quadOf(b, PrefixAttemptNotDispatchedFact)
	}
	p := obj(m, "pricing")
	s.Pricing = Pricing{PriceBookVersion: str(p, "priceBookVersion"), UnitPrice: str(p, "unitPrice"),
		BillingPolicyVersion: str(p, "billingPolicyVersion"), RunAdmissionManifest: quadOf(p, PrefixRunAdmissionManifest)}
	e := obj(m, "settlementEconomicIdentity")
	s.EconomicIdentity = EconomicIdentity{Kind: str(e, "kind"), EntitlementKey: str(e, "entitlementKey"), Unit: str(e, "unit"), Currency: str(e, "currency")}
	return s, nil
}

// rules checks what the shape cannot: the derived dimension id, the chain
// position, the decision ↔ disposition ↔ basis agreement, terminal-none and
// the amount arithmetic.
func rules(m map[string]any) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrSnapshotRule, fmt.Sprintf(format, a...))
	}
	want := envelope.SettlementDimensionID(str(m, "billingReservationId"), str(m, "runId"), str(m, "runStepId"),
		str(m, "executionAttemptId"), str(m, "chargeDimensionKey"))
	if str(m, "settlementDimensionId") != want {
		return fail("settlementDimensionId does not recompute (want %s)", want)
	}
	v, pred := i64(m, "settlementInputStateVersion"), obj(m, "predecessorSettlementInput")
	switch {
	case v == 1 && str(pred, "state") != HeadNone:
		return fail("state version 1 has no predecessor")
	case v > 1 && (str(pred, "state") != HeadPresent || i64(pred, "settlementInputStateVersion") != v-1):
		return fail("state version %d needs its direct predecessor %d", v, v-1)
	}
	disp, decision := str(m, "dispatchDisposition"), str(obj(m, "eligibilityDecision"), "decision")
	basis, head := obj(m, "usageBasis"), str(obj(m, "meterEventHead"), "state")
	quantity := obj(m, "quantity")
	measured := str(quantity, "kind") == QuantityMeasured
	if measured != (head == HeadPresent) {
		return fail("the quantity is measured exactly when the MeterEvent head is present")
	}
	switch disp {
	case DispositionNotDispatched:
		if decision != DecisionIneligible || str(basis, "kind") != BasisNotDispatched {
			return fail("not_dispatched is ineligible with the not-dispatched basis")
		}
		if head != HeadNone || measured || str(m, "targetNetAmount") != "0" ||
			str(m, "reconciliationState") != ReconciliationNotRequired {
			return fail("not_dispatched is terminal-none: no MeterEvent, quantity none, target amount 0, not_required")
		}
	case DispositionDispatched:
		if decision != DecisionEligible || str(basis, "kind") != BasisGatewayUsage {
			return fail("dispatched is eligible with a gateway usage basis")
		}
		available := str(basis, "availabilityState") == "available"
		if available != (head == HeadPresent) || available != (str(obj(basis, "providerEvidence"), "state") == HeadPresent) {
			return fail("a MeterEvent and provider evidence exist exactly when the usage is available")
		}
		if !available && (measured || str(m, "targetNetAmount") != "0") {
			return fail("unmeasured usage has quantity none and target amount 0")
		}
		if available != (str(m, "reconciliationState") == ReconciliationNotRequired) {
			return fail("only available usage settles without reconciliation")
		}
	}
	if !measured {
		if str(m, "targetNetAmount") != "0" {
			return fail("targetNetAmount %s of quantity none is not 0", str(m, "targetNetAmount"))
		}
		return nil
	}
	amount, err := Multiply(str(quantity, "quantity"), str(obj(m, "pricing"), "unitPrice"))
	if err != nil {
		return fail("%v", err)
	}
	if amount != str(m, "targetNetAmount") {
		return fail("targetNetAmount %s is not quantity × unitPrice = %s", str(m, "targetNetAmount"), amount)
	}
	return nil
}

// Contract is the kind as contracts/kinds lists it.
type Contract struct {
	Name     string
	Validate func(doc []byte) error
	Digest   func(doc []byte) (digest.Digest, error)
	Def      *schema.Def
}

// Contracts lists the kinds of this package.
func Contracts() []Contract {
	return []Contract{{
		Name: Kind, Def: SnapshotDef,
		Validate: func(doc []byte) error { _, err := decodeMap(doc); return err },
		Digest: func(doc []byte) (digest.Digest, error) {
			m, err := decodeMap(doc)
			if err != nil {
				return digest.Digest{}, err
			}
			return self.Compute(digest.Algorithm(str(m, PrefixSnapshot+"DigestAlgorithmVersion")), m)
		},
	}}
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }
func i64(m map[string]any, k string) int64  { n, _ := m[k].(int64); return n }
func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}

func quadOf(m map[string]any, prefix string) strict.Quadruple {
	f := strict.Fields(prefix)
	return strict.Quadruple{Ref: str(m, f[0]), SchemaVersion: str(m, f[1]), DigestAlgorithmVersion: digest.Algorithm(str(m, f[2])), Digest: str(m, f[3])}
}
