// Package jcs implements the JSON Canonicalization Scheme of RFC 8785 byte for
// byte: members sorted by their names' UTF-16 code units, numbers in ECMAScript
// Number.prototype.toString form, minimal string escaping and no whitespace.
//
// Decisions the RFC leaves to the implementation (documented in
// docs/contracts/jcs.md):
//   - a leading byte-order mark is rejected (RFC 8259 §8.1 forbids emitting one);
//   - Unicode noncharacters are rejected (I-JSON, RFC 7493 §2.1);
//   - a non-zero literal that underflows to zero is rejected (it would
//     silently change the value); subnormals such as 5e-324 are accepted;
//   - a literal beyond 2^53 is serialized as its nearest double, like the
//     RFC's reference implementations. Contract decoders reject such integers
//     separately (see package strict);
//   - at most MaxDepth nested arrays and objects.
//
// Canonicalization is never delegated to encoding/json or to PostgreSQL.
package jcs

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxSafeInteger is 2^53-1, the largest integer every JSON peer represents exactly.
const MaxSafeInteger = 1<<53 - 1

// Canonicalize parses data as I-JSON and returns its RFC 8785 canonical bytes.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	// Canonical text is rarely much longer than its source.
	return AppendMarshal(make([]byte, 0, len(data)+len(data)/8+16), v)
}

// Marshal returns the canonical bytes of a value tree. Accepted types are
// those Parse produces (nil, bool, string, Number, []any, map[string]any)
// plus the builder conveniences int, int64 and float64 (finite only),
// []string and []map[string]any. Integers must be safe integers. Strings
// must be valid UTF-8 without noncharacters, like Parse requires.
func Marshal(v any) ([]byte, error) {
	return AppendMarshal(make([]byte, 0, 256), v)
}

// AppendMarshal appends the canonical bytes of v to dst.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	var e encoder
	return e.appendValue(dst, v, 0)
}

// encoder holds one scratch slice of object members shared by every object
// of a document: each object sorts its members in a window at the end of the
// slice and releases the window when done, so sorting does not allocate per
// object.
type encoder struct {
	members []member
}

// appendValue appends v; depth is the number of containers enclosing v.
func (e *encoder) appendValue(dst []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		if err := checkString(x); err != nil {
			return dst, err
		}
		return appendString(dst, x), nil
	case Number:
		f, err := x.Float64()
		if err != nil {
			return dst, err
		}
		return AppendNumber(dst, f)
	case float64:
		return AppendNumber(dst, x)
	case int:
		return appendInt(dst, int64(x))
	case int64:
		return appendInt(dst, x)
	case []any:
		return appendArray(e, dst, x, depth)
	case []string:
		if depth >= MaxDepth {
			return dst, ErrTooDeep
		}
		dst = append(dst, '[')
		for i, elem := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if err := checkString(elem); err != nil {
				return dst, err
			}
			dst = appendString(dst, elem)
		}
		return append(dst, ']'), nil
	case []map[string]any:
		return appendArray(e, dst, x, depth)
	case map[string]any:
		if depth >= MaxDepth {
			return dst, ErrTooDeep
		}
		return e.appendObject(dst, x, depth)
	default:
		return dst, ErrUnsupportedValue
	}
}

// AppendString appends s as a canonical JSON string, with Marshal's checks
// (valid UTF-8, no noncharacters). For encoders of fixed shapes that write
// their members themselves, in canonical order.
func AppendString(dst []byte, s string) ([]byte, error) {
	if err := checkString(s); err != nil {
		return dst, err
	}
	return appendString(dst, s), nil
}

// AppendSafeInt appends a safe integer as Marshal writes an int64.
func AppendSafeInt(dst []byte, n int64) ([]byte, error) { return appendInt(dst, n) }

// AppendMarshalAt is AppendMarshal for a value the caller writes inside
// depth enclosing containers of its own, so MaxDepth counts them too.
func AppendMarshalAt(dst []byte, v any, depth int) ([]byte, error) {
	var e encoder
	return e.appendValue(dst, v, depth)
}

func appendInt(dst []byte, n int64) ([]byte, error) {
	if n > MaxSafeInteger || n < -MaxSafeInteger {
		return dst, ErrUnsafeInteger
	}
	return strconv.AppendInt(dst, n, 10), nil
}

