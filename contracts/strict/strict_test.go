package strict_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

// sampleReceipt is a test contract built only from the strict blocks: a
// schema version, a quadruple, a UUID, integers, an enum, optional fields, a
// nested object, a string array and a "state" union whose branches carry
// their own required fields.
type sampleReceipt struct {
	SchemaVersion string
	Quadruple     strict.Quadruple
	ID            string
	Kind          string
	Count         int64
	Note          string
	HasNote       bool
	Tags          []string
	Payer         string
	State         string
	AppliedAt     time.Time
	Amount        int64
	Reason        string
	Payload       strict.Quadruple
}

var sampleAddress = strict.SelfAddressed{Prefix: "sampleReceipt", TimeFields: []string{"appliedAt"}}

func decodeSample(doc []byte) (sampleReceipt, error) {
	root, r, err := strict.Parse(doc)
	if err != nil {
		return sampleReceipt{}, err
	}
	var out sampleReceipt
	root.Literal("type", "SampleReceipt")
	out.SchemaVersion = root.SchemaVersion("schemaVersion", "SampleReceipt@1")
	out.Quadruple = root.Quadruple("sampleReceipt")
	out.ID = root.UUID("id")
	out.Kind = root.Enum("kind", "credit", "debit")
	out.Count = root.IntMin("count", 0)
	out.Note, out.HasNote = root.OptString("note")
	out.Tags = root.Strings("tags")
	party := root.Object("party")
	out.Payer = party.String("payer")
	party.Close()
	out.State = root.Union("state", map[string]func(*strict.Object){
		"applied": func(o *strict.Object) {
			out.AppliedAt = o.Timestamp("appliedAt")
			out.Amount = o.Int("amount")
			payload := o.Object("payload")
			out.Payload = payload.Quadruple("")
			payload.Close()
		},
		"rejected": func(o *strict.Object) {
			out.Reason = o.Enum("reason", "expired", "insufficient_funds")
		},
	})
	return out, r.Err()
}

const validApplied = `{
  "type": "SampleReceipt",
  "schemaVersion": "SampleReceipt@1",
  "sampleReceiptRef": "receipt-1",
  "sampleReceiptSchemaVersion": "SampleReceipt@1",
  "sampleReceiptDigestAlgorithmVersion": "jcs-sha256-v1",
  "sampleReceiptDigest": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
  "id": "0190f5a2-7b1c-7def-8a00-0123456789ab",
  "kind": "credit",
  "count": 3,
  "note": "hello",
  "tags": ["a", "b"],
  "party": {"payer": "acme"},
  "state": "applied",
  "appliedAt": "2024-05-06T07:08:09.123456Z",
  "amount": -9007199254740991,
  "payload": {
    "ref": "payload-1",
    "schemaVersion": "Payload@1",
    "digestAlgorithmVersion": "jcs-sha256-v1",
    "digest": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
  }
}`

const validRejected = `{"type":"SampleReceipt","schemaVersion":"SampleReceipt@1",
  "sampleReceiptRef":"r","sampleReceiptSchemaVersion":"SampleReceipt@1",
  "sampleReceiptDigestAlgorithmVersion":"jcs-sha256-v1",
  "sampleReceiptDigest":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
  "id":"00000000-0000-0000-0000-000000000000","kind":"debit","count":0,"tags":[],
  "party":{"payer":"p"},"state":"rejected","reason":"expired"}`

// edit returns validApplied with one top-level or nested text replacement.
func edit(t *testing.T, doc, old, new string) []byte {
	t.Helper()
	require.Equal(t, 1, strings.Count(doc, old), "edit target %q must occur once", old)
	return []byte(strings.Replace(doc, old, new, 1))
}

