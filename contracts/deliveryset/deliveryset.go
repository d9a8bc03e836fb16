// Package deliveryset is the DeliverySetDefinition contract (DS-1..DS-7): a
// strict, closed, content-addressed object that lists the exact event pairs a
// release supports and, for each, the frozen members (destination →
// consumer, expected receipt contract, projection target, mandatory) a
// producer must create delivery rows for in the same transaction as the
// event.
//
// deliverySetDefinitionSchemaVersion is the literal "1" (this package's
// decision: the outbox document writes DeliverySetDefinition@N without
// fixing N's spelling; schema versions of our contracts are decimal
// literals). A field or sort-semantics change is "2" (CT-6); a digest
// algorithm change is a new deliverySetDefinitionDigestAlgorithmVersion.
// deliverySetVersion is a positive safe integer chosen by the release.
//
// The digest candidate is the whole definition except
// deliverySetDefinitionDigest (DS-5). Registry metadata (status,
// activatedAt, sourceRelease) is never part of the definition.
//
// The shape (Def) is described once in package schema: it decodes documents
// and generates the JSON Schema and TypeScript. The cross-field rules (sort
// order, duplicates, counts, orphan members, destination bindings, digest)
// are checked by Validate, each with its own sentinel error.
package deliveryset

import (
	"errors"
	"fmt"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Kind is the contract name used by the kinds registry and the CLI.
const Kind = "DeliverySetDefinition"

// SchemaVersion1 is the only known deliverySetDefinitionSchemaVersion.
const SchemaVersion1 = "1"

// Typed reasons, one per rule. Shape violations (unknown field, unknown
// schema or algorithm version, bare digest, …) are the strict and digest
// sentinels; all errors are reported as *strict.FieldError with a JSON path.
var (
	ErrApplicableEventCount      = errors.New("deliveryset: applicableEventCount differs from the number of applicableEvents (DS-2)")
	ErrMemberCount               = errors.New("deliveryset: memberCount differs from the number of members (DS-2)")
	ErrApplicableEventsUnsorted  = errors.New("deliveryset: applicableEvents not sorted by (eventType, eventSchemaVersion) (DS-2)")
	ErrDuplicateApplicableEvent  = errors.New("deliveryset: duplicate applicable event (DS-2)")
	ErrMembersUnsorted           = errors.New("deliveryset: members not sorted by (eventType, eventSchemaVersion, destination, consumerName) (DS-2)")
	ErrDuplicateMember           = errors.New("deliveryset: duplicate member (DS-2)")
	ErrDestinationRebound        = errors.New("deliveryset: one (eventType, eventSchemaVersion, destination) bound to two consumers (DS-3)")
	ErrOrphanMember              = errors.New("deliveryset: member event is not in applicableEvents (DS-3)")
	ErrConsumerMismatch          = errors.New("deliveryset: consumerName is not the destination's consumer (DS-4, OB-DELIVER-1)")
	ErrReceiptMismatch           = errors.New("deliveryset: expected receipt type/schema is not the destination's registered receipt (DS-4)")
	ErrProjectionTargetMismatch  = errors.New("deliveryset: projection target branch does not match the destination (DS-4)")
	ErrVersionConflict           = errors.New("deliveryset: same deliverySetVersion with a different candidate or digest (DS-6)")
	ErrPairNotApplicable         = errors.New("deliveryset: event pair is not applicable in this definition (DS-9)")
	ErrFirstReleaseIncomplete    = errors.New("deliveryset: definition lacks a pair or member of the first full release (DS-7)")
	ErrInvalidProjectionArgument = errors.New("deliveryset: invalid projection name or version")
)

// EventKey is one applicable (eventType, eventSchemaVersion) pair.
type EventKey struct {
	EventType          string
	EventSchemaVersion string
}

// Definition is a decoded, validated DeliverySetDefinition.
type Definition struct {
	Version          int64  // deliverySetVersion
	SchemaVersion    string // deliverySetDefinitionSchemaVersion
	Digest           digest.Digest
	ApplicableEvents []EventKey
	Members          []route.Member
}

// Quadruple is the definition quadruple frozen on every event row.
type Quadruple struct {
	DeliverySetVersion                          int64
	DeliverySetDefinitionSchemaVersion          string
	DeliverySetDefinitionDigestAlgorithmVersion digest.Algorithm
	DeliverySetDefinitionDigest                 string
}

// Quadruple returns the definition quadruple.
func (d *Definition) Quadruple() Quadruple {
	return Quadruple{d.Version, d.SchemaVersion, d.Digest.Algorithm, d.Digest.Value}
}

// --- description -----------------------------------------------------------

var (
	eventTypeText = schema.Text{MaxLength: 128, Pattern: `^[a-z][a-z0-9.-]*@[0-9]+(\.[0-9]+)*$`}
	versionText   = schema.Text{MaxLength: 32, Pattern: `^[0-9]+(\.[0-9]+)*$`}
	// ProjectionNameText constrains projectionName.
	ProjectionNameText = schema.KeyText
)

// ApplicableEventDef describes one applicableEvents[] item.
var ApplicableEventDef = &schema.Def{
	Name: "DeliverySetApplicableEventV1",
	Doc:  "One exact applicable event pair (no prefix, wildcard, alias or latest).",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("eventType", eventTypeText, ""),
		schema.F("eventSchemaVersion", versionText, "the suffix of eventType after '@'"),
	)},
}

