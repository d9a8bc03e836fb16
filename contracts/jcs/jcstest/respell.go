// Package jcstest helps test code that canonicalizes or strictly decodes
// JSON: it writes other spellings of the same JSON value, so tests can check
// that member order, whitespace, escapes and number spelling never change
// canonical bytes or a digest.
package jcstest

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/oceanway/core/contracts/jcs"
)

// Opts tunes Respell.
type Opts struct {
	// KeepNumbers writes every jcs.Number literal verbatim. Strict contract
	// decoders read integers from the literal ("5" is an integer, "5e0" is
	// not), so their tests keep numbers and vary only layout and escapes.
	KeepNumbers bool
}

// Respell writes a JSON text that denotes the same value as v (a tree as
// returned by jcs.Parse): members in random order, random insignificant
// whitespace, randomly escaped string characters (\u escapes in either case,
// surrogate pairs, \/) and, unless opts.KeepNumbers, numbers respelled as
// another literal of the same double. The result canonicalizes to the same
// bytes as v.
func Respell(v any, r *rand.Rand, opts Opts) []byte {
	w := writer{r: r, opts: opts}
	w.space()
	w.value(v)
	w.space()
	return w.buf
}

type writer struct {
	buf  []byte
	r    *rand.Rand
	opts Opts
}

var spaces = []string{"", "", "", " ", "\n", "\t", "\r\n", "  "}

func (w *writer) space() { w.buf = append(w.buf, spaces[w.r.IntN(len(spaces))]...) }

func (w *writer) value(v any) {
	switch x := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
	case string:
		w.string(x)
	case jcs.Number:
		w.number(x)
	case []any:
		w.buf = append(w.buf, '[')
		for i, e := range x {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.space()
			w.value(e)
			w.space()
		}
		w.buf = append(w.buf, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // deterministic for a given r, then shuffled
		w.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		w.buf = append(w.buf, '{')
		for i, k := range keys {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.space()
			w.string(k)
			w.space()
			w.buf = append(w.buf, ':')
			w.space()
			w.value(x[k])
			w.space()
		}
		w.buf = append(w.buf, '}')
	default:
		panic("jcstest: not a jcs.Parse value tree")
	}
}

func (w *writer) number(n jcs.Number) {
	f, err := n.Float64()
	if w.opts.KeepNumbers || err != nil {
		w.buf = append(w.buf, n...)
		return
	}
	switch w.r.IntN(5) {
	case 0:
		w.buf = append(w.buf, n...)
	case 1:
		w.buf = strconv.AppendFloat(w.buf, f, 'e', -1, 64)
	case 2:
		w.buf = strconv.AppendFloat(w.buf, f, 'E', 17, 64)
	case 3:
		if f == 0 && w.r.IntN(2) == 0 {
			w.buf = append(w.buf, "-0.0e-0"...)
			return
		}
		w.buf, _ = jcs.AppendNumber(w.buf, f)
	default:
		// Integral values up to 1e21 may be written out in full.
		if f == math.Trunc(f) && math.Abs(f) < 1e21 {
			w.buf = strconv.AppendFloat(w.buf, f, 'f', -1, 64)
			w.buf = append(w.buf, ".000"...)
			return
		}
		w.buf = strconv.AppendFloat(w.buf, f, 'g', -1, 64)
	}
}

var shortEscapes = map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}

const hexDigits = "0123456789abcdef0123456789ABCDEF"

func (w *writer) unit(u rune) {
	h := hexDigits
	if w.r.IntN(2) == 0 {
		h = hexDigits[16:]
	}
	w.buf = append(w.buf, '\\', 'u', h[u>>12&0xF], h[u>>8&0xF], h[u>>4&0xF], h[u&0xF])
}

func (w *writer) string(s string) {
	w.buf = append(w.buf, '"')
	for _, c := range s {
		short := shortEscapes[c]
		mustEscape := c < 0x20 || c == '"' || c == '\\'
		switch {
		case mustEscape && short != "" && w.r.IntN(2) == 0:
			w.buf = append(w.buf, short...)
		case mustEscape || w.r.IntN(5) == 0:
			if c > 0xFFFF {
				c -= 0x10000
				w.unit(0xD800 + c>>10)
				w.unit(0xDC00 + c&0x3FF)
			} else {
				w.unit(c)
			}
		case c == '/' && w.r.IntN(2) == 0:
			w.buf = append(w.buf, `\/`...)
		default:
			w.buf = utf8.AppendRune(w.buf, c)
		}
	}
	w.buf = append(w.buf, '"')
}
