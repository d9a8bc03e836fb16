package jcs_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/jcs/jcstest"
)

// addSeedFiles adds every file matching the globs as a seed.
func addSeedFiles(f *testing.F, globs ...string) {
	for _, g := range globs {
		paths, err := filepath.Glob(g)
		if err != nil {
			f.Fatal(err)
		}
		for i, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data, uint64(i))
		}
	}
}

// FuzzCanonicalize (CT-1): never panic; a rejection is a *ParseError with an
// in-range offset and a known reason; accepted input is valid JSON, its
// canonical output is valid JSON and a fixed point, it means what
// encoding/json thinks it means, and no respelling (member order,
// whitespace, escapes, number spelling) changes the canonical bytes or digest.
func FuzzCanonicalize(f *testing.F) {
	addSeedFiles(f,
		"testdata/golden/*/*.json",
		"testdata/negative/*.json",
		"testdata/independent/cyberphone/input/*.json",
	)
	if file, err := os.Open("testdata/independent/node/objects.jsonl"); err == nil {
		sc := bufio.NewScanner(file)
		sc.Buffer(nil, 1<<22)
		for i := 0; i < 40 && sc.Scan(); i++ {
			var v struct{ Input string }
			if json.Unmarshal(sc.Bytes(), &v) == nil {
				f.Add([]byte(v.Input), uint64(i))
			}
		}
		_ = file.Close() // read-only file: a close error loses nothing
	}
	for i, s := range []string{
		``, ` `, `0`, `-0`, `1e21`, `1e-7`, `5e-324`, `1e400`, `1e-400`, `[1,2,3]`, `{"a":{"b":[{}]}}`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\u0000"`, "\"\xed\xa0\x80\"", "\xef\xbb\xbf1", `{"a":1,"a":1}`,
		`[9007199254740993,-9007199254740993]`, `[0.1,0.2,0.30000000000000004]`, `{"\ufb33":0,"\ud83d\ude00":1}`,
	} {
		f.Add([]byte(s), uint64(i))
	}

	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		out, err := jcs.Canonicalize(data)
		if err != nil {
			var perr *jcs.ParseError
			if !errors.As(err, &perr) {
				t.Fatalf("rejection is not a *ParseError: %v", err)
			}
			if perr.Offset < 0 || perr.Offset > len(data) {
				t.Fatalf("offset %d outside input of %d bytes", perr.Offset, len(data))
			}
			if !slices.ContainsFunc(parseSentinels, func(s error) bool { return errors.Is(err, s) }) {
				t.Fatalf("unknown rejection reason: %v", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted input encoding/json calls invalid: %q", data)
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("canonical output is not valid JSON: %q", out)
		}
		again, err := jcs.Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not a fixed point: %q -> %q (%v)", out, again, err)
		}
		var viaIn, viaOut any
		if json.Unmarshal(data, &viaIn) != nil || json.Unmarshal(out, &viaOut) != nil || !reflect.DeepEqual(viaIn, viaOut) {
			t.Fatalf("canonical form means something else:\n in  %q\n out %q", data, out)
		}

		v, err := jcs.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		want, err := digest.OfCanonical(digest.JCSSHA256V1, out)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		for range 3 {
			respelled := jcstest.Respell(v, r, jcstest.Opts{})
			got, err := jcs.Canonicalize(respelled)
			if err != nil || string(got) != string(out) {
				t.Fatalf("respelling changed the canonical bytes:\n in  %q\n re  %q\n out %q\n got %q (%v)", data, respelled, out, got, err)
			}
			d, err := digest.OfJSON(digest.JCSSHA256V1, respelled)
			if err != nil || d != want {
				t.Fatalf("respelling changed the digest: %v != %v (%v)", d, want, err)
			}
		}
	})
}

var parseSentinels = []error{
	jcs.ErrSyntax, jcs.ErrUnexpectedEOF, jcs.ErrTrailingData, jcs.ErrDuplicateKey, jcs.ErrInvalidUTF8,
	jcs.ErrLoneSurrogate, jcs.ErrNoncharacter, jcs.ErrControlCharacter, jcs.ErrByteOrderMark,
	jcs.ErrNumberOutOfRange, jcs.ErrNumberUnderflow, jcs.ErrTooDeep,
}

// FuzzCompareUTF16 checks the allocation-free member order against the
// definition (RFC 8785 §3.2.3: compare UTF-16 code units).
func FuzzCompareUTF16(f *testing.F) {
	f.Add("\ufb33", "\U0001F600")
	f.Add("a", "a\x00")
	f.Add("\ue000", "\U0010FFFD")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := jcs.CompareUTF16(a, b); got != want {
			t.Fatalf("CompareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}
