package receipt_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// delivery is one verified acknowledgement scenario: the event facts, the
// frozen member, the receipt body (JSON tree, sealed) and the receipt's
// self-addressing (so tests can reseal a mutated body independently).
type delivery struct {
	dest   route.Destination
	event  receipt.EventFacts
	member route.Member
	body   map[string]any
	self   strict.SelfAddressed
	// identityField is a required business identity field the receipt carries
	// at bodyIdentityPath ("" for the Operations receipt, which carries none).
	identityField    string
	bodyIdentityPath []string
}

func (d *delivery) reseal() {
	dg, err := d.self.Compute(digest.JCSSHA256V1, d.body)
	if err != nil {
		panic(err)
	}
	d.body[d.self.Prefix+"Digest"] = dg.Value
}

func (d *delivery) ack(t *testing.T) *receipt.ActiveConsumerAck {
	t.Helper()
	f := strict.Fields(d.self.Prefix)
	q := strict.Quadruple{
		Ref:                    d.body[f[0]].(string),
		SchemaVersion:          d.body[f[1]].(string),
		DigestAlgorithmVersion: digest.Algorithm(d.body[f[2]].(string)),
		Digest:                 d.body[f[3]].(string),
	}
	a, err := receipt.NewAck(d.dest, d.event.EventID, d.event.EnvelopeDigest, q)
	require.NoError(t, err)
	return a
}

func receiptDelivery(dest route.Destination, r receipt.Receipt, event receipt.EventFacts, prefix, timeField, identityField string, identityPath ...string) *delivery {
	return &delivery{
		dest:             dest,
		event:            event,
		member:           memberFor(dest, event.EventType, event.EventSchemaVersion),
		body:             r.ToJSON(),
		self:             strict.SelfAddressed{Prefix: prefix, TimeFields: []string{timeField}},
		identityField:    identityField,
		bodyIdentityPath: identityPath,
	}
}

// deliveries returns one valid scenario per destination (more per destination
// where the receipt has source branches), freshly built for each call.
func deliveries() []*delivery {
	out := []*delivery{
		receiptDelivery(route.CoreOperations, opsReceipt("verify"), opsEvent("verify"),
			"operationsProjectionAppliedReceipt", "appliedAt", ""),
	}
	return append(out, moreDeliveries()...)
}

// OB-DELIVER-4: a matching ack and receipt verify for every destination.
func TestVerifyAck_Accepts_OBDELIVER4(t *testing.T) {
	t.Parallel()
	for _, d := range deliveries() {
		t.Run(string(d.dest)+"/"+d.event.EventType, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, receipt.VerifyAck(d.event, d.member, d.ack(t), mustMarshal(d.body)))
			// The event may carry more identity than the receipt: only the
			// receipt's fields are compared.
			d.event.Identity["unrelatedPayloadField"] = "x"
			require.NoError(t, receipt.VerifyAck(d.event, d.member, d.ack(t), mustMarshal(d.body)))
		})
	}
}

type ackCase struct {
	name string
	want error
	// applies reports whether the case exists for the delivery (nil = always).
	applies func(d *delivery) bool
	// mutate changes the scenario; it returns the ack to verify (nil = d.ack).
	mutate func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck
}

func otherDestination(d route.Destination) route.Destination {
	for i, x := range route.Destinations {
		if x == d {
			return route.Destinations[(i+1)%len(route.Destinations)]
		}
	}
	panic("unknown destination")
}

func isOps(d *delivery) bool       { return d.dest == route.CoreOperations }
func notOps(d *delivery) bool      { return d.dest != route.CoreOperations }
func hasIdentity(d *delivery) bool { return d.identityField != "" }

// carriesTenant reports whether the receipt states the tenant group (and so projectId?).
func carriesTenant(d *delivery) bool {
	if _, ok := d.body["tenantKind"]; ok {
		return true
	}
	src, _ := d.body["source"].(map[string]any)
	_, ok := src["tenantKind"]
	return ok
}