func TestDecodeValid(t *testing.T) {
	t.Parallel()
	got, err := decodeSample([]byte(validApplied))
	require.NoError(t, err)
	require.Equal(t, sampleReceipt{
		SchemaVersion: "SampleReceipt@1",
		Quadruple: strict.Quadruple{Ref: "receipt-1", SchemaVersion: "SampleReceipt@1",
			DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		ID: "0190f5a2-7b1c-7def-8a00-0123456789ab", Kind: "credit", Count: 3, Note: "hello", HasNote: true,
		Tags: []string{"a", "b"}, Payer: "acme", State: "applied",
		AppliedAt: time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC), Amount: -9007199254740991,
		Payload: strict.Quadruple{Ref: "payload-1", SchemaVersion: "Payload@1",
			DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
	}, got)
	require.NoError(t, got.Quadruple.Validate())

	got, err = decodeSample([]byte(validRejected))
	require.NoError(t, err)
	require.Equal(t, "rejected", got.State)
	require.Equal(t, "expired", got.Reason)
	require.False(t, got.HasNote)
}

// TestDecodeRejects names every strict sentinel (CT-2) and the digest ones
// a quadruple can raise (CT-3), each with the JSON path it reports.
func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		doc  []byte
		want error
		path string
	}{
		{"root not an object", []byte(`[1]`), strict.ErrNotObject, "$"},
		{"nested not an object", edit(t, validApplied, `{"payer": "acme"}`, `"acme"`), strict.ErrNotObject, "$.party"},
		{"unknown top-level field", edit(t, validApplied, `"kind": "credit",`, `"kind": "credit", "kinds": 1,`), strict.ErrMixedUnion, "$.kinds"},
		{"unknown nested field", edit(t, validApplied, `{"payer": "acme"}`, `{"payer": "acme", "payee": "x"}`), strict.ErrUnknownField, "$.party.payee"},
		{"missing field", edit(t, validApplied, `"kind": "credit",`, ``), strict.ErrMissingField, "$.kind"},
		{"missing branch field", edit(t, validApplied, `"amount": -9007199254740991,`, ``), strict.ErrMissingField, "$.amount"},
		{"wrong type string", edit(t, validApplied, `"kind": "credit"`, `"kind": 1`), strict.ErrWrongType, "$.kind"},
		{"wrong type int", edit(t, validApplied, `"count": 3`, `"count": "3"`), strict.ErrWrongType, "$.count"},
		{"wrong type null", edit(t, validApplied, `"count": 3`, `"count": null`), strict.ErrWrongType, "$.count"},
		{"wrong type array", edit(t, validApplied, `"tags": ["a", "b"]`, `"tags": "a"`), strict.ErrWrongType, "$.tags"},
		{"wrong type array element", edit(t, validApplied, `"tags": ["a", "b"]`, `"tags": ["a", 2]`), strict.ErrWrongType, "$.tags[1]"},
		{"empty string", edit(t, validApplied, `"note": "hello"`, `"note": ""`), strict.ErrEmptyString, "$.note"},
		{"empty string element", edit(t, validApplied, `"tags": ["a", "b"]`, `"tags": ["a", ""]`), strict.ErrEmptyString, "$.tags[1]"},
		{"unknown enum", edit(t, validApplied, `"kind": "credit"`, `"kind": "Credit"`), strict.ErrUnknownEnum, "$.kind"},
		{"unknown union branch", edit(t, validApplied, `"state": "applied"`, `"state": "pending"`), strict.ErrUnknownEnum, "$.state"},
		{"missing discriminator", edit(t, validApplied, `"state": "applied",`, ``), strict.ErrMissingField, "$.state"},
		{"unexpected literal", edit(t, validApplied, `"type": "SampleReceipt"`, `"type": "OtherReceipt"`), strict.ErrUnexpectedLiteral, "$.type"},
		{"unknown schema version", edit(t, validApplied, `"schemaVersion": "SampleReceipt@1"`, `"schemaVersion": "SampleReceipt@2"`), strict.ErrUnknownSchemaVersion, "$.schemaVersion"},
		{"mixed union branch", edit(t, validApplied, `"amount": -9007199254740991,`, `"amount": -9007199254740991, "reason": "expired",`), strict.ErrMixedUnion, "$.reason"},
		{"mixed union branch other way", edit(t, validRejected, `"reason":"expired"`, `"reason":"expired","appliedAt":"2024-05-06T07:08:09.123456Z"`), strict.ErrMixedUnion, "$.appliedAt"},
		{"out of range", edit(t, validApplied, `"count": 3`, `"count": -1`), strict.ErrOutOfRange, "$.count"},
		{"invalid UUID", edit(t, validApplied, `"0190f5a2-7b1c-7def-8a00-0123456789ab"`, `"0190F5A2-7B1C-7DEF-8A00-0123456789AB"`), strict.ErrInvalidUUID, "$.id"},
		{"invalid timestamp", edit(t, validApplied, `"2024-05-06T07:08:09.123456Z"`, `"2024-05-06T07:08:09.123Z"`), strict.ErrInvalidTimestamp, "$.appliedAt"},
		{"bare digest", edit(t, validApplied, `"sampleReceiptDigestAlgorithmVersion": "jcs-sha256-v1",`, ``), digest.ErrMissingAlgorithm, "$.sampleReceiptDigestAlgorithmVersion"},
		{"bare digest nested", edit(t, validApplied, `"digestAlgorithmVersion": "jcs-sha256-v1",`, ``), digest.ErrMissingAlgorithm, "$.payload.digestAlgorithmVersion"},
		{"empty algorithm", edit(t, validApplied, `"digestAlgorithmVersion": "jcs-sha256-v1"`, `"digestAlgorithmVersion": ""`), digest.ErrMissingAlgorithm, "$.payload.digestAlgorithmVersion"},
		{"algorithm wrong type", edit(t, validApplied, `"digestAlgorithmVersion": "jcs-sha256-v1"`, `"digestAlgorithmVersion": 1`), strict.ErrWrongType, "$.payload.digestAlgorithmVersion"},
		{"unknown algorithm", edit(t, validApplied, `"sampleReceiptDigestAlgorithmVersion": "jcs-sha256-v1"`, `"sampleReceiptDigestAlgorithmVersion": "jcs-sha256-v2"`), digest.ErrUnknownAlgorithm, "$.sampleReceiptDigestAlgorithmVersion"},
		{"malformed digest", edit(t, validApplied, `"sampleReceiptDigest": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"`, `"sampleReceiptDigest": "44136FA355B3678A1146AD16F7E8649E94FB4FC21FE77E8310C060F61CAAFF8A"`), digest.ErrMalformedDigest, "$.sampleReceiptDigest"},
		{"missing digest", edit(t, validApplied, `"sampleReceiptDigest": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",`, ``), strict.ErrMissingField, "$.sampleReceiptDigest"},
		{"missing ref", edit(t, validApplied, `"sampleReceiptRef": "receipt-1",`, ``), strict.ErrMissingField, "$.sampleReceiptRef"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeSample(c.doc)
			require.ErrorIs(t, err, c.want)
			var fe *strict.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, c.path, fe.Path)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

// TestUnknownFieldOutsideUnion: a plain object (no union) reports
// ErrUnknownField; inside a union branch leftovers are ErrMixedUnion.
func TestUnknownFieldOutsideUnion(t *testing.T) {
	t.Parallel()
	root, r, err := strict.Parse([]byte(`{"a":"x","zz":1,"b":2}`))
	require.NoError(t, err)
	root.String("a")
	root.Close()
	require.ErrorIs(t, r.Err(), strict.ErrUnknownField)
	require.Equal(t, `$.b: strict: unknown field`, r.Err().Error(), "the first unknown field in sorted order")
}

// CT-2: duplicate keys and other I-JSON violations fail before any decoder runs.
func TestDecodeRejectsInvalidJSON(t *testing.T) {
	t.Parallel()
	_, err := decodeSample(edit(t, validApplied, `"count": 3,`, `"count": 3, "count": 3,`))
	require.ErrorIs(t, err, jcs.ErrDuplicateKey)
	var perr *jcs.ParseError
	require.ErrorAs(t, err, &perr)
	_, err = decodeSample(edit(t, validApplied, `"count": 3`, `"count": 1e400`))
	require.ErrorIs(t, err, jcs.ErrNumberOutOfRange)
	_, err = decodeSample([]byte(validApplied + "x"))
	require.ErrorIs(t, err, jcs.ErrTrailingData)
}

// TestUnsafeIntegers: identities and amounts are never rounded (CT-2).
func TestUnsafeIntegers(t *testing.T) {
	t.Parallel()
	for _, lit := range []string{
		"9007199254740992", "-9007199254740992", "9007199254740993", "12345678901234567890",
		"-0", "1.0", "1e3", "1E3", "0.5", "10e0", "1e-0", "-0.0",
	} {
		doc := edit(t, validApplied, `"amount": -9007199254740991`, `"amount": `+lit)
		_, err := decodeSample(doc)
		require.ErrorIs(t, err, strict.ErrUnsafeInteger, lit)
		var fe *strict.FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "$.amount", fe.Path)
	}
	for lit, want := range map[string]int64{
		"0": 0, "9007199254740991": 1<<53 - 1, "-9007199254740991": -(1<<53 - 1), "42": 42, "-7": -7,
	} {
		n, err := strict.ParseSafeInteger(lit)
		require.NoError(t, err, lit)
		require.Equal(t, want, n)
	}
	for _, lit := range []string{"", "-", "+1", "01", "-01", "0x1", " 1", "1 ", "١"} {
		_, err := strict.ParseSafeInteger(lit)
		require.ErrorIs(t, err, strict.ErrUnsafeInteger, lit)
	}
}

