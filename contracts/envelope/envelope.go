package envelope

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Kind is the contract name of the envelope.
const Kind = "CanonicalEventEnvelope@1"

// DigestAlgorithm is the eventEnvelopeDigestAlgorithmVersion this envelope
// version is digested with.
const DigestAlgorithm = digest.JCSSHA256V1

// Tenant kinds (our definition; the outbox document names the field only).
const (
	TenantOrganization = "organization"
	TenantPersonal     = "personal"
)

// ActorWorkforcePrincipal is the only actor kind of this envelope version.
const ActorWorkforcePrincipal = "workforce_principal"

// Typed reasons of envelope validation. Shape errors are the strict and
// digest sentinels; every error is a *strict.FieldError naming the path.
var (
	ErrUnknownEventPair           = errors.New("envelope: unknown event pair: no prefix, wildcard, alias or latest (DS-7, OB-APPEND-4)")
	ErrEventSchemaVersionMismatch = fmt.Errorf("%w: eventSchemaVersion differs from the eventType suffix", ErrUnknownEventPair)
	ErrAggregateMismatch          = errors.New("envelope: aggregateId/aggregateRevision do not follow the pair's aggregate rule")
	ErrActorMismatch              = errors.New("envelope: envelope actor differs from the payload actor")
	ErrCausationSelf              = errors.New("envelope: causationId equals eventId")
	ErrDerivedIDMismatch          = errors.New("envelope: derived identifier does not recompute")
	ErrPayloadRule                = errors.New("envelope: payload violates a refinement rule of its pair")
	ErrStoredEventMismatch        = errors.New("envelope: stored envelope names another event than its row")
)

// Actor is the optional envelope actor.
type Actor struct {
	Kind                 string // ActorWorkforcePrincipal
	WorkforcePrincipalID string
}

// Envelope is one CanonicalEventEnvelope@1. The envelope digest
// (eventEnvelopeDigestAlgorithmVersion + eventEnvelopeSha256) is NOT a field
// of the envelope: it is computed over the envelope's canonical bytes and
// travels beside it (event row columns, acks, receipts).
type Envelope struct {
	EventID            string
	EventType          string
	EventSchemaVersion string
	AggregateType      string
	AggregateID        string
	AggregateRevision  int64
	TenantKind         string
	TenantID           string
	WorkspaceID        string
	ProjectID          string // optional; "" when absent
	CorrelationID      string
	CausationID        string // optional
	OperationID        string // optional
	Actor              *Actor // optional (mandatory for pairs with an ActorField)
	OccurredAt         time.Time
	// Payload is the decoded payload tree (string, int64, bool, []any,
	// map[string]any). Treat it as immutable.
	Payload map[string]any
}

// --- description (one source for decoding, JSON Schema and TypeScript) ---

// ActorDef is the envelope actor union.
var ActorDef = &schema.Def{
	Name: "EnvelopeActorV1",
	Doc:  "The envelope actor: the workforce principal behind a command-driven event.",
	Type: schema.Union{Discriminator: "kind", Branches: []schema.Branch{
		{Value: ActorWorkforcePrincipal, Fields: schema.F("workforcePrincipalId", schema.PrincipalText, "")},
	}},
}

// branchFields returns the envelope fields of one pair in decoding order.
func branchFields(p *EventPair) []schema.Field {
	causation := schema.Opt
	if p.CausationRequired {
		causation = schema.F
	}
	actor := schema.Opt
	if p.ActorField != "" {
		actor = schema.F
	}
	return schema.Fields(
		schema.F("eventId", schema.UUID{}, "lowercase UUID"),
		schema.F("eventType", schema.Literal{Value: p.EventType}, ""),
		schema.F("eventSchemaVersion", schema.Literal{Value: p.EventSchemaVersion}, "equals the eventType suffix after '@'"),
		schema.F("aggregateType", schema.Literal{Value: p.AggregateType}, ""),
		schema.F("aggregateId", schema.UUID{}, p.AggregateRule),
		schema.F("aggregateRevision", schema.Int{Min: 1}, ""),
		schema.F("tenantKind", schema.Enum{Values: []string{TenantOrganization, TenantPersonal}}, ""),
		schema.F("tenantId", schema.UUID{}, ""),
		schema.F("workspaceId", schema.UUID{}, ""),
		schema.Opt("projectId", schema.UUID{}, ""),
		schema.F("correlationId", schema.UUID{}, ""),
		causation("causationId", schema.UUID{}, "eventId of the causing event"),
		schema.Opt("operationId", schema.UUID{}, ""),
		actor("actor", schema.Ref{Def: ActorDef}, ""),
		schema.F("occurredAt", schema.Timestamp{}, "UTC, microseconds, Z"),
		schema.F("payload", schema.Ref{Def: p.Payload}, ""),
	)
}

