package strict_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/jcs/jcstest"
	"github.com/oceanway/core/contracts/strict"
)

var strictSentinels = []error{
	strict.ErrNotObject, strict.ErrUnknownField, strict.ErrMissingField, strict.ErrWrongType, strict.ErrEmptyString,
	strict.ErrUnknownEnum, strict.ErrUnexpectedLiteral, strict.ErrUnknownSchemaVersion, strict.ErrUnsafeInteger,
	strict.ErrOutOfRange, strict.ErrMixedUnion, strict.ErrInvalidUUID, strict.ErrInvalidTimestamp, strict.ErrInvalidValue,
	digest.ErrMissingAlgorithm, digest.ErrUnknownAlgorithm, digest.ErrMalformedDigest,
}

// FuzzStrictDecode (CT-2): the strict decoder never panics and fails closed
// with a typed error; its verdict — the decoded value or the exact error —
// does not depend on member order, whitespace or escapes; and whatever it
// accepts is canonicalizable, with a digest candidate independent of layout.
func FuzzStrictDecode(f *testing.F) {
	f.Add([]byte(validApplied), uint64(1))
	f.Add([]byte(validRejected), uint64(2))
	for i, mutation := range [][2]string{
		{`"count": 3`, `"count": 9007199254740992`},
		{`"count": 3`, `"count": -0`},
		{`"count": 3`, `"count": 1.0`},
		{`"count": 3`, `"count": 1e3`},
		{`"state": "applied"`, `"state": "rejected"`},
		{`"kind": "credit",`, `"kind": "credit", "kind": "debit",`},
		{`"sampleReceiptDigestAlgorithmVersion": "jcs-sha256-v1",`, ``},
		{`"0190f5a2-7b1c-7def-8a00-0123456789ab"`, `"0190F5A2-7B1C-7DEF-8A00-0123456789AB"`},
		{`"2024-05-06T07:08:09.123456Z"`, `"2024-05-06T07:08:09Z"`},
		{`"tags": ["a", "b"]`, `"tags": ["\ud83d\ude00", "\u0000"]`},
		{`{"payer": "acme"}`, `{"payer": "acme", "extra": {}}`},
	} {
		f.Add([]byte(strings.Replace(validApplied, mutation[0], mutation[1], 1)), uint64(i+3))
	}
	f.Add([]byte(`[]`), uint64(0))
	f.Add([]byte(`{}`), uint64(0))

	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		got, err := decodeSample(data)
		var perr *jcs.ParseError
		if errors.As(err, &perr) {
			return // I-JSON rejection; FuzzCanonicalize covers the parser
		}
		if err != nil {
			var fe *strict.FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path, "$") {
				t.Fatalf("rejection is not a located *strict.FieldError: %v", err)
			}
			known := false
			for _, s := range strictSentinels {
				known = known || errors.Is(err, s)
			}
			if !known {
				t.Fatalf("unknown rejection reason: %v", err)
			}
		}
		tree, perr2 := jcs.Parse(data)
		if perr2 != nil {
			t.Fatalf("decoder accepted what the parser rejects: %v", perr2)
		}
		if _, cerr := jcs.Canonicalize(data); cerr != nil {
			t.Fatalf("parsed document does not canonicalize: %v", cerr)
		}
		r := rand.New(rand.NewPCG(seed, ^seed))
		respelled := jcstest.Respell(tree, r, jcstest.Opts{KeepNumbers: true})
		again, err2 := decodeSample(respelled)
		switch {
		case err == nil && err2 == nil:
			if !reflect.DeepEqual(got, again) {
				t.Fatalf("layout changed the decoded value:\n%+v\n%+v", got, again)
			}
		case err == nil || err2 == nil || err.Error() != err2.Error():
			t.Fatalf("layout changed the verdict: %v / %v\n in %q\n re %q", err, err2, data, respelled)
		}
		if err != nil {
			return
		}
		full, ok := tree.(map[string]any)
		if !ok {
			t.Fatal("accepted a non-object")
		}
		d1, err1 := sampleAddress.Compute(digest.JCSSHA256V1, full)
		tree2, _ := jcs.Parse(respelled)
		d2, err2 := sampleAddress.Compute(digest.JCSSHA256V1, tree2.(map[string]any))
		if err1 != nil || err2 != nil || d1 != d2 {
			t.Fatalf("layout changed the candidate digest: %v %v (%v, %v)", d1, d2, err1, err2)
		}
	})
}
