package receipt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// VerifyAck reasons (OB-DELIVER-4). Every error VerifyAck returns is an
// *AckError whose Reason is exactly one of these.
var (
	// ErrAckInvalid: the ack is missing or fails ActiveConsumerAck@1 validation.
	ErrAckInvalid = errors.New("verify ack: invalid ActiveConsumerAck@1")
	// ErrMemberEventMismatch: the frozen member belongs to another event pair.
	ErrMemberEventMismatch = errors.New("verify ack: frozen member belongs to another event type/schema version")
	// ErrDestinationMismatch: member, ack and receipt destinations differ (or are unknown).
	ErrDestinationMismatch = errors.New("verify ack: destination mismatch")
	// ErrConsumerMismatch: member, ack and receipt consumer names differ or do not belong to the destination.
	ErrConsumerMismatch = errors.New("verify ack: consumer mismatch")
	// ErrReceiptTypeMismatch: the ack branch or the member's expected receipt type is not the destination's receipt type.
	ErrReceiptTypeMismatch = errors.New("verify ack: expected receipt type mismatch")
	// ErrReceiptSchemaMismatch: the receipt schema version differs from the member's expected receipt schema version.
	ErrReceiptSchemaMismatch = errors.New("verify ack: expected receipt schema version mismatch")
	// ErrProjectionTargetMismatch: the receipt's projection differs from the frozen member's projection target.
	ErrProjectionTargetMismatch = errors.New("verify ack: projection target mismatch")
	// ErrEnvelopeAlgorithmMismatch: ack or receipt envelope digest algorithm differs from the event's.
	ErrEnvelopeAlgorithmMismatch = errors.New("verify ack: event envelope digest algorithm version mismatch")
	// ErrEnvelopeDigestMismatch: ack or receipt envelope digest differs from the event's.
	ErrEnvelopeDigestMismatch = errors.New("verify ack: event envelope digest mismatch")
	// ErrReceiptInvalid: the receipt body fails strict decoding or a refinement rule.
	ErrReceiptInvalid = errors.New("verify ack: invalid receipt body")
	// ErrReceiptQuadrupleMismatch: the ack's receipt quadruple differs from the body's own quadruple.
	ErrReceiptQuadrupleMismatch = errors.New("verify ack: ack receipt quadruple differs from the receipt body")
	// ErrReceiptDigestMismatch: the receipt body's digest does not recompute.
	ErrReceiptDigestMismatch = errors.New("verify ack: receipt digest does not recompute")
	// ErrEventIdentityMismatch: ack or receipt eventId / eventType / eventSchemaVersion differ from the event.
	ErrEventIdentityMismatch = errors.New("verify ack: event identity mismatch")
	// ErrBusinessIdentityMismatch: a receipt business identity field differs from the event.
	ErrBusinessIdentityMismatch = errors.New("verify ack: receipt business identity differs from the event")
	// ErrEventIdentityIncomplete: the event lacks an identity field the receipt must be matched on (fail closed).
	ErrEventIdentityIncomplete = errors.New("verify ack: event facts lack a required identity field")
)

// EventFacts is the frozen identity of the event a delivery belongs to, as the
// dispatcher reads it from its own outbox row (never from the ack or receipt).
//
// Identity maps field names, spelled as the spec spells them (tenantKind,
// tenantId, workspaceId, projectId, billingReservationId, billingAccountId,
// runId, runStepId, executionAttemptId, chargeDimensionKey,
// gatewayDeploymentId, attemptExecutionManifestRef ... Digest,
// executionEligibilityFactRef ..., runAdmissionManifestRef ...,
// closureOperationId, ...), to their text value, integers in decimal: the
// envelope's tenant fields plus the payload's top-level scalar fields, i.e.
// contracts/envelope's (*Envelope).Identity(). For
// metering.settlement-input.current-changed@1 the current snapshot five-tuple
// is expected under settlementInputSnapshotRef / SchemaVersion /
// DigestAlgorithmVersion / Digest and settlementInputStateVersion.
type EventFacts struct {
	EventID            string
	EventType          string
	EventSchemaVersion string
	EnvelopeDigest     digest.Digest
	Identity           map[string]string
}

// AckError is the typed reason VerifyAck rejects an acknowledgement with.
type AckError struct {
	Reason error  // one of the VerifyAck sentinels
	Field  string // the compared field or path, when one applies
	Detail string
	Err    error // the underlying decoding/refinement/digest error, when one applies
}

