package strict

import (
	"fmt"
	"time"
)

// TimestampLayout is the single canonical text form of a contract timestamp:
// UTC, fixed microsecond precision, "Z". PostgreSQL timestamptz has
// microsecond precision, so a value read back re-digests identically.
const TimestampLayout = "2006-01-02T15:04:05.000000Z"

// FormatTimestamp renders t in the canonical form (truncated to microseconds).
func FormatTimestamp(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(TimestampLayout)
}

// ParseTimestamp accepts only the canonical form.
func ParseTimestamp(s string) (time.Time, error) {
	t, err := time.Parse(TimestampLayout, s)
	if err != nil || FormatTimestamp(t) != s {
		return time.Time{}, fmt.Errorf("%w: %q (want %s)", ErrInvalidTimestamp, s, TimestampLayout)
	}
	return t, nil
}

// Timestamp reads a required canonical timestamp.
func (o *Object) Timestamp(name string) time.Time {
	s, ok := o.string(name, true)
	if !ok {
		return time.Time{}
	}
	t, err := ParseTimestamp(s)
	if err != nil {
		o.Fail(name, ErrInvalidTimestamp, fmt.Sprintf("%q", s))
	}
	return t
}

// OptTimestamp reads an optional canonical timestamp.
func (o *Object) OptTimestamp(name string) (time.Time, bool) {
	s, ok := o.string(name, false)
	if !ok {
		return time.Time{}, false
	}
	t, err := ParseTimestamp(s)
	if err != nil {
		o.Fail(name, ErrInvalidTimestamp, fmt.Sprintf("%q", s))
		return time.Time{}, false
	}
	return t, true
}