// decodeFields holds, per pair, the fields decode reads after eventType and
// eventSchemaVersion (built once: the descriptions are immutable).
var decodeFields = func() map[*EventPair][]schema.Field {
	m := make(map[*EventPair][]schema.Field, len(pairs))
	for _, p := range pairs {
		f := branchFields(p)
		m[p] = append(f[:1:1], f[3:]...)
	}
	return m
}()

// Def returns the envelope description: a union over eventType with one
// branch per registered pair.
func Def() *schema.Def { return envelopeDef }

var envelopeDef = func() *schema.Def {
	branches := make([]schema.Branch, len(pairs))
	for i, p := range pairs {
		f := branchFields(p)
		branches[i] = schema.Branch{
			Value:  p.EventType,
			Fields: append(f[:1:1], f[2:]...), // the union adds the eventType discriminator
			Doc:    p.EventType + " (producer: " + p.Producer + ")",
		}
	}
	return &schema.Def{
		Name: "CanonicalEventEnvelopeV1",
		Doc:  "CanonicalEventEnvelope@1. Its digest (eventEnvelopeDigestAlgorithmVersion + eventEnvelopeSha256) is jcs-sha256-v1 over the canonical bytes of this whole object, payload included, and is carried beside it, never inside.",
		Type: schema.Union{Discriminator: "eventType", Branches: branches},
	}
}()

// --- decoding -------------------------------------------------------------

// DecodeEnvelope strictly decodes one envelope document: shape, exact pair,
// the pair's payload, aggregate rule and refinement rules. Errors are
// *jcs.ParseError (syntax, duplicate keys, I-JSON) or *strict.FieldError.
func DecodeEnvelope(doc []byte) (*Envelope, error) {
	root, r, err := strict.Parse(doc)
	if err != nil {
		return nil, err
	}
	return decode(root, r)
}

// DecodeValue decodes an already parsed value tree (from jcs.Parse).
func DecodeValue(v any) (*Envelope, error) {
	r := &strict.Reader{}
	return decode(r.Root(v), r)
}

func decode(o *strict.Object, r *strict.Reader) (*Envelope, error) {
	eventType := o.String("eventType")
	schemaVersion := o.String("eventSchemaVersion")
	if err := r.Err(); err != nil {
		return nil, err
	}
	p, err := Pair(eventType, schemaVersion)
	if err != nil {
		field := "eventType"
		if errors.Is(err, ErrEventSchemaVersionMismatch) {
			field = "eventSchemaVersion"
		}
		o.Fail(field, unwrapSentinel(err), err.Error())
		return nil, r.Err()
	}
	m := make(map[string]any, 16)
	schema.DecodeFields(o, decodeFields[p], m)
	o.Close()
	if err := r.Err(); err != nil {
		return nil, err
	}
	e := fromMap(p, m)
	if v := e.refine(p); v != nil {
		return nil, &strict.FieldError{Path: "$." + v.field, Err: v.err, Detail: v.detail}
	}
	return e, nil
}

func unwrapSentinel(err error) error {
	if errors.Is(err, ErrEventSchemaVersionMismatch) {
		return ErrEventSchemaVersionMismatch
	}
	return ErrUnknownEventPair
}

