package schema

import (
	"fmt"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
)

// DecodeDocument parses doc (strict I-JSON) and decodes its root with t,
// which must describe an object (Object, Union or a Ref to one). The first
// error is a *strict.FieldError (or a *jcs.ParseError for syntax).
func DecodeDocument(doc []byte, t Type) (map[string]any, error) {
	root, r, err := strict.Parse(doc)
	if err != nil {
		return nil, err
	}
	v := DecodeObject(root, t)
	if err := r.Err(); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeObject decodes o with an object-shaped description, closes it and
// returns the normalized value. Errors are recorded in o's reader.
func DecodeObject(o *strict.Object, t Type) map[string]any {
	out := map[string]any{}
	switch x := t.(type) {
	case Ref:
		return DecodeObject(o, x.Def.Type)
	case Object:
		guard(o, x.Guards)
		DecodeFields(o, x.Fields, out)
		o.Close()
	case Union:
		guard(o, x.Guards)
		branches := make(map[string]func(*strict.Object), len(x.Branches))
		for _, b := range x.Branches {
			branches[b.Value] = func(bo *strict.Object) {
				guard(bo, b.Guards)
				DecodeFields(bo, b.Fields, out)
			}
		}
		if got := o.Union(x.Discriminator, branches); got != "" {
			out[x.Discriminator] = got
		}
	default:
		o.Fail("", strict.ErrInvalidValue, fmt.Sprintf("description %T is not an object", t))
	}
	return out
}

// guard records the first guard violation of o.
func guard(o *strict.Object, guards []Guard) {
	for _, g := range guards {
		for _, n := range g.Forbid {
			if o.Has(n) {
				o.Fail(n, g.Err, "")
				return
			}
		}
		for _, n := range g.Require {
			if !o.Has(n) {
				o.Fail(n, g.Err, "")
				return
			}
		}
	}
}

// DecodeFields reads the listed fields of o into out, in order, without
// closing o (the caller may read more fields before Close).
func DecodeFields(o *strict.Object, fields []Field, out map[string]any) {
	for _, f := range fields {
		if f.Optional && !o.Has(f.Name) {
			continue
		}
		if v, ok := decodeField(o, f, out); ok {
			out[f.Name] = v
		}
	}
}

func decodeField(o *strict.Object, f Field, siblings map[string]any) (any, bool) {
	name := f.Name
	switch x := f.Type.(type) {
	case Text:
		s := o.String(name)
		if s == "" {
			return nil, false
		}
		if err := x.check(s); err != "" {
			o.Fail(name, strict.ErrInvalidValue, err)
			return nil, false
		}
		return s, true
	case UUID:
		s := o.UUID(name)
		return s, s != "" && strict.IsUUID(s)
	case Timestamp:
		text := o.String(name)
		if text == "" {
			return nil, false
		}
		if _, err := strict.ParseTimestamp(text); err != nil {
			o.Fail(name, strict.ErrInvalidTimestamp, fmt.Sprintf("%q (want %s)", text, strict.TimestampLayout))
			return nil, false
		}
		return text, true
	case Literal:
		if x.Err == nil {
			o.Literal(name, x.Value)
			return x.Value, true
		}
		if got := o.String(name); got != "" && got != x.Value {
			o.Fail(name, x.Err, fmt.Sprintf("want %s, got %s", x.Value, got))
			return nil, false
		}
		return x.Value, true
	case Enum:
		s := o.Enum(name, x.Values...)
		return s, s != ""
	case SchemaVersion:
		s := o.SchemaVersion(name, x.Known...)
		return s, s != ""
	case DigestAlgorithm:
		if !o.Has(name) && o.Has(x.ValueField) {
			o.Fail(name, digest.ErrMissingAlgorithm, "bare digest")
			return nil, false
		}
		s := o.String(name)
		if s == "" {
			return nil, false
		}
		if _, err := digest.ParseAlgorithm(s); err != nil {
			o.Fail(name, err, "")
			return nil, false
		}
		return s, true
	case DigestValue:
		s := o.String(name)
		if s == "" {
			return nil, false
		}
		alg, ok := siblings[x.AlgorithmField].(string)
		if !ok {
			return nil, false // the algorithm field's error is already recorded
		}
		if err := digest.ValidateValue(digest.Algorithm(alg), s); err != nil {
			o.Fail(name, err, "")
			return nil, false
		}
		return s, true
	case Int:
		if !o.Has(name) {
			o.Raw(name) // records the missing field
			return nil, false
		}
		var n int64
		switch num := o.Raw(name).(type) {
		case jcs.Number:
			var err error
			if n, err = strict.ParseSafeInteger(string(num)); err != nil {
				o.Fail(name, err, string(num))
				return nil, false
			}
		case int64: // a Go-built tree (an object's ToJSON), checked without a JSON round trip
			n = num
		default:
			o.Fail(name, strict.ErrWrongType, "want integer")
			return nil, false
		}
		if n < x.Min || n > x.max() {
			o.Fail(name, strict.ErrOutOfRange, fmt.Sprintf("%d not in [%d, %d]", n, x.Min, x.max()))
			return nil, false
		}
		return n, true
	case Bool:
		return o.Bool(name), true
	case Object, Union:
		return DecodeObject(o.Object(name), x), true
	case Ref:
		return decodeField(o, Field{Name: name, Type: x.Def.Type}, siblings)
	case Array:
		items := decodeArray(o, name, x.Items)
		if o.Has(name) && !x.counts(len(items)) {
			o.Fail(name, strict.ErrOutOfRange, fmt.Sprintf("%d items not in [%d, %d]", len(items), x.MinItems, x.MaxItems))
			return nil, false
		}
		return items, true
	default:
		o.Fail(name, strict.ErrInvalidValue, fmt.Sprintf("unsupported description %T", f.Type))
		return nil, false
	}
}

func decodeArray(o *strict.Object, name string, items Type) []any {
	if ref, ok := items.(Ref); ok {
		items = ref.Def.Type
	}
	switch x := items.(type) {
	case Object, Union:
		objs := o.Objects(name)
		out := make([]any, len(objs))
		for i, item := range objs {
			out[i] = DecodeObject(item, x)
		}
		return out
	case Text:
		ss := o.Strings(name)
		out := make([]any, len(ss))
		for i, s := range ss {
			if err := x.check(s); err != "" {
				o.Fail(fmt.Sprintf("%s[%d]", name, i), strict.ErrInvalidValue, err)
			}
			out[i] = s
		}
		return out
	default:
		o.Fail(name, strict.ErrInvalidValue, fmt.Sprintf("unsupported array item description %T", items))
		return nil
	}
}

// counts reports whether n elements are within the array's bounds.
func (a Array) counts(n int) bool {
	return n >= a.MinItems && (a.MaxItems == 0 || n <= a.MaxItems)
}

// Check validates a Go string against the description (non-empty, length,
// pattern); the error wraps strict.ErrEmptyString or strict.ErrInvalidValue.
func (t Text) Check(s string) error {
	if s == "" {
		return strict.ErrEmptyString
	}
	if msg := t.check(s); msg != "" {
		return fmt.Errorf("%w: %s", strict.ErrInvalidValue, msg)
	}
	return nil
}

func (t Text) check(s string) string {
	if t.MaxLength > 0 && len([]rune(s)) > t.MaxLength {
		return fmt.Sprintf("longer than %d characters", t.MaxLength)
	}
	if t.Pattern != "" && !pattern(t.Pattern).MatchString(s) {
		return fmt.Sprintf("%q does not match %s", s, t.Pattern)
	}
	return ""
}