type member struct {
	key   string
	value any
}

// appendArray writes a JSON array whose elements go through appendValue
// ([]any and []map[string]any share it).
func appendArray[T any](e *encoder, dst []byte, xs []T, depth int) ([]byte, error) {
	if depth >= MaxDepth {
		return dst, ErrTooDeep
	}
	dst = append(dst, '[')
	for i, elem := range xs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = e.appendValue(dst, elem, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func (e *encoder) appendObject(dst []byte, obj map[string]any, depth int) ([]byte, error) {
	start := len(e.members)
	for k, v := range obj {
		if err := checkString(k); err != nil {
			return dst, err
		}
		e.members = append(e.members, member{key: k, value: v})
	}
	// Nested objects append their windows after this one; if that moves the
	// scratch slice, this window keeps the old, unchanged backing array.
	members := e.members[start:]
	defer func() { e.members = e.members[:start] }()
	// RFC 8785 §3.2.3: sort by the UTF-16 code units of the names.
	slices.SortFunc(members, func(a, b member) int { return CompareUTF16(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		var err error
		if dst, err = e.appendValue(dst, m.value, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// CompareUTF16 orders two valid UTF-8 strings by their UTF-16 code units, the
// member order of RFC 8785 §3.2.3, without allocating. It returns -1, 0 or +1.
// (Invalid UTF-8, which Parse and Marshal reject, still gets a total order.)
//
// UTF-8 byte order equals code point order, which differs from UTF-16 order
// only where a supplementary character (encoded with surrogates D800–DFFF)
// meets a BMP character in E000–FFFF: "\U0001F600" < "\uFB33" in UTF-16
// but not in code points. So: skip the common prefix, then compare the first
// differing characters by their first UTF-16 code unit.
func CompareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmpInt(len(a), len(b))
	}
	// Back up to the start of the character that differs; the prefix is
	// shared, so it is a character boundary in both strings.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	if ra == rb {
		// Only invalid UTF-8 decodes two different byte sequences to the
		// same rune (U+FFFD); keep the order total with the bytes.
		return strings.Compare(a[i:], b[i:])
	}
	return cmpInt(utf16Key(ra), utf16Key(rb))
}

// utf16Key maps a code point to a value that sorts like its UTF-16 encoding:
// supplementary characters (high surrogate D800–DBFF first) sort after
// U+0000–D7FF and before U+E000–FFFF; within each group code point order and
// code unit order agree.
func utf16Key(r rune) int {
	if r >= 0xE000 && r <= 0xFFFF {
		return int(r) + 0x110000
	}
	return int(r)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkString reports why s may not be serialized: invalid UTF-8 (including
// encoded surrogates, which a Go string can hold but JSON text cannot) or a
// noncharacter. Parse rejects the same inputs.
func checkString(s string) error {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			if isEncodedSurrogate(s[i:]) {
				return ErrLoneSurrogate
			}
			return ErrInvalidUTF8
		}
		if isNoncharacter(r) {
			return ErrNoncharacter
		}
		i += size
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// appendString applies RFC 8785 §3.2.2.2: escape only '"', '\\' and control
// characters, using the short forms where JSON has them and \u00xx
// (lowercase hex) otherwise. Everything else is emitted as raw UTF-8.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendNumber appends the ECMAScript Number::toString form of f
// (ECMA-262 §6.1.6.1.20), which RFC 8785 §3.2.2.3 mandates. -0 becomes 0.
func AppendNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, ErrNonFiniteNumber
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits in scientific form: d[.ddd]e±dd[d]. Go picks,
	// like ECMAScript, the shortest digit string that round-trips and, among
	// those, the one closest to f.
	var scratch [32]byte
	sci := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64)
	var digitBuf [17]byte
	k, i := 0, 0
	for ; sci[i] != 'e'; i++ {
		if sci[i] != '.' {
			digitBuf[k] = sci[i]
			k++
		}
	}
	digits := digitBuf[:k]
	exp := 0
	for _, c := range sci[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if sci[i+1] == '-' {
		exp = -exp
	}
	n := exp + 1 // position of the decimal point relative to the digits
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for i := 0; i < n-k; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for i := 0; i < -n; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst, nil
}
