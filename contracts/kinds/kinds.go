// Package kinds lists the contract kinds the CLI can validate and digest by
// their spec names (e.g. "DeliverySetDefinition", "CanonicalEventEnvelope@1",
// "ActiveConsumerAck@1"). The list is explicit (All): adding a contract family
// means adding its slice there, nothing registers itself.
package kinds

import (
	"errors"
	"fmt"
	"sort"

	"github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/execution"
	"github.com/oceanway/core/contracts/meterfacts"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/contracts/settlement"
)

// ErrUnknownKind is returned for a kind name that is not listed.
var ErrUnknownKind = errors.New("kinds: unknown contract kind")

// Kind validates one document of a contract kind.
type Kind struct {
	Name string
	// Validate strictly decodes the document, checks every refinement rule
	// and, for content-addressed objects, that the embedded digest recomputes.
	Validate func(doc []byte) error
	// Digest returns the digest of the document's digest candidate (nil when
	// the kind is not content-addressed).
	Digest func(doc []byte) (digest.Digest, error)
}

// All lists every contract kind: the envelope and the Delivery Set Definition,
// then ActiveConsumerAck@1 and the receipts and facts of contracts/receipt,
// then the admission and execution identity objects of contracts/execution,
// then SettlementInputSnapshot@1 of contracts/settlement and the Metering
// facts of contracts/meterfacts, then the Billing objects of contracts/billing
// (the committed finalization, the finalization pipeline's manifest, bundle
// and decision, the settlement catch-up and transitions), then the
// finalization reconciliation case identity and resolution command chain of
// contracts/reconciliation.
func All() []Kind {
	kinds := append(append(append(envelopeKinds(), receiptKinds()...), executionKinds()...), settlementKinds()...)
	kinds = append(append(kinds, meterfactsKinds()...), billingKinds()...)
	return append(append(kinds, billingSettlementKinds()...), reconciliationKinds()...)
}

// reconciliationKinds: the case identity reservation and the resolution
// command chain, in chain order; the grant claims have no Digest (the grant
// is named by its JWS's sha256).
func reconciliationKinds() []Kind {
	var out []Kind
	for _, c := range reconciliation.Contracts() {
		out = append(out, Kind{Name: c.Name, Validate: c.Validate, Digest: c.Digest})
	}
	return out
}

// billingSettlementKinds: the settlement catch-up and post-finality
// transition objects of contracts/billing (BillingSettlementTransition@1,
// LateSettlementExposure@1, BillingSettlementCatchUpWork@1,
// BillingSettlementCatchUpFence@1, BillingSettlementCatchUpWorkAttemptFinished@1).
func billingSettlementKinds() []Kind {
	var out []Kind
	for _, c := range billing.SettlementContracts() {
		out = append(out, Kind{Name: c.Name, Validate: c.Validate, Digest: c.Digest})
	}
	return out
}

// settlementKinds: SettlementInputSnapshot@1; Validate checks shape, rules
// and the embedded digest, Digest prints the candidate digest.
func settlementKinds() []Kind {
	var out []Kind
	for _, c := range settlement.Contracts() {
		out = append(out, Kind{Name: c.Name, Validate: c.Validate, Digest: c.Digest})
	}
	return out
}

// billingKinds: the Billing owner's objects of contracts/billing:
// BillingFinalizationCommitted@1, then FinalizationInputManifest@1,
// FinalizationValidationBundle@1 and BillingFinalizationDecision@1;
// Validate checks the shape, the refinement rules and the embedded digest,
// Digest prints the candidate's.
func billingKinds() []Kind {
	out := []Kind{{Name: billing.KindBillingFinalizationCommitted, Validate: billing.ValidateCommitted, Digest: billing.DigestCommitted}}
	for _, c := range billing.Contracts() {
		out = append(out, Kind{Name: c.Name, Validate: c.Validate, Digest: c.Digest})
	}
	return out
}

// executionKinds: RunAdmissionManifest@1, RunExecutionToken@1 and
// AttemptExecutionManifest@1; Validate checks the shape and that the embedded
// digest recomputes, Digest prints the digest of the candidate.
func executionKinds() []Kind {
	var out []Kind
	for _, c := range execution.Contracts() {
		out = append(out, Kind{Name: c.Name, Validate: c.Validate, Digest: c.Digest})
	}
	return out
}

// meterfactsKinds: the Metering owner's own facts (ProviderCostFact@1,
// ProviderCostAvailabilityProcessingFact@1); Validate checks the shape, the
// refinement rules and that the embedded digest recomputes.
func meterfactsKinds() []Kind {
	var out []Kind
	for _, c := range meterfacts.Contracts() {
		out = append(out, Kind{Name: c.Name, Validate: c.Validate, Digest: c.Digest})
	}
	return out
}

func envelopeKinds() []Kind {
	return []Kind{
		// CanonicalEventEnvelope@1: validation covers the envelope and the
		// payload of its exact pair; the digest is the envelope digest
		// (jcs-sha256-v1 over the whole canonical envelope, payload included).
		{
			Name: envelope.Kind,
			Validate: func(doc []byte) error {
				_, err := envelope.DecodeEnvelope(doc)
				return err
			},
			Digest: func(doc []byte) (digest.Digest, error) {
				e, err := envelope.DecodeEnvelope(doc)
				if err != nil {
					return digest.Digest{}, err
				}
				return e.Digest()
			},
		},
		// DeliverySetDefinition: validation covers DS-1..DS-5 and DS-7's exact
		// pairs, including that the carried digest recomputes; the digest is
		// that of the candidate (everything except deliverySetDefinitionDigest).
		{
			Name: deliveryset.Kind,
			Validate: func(doc []byte) error {
				_, err := deliveryset.Decode(doc)
				return err
			},
			Digest: deliveryset.DigestDocument,
		},
	}
}

// receiptKinds: Validate checks shape, every refinement rule and, for
// content-addressed objects, the embedded digest; Digest prints the digest of
// the candidate (the ack is not content-addressed: no Digest).
func receiptKinds() []Kind {
	var out []Kind
	for _, c := range receipt.Contracts() {
		out = append(out, Kind{Name: c.Name, Validate: c.Validate, Digest: c.Digest})
	}
	return out
}

// Lookup returns the kind listed under name.
func Lookup(name string) (Kind, error) {
	for _, k := range All() {
		if k.Name == name {
			return k, nil
		}
	}
	return Kind{}, fmt.Errorf("%w: %q (known: %v)", ErrUnknownKind, name, Names())
}

// Names lists the kind names, sorted.
func Names() []string {
	var names []string
	for _, k := range All() {
		names = append(names, k.Name)
	}
	sort.Strings(names)
	return names
}
