package jcs

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds nesting so hostile input cannot exhaust the stack: a
// document may hold at most MaxDepth nested arrays and objects. The parser and
// Marshal apply the same limit, so everything Parse accepts Marshal accepts.
const MaxDepth = 512

// Number is a JSON number kept as its exact source literal. Contract decoders
// need the literal (an identity beyond 2^53 must be rejected, not rounded);
// the canonicalizer serializes its IEEE-754 value.
type Number string

// Float64 returns the IEEE-754 value of the literal. The literal must follow
// the RFC 8259 number grammar (ErrInvalidNumberText otherwise: no hex, "Inf",
// "NaN", "+1" or ".5"), denote a finite double (ErrNumberOutOfRange) and not
// be a non-zero literal that underflows to zero (ErrNumberUnderflow), exactly
// as Parse requires. A Number built by hand is checked as strictly as a parsed one.
func (n Number) Float64() (float64, error) {
	end, nonZero, perr := scanNumber(n, 0)
	if perr != nil || end != len(n) {
		return 0, fmt.Errorf("%w: %q", ErrInvalidNumberText, string(n))
	}
	return numberValue(string(n), nonZero)
}

// numberValue converts a grammatical literal, rejecting overflow and underflow.
func numberValue(lit string, nonZero bool) (float64, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if f == 0 && nonZero {
		return 0, ErrNumberUnderflow
	}
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, ErrNumberOutOfRange
	}
	return f, nil
}

// Parse decodes one I-JSON document into a value tree made of
// nil, bool, string, Number, []any and map[string]any.
//
// It is stricter than RFC 8259 where RFC 7493 (I-JSON) and RFC 8785 require:
// duplicate member names, invalid UTF-8, lone surrogates (raw or escaped),
// noncharacters, numbers outside the finite double range (and non-zero
// literals that underflow to zero), a leading byte-order mark and trailing
// data are all rejected with a *ParseError naming the byte offset.
func Parse(data []byte) (any, error) {
	p := parser{data: data}
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		return nil, p.fail(0, ErrByteOrderMark, "")
	}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.fail(p.pos, ErrTrailingData, "")
	}
	return v, nil
}

type parser struct {
	data []byte
	pos  int
	// names interns member names without escapes inside arrays: arrays of
	// same-shaped objects then allocate each name once per document, not
	// once per object. Outside arrays names rarely repeat, and interning
	// them would cost more map work than it saves.
	names map[string]string
	// arrays counts the arrays enclosing the current value.
	arrays int
}

func (p *parser) fail(offset int, reason error, detail string) error {
	return &ParseError{Offset: offset, Err: reason, Detail: detail}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses the value at p.pos; depth is the number of enclosing containers.
func (p *parser) value(depth int) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.fail(p.pos, ErrUnexpectedEOF, "")
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return nil, p.fail(p.pos, ErrTooDeep, "")
		}
		if c == '{' {
			return p.object(depth)
		}
		return p.array(depth)
	case c == '"':
		return p.stringValue(false)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	default:
		return nil, p.fail(p.pos, ErrSyntax, "unexpected character "+strconv.QuoteRune(rune(c)))
	}
}

func (p *parser) literal(word string) error {
	for i := 0; i < len(word); i++ {
		if p.pos+i >= len(p.data) {
			return p.fail(p.pos+i, ErrUnexpectedEOF, "")
		}
		if p.data[p.pos+i] != word[i] {
			return p.fail(p.pos+i, ErrSyntax, "invalid literal")
		}
	}
	p.pos += len(word)
	return nil
}

