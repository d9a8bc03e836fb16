// Package route holds the closed vocabulary shared by the Delivery Set
// Definition, the receipts and the dispatcher: the four destinations, the one
// consumer each maps to, the receipt contract each destination must bind, and
// the projection target union. Literals are exact; there are no aliases.
package route

import (
	"errors"
	"fmt"
)

// Destination is one of the four canonical first-phase destinations (OB-DELIVER-1).
type Destination string

const (
	CoreOperations                 Destination = "core_operations"
	MeteringInputProcessor         Destination = "metering_input_processor"
	BillingFinalizationCoordinator Destination = "billing_finalization_coordinator"
	BillingSettlementCatchUp       Destination = "billing_settlement_catch_up"
)

// Destinations lists every destination in a fixed order.
var Destinations = []Destination{CoreOperations, MeteringInputProcessor, BillingFinalizationCoordinator, BillingSettlementCatchUp}

// Consumer names, one per destination.
const (
	OperationsProjector                    = "operations_projector"
	MeteringInputProcessorConsumer         = "metering_input_processor_consumer"
	BillingFinalizationCoordinatorConsumer = "billing_finalization_coordinator_consumer"
	BillingSettlementCatchUpConsumer       = "billing_settlement_catch_up_consumer"
)

// Receipt types (without schema suffix) and their schema version, one per destination.
const (
	OperationsProjectionAppliedReceipt            = "OperationsProjectionAppliedReceipt"
	MeteringInputProcessorConsumerReceipt         = "MeteringInputProcessorConsumerReceipt"
	BillingFinalizationCoordinatorConsumerReceipt = "BillingFinalizationCoordinatorConsumerReceipt"
	BillingSettlementCatchUpConsumerReceipt       = "BillingSettlementCatchUpConsumerReceipt"
	ReceiptSchemaVersion1                         = "1"
)

var (
	ErrUnknownDestination = errors.New("route: unknown destination")
	ErrConsumerMismatch   = errors.New("route: consumer name does not belong to the destination")
)

// Binding is what a destination must bind in a Delivery Set member (DS-4).
type Binding struct {
	ConsumerName         string
	ReceiptType          string
	ReceiptSchemaVersion string
	RequiresProjection   bool   // core_operations only
	AckKind              string // ActiveConsumerAck@1 appliedReceipt.kind
}

var bindings = map[Destination]Binding{
	CoreOperations:                 {OperationsProjector, OperationsProjectionAppliedReceipt, ReceiptSchemaVersion1, true, "operations_projection"},
	MeteringInputProcessor:         {MeteringInputProcessorConsumer, MeteringInputProcessorConsumerReceipt, ReceiptSchemaVersion1, false, "metering_input_processor"},
	BillingFinalizationCoordinator: {BillingFinalizationCoordinatorConsumer, BillingFinalizationCoordinatorConsumerReceipt, ReceiptSchemaVersion1, false, "billing_finalization_coordinator"},
	BillingSettlementCatchUp:       {BillingSettlementCatchUpConsumer, BillingSettlementCatchUpConsumerReceipt, ReceiptSchemaVersion1, false, "billing_settlement_catch_up"},
}

// ParseDestination accepts only the four exact literals.
func ParseDestination(s string) (Destination, error) {
	d := Destination(s)
	if _, ok := bindings[d]; !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownDestination, s)
	}
	return d, nil
}

// BindingOf returns the fixed binding of a destination.
func BindingOf(d Destination) (Binding, error) {
	b, ok := bindings[d]
	if !ok {
		return Binding{}, fmt.Errorf("%w: %q", ErrUnknownDestination, d)
	}
	return b, nil
}

// CheckConsumer verifies the one-to-one destination → consumer mapping.
func CheckConsumer(d Destination, consumer string) error {
	b, err := BindingOf(d)
	if err != nil {
		return err
	}
	if b.ConsumerName != consumer {
		return fmt.Errorf("%w: %s → %q (want %q)", ErrConsumerMismatch, d, consumer, b.ConsumerName)
	}
	return nil
}

// ProjectionTarget is the union
// { state=not_applicable } | { state=required; projectionName; projectionVersion }.
type ProjectionTarget struct {
	Required bool
	Name     string
	Version  int64
}

// NotApplicable is the projection target of non-Operations destinations.
var NotApplicable = ProjectionTarget{}

// Required returns a required projection target.
func Required(name string, version int64) ProjectionTarget {
	return ProjectionTarget{Required: true, Name: name, Version: version}
}

// JSON returns the target's JSON form.
func (p ProjectionTarget) JSON() map[string]any {
	if !p.Required {
		return map[string]any{"state": "not_applicable"}
	}
	return map[string]any{"state": "required", "projectionName": p.Name, "projectionVersion": p.Version}
}

// Member is one frozen Delivery Set member: the expectation a delivery row
// carries and an acknowledgement is verified against.
type Member struct {
	EventType                    string
	EventSchemaVersion           string
	Destination                  Destination
	ConsumerName                 string
	ExpectedReceiptType          string
	ExpectedReceiptSchemaVersion string
	ProjectionTarget             ProjectionTarget
	Mandatory                    bool
}