// ProjectionTargetDef describes the projection target union.
var ProjectionTargetDef = &schema.Def{
	Name: "ProjectionTargetV1",
	Doc:  "{ state=not_applicable } | { state=required; projectionName; projectionVersion }: required exactly for core_operations.",
	Type: schema.Union{Discriminator: "state", Branches: []schema.Branch{
		{Value: "not_applicable"},
		{Value: "required", Fields: schema.Fields(
			schema.F("projectionName", ProjectionNameText, ""),
			schema.F("projectionVersion", schema.Int{Min: 1}, ""),
		)},
	}},
}

func destinationNames() (dests, consumers, receipts []string) {
	for _, d := range route.Destinations {
		b, _ := route.BindingOf(d)
		dests = append(dests, string(d))
		consumers = append(consumers, b.ConsumerName)
		receipts = append(receipts, b.ReceiptType)
	}
	return
}

// MemberDef describes one members[] item.
var MemberDef = func() *schema.Def {
	dests, consumers, receipts := destinationNames()
	return &schema.Def{
		Name: "DeliverySetMemberV1",
		Doc:  "One frozen member: destination → consumer, the expected receipt contract and projection target.",
		Type: schema.Object{Fields: schema.Fields(
			schema.F("eventType", eventTypeText, ""),
			schema.F("eventSchemaVersion", versionText, ""),
			schema.F("destination", schema.Enum{Values: dests}, ""),
			schema.F("consumerName", schema.Enum{Values: consumers}, "the one consumer of the destination"),
			schema.F("expectedReceiptType", schema.Enum{Values: receipts}, "the destination's registered receipt type"),
			schema.F("expectedReceiptSchemaVersion", schema.SchemaVersion{Known: []string{route.ReceiptSchemaVersion1}}, ""),
			schema.F("projectionTarget", schema.Ref{Def: ProjectionTargetDef}, ""),
			schema.F("mandatory", schema.Bool{}, "mandatory members are exactly the delivery rows an append creates"),
		)},
	}
}()

// Def is the DeliverySetDefinition description.
var Def = &schema.Def{
	Name: "DeliverySetDefinitionV1",
	Doc:  "DeliverySetDefinition (deliverySetDefinitionSchemaVersion 1). Digest candidate: everything except deliverySetDefinitionDigest. Sort, count, membership, binding and digest rules are checked by the runtime validator.",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("deliverySetVersion", schema.Int{Min: 1}, ""),
		schema.F("deliverySetDefinitionSchemaVersion", schema.SchemaVersion{Known: []string{SchemaVersion1}}, ""),
		schema.DigestPairFields("deliverySetDefinitionDigestAlgorithmVersion", "deliverySetDefinitionDigest", "jcs-sha256-v1 over the definition without deliverySetDefinitionDigest"),
		schema.F("applicableEventCount", schema.Int{Min: 0}, "equals the number of applicableEvents"),
		schema.F("applicableEvents", schema.Array{Items: schema.Ref{Def: ApplicableEventDef}}, "sorted by (eventType, eventSchemaVersion), no duplicates"),
		schema.F("memberCount", schema.Int{Min: 0}, "equals the number of members"),
		schema.F("members", schema.Array{Items: schema.Ref{Def: MemberDef}}, "sorted by (eventType, eventSchemaVersion, destination, consumerName), no duplicates"),
	)},
}