// IsUUID scans bytes; the anchored pattern it replaced is the oracle: every
// single-byte substitution, deletion and insertion around valid UUIDs.
func TestIsUUIDMatchesPattern(t *testing.T) {
	t.Parallel()
	pattern := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	check := func(s string) {
		if got, want := strict.IsUUID(s), pattern.MatchString(s); got != want {
			t.Fatalf("IsUUID(%q) = %v, pattern says %v", s, got, want)
		}
	}
	for _, valid := range []string{"0190f5a2-7b1c-7def-8a00-0123456789ab", "ffffffff-ffff-ffff-ffff-ffffffffffff"} {
		check(valid)
		for i := 0; i <= len(valid); i++ {
			if i < len(valid) {
				check(valid[:i] + valid[i+1:])
			}
			for c := 0; c < 256; c++ {
				if i < len(valid) {
					check(valid[:i] + string([]byte{byte(c)}) + valid[i+1:])
				}
				check(valid[:i] + string([]byte{byte(c)}) + valid[i:])
			}
		}
	}
}

func TestUUID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		"00000000-0000-0000-0000-000000000000", "0190f5a2-7b1c-7def-8a00-0123456789ab", "f47ac10b-58cc-4372-a567-0e02b2c3d479",
	} {
		require.True(t, strict.IsUUID(ok), ok)
	}
	for _, bad := range []string{
		"F47AC10B-58CC-4372-A567-0E02B2C3D479", "f47ac10b-58cc-4372-a567-0E02b2c3d479", "f47ac10b58cc4372a5670e02b2c3d479",
		"{f47ac10b-58cc-4372-a567-0e02b2c3d479}", "urn:uuid:f47ac10b-58cc-4372-a567-0e02b2c3d479",
		"f47ac10b-58cc-4372-a567-0e02b2c3d47", "f47ac10b-58cc-4372-a567-0e02b2c3d4790", "g47ac10b-58cc-4372-a567-0e02b2c3d479",
		" f47ac10b-58cc-4372-a567-0e02b2c3d479", "f47ac10b-58cc-4372-a567-0e02b2c3d479\n", "",
	} {
		require.False(t, strict.IsUUID(bad), bad)
	}
	root, r, err := strict.Parse([]byte(`{"id":"F47AC10B-58CC-4372-A567-0E02B2C3D479","opt":"nope"}`))
	require.NoError(t, err)
	root.UUID("id")
	require.ErrorIs(t, r.Err(), strict.ErrInvalidUUID)
	root, r, err = strict.Parse([]byte(`{"opt":"nope"}`))
	require.NoError(t, err)
	_, ok := root.OptUUID("opt")
	require.True(t, ok)
	require.ErrorIs(t, r.Err(), strict.ErrInvalidUUID)
	_, ok = root.OptUUID("absent")
	require.False(t, ok)
}

