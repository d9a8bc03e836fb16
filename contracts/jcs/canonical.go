// Package jcs implements the JSON Canonicalization Scheme of RFC 8785 byte for
// byte: members sorted by their names' UTF-16 code units, numbers in ECMAScript
// Number.prototype.toString form, minimal string escaping and no whitespace.
//
// Decisions the RFC leaves to the implementation (documented in
// docs/contracts.md):
//   - a leading byte-order mark is rejected (RFC 8259 §8.1 forbids emitting one);
//   - Unicode noncharacters are rejected (I-JSON, RFC 7493 §2.1);
//   - a non-zero literal that underflows to zero is rejected (it would
//     silently change the value); subnormals such as 5e-324 are accepted;
//   - a literal beyond 2^53 is serialized as its nearest double, like the
//     RFC's reference implementations. Contract decoders reject such integers
//     separately (see package strict).
//
// Canonicalization is never delegated to encoding/json or to PostgreSQL.
package jcs

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
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
	return Marshal(v)
}

// Marshal returns the canonical bytes of a value tree. Accepted types are
// those Parse produces (nil, bool, string, Number, []any, map[string]any)
// plus the builder conveniences int, int64 and float64 (finite only) and
// []map[string]any. Integers must be safe integers.
func Marshal(v any) ([]byte, error) {
	return AppendMarshal(make([]byte, 0, 256), v)
}

// AppendMarshal appends the canonical bytes of v to dst.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, 0)
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return dst, ErrTooDeep
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		if !validString(x) {
			return dst, ErrInvalidUTF8
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
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case []map[string]any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendObject(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		return appendObject(dst, x, depth)
	default:
		return dst, ErrUnsupportedValue
	}
}

func appendInt(dst []byte, n int64) ([]byte, error) {
	if n > MaxSafeInteger || n < -MaxSafeInteger {
		return dst, ErrUnsafeInteger
	}
	return strconv.AppendInt(dst, n, 10), nil
}

type member struct {
	key   string
	units []uint16
	value any
}

func appendObject(dst []byte, obj map[string]any, depth int) ([]byte, error) {
	members := make([]member, 0, len(obj))
	for k, v := range obj {
		if !validString(k) {
			return dst, ErrInvalidUTF8
		}
		members = append(members, member{key: k, units: utf16.Encode([]rune(k)), value: v})
	}
	// RFC 8785 §3.2.3: sort by the UTF-16 code units of the names.
	slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.units, b.units) })
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		var err error
		if dst, err = appendValue(dst, m.value, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// validString reports whether s may be serialized: valid UTF-8 without
// surrogates (Go strings cannot hold a valid surrogate) or noncharacters.
func validString(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		if isNoncharacter(r) {
			return false
		}
		i += size
	}
	return true
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
	// Shortest round-trip digits in scientific form: d[.ddd]e±x.
	var scratch [32]byte
	sci := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64)
	ePos := slices.Index(sci, 'e')
	mantissa, expText := sci[:ePos], sci[ePos+1:]
	digits := make([]byte, 0, 17)
	for _, c := range mantissa {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	exp, _ := strconv.Atoi(string(expText))
	k := len(digits)
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
