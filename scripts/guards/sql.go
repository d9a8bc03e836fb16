package main

import (
	"fmt"
	"regexp"
	"strings"
)

// A token of a migration file. Strings and line comments are skipped;
// block comments are kept because clause markers live in them.
type sqlToken struct {
	kind       tokKind
	text       string // lower-cased for words; the raw text otherwise
	start, end int    // byte offsets in the file
}

type tokKind int

const (
	tWord tokKind = iota
	tPunct
	tDollar  // a dollar-quote delimiter: $$ or $tag$
	tComment // a block comment
)

// markerRE is a clause marker: /* guard ID */ where ID is CODE.slug (the
// SQLSTATE or requirement the clause enforces, then what it refuses).
var markerRE = regexp.MustCompile(`^/\*\s*guard\s+([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\.[a-z0-9]+(?:-[a-z0-9]+)*)\s*\*/$`)

// idRE finds a clause ID in test source.
var idRE = regexp.MustCompile(`[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\.[a-z0-9]+(?:-[a-z0-9]+)*`)

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// lex splits SQL (migration text, PL/pgSQL bodies included) into tokens.
// It understands just enough: quoted strings (”, E”, "ident"), comments,
// dollar quotes (as delimiters: bodies are lexed as code) and punctuation.
func lex(src string) ([]sqlToken, error) {
	var out []sqlToken
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("offset %d: unterminated comment", i)
			}
			end := i + 2 + j + 2
			out = append(out, sqlToken{tComment, src[i:end], i, end})
			i = end
		case c == '\'':
			escapes := i > 0 && (src[i-1] == 'E' || src[i-1] == 'e') && (i < 2 || !isWordByte(src[i-2]))
			j := i + 1
			for ; j < len(src); j++ {
				if escapes && src[j] == '\\' {
					j++
					continue
				}
				if src[j] == '\'' {
					if j+1 < len(src) && src[j+1] == '\'' {
						j++
						continue
					}
					break
				}
			}
			if j >= len(src) {
				return nil, fmt.Errorf("offset %d: unterminated string", i)
			}
			i = j + 1
		case c == '"':
			j := strings.IndexByte(src[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("offset %d: unterminated identifier", i)
			}
			end := i + 1 + j + 1
			out = append(out, sqlToken{tWord, strings.ToLower(src[i+1 : end-1]), i, end})
			i = end
		case c == '$' && i+1 < len(src) && (src[i+1] == '$' || src[i+1] >= 'a' && src[i+1] <= 'z' || src[i+1] >= 'A' && src[i+1] <= 'Z' || src[i+1] == '_'):
			j := i + 1
			for j < len(src) && src[j] != '$' && (isWordByte(src[j]) && src[j] != '.') {
				j++
			}
			if j < len(src) && src[j] == '$' {
				out = append(out, sqlToken{tDollar, src[i : j+1], i, j + 1})
				i = j + 1
			} else {
				i++ // a positional parameter or stray $
			}
		case isWordByte(c):
			j := i
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			out = append(out, sqlToken{tWord, strings.ToLower(src[i:j]), i, j})
			i = j
		default:
			out = append(out, sqlToken{tPunct, src[i : i+1], i, i + 1})
			i++
		}
	}
	return out, nil
}

func isWord(t sqlToken, w string) bool { return t.kind == tWord && t.text == w }

// markerID returns the clause ID of a marker comment token, or "".
func markerID(t sqlToken) string {
	if t.kind != tComment {
		return ""
	}
	if m := markerRE.FindStringSubmatch(t.text); m != nil {
		return m[1]
	}
	return ""
}

// looksLikeMarker reports a comment that means to be a marker but is malformed.
func looksLikeMarker(t sqlToken) bool {
	return t.kind == tComment && strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(t.text, "/*")), "guard")
}

// condEnd returns the index of the THEN token that ends the condition
// starting at toks[from]: the first THEN outside parentheses and nested
// CASE ... END expressions.
func condEnd(toks []sqlToken, from int) (int, error) {
	depth, cases := 0, 0
	for i := from; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tPunct && t.text == "(":
			depth++
		case t.kind == tPunct && t.text == ")":
			depth--
		case isWord(t, "case"):
			cases++
		case isWord(t, "end") && cases > 0:
			cases--
		case isWord(t, "then") && depth == 0 && cases == 0:
			return i, nil
		case t.kind == tPunct && t.text == ";" || t.kind == tDollar:
			return 0, fmt.Errorf("offset %d: no THEN ends the condition", toks[from].start)
		}
	}
	return 0, fmt.Errorf("offset %d: no THEN ends the condition", toks[from].start)
}

// closeParen returns the index of the ) that closes the ( at toks[open].
func closeParen(toks []sqlToken, open int) (int, error) {
	depth := 0
	for i := open; i < len(toks); i++ {
		switch {
		case toks[i].kind == tPunct && toks[i].text == "(":
			depth++
		case toks[i].kind == tPunct && toks[i].text == ")":
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("offset %d: unbalanced parentheses", toks[open].start)
}

// statementEnd returns the index of the ; that ends the top-level
// statement containing toks[from], skipping dollar-quoted bodies.
func statementEnd(toks []sqlToken, from int) int {
	for i := from; i < len(toks); i++ {
		if toks[i].kind == tDollar {
			i = matchingDollar(toks, i)
			continue
		}
		if toks[i].kind == tPunct && toks[i].text == ";" {
			return i
		}
	}
	return len(toks) - 1
}

// matchingDollar returns the index of the delimiter closing toks[open].
func matchingDollar(toks []sqlToken, open int) int {
	for j := open + 1; j < len(toks); j++ {
		if toks[j].kind == tDollar && toks[j].text == toks[open].text {
			return j
		}
	}
	return len(toks) - 1
}
