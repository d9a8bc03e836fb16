package execution

import (
	"time"

	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// KindRunExecutionFinalizationReceipt is the Execution closure receipt of a
// Billing finalization (ADR-031 "三组完整验证", the first set).
const KindRunExecutionFinalizationReceipt = "RunExecutionFinalizationReceipt@1"

// ReadRunExecutionFinalizationV1 is the contract version of the directed
// read that issues the receipt.
const ReadRunExecutionFinalizationV1 = "readRunExecutionFinalization@1"

// PurposeBillingFinalization is the one purpose the receipt serves.
const PurposeBillingFinalization = "billing_finalization"

// Prefixes of the receipt and of the Billing input manifest it binds.
const (
	PrefixRunExecutionFinalizationReceipt = "runExecutionFinalizationReceipt"
	PrefixFinalizationInputManifest       = "finalizationInputManifest"
)

var finalizationReceiptSelf = strict.SelfAddressed{Prefix: PrefixRunExecutionFinalizationReceipt, TimeFields: []string{"validatedAt"}}

// RunExecutionFinalizationReceiptDef describes RunExecutionFinalizationReceipt@1.
var RunExecutionFinalizationReceiptDef = &schema.Def{Name: "RunExecutionFinalizationReceiptV1", Doc: "RunExecutionFinalizationReceipt@1: Execution proves, for one Billing finalization operation and input manifest, that the Run is irreversibly closed with exactly this attempt set (BI-1, EX-2).",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixRunExecutionFinalizationReceipt, "derived from the finalization operation; excluded from the digest candidate"),
		schema.F("readContractVersion", schema.Literal{Value: ReadRunExecutionFinalizationV1}, "the read that issued the receipt"),
		schema.F("purpose", schema.Literal{Value: PurposeBillingFinalization}, "the one purpose the receipt serves"),
		schema.F("billingFinalizationOperationId", schema.UUID{}, "the Billing finalization operation the receipt is bound to"),
		schema.Quad(PrefixFinalizationInputManifest, "the Billing FinalizationInputManifest@1 the receipt is bound to"),
		runClosureIdentity(),
		schema.F("closureOperationId", schema.UUID{}, ""),
		refQuad(PrefixRunExecutionFinalization, "the verified RunExecutionFinalizationFact@1"),
		schema.F("runExecutionFinalizationStateVersion", schema.Int{Min: 2, Max: 2}, "attempts_closed"),
		refQuad(PrefixRunAttemptSetManifest, "the verified RunAttemptSetManifest@1"),
		schema.F("attemptCount", schema.Int{Min: 0}, ""),
		schema.F("validatedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// RunExecutionFinalizationReceipt is RunExecutionFinalizationReceipt@1 —
// our definition of the "exactly one Execution Receipt" of ADR-031: the Run
// is irreversibly closed and its attempt set equals the one the Billing
// input manifest names. It echoes the purpose, the finalization operation
// and the input manifest quadruple it was issued for, so it cannot be
// replayed for another operation; it never references the validation bundle
// (the chain is manifest → receipts → bundle, no self-reference).
//
//	runExecutionFinalizationReceiptRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	readContractVersion = readRunExecutionFinalization@1, purpose = billing_finalization
//	billingFinalizationOperationId, finalizationInputManifest quadruple
//	tenant, billingAccountId, billingReservationId, runId, runAdmissionManifest quadruple
//	closureOperationId, runExecutionFinalization quadruple + state version 2
//	attemptSetManifest quadruple, attemptCount
//	validatedAt                                excluded from the digest candidate
type RunExecutionFinalizationReceipt struct {
	Receipt strict.Quadruple
	RunClosure
	FinalizationOperationID string
	InputManifest           strict.Quadruple
	ClosureOperationID      string
	Finalization            strict.Quadruple
	StateVersion            int64
	AttemptSet              strict.Quadruple
	AttemptCount            int64
	ValidatedAt             time.Time
}

func (*RunExecutionFinalizationReceipt) Kind() string { return KindRunExecutionFinalizationReceipt }
func (r *RunExecutionFinalizationReceipt) Quad() *strict.Quadruple {
	return &r.Receipt
}

// ToJSON returns the full JSON form.
func (r *RunExecutionFinalizationReceipt) ToJSON() map[string]any {
	out := map[string]any{
		"readContractVersion": ReadRunExecutionFinalizationV1, "purpose": PurposeBillingFinalization,
		"billingFinalizationOperationId": r.FinalizationOperationID, "closureOperationId": r.ClosureOperationID,
		"runExecutionFinalizationStateVersion": r.StateVersion, "attemptCount": r.AttemptCount,
		"validatedAt": strict.FormatTimestamp(r.ValidatedAt),
	}
	r.RunClosure.put(out)
	r.InputManifest.Put(out, PrefixFinalizationInputManifest)
	r.Finalization.Put(out, PrefixRunExecutionFinalization)
	r.AttemptSet.Put(out, PrefixRunAttemptSetManifest)
	r.Receipt.Put(out, PrefixRunExecutionFinalizationReceipt)
	return out
}

// DecodeRunExecutionFinalizationReceipt strictly decodes the receipt and
// verifies its digest.
func DecodeRunExecutionFinalizationReceipt(doc []byte) (*RunExecutionFinalizationReceipt, error) {
	m, err := decodeMap(KindRunExecutionFinalizationReceipt, doc)
	if err != nil {
		return nil, err
	}
	return &RunExecutionFinalizationReceipt{
		Receipt: quad(m, PrefixRunExecutionFinalizationReceipt), RunClosure: readClosure(m),
		FinalizationOperationID: str(m, "billingFinalizationOperationId"), InputManifest: quad(m, PrefixFinalizationInputManifest),
		ClosureOperationID: str(m, "closureOperationId"), Finalization: quad(m, PrefixRunExecutionFinalization),
		StateVersion: i64(m, "runExecutionFinalizationStateVersion"), AttemptSet: quad(m, PrefixRunAttemptSetManifest),
		AttemptCount: i64(m, "attemptCount"), ValidatedAt: timeOf(m, "validatedAt"),
	}, nil
}
