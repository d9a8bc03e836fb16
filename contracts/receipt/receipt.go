package receipt

import (
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// Receipt is implemented by the four consumer receipts an ActiveConsumerAck@1
// can name: OperationsProjectionAppliedReceipt@1,
// MeteringInputProcessorConsumerReceipt@1,
// BillingFinalizationCoordinatorConsumerReceipt@1 and
// BillingSettlementCatchUpConsumerReceipt@1. The set is closed: only these
// four types implement it.
type Receipt interface {
	// ReceiptDestination is the receipt's fixed destination literal.
	ReceiptDestination() route.Destination
	// ReceiptConsumerName is the receipt's fixed consumerName literal.
	ReceiptConsumerName() string
	// ReceiptQuadruple is the receipt's own full quadruple.
	ReceiptQuadruple() strict.Quadruple
	// ReceiptEventID is the eventId the receipt acknowledges.
	ReceiptEventID() string
	// ReceiptEventType / ReceiptEventSchemaVersion are the event pair the
	// receipt states (a field or the literal of the selected source branch).
	ReceiptEventType() string
	ReceiptEventSchemaVersion() string
	// ReceiptEventEnvelopeDigest is eventEnvelopeDigestAlgorithmVersion + eventEnvelopeSha256.
	ReceiptEventEnvelopeDigest() digest.Digest
	// ReceiptIdentity is the business identity the receipt carries, by spec
	// field name, integers in decimal (empty for the Operations receipt).
	ReceiptIdentity() map[string]string
	// ToJSON returns the full JSON form.
	ToJSON() map[string]any
	// Validate checks shape and every refinement rule (not the digest).
	Validate() error
	// VerifyDigest recomputes the digest of the candidate.
	VerifyDigest() error
	// Digest returns the digest of the candidate (what Seal stores).
	Digest() (digest.Digest, error)

	identity() identitySet
}

// DecodeReceipt strictly decodes the receipt body bound to destination
// (shape and refinement rules; call VerifyDigest for the digest).
func DecodeReceipt(dest route.Destination, body []byte) (Receipt, error) {
	switch dest {
	case route.CoreOperations:
		return asReceipt(DecodeOperationsProjectionAppliedReceipt(body))
	case route.MeteringInputProcessor:
		return asReceipt(DecodeMeteringInputProcessorConsumerReceipt(body))
	case route.BillingFinalizationCoordinator:
		return asReceipt(DecodeBillingFinalizationCoordinatorConsumerReceipt(body))
	case route.BillingSettlementCatchUp:
		return asReceipt(DecodeBillingSettlementCatchUpConsumerReceipt(body))
	default:
		_, err := route.BindingOf(dest)
		return nil, err
	}
}

// asReceipt keeps a failed decode from becoming a non-nil interface holding a nil pointer.
func asReceipt[T Receipt](r T, err error) (Receipt, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// readReceiptRoute reads and checks the destination/consumerName literals every receipt carries.
func readReceiptRoute(o *strict.Object, dest route.Destination) {
	b, _ := route.BindingOf(dest)
	if got := o.String("destination"); got != "" && got != string(dest) {
		o.Fail("destination", ErrReceiptDestination, "want "+string(dest)+", got "+got)
	}
	if got := o.String("consumerName"); got != "" && got != b.ConsumerName {
		o.Fail("consumerName", ErrReceiptConsumer, "want "+b.ConsumerName+", got "+got)
	}
}

func putReceiptRoute(m map[string]any, dest route.Destination) {
	b, _ := route.BindingOf(dest)
	m["destination"] = string(dest)
	m["consumerName"] = b.ConsumerName
}

// Compile-time checks: the four receipts implement Receipt.
var (
	_ Receipt = (*OperationsProjectionAppliedReceipt)(nil)
	_ Receipt = (*MeteringInputProcessorConsumerReceipt)(nil)
	_ Receipt = (*BillingFinalizationCoordinatorConsumerReceipt)(nil)
	_ Receipt = (*BillingSettlementCatchUpConsumerReceipt)(nil)
)
