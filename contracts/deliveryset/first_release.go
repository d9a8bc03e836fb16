package deliveryset

import (
	"fmt"
	"sort"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/route"
)

// FirstReleaseVersion is the deliverySetVersion FirstRelease assigns.
const FirstReleaseVersion = 1

// FirstReleaseRoutes is the exact first full release of the outbox document
// (DS-7): thirteen applicable pairs and, for each, its mandatory
// destinations — fourteen members in all.
var FirstReleaseRoutes = map[string][]route.Destination{
	envelope.RunCreatedV2:                            {route.CoreOperations},
	envelope.WalletReservedV2:                        {route.CoreOperations},
	envelope.BillingFinalizationCommittedV1:          {route.CoreOperations},
	envelope.BillingSettlementTransitionCommittedV1:  {route.CoreOperations},
	envelope.BillingLateExposureCaseRequestedV1:      {route.CoreOperations},
	envelope.BillingCaseResolutionAppliedV1:          {route.CoreOperations},
	envelope.BillingLateCommandResultCommittedV1:     {route.CoreOperations},
	envelope.BillingFinalizationCaseRequestedV1:      {route.CoreOperations},
	envelope.ExecutionRunFinalizationClosedV1:        {route.BillingFinalizationCoordinator},
	envelope.BillingFinalizationResolutionAppliedV1:  {route.BillingFinalizationCoordinator, route.CoreOperations},
	envelope.ExecutionAttemptEligibilityFinalizedV1:  {route.MeteringInputProcessor},
	envelope.GatewayAvailabilityCurrentChangedV1:     {route.MeteringInputProcessor},
	envelope.MeteringSettlementInputCurrentChangedV1: {route.BillingSettlementCatchUp},
}

// FirstRelease builds the sealed first full release definition
// (deliverySetVersion 1) whose core_operations members freeze the given
// active projection name and version.
func FirstRelease(projectionName string, projectionVersion int64) (*Definition, error) {
	return Build(FirstReleaseVersion, projectionName, projectionVersion)
}

// Build builds the sealed first-release member set under another
// deliverySetVersion, e.g. for a projection cutover (DS-8) that activates a
// new definition referencing a new projection version.
func Build(deliverySetVersion int64, projectionName string, projectionVersion int64) (*Definition, error) {
	if err := ProjectionNameText.Check(projectionName); err != nil || projectionVersion < 1 {
		return nil, fmt.Errorf("%w: %q version %d", ErrInvalidProjectionArgument, projectionName, projectionVersion)
	}
	d := &Definition{Version: deliverySetVersion, SchemaVersion: SchemaVersion1}
	for eventType, dests := range FirstReleaseRoutes {
		p, err := envelope.Pair(eventType, schemaVersionOf(eventType))
		if err != nil {
			return nil, err
		}
		d.ApplicableEvents = append(d.ApplicableEvents, EventKey{p.EventType, p.EventSchemaVersion})
		for _, dest := range dests {
			b, err := route.BindingOf(dest)
			if err != nil {
				return nil, err
			}
			target := route.NotApplicable
			if b.RequiresProjection {
				target = route.Required(projectionName, projectionVersion)
			}
			d.Members = append(d.Members, route.Member{
				EventType:                    p.EventType,
				EventSchemaVersion:           p.EventSchemaVersion,
				Destination:                  dest,
				ConsumerName:                 b.ConsumerName,
				ExpectedReceiptType:          b.ReceiptType,
				ExpectedReceiptSchemaVersion: b.ReceiptSchemaVersion,
				ProjectionTarget:             target,
				Mandatory:                    true,
			})
		}
	}
	Sort(d)
	if err := d.Seal(); err != nil {
		return nil, err
	}
	return d, nil
}

// Sort puts applicableEvents and members in their canonical order (DS-2).
func Sort(d *Definition) {
	sort.Slice(d.ApplicableEvents, func(i, j int) bool { return eventLess(d.ApplicableEvents[i], d.ApplicableEvents[j]) < 0 })
	sort.Slice(d.Members, func(i, j int) bool { return memberCmp(d.Members[i], d.Members[j], true) < 0 })
}

// CoversFirstRelease reports whether d contains every pair and every
// mandatory member of the first full release (DS-7, DS-9). A release may
// contain more exact pairs the contracts support.
func CoversFirstRelease(d *Definition) error {
	for eventType, dests := range FirstReleaseRoutes {
		sv := schemaVersionOf(eventType)
		members, err := d.MandatoryMembers(eventType, sv)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrFirstReleaseIncomplete, err)
		}
		for _, dest := range dests {
			found := false
			for _, m := range members {
				found = found || m.Destination == dest
			}
			if !found {
				return fmt.Errorf("%w: %s has no mandatory %s member", ErrFirstReleaseIncomplete, eventType, dest)
			}
		}
	}
	return nil
}

func schemaVersionOf(eventType string) string {
	for i := len(eventType) - 1; i >= 0; i-- {
		if eventType[i] == '@' {
			return eventType[i+1:]
		}
	}
	return ""
}
