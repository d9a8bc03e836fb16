package envelope_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

func indentJSON(t *testing.T, v any) []byte { return goldentest.Indent(t, v) }

// checkGolden byte-compares got with the file, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) { goldentest.Check(t, path, got) }

// CT-1, CT-4, DS-7: one golden envelope per exact pair (raw JSON, canonical
// bytes, digest); the raw golden decodes, re-canonicalizes to the canonical
// golden and re-digests to the digest golden.
func TestCT4GoldenEnvelopePerPair(t *testing.T) {
	t.Parallel()
	require.Len(t, envelope.Pairs(), 13)
	for _, p := range envelope.Pairs() {
		p, n := p, 1 // frozen vectors: eventId 00000000-0000-7000-8000-000000001001
		t.Run(p.EventType, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata", "golden", p.EventType)
			e := sample.Built(p.EventType, n)
			canonical, err := e.Canonical()
			require.NoError(t, err)
			d, err := e.Digest()
			require.NoError(t, err)
			checkGolden(t, filepath.Join(dir, "raw.json"), indentJSON(t, e.ToJSON()))
			checkGolden(t, filepath.Join(dir, "canonical.json"), canonical)
			checkGolden(t, filepath.Join(dir, "digest.txt"), []byte(d.String()+"\n"))

			// Idempotency: the raw golden decodes and re-canonicalizes identically.
			raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
			require.NoError(t, err)
			back, err := envelope.DecodeEnvelope(raw)
			require.NoError(t, err)
			again, err := back.Canonical()
			require.NoError(t, err)
			require.Equal(t, string(canonical), string(again))
			recanon, err := jcs.Canonicalize(canonical)
			require.NoError(t, err)
			require.Equal(t, string(canonical), string(recanon))
			require.NoError(t, back.VerifyDigest(d))
			sum, err := digest.OfCanonical(digest.JCSSHA256V1, canonical)
			require.NoError(t, err)
			require.Equal(t, d, sum)
		})
	}
}

// DS-7, OB-APPEND-4: the registry holds exactly the thirteen literals of the
// outbox document and rejects prefixes, wildcards, aliases and "latest".
func TestDS7PairRegistryIsExact(t *testing.T) {
	t.Parallel()
	want := [][2]string{
		{"run.created@2.0", "2.0"},
		{"wallet.reserved@2.0", "2.0"},
		{"billing.finalization.committed@1", "1"},
		{"billing.settlement-transition.committed@1", "1"},
		{"billing.late-settlement-exposure.case-requested@1", "1"},
		{"billing.case-resolution.applied@1", "1"},
		{"billing.late-settlement-command-result.committed@1", "1"},
		{"execution.attempt-eligibility.finalized@1", "1"},
		{"execution.run-finalization.closed@1", "1"},
		{"billing.finalization-reconciliation.case-requested@1", "1"},
		{"billing.finalization-reconciliation-resolution.applied@1", "1"},
		{"gateway.evidence-availability.current-changed@1", "1"},
		{"metering.settlement-input.current-changed@1", "1"},
	}
	require.Len(t, envelope.Pairs(), len(want))
	for _, w := range want {
		p, err := envelope.Pair(w[0], w[1])
		require.NoError(t, err, w[0])
		require.Equal(t, w[0], p.EventType)
		require.True(t, strings.HasSuffix(p.EventType, "@"+p.EventSchemaVersion))
	}
	for _, bad := range [][2]string{
		{"run.created", "2.0"},
		{"run.created@2", "2"},
		{"run.created@2.0", "latest"},
		{"run.created@latest", "latest"},
		{"run.*", "2.0"},
		{"run.created@*", "2.0"},
		{"Run.Created@2.0", "2.0"},
		{"run.created@2.0 ", "2.0"},
		{"run.created@1", "1"},
		{"run.created@2.0", "2"},
		{"wallet.reserved@2.0", "1"},
	} {
		_, err := envelope.Pair(bad[0], bad[1])
		require.ErrorIs(t, err, envelope.ErrUnknownEventPair, "%q %q", bad[0], bad[1])
	}
	// Sorted by (eventType, eventSchemaVersion).
	ps := envelope.Pairs()
	for i := 1; i < len(ps); i++ {
		require.Less(t, ps[i-1].EventType, ps[i].EventType)
	}
}