func fromMap(p *EventPair, m map[string]any) *Envelope {
	e := &Envelope{
		EventID:            m["eventId"].(string),
		EventType:          p.EventType,
		EventSchemaVersion: p.EventSchemaVersion,
		AggregateType:      p.AggregateType,
		AggregateID:        m["aggregateId"].(string),
		AggregateRevision:  m["aggregateRevision"].(int64),
		TenantKind:         m["tenantKind"].(string),
		TenantID:           m["tenantId"].(string),
		WorkspaceID:        m["workspaceId"].(string),
		CorrelationID:      m["correlationId"].(string),
		Payload:            m["payload"].(map[string]any),
	}
	e.ProjectID, _ = m["projectId"].(string)
	e.CausationID, _ = m["causationId"].(string)
	e.OperationID, _ = m["operationId"].(string)
	if a, ok := m["actor"].(map[string]any); ok {
		e.Actor = &Actor{Kind: a["kind"].(string), WorkforcePrincipalID: a["workforcePrincipalId"].(string)}
	}
	e.OccurredAt, _ = strict.ParseTimestamp(m["occurredAt"].(string))
	return e
}

// refine checks the rules that relate several fields.
func (e *Envelope) refine(p *EventPair) *ruleViolation {
	if e.CausationID != "" && e.CausationID == e.EventID {
		return &ruleViolation{"causationId", ErrCausationSelf, ""}
	}
	if p.refine != nil {
		if v := p.refine(e.Payload); v != nil {
			return &ruleViolation{"payload." + v.field, v.err, v.detail}
		}
	}
	id, rev := p.aggregate(e.Payload)
	if e.AggregateID != id {
		return &ruleViolation{"aggregateId", ErrAggregateMismatch, fmt.Sprintf("want %s (%s)", id, p.AggregateRule)}
	}
	if e.AggregateRevision != rev {
		return &ruleViolation{"aggregateRevision", ErrAggregateMismatch, fmt.Sprintf("want %d (%s)", rev, p.AggregateRule)}
	}
	if p.ActorField != "" && e.Actor.WorkforcePrincipalID != str(e.Payload, p.ActorField) {
		return &ruleViolation{"actor", ErrActorMismatch, "actor.workforcePrincipalId must equal payload." + p.ActorField}
	}
	return nil
}

// --- building and encoding ---------------------------------------------

// Build validates e exactly as DecodeEnvelope validates a document and
// returns the normalized envelope (occurredAt truncated to microseconds,
// payload numbers as int64). Producers build envelopes with it; the fields
// eventType, eventSchemaVersion and aggregateType must name the exact pair.
func Build(e Envelope) (*Envelope, error) {
	built, _, err := BuildCanonical(e)
	return built, err
}

// BuildCanonical is Build that also returns the canonical bytes it strictly
// decoded. They are the returned envelope's canonical form (decoding an
// accepted canonical document and encoding it again gives the same bytes,
// which FuzzDecodeEnvelope checks), so a producer stores and digests them
// (digest.OfCanonical with DigestAlgorithm) without encoding the envelope
// again.
func BuildCanonical(e Envelope) (*Envelope, []byte, error) {
	canonical, err := e.Canonical()
	if err != nil {
		return nil, nil, err
	}
	built, err := DecodeEnvelope(canonical)
	if err != nil {
		return nil, nil, err
	}
	return built, canonical, nil
}

// ToJSON returns the envelope's JSON value tree (a fresh map; the payload
// tree is deep-copied).
func (e *Envelope) ToJSON() map[string]any {
	m := map[string]any{
		"eventId":            e.EventID,
		"eventType":          e.EventType,
		"eventSchemaVersion": e.EventSchemaVersion,
		"aggregateType":      e.AggregateType,
		"aggregateId":        e.AggregateID,
		"aggregateRevision":  e.AggregateRevision,
		"tenantKind":         e.TenantKind,
		"tenantId":           e.TenantID,
		"workspaceId":        e.WorkspaceID,
		"correlationId":      e.CorrelationID,
		"occurredAt":         strict.FormatTimestamp(e.OccurredAt),
		"payload":            deepCopy(e.Payload),
	}
	if e.ProjectID != "" {
		m["projectId"] = e.ProjectID
	}
	if e.CausationID != "" {
		m["causationId"] = e.CausationID
	}
	if e.OperationID != "" {
		m["operationId"] = e.OperationID
	}
	if e.Actor != nil {
		m["actor"] = map[string]any{"kind": e.Actor.Kind, "workforcePrincipalId": e.Actor.WorkforcePrincipalID}
	}
	return m
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = deepCopy(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = deepCopy(val)
		}
		return out
	default:
		return v
	}
}

