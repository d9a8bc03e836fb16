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

// Header is what every consumer receipt states about itself and the event it
// acknowledges: its own quadruple (the ref is assigned by the owner's
// repository), its fixed destination and consumerName literals, the eventId
// and the event envelope digest. Embedded in the four receipts, it answers
// ReceiptQuadruple, ReceiptEventID, ReceiptEventEnvelopeDigest and (for the
// three receipts whose event pairs all have schema version 1)
// ReceiptEventSchemaVersion.
type Header struct {
	Receipt             strict.Quadruple
	EventID             string
	EventEnvelopeDigest digest.Digest
}

// header returns the header of a receipt with ref that acknowledges event.
func (e EventFacts) header(ref string) Header {
	return Header{Receipt: strict.Quadruple{Ref: ref}, EventID: e.EventID, EventEnvelopeDigest: e.EnvelopeDigest}
}

// readHeader binds the header fields of a receipt whose own quadruple has prefix.
func readHeader(o *strict.Object, prefix string) Header {
	h := Header{Receipt: readSelf(o, prefix)}
	o.String("destination") // checked by the description
	o.String("consumerName")
	h.EventID = o.UUID("eventId")
	h.EventEnvelopeDigest = o.DigestPair("eventEnvelopeDigestAlgorithmVersion", "eventEnvelopeSha256")
	return h
}

func (h Header) put(m map[string]any, prefix string, dest route.Destination) {
	b, _ := route.BindingOf(dest)
	h.Receipt.Put(m, prefix)
	m["destination"] = string(dest)
	m["consumerName"] = b.ConsumerName
	m["eventId"] = h.EventID
	putDigest(m, "eventEnvelopeDigestAlgorithmVersion", "eventEnvelopeSha256", h.EventEnvelopeDigest)
}

func (h *Header) ReceiptQuadruple() strict.Quadruple        { return h.Receipt }
func (h *Header) ReceiptEventID() string                    { return h.EventID }
func (h *Header) ReceiptEventEnvelopeDigest() digest.Digest { return h.EventEnvelopeDigest }
func (h *Header) ReceiptEventSchemaVersion() string         { return eventSchemaVersion1 }

// Compile-time checks: the four receipts implement Receipt.
var (
	_ Receipt = (*OperationsProjectionAppliedReceipt)(nil)
	_ Receipt = (*MeteringInputProcessorConsumerReceipt)(nil)
	_ Receipt = (*BillingFinalizationCoordinatorConsumerReceipt)(nil)
	_ Receipt = (*BillingSettlementCatchUpConsumerReceipt)(nil)
)
