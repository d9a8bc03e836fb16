package deliveryset_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/goldentest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// Golden projection target of the first release vectors.
const (
	goldenProjectionName    = "operations_read_model"
	goldenProjectionVersion = 1
)

func indentJSON(t *testing.T, v any) []byte { return goldentest.Indent(t, goldentest.Encodable(v)) }

func checkGolden(t *testing.T, path string, got []byte) { goldentest.Check(t, path, got) }

func firstRelease(t *testing.T) *deliveryset.Definition {
	t.Helper()
	d, err := deliveryset.FirstRelease(goldenProjectionName, goldenProjectionVersion)
	require.NoError(t, err)
	return d
}

// DS-7, CT-4: the first full release has exactly 13 applicable pairs and 14
// mandatory members; raw JSON, canonical bytes and digest are golden and stable.
func TestDS7FirstReleaseGolden(t *testing.T) {
	t.Parallel()
	d := firstRelease(t)
	require.Len(t, d.ApplicableEvents, 13)
	require.Len(t, d.Members, 14)
	for _, m := range d.Members {
		require.True(t, m.Mandatory)
	}
	canonical, err := d.Canonical()
	require.NoError(t, err)
	dir := filepath.Join("testdata", "golden", "first-release")
	checkGolden(t, filepath.Join(dir, "raw.json"), indentJSON(t, d.ToJSON()))
	checkGolden(t, filepath.Join(dir, "canonical.json"), canonical)
	checkGolden(t, filepath.Join(dir, "digest.txt"), []byte(d.Digest.String()+"\n"))

	raw, err := os.ReadFile(filepath.Join(dir, "raw.json"))
	require.NoError(t, err)
	back, err := deliveryset.Decode(raw)
	require.NoError(t, err)
	again, err := back.Canonical()
	require.NoError(t, err)
	require.Equal(t, string(canonical), string(again))
	recanon, err := jcs.Canonicalize(canonical)
	require.NoError(t, err)
	require.Equal(t, string(canonical), string(recanon))

	// Stable across runs: building again yields the same digest.
	d2 := firstRelease(t)
	require.Equal(t, d.Digest, d2.Digest)
	require.NoError(t, deliveryset.CoversFirstRelease(d))
	require.NoError(t, deliveryset.Compare(d, d2))
}

// DS-7: every pair's members are exactly the ones the outbox document lists.
func TestDS7FirstReleaseMembers(t *testing.T) {
	t.Parallel()
	d := firstRelease(t)
	count := map[route.Destination]int{}
	for _, p := range envelope.Pairs() {
		members, err := d.MandatoryMembers(p.EventType, p.EventSchemaVersion)
		require.NoError(t, err)
		require.Equal(t, len(deliveryset.FirstReleaseRoutes[p.EventType]), len(members), p.EventType)
		for _, m := range members {
			count[m.Destination]++
			b, err := route.BindingOf(m.Destination)
			require.NoError(t, err)
			require.Equal(t, b.ConsumerName, m.ConsumerName)
			require.Equal(t, b.ReceiptType, m.ExpectedReceiptType)
			require.Equal(t, "1", m.ExpectedReceiptSchemaVersion)
			if m.Destination == route.CoreOperations {
				require.Equal(t, route.Required(goldenProjectionName, goldenProjectionVersion), m.ProjectionTarget)
			} else {
				require.Equal(t, route.NotApplicable, m.ProjectionTarget)
			}
		}
	}
	require.Equal(t, map[route.Destination]int{
		route.CoreOperations:                 9,
		route.BillingFinalizationCoordinator: 2,
		route.MeteringInputProcessor:         2,
		route.BillingSettlementCatchUp:       1,
	}, count)
	members, err := d.MandatoryMembers(envelope.BillingFinalizationResolutionAppliedV1, "1")
	require.NoError(t, err)
	require.Len(t, members, 2)
	_, err = d.MandatoryMembers("run.created@3.0", "3.0")
	require.ErrorIs(t, err, deliveryset.ErrPairNotApplicable)
	_, err = d.MandatoryMembers(envelope.RunCreatedV2, "latest")
	require.ErrorIs(t, err, deliveryset.ErrPairNotApplicable)
}

