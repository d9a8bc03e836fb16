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
	Receipt             strict.Quadruple // ref assigned by the Operations repository
	ProjectionName      string
	ProjectionVersion   int64
	EventID             string
	EventType           string
	EventSchemaVersion  string
	EventEnvelopeDigest digest.Digest
	AppliedAt           time.Time
}

// NewOperationsProjectionAppliedReceipt builds and seals the receipt of event
// applied to the projection target of the event's frozen core_operations
// member (never a projection the projector chose itself).
func NewOperationsProjectionAppliedReceipt(ref string, target route.ProjectionTarget, event EventFacts, appliedAt time.Time) (*OperationsProjectionAppliedReceipt, error) {
	if !target.Required {
		return nil, fmt.Errorf("new operations receipt: %w: core_operations requires projectionTarget.state=required", ErrProjectionTargetMismatch)
	}
	r := &OperationsProjectionAppliedReceipt{
		Receipt:             strict.Quadruple{Ref: ref},
		ProjectionName:      target.Name,
		ProjectionVersion:   target.Version,
		EventID:             event.EventID,
		EventType:           event.EventType,
		EventSchemaVersion:  event.EventSchemaVersion,
		EventEnvelopeDigest: event.EnvelopeDigest,
		AppliedAt:           appliedAt,
	}
	if err := r.Seal(); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeOperationsProjectionAppliedReceipt strictly decodes and validates the
// receipt (shape and refinement rules; VerifyDigest checks the digest).
func DecodeOperationsProjectionAppliedReceipt(doc []byte) (*OperationsProjectionAppliedReceipt, error) {
	o, r, err := strict.Parse(doc)
	if err != nil {
		return nil, err
	}
	return finish(ReadOperationsProjectionAppliedReceipt(o), o, r)
}

// ReadOperationsProjectionAppliedReceipt decodes the receipt from a parsed object.
func ReadOperationsProjectionAppliedReceipt(o *strict.Object) *OperationsProjectionAppliedReceipt {
	x := &OperationsProjectionAppliedReceipt{Receipt: readSelf(o, prefixOperationsReceipt)}
	readReceiptRoute(o, route.CoreOperations)
	x.ProjectionName = o.String("projectionName")
	x.ProjectionVersion = o.IntMin("projectionVersion", 1)
	x.EventID = o.UUID("eventId")
	x.EventType = o.String("eventType")
	x.EventSchemaVersion = o.String("eventSchemaVersion")
	x.EventEnvelopeDigest = o.DigestPair("eventEnvelopeDigestAlgorithmVersion", "eventEnvelopeSha256")
	x.AppliedAt = o.Timestamp("appliedAt")
	return x
}

// ToJSON returns the full JSON form.
func (x *OperationsProjectionAppliedReceipt) ToJSON() map[string]any {
	m := map[string]any{
		"projectionName":     x.ProjectionName,
		"projectionVersion":  x.ProjectionVersion,
		"eventId":            x.EventID,
		"eventType":          x.EventType,
		"eventSchemaVersion": x.EventSchemaVersion,
		"appliedAt":          strict.FormatTimestamp(x.AppliedAt),
	}
	x.Receipt.Put(m, prefixOperationsReceipt)
	putReceiptRoute(m, route.CoreOperations)
	putDigest(m, "eventEnvelopeDigestAlgorithmVersion", "eventEnvelopeSha256", x.EventEnvelopeDigest)
	return m
}

// Validate checks shape and refinement rules (not the digest value).
func (x *OperationsProjectionAppliedReceipt) Validate() error {
	v := newReader()
	validateSelf(v, prefixOperationsReceipt, x.Receipt)
	checkString(v, "$.projectionName", x.ProjectionName)
	checkMin(v, "$.projectionVersion", x.ProjectionVersion, 1)
	checkUUID(v, "$.eventId", x.EventID)
	checkString(v, "$.eventType", x.EventType)
	checkString(v, "$.eventSchemaVersion", x.EventSchemaVersion)
	checkDigest(v, "$.eventEnvelopeSha256", x.EventEnvelopeDigest)
	checkTime(v, "$.appliedAt", x.AppliedAt)
	return v.Err()
}

// Seal fills the default schema/algorithm versions, sets the digest of the
// candidate and validates the result. The ref must already be assigned.
func (x *OperationsProjectionAppliedReceipt) Seal() error {
	if err := sealSelf(operationsSelf, &x.Receipt, x.ToJSON); err != nil {
		return err
	}
	return x.Validate()
}

// Digest returns the digest of the candidate.
func (x *OperationsProjectionAppliedReceipt) Digest() (digest.Digest, error) {
	return candidateDigest(operationsSelf, x.Receipt, x.ToJSON())
}

// VerifyDigest recomputes the candidate digest and compares it with the carried one.
func (x *OperationsProjectionAppliedReceipt) VerifyDigest() error {
	return verifySelf(operationsSelf, x.ToJSON())
}

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
func (x *OperationsProjectionAppliedReceipt) ReceiptQuadruple() strict.Quadruple { return x.Receipt }
func (x *OperationsProjectionAppliedReceipt) ReceiptEventID() string             { return x.EventID }
func (x *OperationsProjectionAppliedReceipt) ReceiptEventType() string           { return x.EventType }
func (x *OperationsProjectionAppliedReceipt) ReceiptEventSchemaVersion() string {
	return x.EventSchemaVersion
}
func (x *OperationsProjectionAppliedReceipt) ReceiptEventEnvelopeDigest() digest.Digest {
	return x.EventEnvelopeDigest
}
func (x *OperationsProjectionAppliedReceipt) ReceiptIdentity() map[string]string {
	return identityMap(x.identity())
}

// identity: the Operations receipt carries no business identity; the event
// identity (id, type, schema, envelope digest) is compared by VerifyAck.
func (x *OperationsProjectionAppliedReceipt) identity() identitySet { return nil }