func TestTimestamps(t *testing.T) {
	t.Parallel()
	ts := time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.FixedZone("CET", 3600))
	require.Equal(t, "2024-02-29T22:59:59.999999Z", strict.FormatTimestamp(ts), "UTC, truncated (not rounded) to microseconds")
	got, err := strict.ParseTimestamp("2024-02-29T22:59:59.999999Z")
	require.NoError(t, err)
	require.True(t, got.Equal(ts.Truncate(time.Microsecond)))
	require.Equal(t, time.UTC, got.Location())

	for _, bad := range []string{
		"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123Z", "2024-01-02T03:04:05.1234567Z", "2024-01-02T03:04:05.12345Z",
		"2024-01-02T03:04:05.000000+00:00", "2024-01-02T04:04:05.000000+01:00", "2024-01-02T03:04:05.000000z",
		"2024-01-02 03:04:05.000000Z", "2024-01-02t03:04:05.000000Z", "2024-01-02T03:04:05.000000", "2024-01-02T03:04:05,000000Z",
		"2023-02-29T00:00:00.000000Z", "2024-01-02T24:00:00.000000Z", "2024-12-31T23:59:60.000000Z", "2024-1-02T03:04:05.000000Z",
		" 2024-01-02T03:04:05.000000Z", "2024-01-02T03:04:05.000000Z ", "+2024-01-02T03:04:05.000000Z", "1704164645", "",
	} {
		_, err := strict.ParseTimestamp(bad)
		require.ErrorIs(t, err, strict.ErrInvalidTimestamp, bad)
	}

	root, r, err := strict.Parse([]byte(`{"at":"2024-01-02T03:04:05.000000Z","bad":"2024-01-02T03:04:05Z"}`))
	require.NoError(t, err)
	at, ok := root.OptTimestamp("at")
	require.True(t, ok)
	require.Equal(t, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), at)
	_, ok = root.OptTimestamp("absent")
	require.False(t, ok)
	require.NoError(t, r.Err())
	_, ok = root.OptTimestamp("bad")
	require.False(t, ok)
	require.ErrorIs(t, r.Err(), strict.ErrInvalidTimestamp)
}