// Canonical returns the RFC 8785 canonical bytes of the whole envelope:
// exactly jcs.Marshal(e.ToJSON()), written member by member without building
// the JSON tree (every append encodes one envelope).
func (e *Envelope) Canonical() ([]byte, error) {
	if e.Payload == nil {
		return nil, &strict.FieldError{Path: "$.payload", Err: strict.ErrMissingField}
	}
	// Members in RFC 8785 order: the names are ASCII, so byte order.
	w := canonicalWriter{b: append(make([]byte, 0, 1024), '{')}
	if e.Actor != nil {
		w.name("actor")
		w.b = append(w.b, `{"kind":`...)
		w.value(jcs.AppendString(w.b, e.Actor.Kind))
		w.b = append(w.b, `,"workforcePrincipalId":`...)
		w.value(jcs.AppendString(w.b, e.Actor.WorkforcePrincipalID))
		w.b = append(w.b, '}')
	}
	w.str("aggregateId", e.AggregateID)
	w.name("aggregateRevision")
	w.value(jcs.AppendSafeInt(w.b, e.AggregateRevision))
	w.str("aggregateType", e.AggregateType)
	w.optStr("causationId", e.CausationID)
	w.str("correlationId", e.CorrelationID)
	w.str("eventId", e.EventID)
	w.str("eventSchemaVersion", e.EventSchemaVersion)
	w.str("eventType", e.EventType)
	w.str("occurredAt", strict.FormatTimestamp(e.OccurredAt))
	w.optStr("operationId", e.OperationID)
	w.name("payload")
	w.value(jcs.AppendMarshalAt(w.b, e.Payload, 1))
	w.optStr("projectId", e.ProjectID)
	w.str("tenantId", e.TenantID)
	w.str("tenantKind", e.TenantKind)
	w.str("workspaceId", e.WorkspaceID)
	if w.err != nil {
		return nil, w.err
	}
	return append(w.b, '}'), nil
}

// canonicalWriter writes the members of one object in the order given,
// keeping the first error.
type canonicalWriter struct {
	b     []byte
	err   error
	comma bool
}

// name writes a member name that needs no escaping.
func (w *canonicalWriter) name(n string) {
	if w.comma {
		w.b = append(w.b, ',')
	}
	w.comma = true
	w.b = append(append(append(w.b, '"'), n...), '"', ':')
}

func (w *canonicalWriter) value(b []byte, err error) {
	w.b = b
	if w.err == nil {
		w.err = err
	}
}

func (w *canonicalWriter) str(n, v string) {
	w.name(n)
	w.value(jcs.AppendString(w.b, v))
}

// optStr writes an optional member, absent when empty (as ToJSON omits it).
func (w *canonicalWriter) optStr(n, v string) {
	if v != "" {
		w.str(n, v)
	}
}

// Digest returns eventEnvelopeDigestAlgorithmVersion + eventEnvelopeSha256:
// jcs-sha256-v1 over the canonical bytes of the whole envelope, payload
// included (nothing is excluded: the envelope has no ref, no own digest and
// its occurredAt is part of the event).
func (e *Envelope) Digest() (digest.Digest, error) {
	return DigestOf(DigestAlgorithm, e)
}

// DigestOf digests the envelope with a registered algorithm version.
func DigestOf(alg digest.Algorithm, e *Envelope) (digest.Digest, error) {
	canonical, err := e.Canonical()
	if err != nil {
		return digest.Digest{}, err
	}
	if _, err := digest.ParseAlgorithm(string(alg)); err != nil {
		return digest.Digest{}, err
	}
	return digest.OfCanonical(alg, canonical)
}