func (e *AckError) Error() string {
	var b strings.Builder
	b.WriteString(e.Reason.Error())
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes the reason and the underlying error to errors.Is/As.
func (e *AckError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

func ackErr(reason error, field, detail string, cause error) error {
	return &AckError{Reason: reason, Field: field, Detail: detail, Err: cause}
}

// VerifyAck decides whether the dispatcher may accept ack for the delivery of
// event to the frozen member (OB-DELIVER-4). receiptBody is the full receipt
// the consumer returned with the ack (trusted transport or directed read). It
// returns nil or an *AckError:
//
//   - member vs event pair, member vs its destination binding;
//   - destination and consumer: member = ack = receipt;
//   - expected receipt type and schema: the ack branch is the member
//     destination's branch, the member's expected receipt type is the
//     destination's, and the receipt schema version equals the member's;
//   - projection target: Operations receipts must state exactly the member's
//     projectionTarget (the expected value is the frozen member's, never the
//     receipt's); other destinations require projectionTarget=not_applicable;
//   - envelope digest and algorithm: ack and receipt equal the event's;
//   - the ack's receipt quadruple equals the body's own quadruple, and the
//     body's digest recomputes;
//   - event identity: eventId (ack and receipt), eventType and
//     eventSchemaVersion (receipt) equal the event's;
//   - business identity: every identity field the receipt carries equals the
//     event's; fields the spec requires to match must be present in
//     event.Identity (ErrEventIdentityIncomplete otherwise).
func VerifyAck(event EventFacts, member route.Member, ack *ActiveConsumerAck, receiptBody []byte) error {
	if ack == nil {
		return ackErr(ErrAckInvalid, "", "no ack", nil)
	}
	// The frozen member is the expectation; check it belongs to this event and its destination.
	// guard OB-DELIVER-4.member-event-pair
	if member.EventType != event.EventType || member.EventSchemaVersion != event.EventSchemaVersion {
		return ackErr(ErrMemberEventMismatch, "", fmt.Sprintf("member %s/%s, event %s/%s", member.EventType, member.EventSchemaVersion, event.EventType, event.EventSchemaVersion), nil)
	}
	b, err := route.BindingOf(member.Destination)
	if err != nil {
		return ackErr(ErrDestinationMismatch, "member.destination", "", err)
	}
	if member.ConsumerName != b.ConsumerName {
		return ackErr(ErrConsumerMismatch, "member.consumerName", fmt.Sprintf("%q does not belong to %s", member.ConsumerName, member.Destination), nil)
	}
	if ack.Destination != member.Destination {
		return ackErr(ErrDestinationMismatch, "ack.destination", fmt.Sprintf("ack %q, member %q", ack.Destination, member.Destination), nil)
	}
	if ack.ConsumerName != member.ConsumerName {
		return ackErr(ErrConsumerMismatch, "ack.consumerName", fmt.Sprintf("ack %q, member %q", ack.ConsumerName, member.ConsumerName), nil)
	}
	// guard OB-DELIVER-4.member-receipt-type
	if member.ExpectedReceiptType != b.ReceiptType {
		return ackErr(ErrReceiptTypeMismatch, "member.expectedReceiptType", fmt.Sprintf("member %q, %s binds %q", member.ExpectedReceiptType, member.Destination, b.ReceiptType), nil)
	}
	if ack.AppliedReceipt.Kind != b.AckKind {
		return ackErr(ErrReceiptTypeMismatch, "ack.appliedReceipt.kind", fmt.Sprintf("ack %q, member expects %q (%s)", ack.AppliedReceipt.Kind, b.AckKind, member.ExpectedReceiptType), nil)
	}
	if member.ExpectedReceiptSchemaVersion != b.ReceiptSchemaVersion {
		return ackErr(ErrReceiptSchemaMismatch, "member.expectedReceiptSchemaVersion", fmt.Sprintf("member %q, contracts know %q", member.ExpectedReceiptSchemaVersion, b.ReceiptSchemaVersion), nil)
	}
	if got := ack.AppliedReceipt.Receipt.SchemaVersion; got != member.ExpectedReceiptSchemaVersion {
		return ackErr(ErrReceiptSchemaMismatch, "ack.appliedReceipt", fmt.Sprintf("ack %q, member %q", got, member.ExpectedReceiptSchemaVersion), nil)
	}
	// guard OB-DELIVER-4.member-projection-required
	if member.ProjectionTarget.Required != b.RequiresProjection {
		return ackErr(ErrProjectionTargetMismatch, "member.projectionTarget", fmt.Sprintf("%s requires projection: %v", member.Destination, b.RequiresProjection), nil)
	}
	// guard OB-DELIVER-4.ack-event-id
	if ack.EventID != event.EventID {
		return ackErr(ErrEventIdentityMismatch, "ack.eventId", fmt.Sprintf("ack %q, event %q", ack.EventID, event.EventID), nil)
	}
	// guard OB-DELIVER-4.ack-envelope
	if err := compareEnvelope("ack", ack.EventEnvelopeDigest, event.EnvelopeDigest); err != nil {
		return err
	}
	if err := ack.Validate(); err != nil {
		return ackErr(ErrAckInvalid, "", "", err)
	}

	rc, err := DecodeReceipt(member.Destination, receiptBody)
	switch {
	case errors.Is(err, ErrReceiptDestination):
		return ackErr(ErrDestinationMismatch, "receipt.destination", "", err)
	case errors.Is(err, ErrReceiptConsumer):
		return ackErr(ErrConsumerMismatch, "receipt.consumerName", "", err)
	case errors.Is(err, strict.ErrUnknownSchemaVersion):
		return ackErr(ErrReceiptSchemaMismatch, "receipt", "", err)
	case err != nil:
		return ackErr(ErrReceiptInvalid, "", "", err)
	}
	// guard OB-DELIVER-4.receipt-quadruple
	if q := rc.ReceiptQuadruple(); q != ack.AppliedReceipt.Receipt {
		return ackErr(ErrReceiptQuadrupleMismatch, "ack.appliedReceipt", fmt.Sprintf("ack %+v, receipt %+v", ack.AppliedReceipt.Receipt, q), nil)
	}
	// guard OB-DELIVER-4.receipt-digest
	if err := rc.VerifyDigest(); err != nil {
		return ackErr(ErrReceiptDigestMismatch, "receipt", "", err)
	}
	if rc.ReceiptDestination() != member.Destination {
		return ackErr(ErrDestinationMismatch, "receipt.destination", "", nil)
	}
	if rc.ReceiptConsumerName() != member.ConsumerName {
		return ackErr(ErrConsumerMismatch, "receipt.consumerName", "", nil)
	}
	if ops, ok := rc.(*OperationsProjectionAppliedReceipt); ok {
		// guard OB-DELIVER-4.receipt-projection-target
		if got, want := ops.Projection(), member.ProjectionTarget; got != want {
			return ackErr(ErrProjectionTargetMismatch, "receipt.projectionName/projectionVersion",
				fmt.Sprintf("receipt %s@%d, member %s@%d", got.Name, got.Version, want.Name, want.Version), nil)
		}
	}
	// guard OB-DELIVER-4.receipt-event-id
	if rc.ReceiptEventID() != event.EventID {
		return ackErr(ErrEventIdentityMismatch, "receipt.eventId", fmt.Sprintf("receipt %q, event %q", rc.ReceiptEventID(), event.EventID), nil)
	}
	// guard OB-DELIVER-4.receipt-event-type
	if rc.ReceiptEventType() != event.EventType || rc.ReceiptEventSchemaVersion() != event.EventSchemaVersion {
		return ackErr(ErrEventIdentityMismatch, "receipt.eventType/eventSchemaVersion",
			fmt.Sprintf("receipt %s/%s, event %s/%s", rc.ReceiptEventType(), rc.ReceiptEventSchemaVersion(), event.EventType, event.EventSchemaVersion), nil)
	}
	// guard OB-DELIVER-4.receipt-envelope
	if err := compareEnvelope("receipt", rc.ReceiptEventEnvelopeDigest(), event.EnvelopeDigest); err != nil {
		return err
	}
	return compareIdentity(rc.identity(), event.Identity)
}

func compareEnvelope(who string, got, want digest.Digest) error {
	// guard OB-DELIVER-4.envelope-algorithm
	if got.Algorithm != want.Algorithm {
		return ackErr(ErrEnvelopeAlgorithmMismatch, who+".eventEnvelopeDigestAlgorithmVersion", fmt.Sprintf("%s %q, event %q", who, got.Algorithm, want.Algorithm), nil)
	}
	// guard OB-DELIVER-4.envelope-digest
	if got.Value != want.Value {
		return ackErr(ErrEnvelopeDigestMismatch, who+".eventEnvelopeSha256", fmt.Sprintf("%s %s, event %s", who, got.Value, want.Value), nil)
	}
	return nil
}

func compareIdentity(fields identitySet, event map[string]string) error {
	for _, f := range fields {
		ev, has := event[f.name]
		switch f.mode {
		case identityRequired:
			if !has {
				return ackErr(ErrEventIdentityIncomplete, f.name, "the event facts do not carry it", nil)
			}
		case identitySymmetric:
			if !has && f.value == "" {
				continue
			}
		}
		// guard OB-DELIVER-4.business-identity
		if ev != f.value {
			return ackErr(ErrBusinessIdentityMismatch, f.name, fmt.Sprintf("receipt %q, event %q", f.value, ev), nil)
		}
	}
	return nil
}