var ackCases = []ackCase{
	{name: "member of another event pair", want: receipt.ErrMemberEventMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.member.EventType = "run.created@1.0"
		return nil
	}},
	{name: "member destination unknown", want: receipt.ErrDestinationMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		d.member.Destination = "core-operations"
		return a
	}},
	{name: "ack destination differs from member", want: receipt.ErrDestinationMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		a.Destination = otherDestination(d.dest)
		return a
	}},
	{name: "receipt destination differs from member", want: receipt.ErrDestinationMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.body["destination"] = string(otherDestination(d.dest))
		d.reseal()
		return nil
	}},
	{name: "member consumer not the destination's", want: receipt.ErrConsumerMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		b, _ := route.BindingOf(otherDestination(d.dest))
		d.member.ConsumerName = b.ConsumerName
		return nil
	}},
	{name: "ack consumer differs from member", want: receipt.ErrConsumerMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		b, _ := route.BindingOf(otherDestination(d.dest))
		a.ConsumerName = b.ConsumerName
		return a
	}},
	{name: "receipt consumer differs from member", want: receipt.ErrConsumerMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		b, _ := route.BindingOf(otherDestination(d.dest))
		d.body["consumerName"] = b.ConsumerName
		d.reseal()
		return nil
	}},
	{name: "ack branch of another destination", want: receipt.ErrReceiptTypeMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		b, _ := route.BindingOf(otherDestination(d.dest))
		a.AppliedReceipt.Kind = b.AckKind
		return a
	}},
	{name: "member expects another receipt type", want: receipt.ErrReceiptTypeMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		b, _ := route.BindingOf(otherDestination(d.dest))
		d.member.ExpectedReceiptType = b.ReceiptType
		return nil
	}},
	{name: "member expects another receipt schema", want: receipt.ErrReceiptSchemaMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.member.ExpectedReceiptSchemaVersion = "2"
		return nil
	}},
	{name: "ack names another receipt schema", want: receipt.ErrReceiptSchemaMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		a.AppliedReceipt.Receipt.SchemaVersion = "2"
		return a
	}},
	{name: "receipt body of another schema", want: receipt.ErrReceiptSchemaMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		d.body[d.self.Prefix+"SchemaVersion"] = "2"
		return a
	}},
	{name: "member projection target not the destination's", want: receipt.ErrProjectionTargetMismatch, applies: notOps, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.member.ProjectionTarget = opsTarget
		return nil
	}},
	{name: "member without projection target", want: receipt.ErrProjectionTargetMismatch, applies: isOps, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.member.ProjectionTarget = route.NotApplicable
		return nil
	}},
	{name: "receipt projection version differs from frozen member", want: receipt.ErrProjectionTargetMismatch, applies: isOps, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.body["projectionVersion"] = opsTarget.Version + 1 // a shadow rebuild's self-consistent receipt
		d.reseal()
		return nil
	}},
	{name: "receipt projection name differs from frozen member", want: receipt.ErrProjectionTargetMismatch, applies: isOps, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.body["projectionName"] = "shadow_run_view"
		d.reseal()
		return nil
	}},
	{name: "ack envelope algorithm differs from event", want: receipt.ErrEnvelopeAlgorithmMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		d.event.EnvelopeDigest.Algorithm = "jcs-sha256-v2"
		return a
	}},
	{name: "ack envelope digest differs from event", want: receipt.ErrEnvelopeDigestMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		a.EventEnvelopeDigest = dig("another envelope")
		return a
	}},
	{name: "receipt envelope digest differs from event", want: receipt.ErrEnvelopeDigestMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.body["eventEnvelopeSha256"] = hexOf("another envelope")
		d.reseal()
		return nil
	}},
	{name: "ack receipt ref differs from body", want: receipt.ErrReceiptQuadrupleMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		a.AppliedReceipt.Receipt.Ref = "another-receipt"
		return a
	}},
	{name: "ack receipt digest differs from resealed body", want: receipt.ErrReceiptQuadrupleMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		d.body["eventId"] = uuidOf("another event")
		d.reseal()
		return a
	}},
	{name: "receipt digest does not recompute", want: receipt.ErrReceiptDigestMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.body["eventEnvelopeSha256"] = hexOf("tampered")
		return nil // the ack keeps the body's (now stale) digest
	}},
	{name: "ack event id differs", want: receipt.ErrEventIdentityMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		a.EventID = uuidOf("another event")
		return a
	}},
	{name: "receipt event id differs", want: receipt.ErrEventIdentityMismatch, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.body["eventId"] = uuidOf("another event")
		d.reseal()
		return nil
	}},
	{name: "receipt body invalid", want: receipt.ErrReceiptInvalid, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.body["unexpected"] = true
		d.reseal()
		return nil
	}},
	{name: "ack receipt quadruple without digest", want: receipt.ErrAckInvalid, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		a := d.ack(t)
		a.AppliedReceipt.Receipt.Digest = ""
		return a
	}},
	{name: "business identity differs", want: receipt.ErrBusinessIdentityMismatch, applies: hasIdentity, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.event.Identity[d.identityField] = otherValue(d.event.Identity[d.identityField])
		return nil
	}},
	{name: "receipt business identity resealed to another value", want: receipt.ErrBusinessIdentityMismatch, applies: hasIdentity, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		m := path(d.body, d.bodyIdentityPath...)
		switch v := m[d.identityField].(type) {
		case string:
			m[d.identityField] = otherValue(v)
		case int64:
			m[d.identityField] = v + 1
		}
		d.reseal()
		return nil
	}},
	{name: "event lacks a required identity", want: receipt.ErrEventIdentityIncomplete, applies: hasIdentity, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		delete(d.event.Identity, d.identityField)
		return nil
	}},
	{name: "event has a projectId the receipt lacks", want: receipt.ErrBusinessIdentityMismatch, applies: func(d *delivery) bool {
		_, has := d.event.Identity["projectId"]
		return !has && carriesTenant(d)
	}, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		d.event.Identity["projectId"] = uuidOf("project-9")
		return nil
	}},
	{name: "receipt has a projectId the event lacks", want: receipt.ErrBusinessIdentityMismatch, applies: func(d *delivery) bool {
		_, has := d.event.Identity["projectId"]
		return has
	}, mutate: func(t *testing.T, d *delivery) *receipt.ActiveConsumerAck {
		delete(d.event.Identity, "projectId")
		return nil
	}},
}

