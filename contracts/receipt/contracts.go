package receipt

import (
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Contract names (spec names) of the objects in this package.
const (
	KindActiveConsumerAck                             = "ActiveConsumerAck@1"
	KindOperationsProjectionAppliedReceipt            = "OperationsProjectionAppliedReceipt@1"
	KindMeteringInputProcessorConsumerReceipt         = "MeteringInputProcessorConsumerReceipt@1"
	KindMeteringInputWorkAttemptFinished              = "MeteringInputWorkAttemptFinished@1"
	KindMeteringInputWorkAttemptBlocked               = "MeteringInputWorkAttemptBlocked@1"
	KindEligibilityProcessingConflictEvidence         = "EligibilityProcessingConflictEvidence@1"
	KindProviderCostProcessingConflictEvidence        = "ProviderCostProcessingConflictEvidence@1"
	KindBillingSettlementCatchUpWorkAttemptBlocked    = "BillingSettlementCatchUpWorkAttemptBlocked@1"
	KindBillingFinalizationCoordinatorConsumerReceipt = "BillingFinalizationCoordinatorConsumerReceipt@1"
	KindBillingSettlementCatchUpConsumerReceipt       = "BillingSettlementCatchUpConsumerReceipt@1"
)

// Contract is one contract kind of this package, as the CLI registry
// (contracts/kinds) and the golden tests use it.
type Contract struct {
	Name string
	// Validate strictly decodes one document, checks every refinement rule
	// and, for content-addressed objects, that the embedded digest recomputes.
	Validate func(doc []byte) error
	// Digest strictly decodes one document (shape and rules) and returns the
	// digest of its candidate; nil for the ack, which is not content-addressed.
	Digest func(doc []byte) (digest.Digest, error)
}

// sealedObject is a decoded content-addressed object.
type sealedObject interface {
	Validate() error
	VerifyDigest() error
	Digest() (digest.Digest, error)
}

func sealedContract[T sealedObject](name string, decode func([]byte) (T, error)) Contract {
	return Contract{
		Name: name,
		Validate: func(doc []byte) error {
			x, err := decode(doc)
			if err != nil {
				return err
			}
			return x.VerifyDigest()
		},
		Digest: func(doc []byte) (digest.Digest, error) {
			x, err := decode(doc)
			if err != nil {
				return digest.Digest{}, err
			}
			return x.Digest()
		},
	}
}

// Contracts lists every contract kind of this package in a fixed order.
func Contracts() []Contract {
	return []Contract{
		{Name: KindActiveConsumerAck, Validate: func(doc []byte) error {
			_, err := DecodeActiveConsumerAck(doc)
			return err
		}},
		sealedContract(KindOperationsProjectionAppliedReceipt, DecodeOperationsProjectionAppliedReceipt),
		sealedContract(KindMeteringInputProcessorConsumerReceipt, DecodeMeteringInputProcessorConsumerReceipt),
		sealedContract(KindMeteringInputWorkAttemptFinished, DecodeMeteringInputWorkAttemptFinished),
		sealedContract(KindMeteringInputWorkAttemptBlocked, DecodeMeteringInputWorkAttemptBlocked),
		sealedContract(KindEligibilityProcessingConflictEvidence, DecodeEligibilityProcessingConflictEvidence),
		sealedContract(KindProviderCostProcessingConflictEvidence, DecodeProviderCostProcessingConflictEvidence),
		sealedContract(KindBillingSettlementCatchUpWorkAttemptBlocked, DecodeBillingSettlementCatchUpWorkAttemptBlocked),
		sealedContract(KindBillingFinalizationCoordinatorConsumerReceipt, DecodeBillingFinalizationCoordinatorConsumerReceipt),
		sealedContract(KindBillingSettlementCatchUpConsumerReceipt, DecodeBillingSettlementCatchUpConsumerReceipt),
	}
}

// SelfAddressing returns where a content-addressed kind keeps its own
// quadruple and which time field its candidate excludes (false for the ack
// and unknown names). Tests and tools use it to reseal documents.
func SelfAddressing(name string) (strict.SelfAddressed, bool) {
	s, ok := map[string]strict.SelfAddressed{
		KindOperationsProjectionAppliedReceipt:            operationsSelf,
		KindMeteringInputProcessorConsumerReceipt:         meteringSelf,
		KindMeteringInputWorkAttemptFinished:              workFinishedSelf,
		KindMeteringInputWorkAttemptBlocked:               workBlockedSelf,
		KindEligibilityProcessingConflictEvidence:         eligibilityEvidenceSelf,
		KindProviderCostProcessingConflictEvidence:        providerCostEvidenceSelf,
		KindBillingSettlementCatchUpWorkAttemptBlocked:    catchUpBlockedSelf,
		KindBillingFinalizationCoordinatorConsumerReceipt: coordinatorSelf,
		KindBillingSettlementCatchUpConsumerReceipt:       catchUpSelf,
	}[name]
	s.TimeFields = append([]string(nil), s.TimeFields...)
	return s, ok
}

// DecodeTree strictly decodes an already parsed value tree (the output of
// jcs.Parse, e.g. an object embedded in a larger document) with one of the
// DecodeX functions:
//
//	r, err := receipt.DecodeTree(v, receipt.DecodeMeteringInputProcessorConsumerReceipt)
func DecodeTree[T any](v any, decodeDoc func([]byte) (T, error)) (T, error) {
	doc, err := jcs.Marshal(v)
	if err != nil {
		var zero T
		return zero, err
	}
	return decodeDoc(doc)
}

// decode strictly decodes doc with the kind's description (shape, and the
// rules the description guards), then binds the parsed tree to the Go type
// and checks the refinement rules (finish). Binding cannot fail on a tree
// the description accepted; if it does, the drift is reported, never hidden.
func decode[T validator](doc []byte, def *schema.Def, bind func(*strict.Object) T) (T, error) {
	var zero T
	v, err := jcs.Parse(doc)
	if err != nil {
		return zero, err
	}
	shape := &strict.Reader{}
	schema.DecodeObject(shape.Root(v), schema.Ref{Def: def})
	if err := shape.Err(); err != nil {
		return zero, err
	}
	r := &strict.Reader{}
	o := r.Root(v)
	return finish(bind(o), o, r)
}