// VerifyDigest recomputes the envelope digest with want's algorithm version
// and compares it (digest.ErrMismatch, digest.ErrUnknownAlgorithm, ...).
func (e *Envelope) VerifyDigest(want digest.Digest) error {
	if err := want.Validate(); err != nil {
		return err
	}
	got, err := DigestOf(want.Algorithm, e)
	if err != nil {
		return err
	}
	if got.Value != want.Value {
		return fmt.Errorf("%w: recomputed %s, carried %s", digest.ErrMismatch, got.Value, want.Value)
	}
	return nil
}

// Pair returns the registered pair of the envelope.
func (e *Envelope) Pair() *EventPair { return pairsByType[e.EventType] }

// Identity returns the business identity a receipt's source is compared with
// by field name: the envelope tenant fields (tenantKind, tenantId,
// workspaceId, and projectId when present) plus every top-level scalar
// payload field rendered as text (integers in decimal, booleans as
// true/false). Nested payload objects are not included.
func (e *Envelope) Identity() map[string]string {
	return identity(e.TenantKind, e.TenantID, e.WorkspaceID, e.ProjectID, e.Payload)
}

func identity(tenantKind, tenantID, workspaceID, projectID string, payload map[string]any) map[string]string {
	m := make(map[string]string, 4+len(payload))
	m["tenantKind"], m["tenantId"], m["workspaceId"] = tenantKind, tenantID, workspaceID
	if projectID != "" {
		m["projectId"] = projectID
	}
	for k, v := range payload {
		switch x := v.(type) {
		case string:
			m[k] = x
		case int64:
			m[k] = strconv.FormatInt(x, 10)
		case int:
			m[k] = strconv.Itoa(x)
		case jcs.Number:
			m[k] = string(x)
		case bool:
			m[k] = strconv.FormatBool(x)
		}
	}
	return m
}

// StoredIdentity returns Identity of a stored envelope without decoding it
// strictly: for bytes that DecodeEnvelope (through Build) accepted when they
// were stored, and that the store keeps immutable, so the full validation is
// not repeated per delivery. It still reads the bytes themselves: they must
// be I-JSON (*jcs.ParseError otherwise) whose root is an object naming
// exactly the stored row's eventId, eventType and eventSchemaVersion (a
// registered pair), with a valid tenantKind, tenantId, workspaceId, optional
// projectId and a payload object whose top-level numbers are safe integers
// (*strict.FieldError otherwise). Other fields are not checked.
func StoredIdentity(doc []byte, eventID, eventType, eventSchemaVersion string) (map[string]string, error) {
	o, r, err := strict.Parse(doc)
	if err != nil {
		return nil, err
	}
	if _, err := Pair(eventType, eventSchemaVersion); err != nil {
		o.Fail("eventType", unwrapSentinel(err), err.Error())
		return nil, r.Err()
	}
	if id := o.UUID("eventId"); id != "" && id != eventID {
		o.Fail("eventId", ErrStoredEventMismatch, fmt.Sprintf("stored %s, row %s", id, eventID))
	}
	o.Literal("eventType", eventType)
	o.Literal("eventSchemaVersion", eventSchemaVersion)
	kind := o.Enum("tenantKind", TenantOrganization, TenantPersonal)
	tenant, workspace := o.UUID("tenantId"), o.UUID("workspaceId")
	project, _ := o.OptUUID("projectId")
	payload, isObject := o.Raw("payload").(map[string]any)
	if !isObject && r.Err() == nil {
		o.Fail("payload", strict.ErrNotObject, "")
	}
	for k, v := range payload {
		if n, isNumber := v.(jcs.Number); isNumber {
			i, err := strict.ParseSafeInteger(string(n))
			if err != nil {
				o.Fail("payload."+k, err, string(n))
				continue
			}
			payload[k] = i
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return identity(kind, tenant, workspace, project, payload), nil
}