func (p *parser) object(depth int) (any, error) {
	p.pos++ // '{'
	obj := map[string]any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail(p.pos, ErrUnexpectedEOF, "")
		}
		if p.data[p.pos] != '"' {
			return nil, p.fail(p.pos, ErrSyntax, "expected member name")
		}
		keyOffset := p.pos
		key, err := p.stringValue(p.arrays > 0)
		if err != nil {
			return nil, err
		}
		if _, dup := obj[key]; dup {
			return nil, p.fail(keyOffset, ErrDuplicateKey, strconv.Quote(key))
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail(p.pos, ErrUnexpectedEOF, "")
		}
		if p.data[p.pos] != ':' {
			return nil, p.fail(p.pos, ErrSyntax, "expected ':'")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj[key] = v
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail(p.pos, ErrUnexpectedEOF, "")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.fail(p.pos, ErrSyntax, "expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	p.pos++ // '['
	p.arrays++
	defer func() { p.arrays-- }()
	arr := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, nil
	}
	for {
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail(p.pos, ErrUnexpectedEOF, "")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return arr, nil
		default:
			return nil, p.fail(p.pos, ErrSyntax, "expected ',' or ']'")
		}
	}
}

// isNoncharacter reports the 66 Unicode noncharacters, which I-JSON
// (RFC 7493 §2.1) forbids in strings.
func isNoncharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE
}

// isEncodedSurrogate reports whether b starts with the three-byte
// (CESU-8 style) encoding of a UTF-16 surrogate, which UTF-8 forbids.
func isEncodedSurrogate[T ~string | ~[]byte](b T) bool {
	return len(b) >= 3 && b[0] == 0xED && b[1] >= 0xA0 && b[1] <= 0xBF && b[2] >= 0x80 && b[2] <= 0xBF
}

// stringValue scans the string at p.pos; intern is set for member names.
func (p *parser) stringValue(intern bool) (string, error) {
	start := p.pos
	p.pos++ // opening quote
	// Fast path: no escapes.
	var buf []byte
	for {
		if p.pos >= len(p.data) {
			return "", p.fail(p.pos, ErrUnexpectedEOF, "unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if buf != nil {
				return string(buf), nil
			}
			raw := p.data[start+1 : p.pos-1]
			if !intern {
				return string(raw), nil
			}
			if name, ok := p.names[string(raw)]; ok { // no allocation for the lookup
				return name, nil
			}
			if p.names == nil {
				p.names = make(map[string]string)
			}
			name := string(raw)
			p.names[name] = name
			return name, nil
		case c == '\\':
			if buf == nil {
				buf = append(make([]byte, 0, p.pos-start+16), p.data[start+1:p.pos]...)
			}
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
		case c < 0x20:
			return "", p.fail(p.pos, ErrControlCharacter, "")
		case c < utf8.RuneSelf:
			if buf != nil {
				buf = append(buf, c)
			}
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				// Go's decoder also rejects UTF-8 encoded surrogates
				// (ED A0..BF 80..BF); name them for what they are.
				if isEncodedSurrogate(p.data[p.pos:]) {
					return "", p.fail(p.pos, ErrLoneSurrogate, "UTF-8 encoded surrogate")
				}
				return "", p.fail(p.pos, ErrInvalidUTF8, "")
			}
			if isNoncharacter(r) {
				return "", p.fail(p.pos, ErrNoncharacter, strconv.QuoteRuneToASCII(r))
			}
			if buf != nil {
				buf = append(buf, p.data[p.pos:p.pos+size]...)
			}
			p.pos += size
		}
	}
}