// --- decoding --------------------------------------------------------------

// Decode strictly decodes and fully validates a DeliverySetDefinition
// document, including that its digest recomputes.
func Decode(doc []byte) (*Definition, error) {
	m, err := schema.DecodeDocument(doc, schema.Ref{Def: Def})
	if err != nil {
		return nil, err
	}
	d, err := fromMap(m)
	if err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

func fail(path string, err error, detail string) error {
	return &strict.FieldError{Path: path, Err: err, Detail: detail}
}

func fromMap(m map[string]any) (*Definition, error) {
	events, _ := m["applicableEvents"].([]any)
	members, _ := m["members"].([]any)
	if n := m["applicableEventCount"].(int64); n != int64(len(events)) {
		return nil, fail("$.applicableEventCount", ErrApplicableEventCount, fmt.Sprintf("%d != %d", n, len(events)))
	}
	if n := m["memberCount"].(int64); n != int64(len(members)) {
		return nil, fail("$.memberCount", ErrMemberCount, fmt.Sprintf("%d != %d", n, len(members)))
	}
	d := &Definition{
		Version:       m["deliverySetVersion"].(int64),
		SchemaVersion: m["deliverySetDefinitionSchemaVersion"].(string),
		Digest: digest.Digest{
			Algorithm: digest.Algorithm(m["deliverySetDefinitionDigestAlgorithmVersion"].(string)),
			Value:     m["deliverySetDefinitionDigest"].(string),
		},
	}
	for _, v := range events {
		e := v.(map[string]any)
		d.ApplicableEvents = append(d.ApplicableEvents, EventKey{e["eventType"].(string), e["eventSchemaVersion"].(string)})
	}
	for _, v := range members {
		x := v.(map[string]any)
		pt := x["projectionTarget"].(map[string]any)
		target := route.NotApplicable
		if pt["state"] == "required" {
			target = route.Required(pt["projectionName"].(string), pt["projectionVersion"].(int64))
		}
		d.Members = append(d.Members, route.Member{
			EventType:                    x["eventType"].(string),
			EventSchemaVersion:           x["eventSchemaVersion"].(string),
			Destination:                  route.Destination(x["destination"].(string)),
			ConsumerName:                 x["consumerName"].(string),
			ExpectedReceiptType:          x["expectedReceiptType"].(string),
			ExpectedReceiptSchemaVersion: x["expectedReceiptSchemaVersion"].(string),
			ProjectionTarget:             target,
			Mandatory:                    x["mandatory"].(bool),
		})
	}
	return d, nil
}

// --- encoding --------------------------------------------------------------

// MemberJSON returns the JSON form of one member.
func MemberJSON(m route.Member) map[string]any {
	return map[string]any{
		"eventType":                    m.EventType,
		"eventSchemaVersion":           m.EventSchemaVersion,
		"destination":                  string(m.Destination),
		"consumerName":                 m.ConsumerName,
		"expectedReceiptType":          m.ExpectedReceiptType,
		"expectedReceiptSchemaVersion": m.ExpectedReceiptSchemaVersion,
		"projectionTarget":             m.ProjectionTarget.JSON(),
		"mandatory":                    m.Mandatory,
	}
}

// Candidate returns the digest candidate: the whole definition except
// deliverySetDefinitionDigest (DS-5).
func (d *Definition) Candidate() map[string]any {
	events := make([]any, len(d.ApplicableEvents))
	for i, e := range d.ApplicableEvents {
		events[i] = map[string]any{"eventType": e.EventType, "eventSchemaVersion": e.EventSchemaVersion}
	}
	members := make([]any, len(d.Members))
	for i, m := range d.Members {
		members[i] = MemberJSON(m)
	}
	return map[string]any{
		"deliverySetVersion":                          d.Version,
		"deliverySetDefinitionSchemaVersion":          d.SchemaVersion,
		"deliverySetDefinitionDigestAlgorithmVersion": string(d.Digest.Algorithm),
		"applicableEventCount":                        int64(len(events)),
		"applicableEvents":                            events,
		"memberCount":                                 int64(len(members)),
		"members":                                     members,
	}
}

// ToJSON returns the full definition, digest included.
func (d *Definition) ToJSON() map[string]any {
	m := d.Candidate()
	m["deliverySetDefinitionDigest"] = d.Digest.Value
	return m
}

// Canonical returns the RFC 8785 canonical bytes of the full definition.
func (d *Definition) Canonical() ([]byte, error) { return jcs.Marshal(d.ToJSON()) }

// ComputeDigest digests the candidate with the definition's algorithm version.
func (d *Definition) ComputeDigest() (digest.Digest, error) {
	return digest.Of(d.Digest.Algorithm, d.Candidate())
}

// Seal sets the digest algorithm version (jcs-sha256-v1 when empty) and the
// digest, then validates the definition.
func (d *Definition) Seal() error {
	if d.Digest.Algorithm == "" {
		d.Digest.Algorithm = digest.JCSSHA256V1
	}
	got, err := d.ComputeDigest()
	if err != nil {
		return err
	}
	d.Digest = got
	return d.Validate()
}

// --- validation ------------------------------------------------------------

func eventLess(a, b EventKey) int {
	switch {
	case a.EventType != b.EventType:
		return cmp(a.EventType, b.EventType)
	default:
		return cmp(a.EventSchemaVersion, b.EventSchemaVersion)
	}
}

// cmp orders by UTF-16 code units like JCS; every literal here is ASCII, so
// this is byte order.
func cmp(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func memberCmp(a, b route.Member, withConsumer bool) int {
	if c := eventLess(EventKey{a.EventType, a.EventSchemaVersion}, EventKey{b.EventType, b.EventSchemaVersion}); c != 0 {
		return c
	}
	if c := cmp(string(a.Destination), string(b.Destination)); c != 0 || !withConsumer {
		return c
	}
	return cmp(a.ConsumerName, b.ConsumerName)
}

// Validate checks every rule of DS-1..DS-5 (and DS-7's exact pairs) on a
// definition and that its digest recomputes. Counts are checked by Decode
// (a Definition value has none of its own).
func (d *Definition) Validate() error {
	if d.Version < 1 || d.Version > jcs.MaxSafeInteger {
		return fail("$.deliverySetVersion", strict.ErrOutOfRange, fmt.Sprint(d.Version))
	}
	if d.SchemaVersion != SchemaVersion1 {
		return fail("$.deliverySetDefinitionSchemaVersion", strict.ErrUnknownSchemaVersion, fmt.Sprintf("%q", d.SchemaVersion))
	}
	if err := d.Digest.Validate(); err != nil {
		return fail("$.deliverySetDefinitionDigest", err, "")
	}
	applicable := map[EventKey]bool{}
	for i, e := range d.ApplicableEvents {
		path := fmt.Sprintf("$.applicableEvents[%d]", i)
		if i > 0 {
			switch c := eventLess(d.ApplicableEvents[i-1], e); {
			case c == 0:
				return fail(path, ErrDuplicateApplicableEvent, e.EventType)
			case c > 0:
				return fail(path, ErrApplicableEventsUnsorted, e.EventType)
			}
		}
		if _, err := envelope.Pair(e.EventType, e.EventSchemaVersion); err != nil {
			return fail(path, envelope.ErrUnknownEventPair, err.Error())
		}
		applicable[e] = true
	}
	for i, m := range d.Members {
		path := fmt.Sprintf("$.members[%d]", i)
		if i > 0 {
			prev := d.Members[i-1]
			switch c := memberCmp(prev, m, true); {
			case c == 0:
				return fail(path, ErrDuplicateMember, m.EventType+" → "+string(m.Destination))
			case c > 0:
				return fail(path, ErrMembersUnsorted, m.EventType+" → "+string(m.Destination))
			}
			if memberCmp(prev, m, false) == 0 {
				return fail(path, ErrDestinationRebound, fmt.Sprintf("%s → %s: %s and %s", m.EventType, m.Destination, prev.ConsumerName, m.ConsumerName))
			}
		}
	}
	for i, m := range d.Members {
		path := fmt.Sprintf("$.members[%d]", i)
		if !applicable[EventKey{m.EventType, m.EventSchemaVersion}] {
			return fail(path, ErrOrphanMember, m.EventType+" "+m.EventSchemaVersion)
		}
		if err := checkBinding(m); err != nil {
			return fail(path, err, m.EventType+" → "+string(m.Destination))
		}
	}
	got, err := d.ComputeDigest()
	if err != nil {
		return fail("$.deliverySetDefinitionDigestAlgorithmVersion", err, "")
	}
	if got.Value != d.Digest.Value {
		return fail("$.deliverySetDefinitionDigest", digest.ErrMismatch, fmt.Sprintf("recomputed %s, carried %s", got.Value, d.Digest.Value))
	}
	return nil
}

// checkBinding enforces DS-4 and OB-DELIVER-1 for one member.
func checkBinding(m route.Member) error {
	b, err := route.BindingOf(m.Destination)
	if err != nil {
		return err
	}
	switch {
	case m.ConsumerName != b.ConsumerName:
		return ErrConsumerMismatch
	case m.ExpectedReceiptType != b.ReceiptType || m.ExpectedReceiptSchemaVersion != b.ReceiptSchemaVersion:
		return ErrReceiptMismatch
	case m.ProjectionTarget.Required != b.RequiresProjection:
		return ErrProjectionTargetMismatch
	case m.ProjectionTarget.Required && (m.ProjectionTarget.Name == "" || m.ProjectionTarget.Version < 1):
		return ErrProjectionTargetMismatch
	case !m.ProjectionTarget.Required && (m.ProjectionTarget.Name != "" || m.ProjectionTarget.Version != 0):
		return ErrProjectionTargetMismatch
	}
	return nil
}

// --- lookups ---------------------------------------------------------------

// Applicable reports whether the exact pair is applicable.
func (d *Definition) Applicable(eventType, eventSchemaVersion string) bool {
	for _, e := range d.ApplicableEvents {
		if e.EventType == eventType && e.EventSchemaVersion == eventSchemaVersion {
			return true
		}
	}
	return false
}

// MandatoryMembers returns the mandatory members of an exact applicable pair
// (the delivery rows an append must create), in definition order. A pair
// the definition does not list is ErrPairNotApplicable (DS-9).
func (d *Definition) MandatoryMembers(eventType, eventSchemaVersion string) ([]route.Member, error) {
	if !d.Applicable(eventType, eventSchemaVersion) {
		return nil, fmt.Errorf("%w: %s %s in deliverySetVersion %d", ErrPairNotApplicable, eventType, eventSchemaVersion, d.Version)
	}
	var out []route.Member
	for _, m := range d.Members {
		if m.Mandatory && m.EventType == eventType && m.EventSchemaVersion == eventSchemaVersion {
			out = append(out, m)
		}
	}
	return out, nil
}

// Compare is the registry's insert-or-compare rule (DS-6): two definitions
// with the same deliverySetVersion must have the same schema version,
// algorithm, digest and canonical candidate.
func Compare(stored, incoming *Definition) error {
	if stored.Version != incoming.Version {
		return nil
	}
	a, err := jcs.Marshal(stored.ToJSON())
	if err != nil {
		return err
	}
	b, err := jcs.Marshal(incoming.ToJSON())
	if err != nil {
		return err
	}
	if string(a) != string(b) {
		return fmt.Errorf("%w: deliverySetVersion %d", ErrVersionConflict, stored.Version)
	}
	return nil
}

// DigestDocument strictly decodes the shape and counts of a definition
// document and returns the digest of its candidate, computed with the
// document's algorithm version, without requiring the carried digest to
// match (it lets a release author digest a draft that carries a placeholder).
func DigestDocument(doc []byte) (digest.Digest, error) {
	m, err := schema.DecodeDocument(doc, schema.Ref{Def: Def})
	if err != nil {
		return digest.Digest{}, err
	}
	d, err := fromMap(m)
	if err != nil {
		return digest.Digest{}, err
	}
	return d.ComputeDigest()
}
