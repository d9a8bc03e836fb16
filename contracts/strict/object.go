// Package strict provides the fail-closed decoding building blocks every
// contract uses: an object reader that rejects unknown, missing and mistyped
// fields, unknown enum literals and schema versions, unsafe integers and mixed
// union branches; the content-address quadruple; canonical timestamps and
// UUIDs; and digest-candidate construction.
//
// Decoders read a value tree produced by jcs.Parse, so duplicate keys, invalid
// UTF-8 and the other I-JSON violations are rejected before a decoder runs.
// A Reader keeps the first error; decoders read every field and ask Err()
// once at the end, which keeps them declarative and short.
package strict

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/oceanway/core/contracts/jcs"
)

// Sentinel reasons; every decoding error wraps exactly one of them.
var (
	ErrNotObject            = errors.New("strict: value is not an object")
	ErrUnknownField         = errors.New("strict: unknown field")
	ErrMissingField         = errors.New("strict: missing required field")
	ErrWrongType            = errors.New("strict: field has the wrong JSON type")
	ErrEmptyString          = errors.New("strict: empty string")
	ErrUnknownEnum          = errors.New("strict: unknown enum literal")
	ErrUnexpectedLiteral    = errors.New("strict: field does not hold its fixed literal")
	ErrUnknownSchemaVersion = errors.New("strict: unknown schema version")
	ErrUnsafeInteger        = errors.New("strict: integer outside the safe range or not integral")
	ErrOutOfRange           = errors.New("strict: integer out of the allowed range")
	ErrMixedUnion           = errors.New("strict: field belongs to another union branch")
	ErrInvalidUUID          = errors.New("strict: not a lowercase canonical UUID")
	ErrInvalidTimestamp     = errors.New("strict: not a canonical UTC timestamp")
	ErrInvalidValue         = errors.New("strict: invalid value")
)

// FieldError names the JSON path of the offending field.
type FieldError struct {
	Path   string
	Err    error
	Detail string
}

func (e *FieldError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s: %v: %s", e.Path, e.Err, e.Detail)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// Reader collects the first decoding error of a document.
type Reader struct {
	err error
}

// Err returns the first recorded error, if any.
func (r *Reader) Err() error { return r.err }

// Fail records err at path unless an earlier error is already recorded.
func (r *Reader) Fail(path string, err error, detail string) {
	if r.err == nil {
		r.err = &FieldError{Path: path, Err: err, Detail: detail}
	}
}

// FailErr records an already-typed error (for example from a nested validator).
func (r *Reader) FailErr(path string, err error) {
	if r.err == nil && err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			r.err = err
			return
		}
		r.err = &FieldError{Path: path, Err: err}
	}
}

// Parse parses a JSON document and returns a reader over its root object.
// Syntax and I-JSON errors are returned directly (as *jcs.ParseError).
func Parse(doc []byte) (*Object, *Reader, error) {
	v, err := jcs.Parse(doc)
	if err != nil {
		return nil, nil, err
	}
	r := &Reader{}
	return r.Root(v), r, nil
}

// Root wraps a parsed value as the root object ("$").
func (r *Reader) Root(v any) *Object {
	return r.objectAt("$", v)
}

func (r *Reader) objectAt(path string, v any) *Object {
	m, ok := v.(map[string]any)
	if !ok {
		r.Fail(path, ErrNotObject, "")
		m = map[string]any{}
	}
	return &Object{r: r, path: path, m: m, used: make(map[string]bool, len(m))}
}

// Object is a strict view of one JSON object.
type Object struct {
	r      *Reader
	path   string
	m      map[string]any
	used   map[string]bool
	branch string // set inside a union branch; leftovers become ErrMixedUnion
}

// Path returns the JSON path of the object.
func (o *Object) Path() string { return o.path }

// Reader returns the reader errors are recorded in.
func (o *Object) Reader() *Reader { return o.r }

func (o *Object) fieldPath(name string) string { return o.path + "." + name }

// Fail records an error at the given field.
func (o *Object) Fail(name string, err error, detail string) {
	o.r.Fail(o.fieldPath(name), err, detail)
}