// DS-5: the digest candidate is everything except the digest; the projection
// target is covered, registry metadata is not part of the definition.
func TestDS5DigestCandidate(t *testing.T) {
	t.Parallel()
	d := firstRelease(t)
	c := d.Candidate()
	_, has := c["deliverySetDefinitionDigest"]
	require.False(t, has)
	require.Len(t, c, 7)
	got, err := digest.Of(digest.JCSSHA256V1, c)
	require.NoError(t, err)
	require.Equal(t, d.Digest, got)

	other, err := deliveryset.FirstRelease(goldenProjectionName, goldenProjectionVersion+1)
	require.NoError(t, err)
	require.NotEqual(t, d.Digest.Value, other.Digest.Value, "projection target is part of the candidate")
	cutover, err := deliveryset.Build(2, goldenProjectionName, goldenProjectionVersion+1)
	require.NoError(t, err)
	require.EqualValues(t, 2, cutover.Quadruple().DeliverySetVersion)
}

// DS-6: same version, different candidate → conflict.
func TestDS6CompareSameVersionDifferentCandidate(t *testing.T) {
	t.Parallel()
	a := firstRelease(t)
	b, err := deliveryset.FirstRelease("another_projection", 1)
	require.NoError(t, err)
	require.ErrorIs(t, deliveryset.Compare(a, b), deliveryset.ErrVersionConflict)
}

func TestFirstReleaseRejectsBadProjection(t *testing.T) {
	t.Parallel()
	_, err := deliveryset.FirstRelease("", 1)
	require.ErrorIs(t, err, deliveryset.ErrInvalidProjectionArgument)
	_, err = deliveryset.FirstRelease("ops", 0)
	require.ErrorIs(t, err, deliveryset.ErrInvalidProjectionArgument)
	_, err = deliveryset.FirstRelease("Ops Projection", 1)
	require.ErrorIs(t, err, deliveryset.ErrInvalidProjectionArgument)
}

func TestCT5DescriptionIsWellFormed(t *testing.T) {
	t.Parallel()
	require.NoError(t, schema.Validate(deliveryset.Def.Type))
}

// --- negative artefacts ----------------------------------------------------

// Negative is one rejection artefact: the document must be rejected with
// Reason; SchemaRejects says whether the generated JSON Schema (shape only)
// rejects it too.
type Negative struct {
	Name          string `json:"name"`
	Requirement   string `json:"requirement"`
	Reason        string `json:"reason"`
	SchemaRejects bool   `json:"schemaRejects"`
}

// Reasons maps the reason names used in the manifest to sentinels.
var Reasons = map[string]error{
	"strict.ErrUnknownField":                  strict.ErrUnknownField,
	"strict.ErrMissingField":                  strict.ErrMissingField,
	"strict.ErrWrongType":                     strict.ErrWrongType,
	"strict.ErrUnknownEnum":                   strict.ErrUnknownEnum,
	"strict.ErrUnknownSchemaVersion":          strict.ErrUnknownSchemaVersion,
	"strict.ErrUnsafeInteger":                 strict.ErrUnsafeInteger,
	"strict.ErrOutOfRange":                    strict.ErrOutOfRange,
	"strict.ErrMixedUnion":                    strict.ErrMixedUnion,
	"strict.ErrInvalidValue":                  strict.ErrInvalidValue,
	"jcs.ErrDuplicateKey":                     jcs.ErrDuplicateKey,
	"digest.ErrUnknownAlgorithm":              digest.ErrUnknownAlgorithm,
	"digest.ErrMissingAlgorithm":              digest.ErrMissingAlgorithm,
	"digest.ErrMalformedDigest":               digest.ErrMalformedDigest,
	"digest.ErrMismatch":                      digest.ErrMismatch,
	"envelope.ErrUnknownEventPair":            envelope.ErrUnknownEventPair,
	"deliveryset.ErrApplicableEventCount":     deliveryset.ErrApplicableEventCount,
	"deliveryset.ErrMemberCount":              deliveryset.ErrMemberCount,
	"deliveryset.ErrApplicableEventsUnsorted": deliveryset.ErrApplicableEventsUnsorted,
	"deliveryset.ErrDuplicateApplicableEvent": deliveryset.ErrDuplicateApplicableEvent,
	"deliveryset.ErrMembersUnsorted":          deliveryset.ErrMembersUnsorted,
	"deliveryset.ErrDuplicateMember":          deliveryset.ErrDuplicateMember,
	"deliveryset.ErrDestinationRebound":       deliveryset.ErrDestinationRebound,
	"deliveryset.ErrOrphanMember":             deliveryset.ErrOrphanMember,
	"deliveryset.ErrConsumerMismatch":         deliveryset.ErrConsumerMismatch,
	"deliveryset.ErrReceiptMismatch":          deliveryset.ErrReceiptMismatch,
	"deliveryset.ErrProjectionTargetMismatch": deliveryset.ErrProjectionTargetMismatch,
}