// CT-1: the envelope digest covers the whole envelope including the payload,
// and the digest fields are not members of the envelope.
func TestCT1EnvelopeDigestCoversPayload(t *testing.T) {
	t.Parallel()
	e := sample.Built(envelope.RunCreatedV2, 1)
	d1, err := e.Digest()
	require.NoError(t, err)
	changed := sample.Envelope(envelope.RunCreatedV2, 1)
	changed.Payload["runAdmissionManifestRef"] = "another-ref"
	e2, err := envelope.Build(changed)
	require.NoError(t, err)
	d2, err := e2.Digest()
	require.NoError(t, err)
	require.NotEqual(t, d1.Value, d2.Value)
	require.ErrorIs(t, e2.VerifyDigest(d1), digest.ErrMismatch)
	require.ErrorIs(t, e.VerifyDigest(digest.Digest{Algorithm: "sha256", Value: d1.Value}), digest.ErrUnknownAlgorithm)
	_, inside := e.ToJSON()["eventEnvelopeSha256"]
	require.False(t, inside)
}

// CT-1: occurredAt has exactly one text form; a nanosecond time and its
// microsecond truncation (what PostgreSQL returns) digest identically.
func TestCT1TimestampRoundTripsThroughMicroseconds(t *testing.T) {
	t.Parallel()
	a := sample.Envelope(envelope.WalletReservedV2, 1)
	a.OccurredAt = time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.FixedZone("x", 3600))
	b := a
	b.OccurredAt = a.OccurredAt.UTC().Truncate(time.Microsecond)
	ea, err := envelope.Build(a)
	require.NoError(t, err)
	eb, err := envelope.Build(b)
	require.NoError(t, err)
	da, _ := ea.Digest()
	db, _ := eb.Digest()
	require.Equal(t, da, db)
	require.Equal(t, "2026-01-02T02:04:05.678901Z", ea.ToJSON()["occurredAt"])
}

