package jcs_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/jcs"
)

// CT-1: Parse returns the documented value tree.
func TestParseValueTree(t *testing.T) {
	t.Parallel()
	v, err := jcs.Parse([]byte(` {"a":[null,true,false,"s",-1.50e2,{}],"b":{"c":[]}} `))
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"a": []any{nil, true, false, "s", jcs.Number("-1.50e2"), map[string]any{}},
		"b": map[string]any{"c": []any{}},
	}, v)
}

func TestParseErrorIsOneTypedLine(t *testing.T) {
	t.Parallel()
	_, err := jcs.Parse([]byte("{\"a\":1,\"a\\n\":2,\"a\":3}"))
	var perr *jcs.ParseError
	require.ErrorAs(t, err, &perr)
	require.ErrorIs(t, err, jcs.ErrDuplicateKey)
	require.Equal(t, 15, perr.Offset)
	require.Equal(t, `jcs: duplicate object member name at byte offset 15: "a"`, err.Error())
	_, err = jcs.Parse([]byte("[\"a\nb\"]"))
	require.NotContains(t, err.Error(), "\n")
}

// TestDepthLimit: at most MaxDepth nested containers, on both sides.
func TestDepthLimit(t *testing.T) {
	t.Parallel()
	nest := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + "1" + strings.Repeat("]", n))
	}
	v, err := jcs.Parse(nest(jcs.MaxDepth))
	require.NoError(t, err)
	_, err = jcs.Marshal(v)
	require.NoError(t, err)
	_, err = jcs.Parse(nest(jcs.MaxDepth + 1))
	require.ErrorIs(t, err, jcs.ErrTooDeep)

	var deep any = "x"
	for range jcs.MaxDepth + 1 {
		deep = map[string]any{"k": deep}
	}
	_, err = jcs.Marshal(deep)
	require.ErrorIs(t, err, jcs.ErrTooDeep)
	_, err = jcs.Marshal(deep.(map[string]any)["k"])
	require.NoError(t, err)
}

// TestMarshalBuilderTypes covers the Go types Marshal accepts besides the parse tree.
func TestMarshalBuilderTypes(t *testing.T) {
	t.Parallel()
	tenth, fifth := 0.1, 0.2 // variables: Go constant arithmetic would be exact
	got, err := jcs.Marshal(map[string]any{
		"int":     42,
		"int64":   int64(-jcs.MaxSafeInteger),
		"float":   tenth + fifth,
		"negZero": math.Copysign(0, -1),
		"strings": []string{"b", "a"},
		"objects": []map[string]any{{"z": 1, "y": nil}},
		"number":  jcs.Number("1E3"),
	})
	require.NoError(t, err)
	require.Equal(t, `{"float":0.30000000000000004,"int":42,"int64":-9007199254740991,"negZero":0,"number":1000,"objects":[{"y":null,"z":1}],"strings":["b","a"]}`, string(got))
}

// TestMarshalRejects: a value tree built by hand is held to the same rules as parsed input.
func TestMarshalRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		v    any
		want error
	}{
		{"unsafe int", int64(jcs.MaxSafeInteger + 1), jcs.ErrUnsafeInteger},
		{"unsafe negative int", -(jcs.MaxSafeInteger + 1), jcs.ErrUnsafeInteger},
		{"NaN", math.NaN(), jcs.ErrNonFiniteNumber},
		{"+Inf", math.Inf(1), jcs.ErrNonFiniteNumber},
		{"unsupported type", struct{}{}, jcs.ErrUnsupportedValue},
		{"unsupported int32", int32(1), jcs.ErrUnsupportedValue},
		{"invalid UTF-8 value", "\xff", jcs.ErrInvalidUTF8},
		{"invalid UTF-8 key", map[string]any{"\xc0\xaf": 1}, jcs.ErrInvalidUTF8},
		{"encoded surrogate", "\xed\xa0\x80", jcs.ErrLoneSurrogate},
		{"noncharacter", "\uffff", jcs.ErrNoncharacter},
		{"noncharacter in []string", []string{"\ufdd0"}, jcs.ErrNoncharacter},
		{"Number hex", jcs.Number("0x10"), jcs.ErrInvalidNumberText},
		{"Number Inf", jcs.Number("Inf"), jcs.ErrInvalidNumberText},
		{"Number NaN", jcs.Number("NaN"), jcs.ErrInvalidNumberText},
		{"Number plus", jcs.Number("+1"), jcs.ErrInvalidNumberText},
		{"Number empty", jcs.Number(""), jcs.ErrInvalidNumberText},
		{"Number leading zero", jcs.Number("01"), jcs.ErrInvalidNumberText},
		{"Number trailing space", jcs.Number("1 "), jcs.ErrInvalidNumberText},
		{"Number underscore", jcs.Number("1_000"), jcs.ErrInvalidNumberText},
		{"Number overflow", jcs.Number("1e400"), jcs.ErrNumberOutOfRange},
		{"Number underflow", jcs.Number("-1e-400"), jcs.ErrNumberUnderflow},
	}
	for _, c := range cases {
		_, err := jcs.Marshal(c.v)
		require.ErrorIs(t, err, c.want, c.name)
	}
}