type doc = map[string]any

func members(m doc) []any { return m["members"].([]any) }
func events(m doc) []any  { return m["applicableEvents"].([]any) }
func member(m doc, i int) doc {
	return members(m)[i].(doc)
}

// reseal recomputes counts-independent digest so that only the intended
// rule is broken.
func reseal(t *testing.T, m doc) {
	t.Helper()
	c := strict.Candidate(m, "deliverySetDefinitionDigest")
	d, err := digest.Of(digest.JCSSHA256V1, c)
	require.NoError(t, err)
	m["deliverySetDefinitionDigest"] = d.Value
}

func indexOf(m doc, eventType string, dest route.Destination) int {
	for i, v := range members(m) {
		x := v.(doc)
		if x["eventType"] == eventType && x["destination"] == string(dest) {
			return i
		}
	}
	panic("no member " + eventType)
}

type negativeCase struct {
	Negative
	mutate func(t *testing.T, m doc) // nil when raw is set
	raw    func(t *testing.T, canonical []byte) []byte
	keep   bool // do not reseal (digest rules)
}

func negativeCases() []negativeCase {
	core := func(m doc) doc { return member(m, indexOf(m, envelope.RunCreatedV2, route.CoreOperations)) }
	meter := func(m doc) doc {
		return member(m, indexOf(m, envelope.GatewayAvailabilityCurrentChangedV1, route.MeteringInputProcessor))
	}
	return []negativeCase{
		{Negative: Negative{"unknown-field", "DS-1/CT-2", "strict.ErrUnknownField", true}, mutate: func(_ *testing.T, m doc) { m["status"] = "active" }},
		{Negative: Negative{"unknown-member-field", "DS-1/CT-2", "strict.ErrUnknownField", true}, mutate: func(_ *testing.T, m doc) { core(m)["priority"] = int64(1) }},
		{Negative: Negative{"missing-field", "DS-1/CT-2", "strict.ErrMissingField", true}, mutate: func(_ *testing.T, m doc) { delete(m, "memberCount") }},
		{Negative: Negative{"unknown-schema-version", "DS-1/CT-2/CT-6", "strict.ErrUnknownSchemaVersion", true}, mutate: func(_ *testing.T, m doc) { m["deliverySetDefinitionSchemaVersion"] = "2" }},
		{Negative: Negative{"unknown-algorithm", "DS-1/CT-2/CT-6", "digest.ErrUnknownAlgorithm", true}, keep: true, mutate: func(_ *testing.T, m doc) { m["deliverySetDefinitionDigestAlgorithmVersion"] = "sha256" }},
		{Negative: Negative{"bare-digest", "DS-1/CT-3", "digest.ErrMissingAlgorithm", true}, keep: true, mutate: func(_ *testing.T, m doc) { delete(m, "deliverySetDefinitionDigestAlgorithmVersion") }},
		{Negative: Negative{"malformed-digest", "DS-1/CT-3", "digest.ErrMalformedDigest", true}, keep: true, mutate: func(_ *testing.T, m doc) {
			m["deliverySetDefinitionDigest"] = strings.ToUpper(m["deliverySetDefinitionDigest"].(string))
		}},
		{Negative: Negative{"digest-does-not-recompute", "DS-5", "digest.ErrMismatch", false}, keep: true, mutate: func(_ *testing.T, m doc) { core(m)["mandatory"] = false }},
		{Negative: Negative{"applicable-event-count-mismatch", "DS-2", "deliveryset.ErrApplicableEventCount", false}, mutate: func(_ *testing.T, m doc) { m["applicableEventCount"] = int64(12) }},
		{Negative: Negative{"member-count-mismatch", "DS-2", "deliveryset.ErrMemberCount", false}, mutate: func(_ *testing.T, m doc) { m["memberCount"] = int64(13) }},
		{Negative: Negative{"applicable-events-unsorted", "DS-2", "deliveryset.ErrApplicableEventsUnsorted", false}, mutate: func(_ *testing.T, m doc) {
			e := events(m)
			e[0], e[1] = e[1], e[0]
		}},
		{Negative: Negative{"applicable-event-duplicate", "DS-2", "deliveryset.ErrDuplicateApplicableEvent", false}, mutate: func(_ *testing.T, m doc) {
			e := events(m)
			m["applicableEvents"] = append([]any{e[0]}, e...)
			m["applicableEventCount"] = int64(len(e) + 1)
		}},
		{Negative: Negative{"members-unsorted", "DS-2", "deliveryset.ErrMembersUnsorted", false}, mutate: func(_ *testing.T, m doc) {
			ms := members(m)
			ms[0], ms[len(ms)-1] = ms[len(ms)-1], ms[0]
		}},
		{Negative: Negative{"member-duplicate", "DS-2", "deliveryset.ErrDuplicateMember", false}, mutate: func(_ *testing.T, m doc) {
			ms := members(m)
			m["members"] = append([]any{ms[0]}, ms...)
			m["memberCount"] = int64(len(ms) + 1)
		}},
		{Negative: Negative{"orphan-member", "DS-3", "deliveryset.ErrOrphanMember", false}, mutate: func(_ *testing.T, m doc) {
			var kept []any
			for _, v := range events(m) {
				if v.(doc)["eventType"] != envelope.RunCreatedV2 {
					kept = append(kept, v)
				}
			}
			m["applicableEvents"] = kept
			m["applicableEventCount"] = int64(len(kept))
		}},
		{Negative: Negative{"destination-bound-to-two-consumers", "DS-3", "deliveryset.ErrDestinationRebound", false}, mutate: func(_ *testing.T, m doc) {
			i := indexOf(m, envelope.RunCreatedV2, route.CoreOperations)
			second := doc{}
			for k, v := range member(m, i) {
				second[k] = v
			}
			second["consumerName"] = route.BillingSettlementCatchUpConsumer
			ms := members(m)
			out := append(append(append([]any{}, ms[:i]...), second), ms[i:]...)
			m["members"] = out
			m["memberCount"] = int64(len(out))
		}},
		{Negative: Negative{"consumer-not-of-destination", "DS-4/OB-DELIVER-1", "deliveryset.ErrConsumerMismatch", false}, mutate: func(_ *testing.T, m doc) {
			core(m)["consumerName"] = route.MeteringInputProcessorConsumer
		}},
		{Negative: Negative{"core-operations-foreign-receipt", "DS-4", "deliveryset.ErrReceiptMismatch", false}, mutate: func(_ *testing.T, m doc) {
			core(m)["expectedReceiptType"] = route.MeteringInputProcessorConsumerReceipt
		}},
		{Negative: Negative{"core-operations-without-projection", "DS-4", "deliveryset.ErrProjectionTargetMismatch", false}, mutate: func(_ *testing.T, m doc) {
			core(m)["projectionTarget"] = doc{"state": "not_applicable"}
		}},
		{Negative: Negative{"other-destination-with-projection", "DS-4", "deliveryset.ErrProjectionTargetMismatch", false}, mutate: func(_ *testing.T, m doc) {
			meter(m)["projectionTarget"] = doc{"state": "required", "projectionName": goldenProjectionName, "projectionVersion": int64(1)}
		}},
		{Negative: Negative{"other-destination-foreign-receipt", "DS-4", "deliveryset.ErrReceiptMismatch", false}, mutate: func(_ *testing.T, m doc) {
			meter(m)["expectedReceiptType"] = route.OperationsProjectionAppliedReceipt
		}},
		{Negative: Negative{"unknown-receipt-schema-version", "DS-4/CT-2", "strict.ErrUnknownSchemaVersion", true}, mutate: func(_ *testing.T, m doc) {
			meter(m)["expectedReceiptSchemaVersion"] = "2"
		}},
		{Negative: Negative{"alias-event-pair", "DS-7", "envelope.ErrUnknownEventPair", false}, mutate: func(_ *testing.T, m doc) {
			for _, v := range events(m) {
				if v.(doc)["eventType"] == envelope.RunCreatedV2 {
					v.(doc)["eventType"], v.(doc)["eventSchemaVersion"] = "run.created@2", "2"
				}
			}
			core(m)["eventType"], core(m)["eventSchemaVersion"] = "run.created@2", "2"
		}},
		{Negative: Negative{"schema-version-not-suffix", "DS-7", "envelope.ErrUnknownEventPair", false}, mutate: func(_ *testing.T, m doc) {
			for _, v := range events(m) {
				if v.(doc)["eventType"] == envelope.RunCreatedV2 {
					v.(doc)["eventSchemaVersion"] = "2"
				}
			}
			core(m)["eventSchemaVersion"] = "2"
		}},
		{Negative: Negative{"wildcard-event-type", "DS-7", "strict.ErrInvalidValue", true}, mutate: func(_ *testing.T, m doc) {
			events(m)[0].(doc)["eventType"] = "billing.*"
		}},
		{Negative: Negative{"latest-schema-version", "DS-7", "strict.ErrInvalidValue", true}, mutate: func(_ *testing.T, m doc) {
			events(m)[0].(doc)["eventSchemaVersion"] = "latest"
		}},
		{Negative: Negative{"unknown-destination", "DS-1/OB-DELIVER-1", "strict.ErrUnknownEnum", true}, mutate: func(_ *testing.T, m doc) {
			core(m)["destination"] = "core_ops"
		}},
		{Negative: Negative{"projection-target-mixed-branch", "DS-1/CT-2", "strict.ErrMixedUnion", true}, mutate: func(_ *testing.T, m doc) {
			meter(m)["projectionTarget"] = doc{"state": "not_applicable", "projectionName": goldenProjectionName}
		}},
		{Negative: Negative{"projection-version-zero", "DS-1", "strict.ErrOutOfRange", true}, mutate: func(_ *testing.T, m doc) {
			core(m)["projectionTarget"].(doc)["projectionVersion"] = int64(0)
		}},
		{Negative: Negative{"delivery-set-version-zero", "DS-1", "strict.ErrOutOfRange", true}, mutate: func(_ *testing.T, m doc) { m["deliverySetVersion"] = int64(0) }},
		{Negative: Negative{"delivery-set-version-unsafe", "DS-1/CT-2", "strict.ErrUnsafeInteger", true}, mutate: func(_ *testing.T, m doc) {
			m["deliverySetVersion"] = jcs.Number("9007199254740993")
		}},
		{Negative: Negative{"mandatory-not-boolean", "DS-1", "strict.ErrWrongType", true}, mutate: func(_ *testing.T, m doc) { core(m)["mandatory"] = "true" }},
		{Negative: Negative{"delivery-set-version-fraction", "DS-1/CT-2", "strict.ErrUnsafeInteger", false}, raw: func(t *testing.T, canonical []byte) []byte {
			return bytes.Replace(canonical, []byte(`"deliverySetVersion":1`), []byte(`"deliverySetVersion":1.0`), 1)
		}},
		{Negative: Negative{"duplicate-key", "CT-2", "jcs.ErrDuplicateKey", false}, raw: func(t *testing.T, canonical []byte) []byte {
			return bytes.Replace(canonical, []byte(`{"applicableEventCount":13,`), []byte(`{"applicableEventCount":13,"applicableEventCount":13,`), 1)
		}},
	}
}

// CT-4 and DS-1..DS-7: every rejection rule has a negative artefact that is
// rejected with its named reason.
func TestNegativeArtefacts(t *testing.T) {
	t.Parallel()
	base := firstRelease(t)
	canonical, err := base.Canonical()
	require.NoError(t, err)
	var manifest []Negative
	for _, c := range negativeCases() {
		var body []byte
		if c.raw != nil {
			body = c.raw(t, canonical)
			require.NotEqual(t, string(canonical), string(body), c.Name)
		} else {
			v, err := jcs.Parse(canonical)
			require.NoError(t, err)
			m := v.(doc)
			c.mutate(t, m)
			if !c.keep {
				reseal(t, m)
			}
			body = indentJSON(t, m)
		}
		checkGolden(t, filepath.Join("testdata", "negative", c.Name+".json"), body)
		manifest = append(manifest, c.Negative)
	}
	checkGolden(t, filepath.Join("testdata", "negative", "manifest.json"), indentJSON(t, manifest))

	goldentest.CheckNegatives(t, filepath.Join("testdata", "negative"), Reasons, func(b []byte) error {
		_, err := deliveryset.Decode(b)
		return err
	})
}