// CT-1: Canonical writes the envelope member by member; for every pair,
// with and without the optional members and an actor, and for values
// Marshal refuses, it answers exactly what jcs.Marshal(ToJSON()) answers.
func TestCT1CanonicalEqualsMarshalOfToJSON(t *testing.T) {
	t.Parallel()
	check := func(e envelope.Envelope) {
		t.Helper()
		want, wantErr := jcs.Marshal(e.ToJSON())
		got, err := e.Canonical()
		if wantErr != nil {
			require.ErrorIs(t, err, wantErr)
			return
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	for _, p := range envelope.Pairs() {
		e := sample.Envelope(p.EventType, 5)
		check(e)
		e.CausationID, e.OperationID, e.ProjectID = sample.ID(40), "", ""
		e.Actor = &envelope.Actor{Kind: envelope.ActorWorkforcePrincipal, WorkforcePrincipalID: "workforce:\"bob\"\u00e9\n"}
		check(e)
		e.TenantID = "bad \xff utf-8"
		check(e)
		e.TenantID, e.AggregateRevision = sample.TenantID, 1<<53
		check(e)
	}
}

// BuildCanonical hands producers the bytes it strictly decoded: for every
// pair, from an envelope that is not yet normalized (nanoseconds, another
// zone, Go int payload numbers), they equal the built envelope's canonical
// bytes and digest to its digest.
func TestCT1BuildCanonicalBytesAreTheBuiltEnvelopes(t *testing.T) {
	t.Parallel()
	for _, p := range envelope.Pairs() {
		e := sample.Envelope(p.EventType, 7)
		e.OccurredAt = time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.FixedZone("x", 3600))
		for k, v := range e.Payload {
			if n, ok := v.(int64); ok {
				e.Payload[k] = int(n)
			}
		}
		built, canonical, err := envelope.BuildCanonical(e)
		require.NoError(t, err, p.EventType)
		again, err := built.Canonical()
		require.NoError(t, err)
		require.Equal(t, string(again), string(canonical), p.EventType)
		want, err := built.Digest()
		require.NoError(t, err)
		got, err := digest.OfCanonical(envelope.DigestAlgorithm, canonical)
		require.NoError(t, err)
		require.Equal(t, want, got, p.EventType)
		viaBuild, err := envelope.Build(e)
		require.NoError(t, err)
		require.Equal(t, built, viaBuild)
	}
	_, _, err := envelope.BuildCanonical(envelope.Envelope{})
	require.Error(t, err)
}

// OB-DELIVER-4: the dispatcher reads the event's business identity from the
// stored bytes with StoredIdentity; for every pair it equals the strictly
// decoded envelope's Identity, and bytes that are not JSON, name another
// event or lack the tenant fields are rejected.
func TestOBDELIVER4StoredIdentityEqualsIdentity(t *testing.T) {
	t.Parallel()
	for _, p := range envelope.Pairs() {
		e := sample.Built(p.EventType, 3)
		canonical, err := e.Canonical()
		require.NoError(t, err)
		got, err := envelope.StoredIdentity(canonical, e.EventID, e.EventType, e.EventSchemaVersion)
		require.NoError(t, err, p.EventType)
		require.Equal(t, e.Identity(), got, p.EventType)
	}
	e := sample.Built(envelope.RunCreatedV2, 3)
	canonical, err := e.Canonical()
	require.NoError(t, err)
	doc := string(canonical)
	for _, c := range []struct {
		name, doc, eventID, eventType string
		want                          error
	}{
		{"truncated", doc[:len(doc)-1], e.EventID, e.EventType, jcs.ErrUnexpectedEOF},
		{"not an object", `[]`, e.EventID, e.EventType, strict.ErrNotObject},
		{"another event", doc, sample.ID(999), e.EventType, envelope.ErrStoredEventMismatch},
		{"another type", doc, e.EventID, envelope.WalletReservedV2, strict.ErrUnexpectedLiteral},
		{"unknown pair", doc, e.EventID, "run.created@9", envelope.ErrUnknownEventPair},
		{"no tenant", strings.Replace(doc, `"tenantId"`, `"tenantXd"`, 1), e.EventID, e.EventType, strict.ErrMissingField},
		{"bad workspace", strings.Replace(doc, `"workspaceId":"`, `"workspaceId":"X`, 1), e.EventID, e.EventType, strict.ErrInvalidUUID},
		{"payload not an object", strings.Replace(doc, `"payload":{`, `"payload":1,"payloadX":{`, 1), e.EventID, e.EventType, strict.ErrNotObject},
		{"unsafe payload integer", strings.Replace(doc, `"payload":{`, `"payload":{"n":1.5,`, 1), e.EventID, e.EventType, strict.ErrUnsafeInteger},
	} {
		_, err := envelope.StoredIdentity([]byte(c.doc), c.eventID, c.eventType, e.EventSchemaVersion)
		require.Error(t, err, c.name)
		if c.want != nil {
			require.ErrorIs(t, err, c.want, c.name)
		}
	}
}

// The receipts' VerifyAck compares receipt identity fields by name with
// Identity: tenant fields plus every top-level scalar payload field as text.
func TestIdentityRendersTenantAndScalarPayloadFields(t *testing.T) {
	t.Parallel()
	e := sample.Built(envelope.ExecutionRunFinalizationClosedV1, 1)
	id := e.Identity()
	require.Equal(t, "organization", id["tenantKind"])
	require.Equal(t, sample.TenantID, id["tenantId"])
	require.Equal(t, sample.WorkspaceID, id["workspaceId"])
	require.Equal(t, sample.ProjectID, id["projectId"])
	require.Equal(t, sample.RunID, id["runId"])
	require.Equal(t, "1", id["attemptCount"])
	require.Equal(t, "1", id["runExecutionFinalizationStateVersion"])
	require.Equal(t, "jcs-sha256-v1", id["attemptSetManifestDigestAlgorithmVersion"])
	for _, k := range []string{"closureOperationId", "billingReservationId", "billingAccountId", "runAdmissionManifestRef", "runExecutionFinalizationDigest", "attemptSetManifestRef"} {
		require.NotEmpty(t, id[k], k)
	}
	m := sample.Built(envelope.MeteringSettlementInputCurrentChangedV1, 1).Identity()
	require.Equal(t, "2", m["settlementInputStateVersion"])
	_, nested := m["predecessorSettlementInput"]
	require.False(t, nested)
	noProject := sample.Envelope(envelope.RunCreatedV2, 1)
	noProject.ProjectID = ""
	np, err := envelope.Build(noProject)
	require.NoError(t, err)
	_, has := np.Identity()["projectId"]
	require.False(t, has)
}

// CT-5: every payload description is well formed and generates; the aggregate
// rule of each pair matches its samples.
func TestCT5DescriptionsAreWellFormed(t *testing.T) {
	t.Parallel()
	require.NoError(t, schema.Validate(envelope.Def().Type))
	for _, p := range envelope.Pairs() {
		require.NoError(t, schema.Validate(p.Payload.Type), p.EventType)
		e := sample.Built(p.EventType, 1)
		id, rev := p.ExpectedAggregate(e.Payload)
		require.Equal(t, id, e.AggregateID)
		require.Equal(t, rev, e.AggregateRevision)
		require.Same(t, p, e.Pair())
	}
}

func TestDeriveIDIsVersion8AndStable(t *testing.T) {
	t.Parallel()
	id := envelope.SettlementDimensionID("a", "b", "c", "d", "e")
	require.Equal(t, id, envelope.SettlementDimensionID("a", "b", "c", "d", "e"))
	require.NotEqual(t, id, envelope.SettlementDimensionID("a", "b", "c", "d", "f"))
	require.Len(t, id, 36)
	require.Equal(t, byte('8'), id[14])
	require.Contains(t, "89ab", string(id[19]))
	require.NotEqual(t, envelope.FinalizationCaseRequestAggregateID("f", 1), envelope.FinalizationResolutionAggregateID("f", 1))
}

// --- negative artefacts ----------------------------------------------------

// Negative is one rejection artefact (see testdata/negative/manifest.json).
type Negative struct {
	Name          string `json:"name"`
	Requirement   string `json:"requirement"`
	Reason        string `json:"reason"`
	SchemaRejects bool   `json:"schemaRejects"`
}

var reasons = map[string]error{
	"strict.ErrUnknownField":                 strict.ErrUnknownField,
	"strict.ErrMissingField":                 strict.ErrMissingField,
	"strict.ErrWrongType":                    strict.ErrWrongType,
	"strict.ErrUnknownEnum":                  strict.ErrUnknownEnum,
	"strict.ErrUnexpectedLiteral":            strict.ErrUnexpectedLiteral,
	"strict.ErrUnsafeInteger":                strict.ErrUnsafeInteger,
	"strict.ErrOutOfRange":                   strict.ErrOutOfRange,
	"strict.ErrMixedUnion":                   strict.ErrMixedUnion,
	"strict.ErrInvalidUUID":                  strict.ErrInvalidUUID,
	"strict.ErrInvalidTimestamp":             strict.ErrInvalidTimestamp,
	"strict.ErrInvalidValue":                 strict.ErrInvalidValue,
	"jcs.ErrDuplicateKey":                    jcs.ErrDuplicateKey,
	"digest.ErrUnknownAlgorithm":             digest.ErrUnknownAlgorithm,
	"digest.ErrMissingAlgorithm":             digest.ErrMissingAlgorithm,
	"digest.ErrMalformedDigest":              digest.ErrMalformedDigest,
	"envelope.ErrUnknownEventPair":           envelope.ErrUnknownEventPair,
	"envelope.ErrEventSchemaVersionMismatch": envelope.ErrEventSchemaVersionMismatch,
	"envelope.ErrAggregateMismatch":          envelope.ErrAggregateMismatch,
	"envelope.ErrActorMismatch":              envelope.ErrActorMismatch,
	"envelope.ErrCausationSelf":              envelope.ErrCausationSelf,
	"envelope.ErrDerivedIDMismatch":          envelope.ErrDerivedIDMismatch,
	"envelope.ErrPayloadRule":                envelope.ErrPayloadRule,
}

type doc = map[string]any

type negativeCase struct {
	Negative
	eventType string
	mutate    func(m doc)
	raw       func(canonical []byte) []byte
}

func payload(m doc) doc { return m["payload"].(doc) }

func negativeCases() []negativeCase {
	run, wallet := envelope.RunCreatedV2, envelope.WalletReservedV2
	return []negativeCase{
		{Negative{"alias-event-type", "DS-7/OB-APPEND-4", "envelope.ErrUnknownEventPair", true}, run, func(m doc) { m["eventType"] = "run.created" }, nil},
		{Negative{"prefix-event-type", "DS-7/OB-APPEND-4", "envelope.ErrUnknownEventPair", true}, run, func(m doc) { m["eventType"] = "run.created@2" }, nil},
		{Negative{"wildcard-event-type", "DS-7/OB-APPEND-4", "envelope.ErrUnknownEventPair", true}, run, func(m doc) { m["eventType"] = "run.*" }, nil},
		{Negative{"latest-schema-version", "DS-7/OB-APPEND-4", "envelope.ErrEventSchemaVersionMismatch", true}, run, func(m doc) { m["eventSchemaVersion"] = "latest" }, nil},
		{Negative{"schema-version-not-suffix", "DS-7", "envelope.ErrEventSchemaVersionMismatch", true}, run, func(m doc) { m["eventSchemaVersion"] = "2" }, nil},
		{Negative{"unknown-envelope-field", "CT-2", "strict.ErrUnknownField", true}, run, func(m doc) { m["eventEnvelopeSha256"] = sample.Hex("x") }, nil},
		{Negative{"unknown-payload-field", "CT-2", "strict.ErrUnknownField", true}, run, func(m doc) { payload(m)["offering"] = "x" }, nil},
		{Negative{"missing-payload-field", "CT-2", "strict.ErrMissingField", true}, run, func(m doc) { delete(payload(m), "billingReservationId") }, nil},
		{Negative{"uppercase-event-id", "CT-2", "strict.ErrInvalidUUID", true}, run, func(m doc) { m["eventId"] = "0000000A-0000-7000-8000-00000000ABCD" }, nil},
		{Negative{"aggregate-revision-zero", "CT-2", "strict.ErrOutOfRange", true}, run, func(m doc) { m["aggregateRevision"] = int64(0) }, nil},
		{Negative{"aggregate-revision-unsafe", "CT-2", "strict.ErrUnsafeInteger", true}, run, func(m doc) { m["aggregateRevision"] = jcs.Number("9007199254740992") }, nil},
		{Negative{"aggregate-revision-fraction", "CT-2", "strict.ErrUnsafeInteger", false}, run, nil, func(c []byte) []byte {
			return bytes.Replace(c, []byte(`"aggregateRevision":1`), []byte(`"aggregateRevision":1.0`), 1)
		}},
		{Negative{"non-canonical-timestamp", "CT-1", "strict.ErrInvalidTimestamp", true}, run, func(m doc) { m["occurredAt"] = "2026-09-04T10:00:00.123Z" }, nil},
		{Negative{"money-as-number", "CT-2", "strict.ErrWrongType", true}, wallet, func(m doc) { payload(m)["reservedAmount"] = int64(1500) }, nil},
		{Negative{"money-non-canonical", "CT-2", "strict.ErrInvalidValue", true}, wallet, func(m doc) { payload(m)["reservedAmount"] = "1500.0" }, nil},
		{Negative{"bare-digest", "CT-3", "digest.ErrMissingAlgorithm", true}, run, func(m doc) { delete(payload(m), "runAdmissionManifestDigestAlgorithmVersion") }, nil},
		{Negative{"unknown-digest-algorithm", "CT-2", "digest.ErrUnknownAlgorithm", true}, run, func(m doc) { payload(m)["runAdmissionManifestDigestAlgorithmVersion"] = "sha256" }, nil},
		{Negative{"malformed-digest", "CT-3", "digest.ErrMalformedDigest", true}, run, func(m doc) {
			payload(m)["runAdmissionManifestDigest"] = strings.ToUpper(payload(m)["runAdmissionManifestDigest"].(string))
		}, nil},
		{Negative{"unknown-tenant-kind", "CT-2", "strict.ErrUnknownEnum", true}, run, func(m doc) { m["tenantKind"] = "org" }, nil},
		{Negative{"wrong-aggregate-type", "DS-7", "strict.ErrUnexpectedLiteral", true}, run, func(m doc) { m["aggregateType"] = "billing_reservation" }, nil},
		{Negative{"aggregate-id-not-run", "DS-7", "envelope.ErrAggregateMismatch", false}, run, func(m doc) { m["aggregateId"] = sample.ID(77) }, nil},
		{Negative{"closure-revision-not-1", "DS-7", "envelope.ErrAggregateMismatch", false}, envelope.ExecutionRunFinalizationClosedV1, func(m doc) { m["aggregateRevision"] = int64(2) }, nil},
		{Negative{"causation-missing", "DS-7", "strict.ErrMissingField", true}, envelope.BillingSettlementTransitionCommittedV1, func(m doc) { delete(m, "causationId") }, nil},
		{Negative{"causation-is-self", "CT-2", "envelope.ErrCausationSelf", false}, envelope.BillingSettlementTransitionCommittedV1, func(m doc) { m["causationId"] = m["eventId"] }, nil},
		{Negative{"actor-missing", "DS-7", "strict.ErrMissingField", true}, envelope.BillingFinalizationResolutionAppliedV1, func(m doc) { delete(m, "actor") }, nil},
		{Negative{"actor-differs-from-payload", "DS-7", "envelope.ErrActorMismatch", false}, envelope.BillingFinalizationResolutionAppliedV1, func(m doc) {
			m["actor"].(doc)["workforcePrincipalId"] = "workforce:mallory"
		}, nil},
		{Negative{"resolution-revision-2", "DS-7", "strict.ErrOutOfRange", true}, envelope.BillingFinalizationResolutionAppliedV1, func(m doc) { payload(m)["resolutionRevision"] = int64(2) }, nil},
		{Negative{"resolution-action-other", "DS-7", "strict.ErrUnexpectedLiteral", true}, envelope.BillingFinalizationResolutionAppliedV1, func(m doc) { payload(m)["action"] = "force_success" }, nil},
		{Negative{"predecessor-mixed-branch", "CT-2", "strict.ErrMixedUnion", true}, envelope.BillingFinalizationCaseRequestedV1, func(m doc) {
			payload(m)["predecessorCase"].(doc)["predecessorReconciliationGeneration"] = int64(1)
		}, nil},
		{Negative{"settlement-dimension-id-does-not-recompute", "DS-7", "envelope.ErrDerivedIDMismatch", false}, envelope.MeteringSettlementInputCurrentChangedV1, func(m doc) {
			payload(m)["settlementDimensionId"] = sample.ID(88)
			m["aggregateId"] = sample.ID(88)
		}, nil},
		{Negative{"settlement-predecessor-missing", "DS-7", "envelope.ErrPayloadRule", false}, envelope.MeteringSettlementInputCurrentChangedV1, func(m doc) {
			payload(m)["predecessorSettlementInput"] = doc{"state": "none"}
		}, nil},
		{Negative{"transition-skips-a-revision", "DS-7", "envelope.ErrPayloadRule", false}, envelope.BillingSettlementTransitionCommittedV1, func(m doc) {
			payload(m)["toSettlementStateRevision"] = int64(3)
		}, nil},
		{Negative{"release-all-with-settled-amount", "DS-7", "envelope.ErrPayloadRule", false}, envelope.BillingFinalizationCommittedV1, func(m doc) {
			payload(m)["billingFinalizationDecision"] = "release_all"
		}, nil},
		{Negative{"duplicate-key", "CT-2", "jcs.ErrDuplicateKey", false}, run, nil, func(c []byte) []byte {
			return bytes.Replace(c, []byte(`{"aggregateId":`), []byte(`{"aggregateRevision":1,"aggregateId":`), 1)
		}},
	}
}

// CT-2, CT-4, DS-7, OB-APPEND-4: every envelope rejection rule has a negative
// artefact rejected with its named reason.
func TestNegativeArtefacts(t *testing.T) {
	t.Parallel()
	var manifest []Negative
	for _, c := range negativeCases() {
		e := sample.Built(c.eventType, 1)
		canonical, err := e.Canonical()
		require.NoError(t, err)
		var body []byte
		if c.raw != nil {
			body = c.raw(canonical)
			require.NotEqual(t, string(canonical), string(body), c.Name)
		} else {
			v, err := jcs.Parse(canonical)
			require.NoError(t, err)
			c.mutate(v.(doc))
			body = indentJSON(t, goldentest.Encodable(v))
		}
		checkGolden(t, filepath.Join("testdata", "negative", c.Name+".json"), body)
		manifest = append(manifest, c.Negative)
	}
	checkGolden(t, filepath.Join("testdata", "negative", "manifest.json"), indentJSON(t, manifest))
	goldentest.CheckNegatives(t, filepath.Join("testdata", "negative"), reasons, func(b []byte) error {
		_, err := envelope.DecodeEnvelope(b)
		return err
	})
}
