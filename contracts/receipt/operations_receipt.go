package receipt

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// OperationsProjectionAppliedReceipt is OperationsProjectionAppliedReceipt@1:
//
//	operationsProjectionAppliedReceiptRef / SchemaVersion
//	operationsProjectionAppliedReceiptDigestAlgorithmVersion = jcs-sha256-v1
//	operationsProjectionAppliedReceiptDigest
//	destination=core_operations
//	consumerName=operations_projector
//	projectionName / projectionVersion
//	eventId / eventType / eventSchemaVersion
//	eventEnvelopeDigestAlgorithmVersion / eventEnvelopeSha256
//	appliedAt
//
// The digest candidate covers every field except the repository-owned ref,
// appliedAt and the digest itself. destination and consumerName are fixed
// literals, emitted by ToJSON and checked by the decoder.
type OperationsProjectionAppliedReceipt struct {
	Header
	ProjectionName     string
	ProjectionVersion  int64
	EventType          string
	EventSchemaVersion string
	AppliedAt          time.Time
}

// NewOperationsProjectionAppliedReceipt builds and seals the receipt of event
// applied to the projection target of the event's frozen core_operations
// member (never a projection the projector chose itself).
func NewOperationsProjectionAppliedReceipt(ref string, target route.ProjectionTarget, event EventFacts, appliedAt time.Time) (*OperationsProjectionAppliedReceipt, error) {
	if !target.Required {
		return nil, fmt.Errorf("new operations receipt: %w: core_operations requires projectionTarget.state=required", ErrProjectionTargetMismatch)
	}
	r := &OperationsProjectionAppliedReceipt{
		Header:             event.header(ref),
		ProjectionName:     target.Name,
		ProjectionVersion:  target.Version,
		EventType:          event.EventType,
		EventSchemaVersion: event.EventSchemaVersion,
		AppliedAt:          appliedAt,
	}
	if err := r.Seal(); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeOperationsProjectionAppliedReceipt strictly decodes and validates the
// receipt (shape and refinement rules; VerifyDigest checks the digest).
func DecodeOperationsProjectionAppliedReceipt(doc []byte) (*OperationsProjectionAppliedReceipt, error) {
	return decode(doc, OperationsReceiptDef, readOperationsProjectionAppliedReceipt)
}

// readOperationsProjectionAppliedReceipt binds the receipt from a parsed object.
func readOperationsProjectionAppliedReceipt(o *strict.Object) *OperationsProjectionAppliedReceipt {
	x := &OperationsProjectionAppliedReceipt{Header: readHeader(o, prefixOperationsReceipt)}
	x.ProjectionName = o.String("projectionName")
	x.ProjectionVersion = o.IntMin("projectionVersion", 1)
	x.EventType = o.String("eventType")
	x.EventSchemaVersion = o.String("eventSchemaVersion")
	x.AppliedAt = o.Timestamp("appliedAt")
	return x
}

// ToJSON returns the full JSON form.
func (x *OperationsProjectionAppliedReceipt) ToJSON() map[string]any {
	m := map[string]any{
		"projectionName":     x.ProjectionName,
		"projectionVersion":  x.ProjectionVersion,
		"eventType":          x.EventType,
		"eventSchemaVersion": x.EventSchemaVersion,
		"appliedAt":          strict.FormatTimestamp(x.AppliedAt),
	}
	x.Header.put(m, prefixOperationsReceipt, route.CoreOperations)
	return m
}

// Validate checks the shape (the description, over ToJSON) and every
// refinement rule; not the digest value.
func (x *OperationsProjectionAppliedReceipt) Validate() error {
	return validateObject(x, OperationsReceiptDef)
}

// rules checks the refinement rules of a value whose shape is valid.
func (x *OperationsProjectionAppliedReceipt) rules(v *strict.Reader) {
	checkTime(v, "$.appliedAt", x.AppliedAt)
}

func (x *OperationsProjectionAppliedReceipt) selfAddress() (strict.SelfAddressed, *strict.Quadruple) {
	return operationsSelf, &x.Receipt
}

// Seal, Digest and VerifyDigest: see sealObject, candidateOf and verifyObject.
func (x *OperationsProjectionAppliedReceipt) Seal() error                    { return sealObject(x) }
func (x *OperationsProjectionAppliedReceipt) Digest() (digest.Digest, error) { return candidateOf(x) }
func (x *OperationsProjectionAppliedReceipt) VerifyDigest() error            { return verifyObject(x) }

// Projection returns the projection target the receipt states.
func (x *OperationsProjectionAppliedReceipt) Projection() route.ProjectionTarget {
	return route.Required(x.ProjectionName, x.ProjectionVersion)
}

func (x *OperationsProjectionAppliedReceipt) ReceiptDestination() route.Destination {
	return route.CoreOperations
}
func (x *OperationsProjectionAppliedReceipt) ReceiptConsumerName() string {
	return route.OperationsProjector
}
func (x *OperationsProjectionAppliedReceipt) ReceiptEventType() string { return x.EventType }
func (x *OperationsProjectionAppliedReceipt) ReceiptEventSchemaVersion() string {
	return x.EventSchemaVersion
}
func (x *OperationsProjectionAppliedReceipt) ReceiptIdentity() map[string]string {
	return identityMap(x.identity())
}

// identity: the Operations receipt carries no business identity; the event
// identity (id, type, schema, envelope digest) is compared by VerifyAck.
func (x *OperationsProjectionAppliedReceipt) identity() identitySet { return nil }