// Has reports whether the field is present (it does not mark it read).
func (o *Object) Has(name string) bool {
	_, ok := o.m[name]
	return ok
}

func (o *Object) take(name string, required bool) (any, bool) {
	v, ok := o.m[name]
	if !ok {
		if required {
			o.Fail(name, ErrMissingField, "")
		}
		return nil, false
	}
	o.used[name] = true
	return v, true
}

// String reads a required non-empty string.
func (o *Object) String(name string) string {
	s, _ := o.string(name, true)
	return s
}

// OptString reads an optional non-empty string.
func (o *Object) OptString(name string) (string, bool) {
	return o.string(name, false)
}

func (o *Object) string(name string, required bool) (string, bool) {
	v, ok := o.take(name, required)
	if !ok {
		return "", false
	}
	s, isString := v.(string)
	if !isString {
		o.Fail(name, ErrWrongType, "want string")
		return "", false
	}
	if s == "" {
		o.Fail(name, ErrEmptyString, "")
		return "", false
	}
	return s, true
}

// Literal reads a required string that must equal want exactly.
func (o *Object) Literal(name, want string) {
	got, ok := o.string(name, true)
	if ok && got != want {
		o.Fail(name, ErrUnexpectedLiteral, fmt.Sprintf("want %q, got %q", want, got))
	}
}

// Enum reads a required string that must be one of allowed.
func (o *Object) Enum(name string, allowed ...string) string {
	got, ok := o.string(name, true)
	if !ok {
		return ""
	}
	for _, a := range allowed {
		if got == a {
			return got
		}
	}
	o.Fail(name, ErrUnknownEnum, fmt.Sprintf("%q not in {%s}", got, strings.Join(allowed, ", ")))
	return ""
}

// SchemaVersion reads a required schema version literal that must be known.
func (o *Object) SchemaVersion(name string, known ...string) string {
	got, ok := o.string(name, true)
	if !ok {
		return ""
	}
	for _, k := range known {
		if got == k {
			return got
		}
	}
	o.Fail(name, ErrUnknownSchemaVersion, fmt.Sprintf("%q", got))
	return ""
}

// Bool reads a required boolean.
func (o *Object) Bool(name string) bool {
	v, ok := o.take(name, true)
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		o.Fail(name, ErrWrongType, "want boolean")
	}
	return b
}

// Int reads a required safe integer (|n| ≤ 2^53-1, integral literal without
// fraction or exponent). Identities and amounts are never rounded.
func (o *Object) Int(name string) int64 {
	n, _ := o.int(name, true)
	return n
}

// IntMin reads a required safe integer that must be ≥ min.
func (o *Object) IntMin(name string, min int64) int64 {
	n, ok := o.int(name, true)
	if ok && n < min {
		o.Fail(name, ErrOutOfRange, fmt.Sprintf("%d < %d", n, min))
	}
	return n
}

// OptInt reads an optional safe integer.
func (o *Object) OptInt(name string) (int64, bool) {
	return o.int(name, false)
}

func (o *Object) int(name string, required bool) (int64, bool) {
	v, ok := o.take(name, required)
	if !ok {
		return 0, false
	}
	num, isNum := v.(jcs.Number)
	if !isNum {
		o.Fail(name, ErrWrongType, "want integer")
		return 0, false
	}
	n, err := ParseSafeInteger(string(num))
	if err != nil {
		o.Fail(name, err, string(num))
		return 0, false
	}
	return n, true
}

// ParseSafeInteger accepts an integer literal in [-(2^53-1), 2^53-1] written
// without fraction or exponent ("-0" is rejected: it is not a canonical integer).
func ParseSafeInteger(lit string) (int64, error) {
	s := lit
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if s == "" || len(s) > 16 || (len(s) > 1 && s[0] == '0') || (neg && s == "0") {
		return 0, ErrUnsafeInteger
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, ErrUnsafeInteger
		}
		n = n*10 + int64(c-'0')
	}
	if n > jcs.MaxSafeInteger {
		return 0, ErrUnsafeInteger
	}
	if neg {
		n = -n
	}
	return n, nil
}