// OB-DELIVER-4: every mismatch reason, with every destination. Clause
// OB-DELIVER-4.receipt-digest (the receipt body's digest recomputed): the
// case "receipt digest does not recompute". Each of these clauses is the
// only check that refuses its case (disabled, VerifyAck accepts):
// OB-DELIVER-4.member-event-pair ("member of another event pair"),
// OB-DELIVER-4.member-receipt-type ("member expects another receipt type"),
// OB-DELIVER-4.member-projection-required ("member projection target not
// the destination's"), OB-DELIVER-4.ack-event-id ("ack event id differs"),
// OB-DELIVER-4.ack-envelope and OB-DELIVER-4.envelope-digest ("ack envelope
// digest differs from event"), OB-DELIVER-4.envelope-algorithm ("ack
// envelope algorithm differs from event"), OB-DELIVER-4.receipt-quadruple
// ("ack receipt ref differs from body"),
// OB-DELIVER-4.receipt-projection-target ("receipt projection version/name
// differs from frozen member"), OB-DELIVER-4.receipt-event-id ("receipt
// event id differs"), OB-DELIVER-4.receipt-envelope ("receipt envelope
// digest differs from event"), OB-DELIVER-4.business-identity ("business
// identity differs", "receipt business identity resealed to another value").
func TestVerifyAck_Rejects_OBDELIVER4(t *testing.T) {
	t.Parallel()
	seen := map[string]map[route.Destination]bool{}
	for _, tc := range ackCases {
		seen[tc.name] = map[route.Destination]bool{}
		for _, d := range deliveries() {
			if tc.applies != nil && !tc.applies(d) {
				continue
			}
			seen[tc.name][d.dest] = true
			t.Run(tc.name+"/"+string(d.dest)+"/"+d.event.EventType+"/"+d.identityField, func(t *testing.T) {
				t.Parallel()
				ack := tc.mutate(t, d)
				if ack == nil {
					ack = d.ack(t)
				}
				err := receipt.VerifyAck(d.event, d.member, ack, mustMarshal(d.body))
				require.ErrorIs(t, err, tc.want)
				var ae *receipt.AckError
				require.ErrorAs(t, err, &ae)
				require.Equal(t, tc.want, ae.Reason)
			})
		}
	}
	// Every reason is exercised with all four destinations, except those
	// that exist only on one side of the Operations/non-Operations split.
	reasons := map[error]map[route.Destination]bool{}
	for _, tc := range ackCases {
		if reasons[tc.want] == nil {
			reasons[tc.want] = map[route.Destination]bool{}
		}
		for d := range seen[tc.name] {
			reasons[tc.want][d] = true
		}
	}
	for reason, dests := range reasons {
		if reason == receipt.ErrBusinessIdentityMismatch || reason == receipt.ErrEventIdentityIncomplete {
			// The Operations receipt carries no business identity.
			require.Len(t, dests, len(route.Destinations)-1, reason.Error())
			continue
		}
		require.Len(t, dests, len(route.Destinations), reason.Error())
	}
}

func TestVerifyAck_NilAck(t *testing.T) {
	t.Parallel()
	d := deliveries()[0]
	err := receipt.VerifyAck(d.event, d.member, nil, mustMarshal(d.body))
	require.ErrorIs(t, err, receipt.ErrAckInvalid)
}