// escape decodes one escape sequence starting at the backslash, pairing
// escaped surrogates and rejecting lone ones.
func (p *parser) escape() (rune, error) {
	at := p.pos
	if p.pos+1 >= len(p.data) {
		return 0, p.fail(p.pos, ErrUnexpectedEOF, "")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	switch c {
	case '"':
		return '"', nil
	case '\\':
		return '\\', nil
	case '/':
		return '/', nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		return 0, p.fail(at, ErrSyntax, "invalid escape")
	}
	r, err := p.hex4(at)
	if err != nil {
		return 0, err
	}
	switch {
	case utf16.IsSurrogate(r) && r < 0xDC00:
		// High surrogate: must be followed by an escaped low surrogate.
		if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
			lowAt := p.pos
			p.pos += 2
			low, err := p.hex4(lowAt)
			if err != nil {
				return 0, err
			}
			if low < 0xDC00 || low > 0xDFFF {
				return 0, p.fail(at, ErrLoneSurrogate, "high surrogate not followed by a low surrogate")
			}
			r = utf16.DecodeRune(r, low)
		} else {
			return 0, p.fail(at, ErrLoneSurrogate, "high surrogate not followed by a low surrogate")
		}
	case utf16.IsSurrogate(r):
		return 0, p.fail(at, ErrLoneSurrogate, "low surrogate without a high surrogate")
	}
	if isNoncharacter(r) {
		return 0, p.fail(at, ErrNoncharacter, strconv.QuoteRuneToASCII(r))
	}
	return r, nil
}

func (p *parser) hex4(escapeAt int) (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.fail(escapeAt, ErrUnexpectedEOF, "truncated \\u escape")
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := p.data[p.pos+i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.fail(p.pos+i, ErrSyntax, "invalid hex digit in \\u escape")
		}
		r = r<<4 | rune(d)
	}
	p.pos += 4
	return r, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number scans an RFC 8259 number and checks that it denotes a finite double.
func (p *parser) number() (any, error) {
	start := p.pos
	end, nonZero, perr := scanNumber(p.data, start)
	if perr != nil {
		return nil, perr
	}
	p.pos = end
	lit := string(p.data[start:end])
	if _, err := numberValue(lit, nonZero); err != nil {
		return nil, p.fail(start, err, lit)
	}
	return Number(lit), nil
}

// scanNumber scans the RFC 8259 number grammar
//
//	number = [ "-" ] ( "0" / digit1-9 *DIGIT ) [ "." 1*DIGIT ] [ ( "e" / "E" ) [ "+" / "-" ] 1*DIGIT ]
//
// starting at data[start]. It returns the offset just past the literal and
// whether the significand has a non-zero digit (so a literal that parses to
// zero is known to have underflowed), or a *ParseError at the offending byte.
func scanNumber[T ~string | ~[]byte](data T, start int) (end int, nonZero bool, err *ParseError) {
	pos := start
	if pos < len(data) && data[pos] == '-' {
		pos++
	}
	if pos >= len(data) {
		return pos, false, &ParseError{Offset: pos, Err: ErrUnexpectedEOF}
	}
	switch c := data[pos]; {
	case c == '0':
		pos++
		if pos < len(data) && isDigit(data[pos]) {
			return pos, false, &ParseError{Offset: pos, Err: ErrSyntax, Detail: "leading zero"}
		}
	case c >= '1' && c <= '9':
		nonZero = true
		for pos < len(data) && isDigit(data[pos]) {
			pos++
		}
	default:
		return pos, false, &ParseError{Offset: pos, Err: ErrSyntax, Detail: "expected digit"}
	}
	if pos < len(data) && data[pos] == '.' {
		pos++
		if pos >= len(data) || !isDigit(data[pos]) {
			return pos, false, &ParseError{Offset: pos, Err: ErrSyntax, Detail: "expected digit after '.'"}
		}
		for pos < len(data) && isDigit(data[pos]) {
			if data[pos] != '0' {
				nonZero = true
			}
			pos++
		}
	}
	if pos < len(data) && (data[pos] == 'e' || data[pos] == 'E') {
		pos++
		if pos < len(data) && (data[pos] == '+' || data[pos] == '-') {
			pos++
		}
		if pos >= len(data) || !isDigit(data[pos]) {
			return pos, false, &ParseError{Offset: pos, Err: ErrSyntax, Detail: "expected exponent digit"}
		}
		for pos < len(data) && isDigit(data[pos]) {
			pos++
		}
	}
	return pos, nonZero, nil
}