// Object reads a required nested object.
func (o *Object) Object(name string) *Object {
	v, ok := o.take(name, true)
	if !ok {
		return o.r.objectAt(o.fieldPath(name), map[string]any{})
	}
	return o.r.objectAt(o.fieldPath(name), v)
}

// OptObject reads an optional nested object.
func (o *Object) OptObject(name string) (*Object, bool) {
	v, ok := o.take(name, false)
	if !ok {
		return nil, false
	}
	return o.r.objectAt(o.fieldPath(name), v), true
}

// Array reads a required array.
func (o *Object) Array(name string) []any {
	v, ok := o.take(name, true)
	if !ok {
		return nil
	}
	a, isArr := v.([]any)
	if !isArr {
		o.Fail(name, ErrWrongType, "want array")
		return nil
	}
	return a
}

// Objects reads a required array of objects.
func (o *Object) Objects(name string) []*Object {
	arr := o.Array(name)
	out := make([]*Object, len(arr))
	for i, v := range arr {
		out[i] = o.r.objectAt(fmt.Sprintf("%s[%d]", o.fieldPath(name), i), v)
	}
	return out
}

// Strings reads a required array of non-empty strings.
func (o *Object) Strings(name string) []string {
	arr := o.Array(name)
	out := make([]string, 0, len(arr))
	for i, v := range arr {
		s, ok := v.(string)
		switch {
		case !ok:
			o.r.Fail(fmt.Sprintf("%s[%d]", o.fieldPath(name), i), ErrWrongType, "want string")
			continue
		case s == "":
			o.r.Fail(fmt.Sprintf("%s[%d]", o.fieldPath(name), i), ErrEmptyString, "")
			continue
		}
		out = append(out, s)
	}
	return out
}

// Raw reads a required field of any JSON type, returned as the parsed tree.
func (o *Object) Raw(name string) any {
	v, _ := o.take(name, true)
	return v
}

// UUID reads a required lowercase canonical UUID.
func (o *Object) UUID(name string) string {
	s, ok := o.string(name, true)
	if ok && !IsUUID(s) {
		o.Fail(name, ErrInvalidUUID, fmt.Sprintf("%q", s))
	}
	return s
}

// OptUUID reads an optional lowercase canonical UUID.
func (o *Object) OptUUID(name string) (string, bool) {
	s, ok := o.string(name, false)
	if ok && !IsUUID(s) {
		o.Fail(name, ErrInvalidUUID, fmt.Sprintf("%q", s))
	}
	return s, ok
}

// IsUUID reports whether s is a lowercase canonical 8-4-4-4-12 UUID, i.e.
// matches ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$.
// Every decoded identity goes through it, so it scans bytes instead of
// running a regular expression (a test keeps the pattern as its oracle).
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// Close rejects every field that was not read. Inside a union branch the
// leftovers are reported as ErrMixedUnion.
func (o *Object) Close() {
	var unknown []string
	for k := range o.m {
		if !o.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return
	}
	sort.Strings(unknown)
	if o.branch != "" {
		o.Fail(unknown[0], ErrMixedUnion, "not allowed in branch "+o.branch)
		return
	}
	o.Fail(unknown[0], ErrUnknownField, "")
}

// Union reads the discriminator field, runs the decoder of the selected
// branch and closes the object: any field the branch did not read is a
// mixed-branch error. It returns the selected literal ("" on error). An
// unknown or missing discriminator is ErrUnknownEnum or ErrMissingField.
//
// Read the fields common to every branch before calling Union, since it
// closes the object. A branch decoder only knows its own fields, so a field
// that belongs to no branch at all is also reported as ErrMixedUnion ("not
// allowed in branch kind=x"); either way the document is rejected.
func (o *Object) Union(discriminator string, branches map[string]func(*Object)) string {
	names := make([]string, 0, len(branches))
	for k := range branches {
		names = append(names, k)
	}
	sort.Strings(names)
	got := o.Enum(discriminator, names...)
	if got == "" {
		o.markAllUsed() // the discriminator error is the one to report
		return ""
	}
	o.branch = discriminator + "=" + got
	branches[got](o)
	o.Close()
	return got
}

func (o *Object) markAllUsed() {
	for k := range o.m {
		o.used[k] = true
	}
}