// TestAppendNumberFormats pins the ECMAScript Number::toString branches.
func TestAppendNumberFormats(t *testing.T) {
	t.Parallel()
	tenth, fifth := 0.1, 0.2
	cases := map[float64]string{
		0: "0", math.Copysign(0, -1): "0", 1: "1", -1: "-1", 1.5: "1.5", 100: "100",
		1e20: "100000000000000000000", 1e21: "1e+21", 1.5e21: "1.5e+21", 123e18: "123000000000000000000",
		0.000001: "0.000001", 1e-7: "1e-7", 1.5e-7: "1.5e-7", 0.00000123: "0.00000123",
		5e-324: "5e-324", math.MaxFloat64: "1.7976931348623157e+308", tenth + fifth: "0.30000000000000004",
		1 << 53: "9007199254740992", 123.456: "123.456", -1e-7: "-1e-7",
	}
	for f, want := range cases {
		got, err := jcs.AppendNumber([]byte("x"), f)
		require.NoError(t, err)
		require.Equal(t, "x"+want, string(got), "%v", f)
	}
}

// TestCompareUTF16 checks the allocation-free comparison against the
// definition: compare the UTF-16 code unit sequences (RFC 8785 §3.2.3).
func TestCompareUTF16(t *testing.T) {
	t.Parallel()
	ref := func(a, b string) int {
		return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
	}
	pool := []rune{0, 'a', 'b', 0x7f, 0x80, 0xe9, 0x20ac, 0xd7ff, 0xe000, 0xfb33, 0xffef, 0xfffd,
		0x10000, 0x1f600, 0x1f602, 0x10fffd, 0x103ff, 0x10400}
	rng := rand.New(rand.NewPCG(1, 2))
	randomString := func() string {
		var b strings.Builder
		for range rng.IntN(5) {
			b.WriteRune(pool[rng.IntN(len(pool))])
		}
		return b.String()
	}
	for range 20000 {
		a, b := randomString(), randomString()
		if rng.IntN(4) == 0 {
			b = a + b
		}
		require.Equal(t, ref(a, b), jcs.CompareUTF16(a, b), "%q vs %q", a, b)
	}
	require.Equal(t, 1, jcs.CompareUTF16("\ufb33", "\U0001F600"), "U+FB33 sorts after U+1F600")
	require.Equal(t, -1, jcs.CompareUTF16("\U0001F600", "\ue000"))
	require.Equal(t, -1, jcs.CompareUTF16("\ud7ff", "\U00010000"))
	require.Equal(t, 0, jcs.CompareUTF16("é", "é"))
	require.Equal(t, -1, jcs.CompareUTF16("", "\x00"))
}

func TestCompareUTF16DoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		_ = jcs.CompareUTF16("prefix-\U0001F600-tail", "prefix-\ufb33-tail")
	})
	require.Zero(t, allocs)
}

func TestSentinelsAreDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for name, err := range sentinels {
		require.False(t, seen[err.Error()], name)
		seen[err.Error()] = true
		for other, e := range sentinels {
			if other != name {
				require.False(t, errors.Is(err, e), "%s is %s", name, other)
			}
		}
	}
}

// TestMarshalAllocationsDoNotGrowWithObjects guards the shared member
// scratch: sorting members must not allocate per object or per key.
func TestMarshalAllocationsDoNotGrowWithObjects(t *testing.T) {
	records := make([]any, 500)
	for i := range records {
		records[i] = map[string]any{"\ufb33": true, "b": nil, "\U0001F600": "x", "a": map[string]any{"y": false, "x": true}}
	}
	doc := map[string]any{"records": records}
	dst := make([]byte, 0, 64<<10)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := jcs.AppendMarshal(dst, doc); err != nil {
			t.Fatal(err)
		}
	})
	require.LessOrEqual(t, allocs, 12.0, "1,000 objects, 3,000 members")
}
