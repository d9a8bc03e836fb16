package jcs

import (
	"errors"
	"fmt"
)

// Sentinel reasons. Every rejection of the parser or the canonicalizer wraps
// exactly one of them, so callers test with errors.Is and never read messages.
var (
	ErrSyntax            = errors.New("jcs: invalid JSON syntax")
	ErrUnexpectedEOF     = errors.New("jcs: unexpected end of input")
	ErrTrailingData      = errors.New("jcs: trailing data after the JSON value")
	ErrDuplicateKey      = errors.New("jcs: duplicate object member name")
	ErrInvalidUTF8       = errors.New("jcs: invalid UTF-8")
	ErrLoneSurrogate     = errors.New("jcs: lone UTF-16 surrogate")
	ErrNoncharacter      = errors.New("jcs: Unicode noncharacter")
	ErrControlCharacter  = errors.New("jcs: unescaped control character in string")
	ErrByteOrderMark     = errors.New("jcs: byte-order mark")
	ErrNumberOutOfRange  = errors.New("jcs: number not representable as a finite IEEE-754 double")
	ErrNumberUnderflow   = errors.New("jcs: non-zero number underflows to zero")
	ErrTooDeep           = errors.New("jcs: nesting too deep")
	ErrUnsupportedValue  = errors.New("jcs: value of unsupported Go type")
	ErrUnsafeInteger     = errors.New("jcs: integer outside the IEEE-754 safe range")
	ErrNonFiniteNumber   = errors.New("jcs: NaN or infinite number")
	ErrInvalidNumberText = errors.New("jcs: invalid number literal")
)

// ParseError locates a rejection in the input. Offset is the byte offset of
// the first byte that made the input invalid.
type ParseError struct {
	Offset int
	Err    error  // one of the sentinels above
	Detail string // optional human detail, never needed for classification
}

func (e *ParseError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%v at byte offset %d: %s", e.Err, e.Offset, e.Detail)
	}
	return fmt.Sprintf("%v at byte offset %d", e.Err, e.Offset)
}

func (e *ParseError) Unwrap() error { return e.Err }
