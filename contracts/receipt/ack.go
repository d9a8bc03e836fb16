package receipt

import (
	"fmt"

	"github.com/oceanway/core/contracts/schema"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// ActiveConsumerAck@1 appliedReceipt.kind literals, one per destination.
const (
	AckKindOperationsProjection           = "operations_projection"
	AckKindMeteringInputProcessor         = "metering_input_processor"
	AckKindBillingFinalizationCoordinator = "billing_finalization_coordinator"
	AckKindBillingSettlementCatchUp       = "billing_settlement_catch_up"
)

// ackReceiptPrefix maps an appliedReceipt branch to the prefix of its receipt quadruple.
var ackReceiptPrefix = map[string]string{
	AckKindOperationsProjection:           prefixOperationsReceipt,
	AckKindMeteringInputProcessor:         prefixMeteringReceipt,
	AckKindBillingFinalizationCoordinator: prefixCoordinatorReceipt,
	AckKindBillingSettlementCatchUp:       prefixCatchUpReceipt,
}

// ActiveConsumerAck is ActiveConsumerAck@1 (OB-DELIVER-3):
//
//	destination / consumerName / eventId
//	eventEnvelopeDigestAlgorithmVersion / eventEnvelopeSha256
//	appliedReceipt = { kind=operations_projection; operationsProjectionAppliedReceipt quadruple }
//	               | { kind=metering_input_processor; meteringInputProcessorConsumerReceipt quadruple }
//	               | { kind=billing_finalization_coordinator; billingFinalizationCoordinatorConsumerReceipt quadruple }
//	               | { kind=billing_settlement_catch_up; billingSettlementCatchUpConsumerReceipt quadruple }
//
// The ack is a closed union, not a content-addressed object: it carries the
// full quadruple of the owner's receipt, never a free string. The branch must
// be the destination's own branch and the consumer the destination's one
// consumer.
type ActiveConsumerAck struct {
	Destination         route.Destination
	ConsumerName        string
	EventID             string
	EventEnvelopeDigest digest.Digest
	AppliedReceipt      AppliedReceipt
}

// AppliedReceipt is the appliedReceipt union: the branch kind and the full
// quadruple of the receipt it names.
type AppliedReceipt struct {
	Kind    string
	Receipt strict.Quadruple
}

// NewAck builds the ack of destination for a receipt quadruple; the consumer
// name and branch kind come from the destination's fixed binding.
func NewAck(dest route.Destination, eventID string, envelope digest.Digest, receipt strict.Quadruple) (*ActiveConsumerAck, error) {
	b, err := route.BindingOf(dest)
	if err != nil {
		return nil, err
	}
	a := &ActiveConsumerAck{
		Destination:         dest,
		ConsumerName:        b.ConsumerName,
		EventID:             eventID,
		EventEnvelopeDigest: envelope,
		AppliedReceipt:      AppliedReceipt{Kind: b.AckKind, Receipt: receipt},
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// AckFor builds the ack that acknowledges a sealed receipt.
func AckFor(r Receipt) (*ActiveConsumerAck, error) {
	return NewAck(r.ReceiptDestination(), r.ReceiptEventID(), r.ReceiptEventEnvelopeDigest(), r.ReceiptQuadruple())
}

// DecodeActiveConsumerAck strictly decodes and validates an ActiveConsumerAck@1 document.
func DecodeActiveConsumerAck(doc []byte) (*ActiveConsumerAck, error) {
	return decode(doc, AckDef, readActiveConsumerAck)
}

// readActiveConsumerAck binds an ack from a parsed object; errors are
// recorded on the object's reader. It does not close o.
func readActiveConsumerAck(o *strict.Object) *ActiveConsumerAck {
	a := &ActiveConsumerAck{
		Destination:         route.Destination(o.Enum("destination", destinationNames()...)),
		ConsumerName:        o.String("consumerName"),
		EventID:             o.UUID("eventId"),
		EventEnvelopeDigest: o.DigestPair("eventEnvelopeDigestAlgorithmVersion", "eventEnvelopeSha256"),
	}
	ar := o.Object("appliedReceipt")
	branches := make(map[string]func(*strict.Object), len(ackReceiptPrefix))
	for kind, prefix := range ackReceiptPrefix {
		branches[kind] = func(b *strict.Object) {
			a.AppliedReceipt.Receipt = readSelf(b, prefix)
		}
	}
	a.AppliedReceipt.Kind = ar.Union("kind", branches)
	return a
}

func destinationNames() []string {
	out := make([]string, len(route.Destinations))
	for i, d := range route.Destinations {
		out[i] = string(d)
	}
	return out
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (a *ActiveConsumerAck) Validate() error { return validateObject(a, AckDef) }

// rules checks the refinement rules of a value whose shape is valid.
func (a *ActiveConsumerAck) rules(v *strict.Reader) {
	b, err := route.BindingOf(a.Destination)
	if err != nil {
		v.Fail("$.destination", strict.ErrUnknownEnum, string(a.Destination))
		return
	}
	if a.ConsumerName != b.ConsumerName {
		v.Fail("$.consumerName", ErrAckConsumer, fmt.Sprintf("%s → %q (want %q)", a.Destination, a.ConsumerName, b.ConsumerName))
	}
	if _, known := ackReceiptPrefix[a.AppliedReceipt.Kind]; known && a.AppliedReceipt.Kind != b.AckKind {
		v.Fail("$.appliedReceipt.kind", ErrAckBranch, fmt.Sprintf("%s carries %q (want %q)", a.Destination, a.AppliedReceipt.Kind, b.AckKind))
		return
	}
	// The ack names the owner's receipt by its full quadruple, never a part of it.
	if err := a.AppliedReceipt.Receipt.Validate(); err != nil {
		v.Fail("$.appliedReceipt", err, "")
	}
}

// ToJSON returns the ack's JSON form.
func (a *ActiveConsumerAck) ToJSON() map[string]any {
	m := map[string]any{
		"destination":  string(a.Destination),
		"consumerName": a.ConsumerName,
		"eventId":      a.EventID,
	}
	putDigest(m, "eventEnvelopeDigestAlgorithmVersion", "eventEnvelopeSha256", a.EventEnvelopeDigest)
	ar := map[string]any{"kind": a.AppliedReceipt.Kind}
	a.AppliedReceipt.Receipt.Put(ar, ackReceiptPrefix[a.AppliedReceipt.Kind])
	m["appliedReceipt"] = ar
	return m
}

// validator is implemented by every contract object of this package.
type validator interface {
	ToJSON() map[string]any
	Validate() error
	rules(v *strict.Reader)
}

// finish closes a bound object and checks its refinement rules; the shape
// was checked by the description before binding.
func finish[T validator](x T, o *strict.Object, r *strict.Reader) (T, error) {
	var zero T
	o.Close()
	if err := r.Err(); err != nil {
		return zero, err
	}
	v := newReader()
	x.rules(v)
	if err := v.Err(); err != nil {
		return zero, err
	}
	return x, nil
}

// validateObject checks a Go-built object: its refinement rules (they name
// the broken rule of a value that also breaks the shape), then the shape of
// its JSON form against its description.
func validateObject(x validator, def *schema.Def) error {
	v := newReader()
	x.rules(v)
	if err := v.Err(); err != nil {
		return err
	}
	shape := &strict.Reader{}
	schema.DecodeObject(shape.Root(x.ToJSON()), schema.Ref{Def: def})
	return shape.Err()
}