func TestQuadruple(t *testing.T) {
	t.Parallel()
	q := strict.Quadruple{Ref: "r", SchemaVersion: "X@1", DigestAlgorithmVersion: digest.JCSSHA256V1,
		Digest: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}
	require.NoError(t, q.Validate())
	require.Equal(t, digest.Digest{Algorithm: q.DigestAlgorithmVersion, Value: q.Digest}, q.Digested())

	require.ErrorIs(t, strict.Quadruple{}.Validate(), strict.ErrInvalidQuadruple)
	noRef := q
	noRef.Ref = ""
	require.ErrorIs(t, noRef.Validate(), strict.ErrInvalidQuadruple)
	noSchema := q
	noSchema.SchemaVersion = ""
	require.ErrorIs(t, noSchema.Validate(), strict.ErrInvalidQuadruple)
	bare := q
	bare.DigestAlgorithmVersion = ""
	require.ErrorIs(t, bare.Validate(), digest.ErrMissingAlgorithm)
	unknown := q
	unknown.DigestAlgorithmVersion = "jcs-sha256-v2"
	require.ErrorIs(t, unknown.Validate(), digest.ErrUnknownAlgorithm)
	malformed := q
	malformed.Digest = "abc"
	require.ErrorIs(t, malformed.Validate(), digest.ErrMalformedDigest)

	require.Equal(t, [4]string{"ref", "schemaVersion", "digestAlgorithmVersion", "digest"}, strict.Fields(""))
	require.Equal(t, [4]string{"runRef", "runSchemaVersion", "runDigestAlgorithmVersion", "runDigest"}, strict.Fields("run"))
	m := map[string]any{}
	q.Put(m, "run")
	require.Equal(t, map[string]any{"runRef": "r", "runSchemaVersion": "X@1",
		"runDigestAlgorithmVersion": "jcs-sha256-v1", "runDigest": q.Digest}, m)

	doc, err := jcs.Marshal(m)
	require.NoError(t, err)
	root, r, err := strict.Parse(doc)
	require.NoError(t, err)
	require.Equal(t, q, root.Quadruple("run"))
	root.Close()
	require.NoError(t, r.Err())
}

