package admin

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of the admin queries.
var (
	// ErrInvalidID is matched by every *InvalidIDError.
	ErrInvalidID = errors.New("admin: invalid id")
	// ErrUnknownKind is returned for a lookup kind other than the IDKind
	// constants.
	ErrUnknownKind = errors.New("admin: unknown lookup kind")
	// ErrNotFound means an exact-id lookup matched nothing in any boundary
	// read (LookupResult.Err).
	ErrNotFound = errors.New("admin: not found")
)

// IDKind says what an exact id names.
type IDKind string

// Lookup kinds. KindAny matches an id as an event id, a run id and a
// reservation id at once.
const (
	KindEvent       IDKind = "event"
	KindRun         IDKind = "run"
	KindReservation IDKind = "reservation"
	KindAny         IDKind = "any"
)

// Kinds lists the lookup kinds in form order.
var Kinds = []IDKind{KindAny, KindEvent, KindRun, KindReservation}

// ParseKind accepts the exact kind names; "" is KindAny.
func ParseKind(s string) (IDKind, error) {
	if s == "" {
		return KindAny, nil
	}
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("%w %q (want any, event, run or reservation)", ErrUnknownKind, clip(s))
}

// InvalidIDError is a lookup id that is not an exact UUID. No query runs
// for it.
type InvalidIDError struct {
	Kind  IDKind
	Value string
}

func (e *InvalidIDError) Error() string {
	return fmt.Sprintf("admin: %s id %q is not an exact UUID (8-4-4-4-12 hexadecimal digits)", e.Kind, clip(e.Value))
}

// Is makes errors.Is(err, ErrInvalidID) hold.
func (e *InvalidIDError) Is(target error) bool { return target == ErrInvalidID }

// ParseID checks that s is an exact UUID in its 36-character hyphenated
// form and returns it in lower case (the form ids are stored in). Nothing
// else is accepted: no braces, no URN prefix, no surrounding space.
func ParseID(kind IDKind, s string) (string, error) {
	if len(s) != 36 {
		return "", &InvalidIDError{Kind: kind, Value: s}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", &InvalidIDError{Kind: kind, Value: s}
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return "", &InvalidIDError{Kind: kind, Value: s}
			}
		}
	}
	return strings.ToLower(s), nil
}

// clip bounds user input quoted in an error message.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
