package receipt

import (
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/strict"
)

// CauseSettlementInputOwnerConflict is the one blockingCause of
// BillingSettlementCatchUpWorkAttemptBlocked@1.
const CauseSettlementInputOwnerConflict = "settlement_input_owner_conflict"

const prefixSettlementInputConflictFact = "settlementInputConflictFact"

// BillingSettlementCatchUpWorkAttemptBlocked is
// BillingSettlementCatchUpWorkAttemptBlocked@1: the catch-up worker's strict
// non-terminal block, never a BillingSettlementCatchUpWorkAttemptFinished@1.
// Its candidate excludes the ref, blockedAt and the digest.
type BillingSettlementCatchUpWorkAttemptBlocked struct {
	Blocked                             strict.Quadruple
	Work                                strict.Quadruple // billingSettlementCatchUpWork
	BillingCatchUpValidationOperationID string
	BillingReservationID                string
	BillingAccountID                    string
	RunID                               string
	RunStepID                           string
	ExecutionAttemptID                  string
	ChargeDimensionKey                  string
	WorkGeneration                      int64
	AttemptNumber                       int64
	FencingToken                        string
	// BlockingCause is { kind=settlement_input_owner_conflict; settlementInputConflictFact quadruple }.
	BlockingCause BlockingCause
	BlockedAt     time.Time
}

// DecodeBillingSettlementCatchUpWorkAttemptBlocked strictly decodes and validates the fact.
func DecodeBillingSettlementCatchUpWorkAttemptBlocked(doc []byte) (*BillingSettlementCatchUpWorkAttemptBlocked, error) {
	return decode(doc, CatchUpBlockedDef, readBillingSettlementCatchUpWorkAttemptBlocked)
}

// readBillingSettlementCatchUpWorkAttemptBlocked binds the fact from a parsed object.
func readBillingSettlementCatchUpWorkAttemptBlocked(o *strict.Object) *BillingSettlementCatchUpWorkAttemptBlocked {
	x := &BillingSettlementCatchUpWorkAttemptBlocked{Blocked: readSelf(o, prefixCatchUpBlocked)}
	x.Work = o.Quadruple(prefixCatchUpWork)
	x.BillingCatchUpValidationOperationID = o.String("billingCatchUpValidationOperationId")
	x.BillingReservationID = o.UUID("billingReservationId")
	x.BillingAccountID = o.UUID("billingAccountId")
	x.RunID = o.UUID("runId")
	x.RunStepID = o.UUID("runStepId")
	x.ExecutionAttemptID = o.UUID("executionAttemptId")
	x.ChargeDimensionKey = o.String("chargeDimensionKey")
	x.WorkGeneration = o.IntMin("workGeneration", 1)
	x.AttemptNumber = o.IntMin("attemptNumber", 1)
	x.FencingToken = o.String("fencingToken")
	bc := o.Object("blockingCause")
	x.BlockingCause.Kind = bc.Union("kind", map[string]func(*strict.Object){
		CauseSettlementInputOwnerConflict: func(b *strict.Object) {
			x.BlockingCause.Fact = b.Quadruple(prefixSettlementInputConflictFact)
		},
	})
	x.BlockedAt = o.Timestamp("blockedAt")
	return x
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (x *BillingSettlementCatchUpWorkAttemptBlocked) Validate() error {
	return validateObject(x, CatchUpBlockedDef)
}

// rules checks the refinement rules of a value whose shape is valid.
func (x *BillingSettlementCatchUpWorkAttemptBlocked) rules(v *strict.Reader) {
	checkTime(v, "$.blockedAt", x.BlockedAt)
}

// ToJSON returns the full JSON form.
func (x *BillingSettlementCatchUpWorkAttemptBlocked) ToJSON() map[string]any {
	m := map[string]any{
		"billingCatchUpValidationOperationId": x.BillingCatchUpValidationOperationID,
		"billingReservationId":                x.BillingReservationID,
		"billingAccountId":                    x.BillingAccountID,
		"runId":                               x.RunID,
		"runStepId":                           x.RunStepID,
		"executionAttemptId":                  x.ExecutionAttemptID,
		"chargeDimensionKey":                  x.ChargeDimensionKey,
		"workGeneration":                      x.WorkGeneration,
		"attemptNumber":                       x.AttemptNumber,
		"fencingToken":                        x.FencingToken,
		"blockedAt":                           strict.FormatTimestamp(x.BlockedAt),
	}
	x.Blocked.Put(m, prefixCatchUpBlocked)
	x.Work.Put(m, prefixCatchUpWork)
	bc := map[string]any{"kind": x.BlockingCause.Kind}
	x.BlockingCause.Fact.Put(bc, prefixSettlementInputConflictFact)
	m["blockingCause"] = bc
	return m
}

func (x *BillingSettlementCatchUpWorkAttemptBlocked) selfAddress() (strict.SelfAddressed, *strict.Quadruple) {
	return catchUpBlockedSelf, &x.Blocked
}

// Seal, Digest and VerifyDigest: see sealObject, candidateOf and verifyObject.
func (x *BillingSettlementCatchUpWorkAttemptBlocked) Seal() error { return sealObject(x) }
func (x *BillingSettlementCatchUpWorkAttemptBlocked) Digest() (digest.Digest, error) {
	return candidateOf(x)
}
func (x *BillingSettlementCatchUpWorkAttemptBlocked) VerifyDigest() error { return verifyObject(x) }