func TestDigestPair(t *testing.T) {
	t.Parallel()
	const value = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
	read := func(doc string) (digest.Digest, error) {
		root, r, err := strict.Parse([]byte(doc))
		require.NoError(t, err)
		d := root.DigestPair("eventEnvelopeDigestAlgorithmVersion", "eventEnvelopeSha256")
		root.Close()
		return d, r.Err()
	}
	d, err := read(`{"eventEnvelopeDigestAlgorithmVersion":"jcs-sha256-v1","eventEnvelopeSha256":"` + value + `"}`)
	require.NoError(t, err)
	require.Equal(t, digest.Digest{Algorithm: digest.JCSSHA256V1, Value: value}, d)

	_, err = read(`{"eventEnvelopeSha256":"` + value + `"}`)
	require.ErrorIs(t, err, digest.ErrMissingAlgorithm, "bare digest")
	_, err = read(`{"eventEnvelopeDigestAlgorithmVersion":"jcs-sha256-v1"}`)
	require.ErrorIs(t, err, strict.ErrMissingField)
	_, err = read(`{"eventEnvelopeDigestAlgorithmVersion":"sha256","eventEnvelopeSha256":"` + value + `"}`)
	require.ErrorIs(t, err, digest.ErrUnknownAlgorithm)
	_, err = read(`{"eventEnvelopeDigestAlgorithmVersion":"jcs-sha256-v1","eventEnvelopeSha256":"` + value[1:] + `"}`)
	require.ErrorIs(t, err, digest.ErrMalformedDigest)
}

func TestReaderKeepsFirstError(t *testing.T) {
	t.Parallel()
	root, r, err := strict.Parse([]byte(`{"b":1}`))
	require.NoError(t, err)
	root.String("a") // missing
	root.String("b") // wrong type, not reported
	require.ErrorIs(t, r.Err(), strict.ErrMissingField)
	r.FailErr("$.x", strict.ErrInvalidValue)
	require.ErrorIs(t, r.Err(), strict.ErrMissingField)

	var r2 strict.Reader
	r2.FailErr("$.x", &strict.FieldError{Path: "$.inner", Err: strict.ErrInvalidValue})
	var fe *strict.FieldError
	require.ErrorAs(t, r2.Err(), &fe)
	require.Equal(t, "$.inner", fe.Path, "an already-located error keeps its path")
	var r3 strict.Reader
	r3.FailErr("$.y", strict.ErrInvalidValue)
	require.ErrorAs(t, r3.Err(), &fe)
	require.Equal(t, "$.y", fe.Path)
}
