package meterfacts

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// KindSettlementInputConflictFact is the contract name of Metering's
// owner conflict fact about a settlement input (the outbox spec's
// settlementInputConflictFact, which BillingSettlementCatchUpWorkAttemptBlocked@1
// names under blockingCause settlement_input_owner_conflict).
const KindSettlementInputConflictFact = "SettlementInputConflictFact@1"

// PrefixSettlementInputConflictFact is the fact's own quadruple prefix.
const PrefixSettlementInputConflictFact = "settlementInputConflictFact"

// Reason codes of SettlementInputConflictFact@1.
const (
	// ConflictSourceOwnerConflict: the dimension's attempt has a newer
	// input Metering cannot form because an owner answered it with its
	// conflict fact: the eligibility Work is Blocked@1 on it
	// (blocked_on_owner_conflict), so Metering cannot vouch that the
	// validated input is the last one until the owner fixes the cause.
	ConflictSourceOwnerConflict = "settlement_input_source_owner_conflict"
)

const prefixMeteringWorkBlocked = "meteringInputWorkAttemptBlocked"

var settlementConflictSelf = strict.SelfAddressed{Prefix: PrefixSettlementInputConflictFact, TimeFields: []string{"detectedAt"}}

// SettlementInputConflictFact is SettlementInputConflictFact@1 — our
// definition of the Metering owner's conflict about one settlement input
// five-tuple, stored insert-or-compare (one per dimension, validated state
// version and Blocked@1):
//
//	settlementInputConflictFact quadruple          self (ref repository-owned)
//	settlementDimensionId                          the settlement dimension
//	settlementInputSnapshot quadruple + version    the five-tuple Billing asked about
//	meteringInputWorkAttemptBlocked quadruple      the eligibility Work's Blocked@1 on an owner's conflict fact
//	blockingCauseKind                              that Blocked@1's owner branch
//	ownerConflictFact quadruple                    the owner's conflict fact it names
//	reasonCode                                     settlement_input_source_owner_conflict
//	detectedAt                                     excluded from the digest
type SettlementInputConflictFact struct {
	Fact                  strict.Quadruple
	SettlementDimensionID string
	Validated             strict.Quadruple
	ValidatedStateVersion int64
	Blocked               strict.Quadruple
	BlockingCauseKind     string
	OwnerConflictFact     strict.Quadruple
	ReasonCode            string
	DetectedAt            time.Time
}

func (*SettlementInputConflictFact) Kind() string              { return KindSettlementInputConflictFact }
func (f *SettlementInputConflictFact) Quad() *strict.Quadruple { return &f.Fact }

// ToJSON returns the full JSON form.
func (f *SettlementInputConflictFact) ToJSON() map[string]any {
	m := map[string]any{validationDimensionField: f.SettlementDimensionID, validationStateVersionField: f.ValidatedStateVersion,
		"blockingCauseKind": f.BlockingCauseKind, "reasonCode": f.ReasonCode, "detectedAt": strict.FormatTimestamp(f.DetectedAt)}
	f.Fact.Put(m, PrefixSettlementInputConflictFact)
	f.Validated.Put(m, PrefixSettlementInputSnapshot)
	f.Blocked.Put(m, prefixMeteringWorkBlocked)
	f.OwnerConflictFact.Put(m, "ownerConflictFact")
	return m
}

// DecodeSettlementInputConflictFact strictly decodes the fact and verifies its digest.
func DecodeSettlementInputConflictFact(doc []byte) (*SettlementInputConflictFact, error) {
	m, err := decodeMap(KindSettlementInputConflictFact, doc)
	if err != nil {
		return nil, err
	}
	return &SettlementInputConflictFact{Fact: quad(m, PrefixSettlementInputConflictFact), SettlementDimensionID: str(m, validationDimensionField),
		Validated: quad(m, PrefixSettlementInputSnapshot), ValidatedStateVersion: i64(m, validationStateVersionField),
		Blocked: quad(m, prefixMeteringWorkBlocked), BlockingCauseKind: str(m, "blockingCauseKind"),
		OwnerConflictFact: quad(m, "ownerConflictFact"), ReasonCode: str(m, "reasonCode"), DetectedAt: timeOf(m, "detectedAt")}, nil
}

// SettlementInputConflictFactDef describes SettlementInputConflictFact@1.
var SettlementInputConflictFactDef = &schema.Def{Name: "SettlementInputConflictFactV1", Doc: "SettlementInputConflictFact@1: Metering cannot vouch that a settlement input is its dimension's last, because the attempt's eligibility Work is Blocked@1 on an owner's conflict fact; validateSettlementInputCurrent answers conflicting with it for the catch-up purposes.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixSettlementInputConflictFact, "repository-owned; excluded from the digest candidate"),
		schema.F(validationDimensionField, schema.UUID{}, "the settlement dimension (envelope.SettlementDimensionID)"),
		refQuad(PrefixSettlementInputSnapshot, "the SettlementInputSnapshot@1 Billing asked about"),
		schema.F(validationStateVersionField, schema.Int{Min: 1}, "its state version"),
		refQuad(prefixMeteringWorkBlocked, "the eligibility Work's MeteringInputWorkAttemptBlocked@1 on the owner's conflict fact"),
		schema.F("blockingCauseKind", schema.Enum{Values: []string{"execution_eligibility_owner_conflict", "gateway_usage_owner_conflict", "gateway_binding_owner_conflict"}}, "that Blocked@1's owner branch"),
		refQuad("ownerConflictFact", "the owner's conflict fact the Blocked@1 names"),
		schema.F("reasonCode", schema.Enum{Values: []string{ConflictSourceOwnerConflict}}, ""),
		schema.F("detectedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}
