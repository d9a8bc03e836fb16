// Package schema is the one source description of the contract shapes that
// package envelope and package deliveryset publish (CT-5). A description is a
// small tree of Go values (Object, Union, Text, Int, ...). The same tree
//
//   - drives the runtime strict decoder (Decode, DecodeFields), built on
//     package strict, so unknown fields, wrong types, unknown literals,
//     unknown algorithm versions, bare digests and mixed union branches fail
//     closed exactly as every other contract decoder does;
//   - renders JSON Schema draft 2020-12 (JSONSchema) and TypeScript
//     declarations (TypeScript), which `go generate` writes under
//     contracts/schema/json and contracts/schema/ts (see package schemagen).
//
// Rules that relate several fields (sort order, counts, aggregate
// derivation, digest recomputation, …) are not shape rules: the owning
// package checks them after decoding, and JSON Schema does not express them.
// Those rules are listed in docs/contracts/envelope.md.
//
// Decoded values are normalized trees: string, int64, bool, []any and
// map[string]any, which jcs.Marshal accepts as they are.
package schema

import (
	"fmt"
	"regexp"
	"sync"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
)

// Type is one node of a shape description.
type Type interface{ isType() }

// Text is a required non-empty string, optionally bounded and patterned.
// Pattern is an RE2 expression anchored by the author (^…$); it must mean the
// same in ECMAScript, because the JSON Schema carries it verbatim.
type Text struct {
	MaxLength int
	Pattern   string
	Doc       string
}

// UUID is a lowercase canonical 8-4-4-4-12 UUID.
type UUID struct{}

// Timestamp is the canonical UTC microsecond "Z" text form (strict.TimestampLayout).
type Timestamp struct{}

// Literal is a string that must equal Value exactly. A mismatch is
// strict.ErrUnexpectedLiteral, or Err when the contract names its own reason.
type Literal struct {
	Value string
	Err   error
}

// Enum is a closed set of string literals.
type Enum struct{ Values []string }

// SchemaVersion is a closed set of known schema version literals; anything
// else is strict.ErrUnknownSchemaVersion.
type SchemaVersion struct{ Known []string }

// DigestAlgorithm is a registered digest algorithm version. ValueField names
// the sibling field that carries the digest value: a value without its
// algorithm version is a bare digest (digest.ErrMissingAlgorithm).
type DigestAlgorithm struct{ ValueField string }

// DigestValue is a digest value whose form is checked against the algorithm
// named by the sibling AlgorithmField (which must come earlier in the field list).
type DigestValue struct{ AlgorithmField string }

// Int is a safe integer (|n| ≤ 2^53-1, no fraction or exponent) in [Min, Max];
// a zero Max means 2^53-1.
type Int struct {
	Min int64
	Max int64
}

// Bool is a JSON boolean.
type Bool struct{}

// Object is a closed JSON object: exactly the listed fields. Guards run
// before the fields are read.
type Object struct {
	Fields []Field
	Guards []Guard
}

// Guard gives a rule its own reason where the shape alone would report an
// unknown, mixed or missing field: the decoder fails with Err at the first of
// Forbid that is present, else at the first of Require that is absent. JSON
// Schema and TypeScript need no guard: closed objects and required fields
// already reject those documents.
type Guard struct {
	Forbid  []string
	Require []string
	Err     error
}

// Field is one member of an object or union branch.
type Field struct {
	Name     string
	Type     Type
	Optional bool
	Doc      string
}

// Array is a JSON array of Items (objects, references or text) with
// MinItems..MaxItems elements; a zero bound is no bound. A count outside the
// bounds is strict.ErrOutOfRange.
type Array struct {
	Items    Type
	MinItems int
	MaxItems int
}

// Union is a closed discriminated union of objects. Guards run on the object
// before the discriminator is read.
type Union struct {
	Discriminator string
	Branches      []Branch
	Guards        []Guard
}

// Branch is one union branch: the discriminator literal and the other fields;
// its guards run before its fields are read.
type Branch struct {
	Value  string
	Fields []Field
	Doc    string
	Guards []Guard
}

// Ref refers to a named definition.
type Ref struct{ Def *Def }

// Def is a named definition: a $defs entry in JSON Schema and an exported
// type in TypeScript. Name must be a TypeScript identifier.
type Def struct {
	Name string
	Doc  string
	Type Type
}

func (Text) isType()            {}
func (UUID) isType()            {}
func (Timestamp) isType()       {}
func (Literal) isType()         {}
func (Enum) isType()            {}
func (SchemaVersion) isType()   {}
func (DigestAlgorithm) isType() {}
func (DigestValue) isType()     {}
func (Int) isType()             {}
func (Bool) isType()            {}
func (Object) isType()          {}
func (Array) isType()           {}
func (Union) isType()           {}
func (Ref) isType()             {}

// Common patterns. They are written in the RE2/ECMAScript common subset.
const (
	UUIDPattern      = `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`
	TimestampPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$`
	DigestPattern    = `^[0-9a-f]{64}$`
)

// Reusable leaf types.
var (
	// RefText is a repository-owned reference of a content-addressed object.
	RefText = Text{MaxLength: 256, Pattern: `^[A-Za-z0-9][A-Za-z0-9_.:/@+-]*$`}
	// VersionText is the schema version of a referenced object ("1", "2.0").
	VersionText = Text{MaxLength: 32, Pattern: `^[0-9]+(\.[0-9]+)*$`}
	// KeyText is a registry key such as a charge dimension key.
	KeyText = Text{MaxLength: 128, Pattern: `^[a-z0-9][a-z0-9_.:/-]*$`}
	// CodeText is a normalized reason code.
	CodeText = Text{MaxLength: 64, Pattern: `^[a-z][a-z0-9_]*$`}
	// PrincipalText is a principal identifier (printable ASCII, no spaces).
	PrincipalText = Text{MaxLength: 256, Pattern: `^[!-~]+$`}
	// AmountText is a non-negative decimal amount in canonical form: no sign,
	// no leading zeros, no trailing fractional zeros, no exponent. Amounts
	// are never JSON numbers, so they are never floats.
	AmountText = Text{MaxLength: 48, Pattern: `^(0|[1-9][0-9]{0,29}(\.[0-9]{0,17}[1-9])?|0\.[0-9]{0,17}[1-9])$`}
	// CurrencyText is an ISO 4217 alphabetic code.
	CurrencyText = Text{MaxLength: 3, Pattern: `^[A-Z]{3}$`}
)

// Quad returns the four fields of a content-address quadruple with prefix:
// {prefix}Ref, {prefix}SchemaVersion, {prefix}DigestAlgorithmVersion, {prefix}Digest.
func Quad(prefix, doc string) []Field {
	return []Field{
		{Name: prefix + "Ref", Type: RefText, Doc: doc},
		{Name: prefix + "SchemaVersion", Type: VersionText},
		{Name: prefix + "DigestAlgorithmVersion", Type: DigestAlgorithm{ValueField: prefix + "Digest"}},
		{Name: prefix + "Digest", Type: DigestValue{AlgorithmField: prefix + "DigestAlgorithmVersion"}},
	}
}

// DigestPairFields returns an {alg, value} digest pair given both field names.
func DigestPairFields(algField, valueField, doc string) []Field {
	return []Field{
		{Name: algField, Type: DigestAlgorithm{ValueField: valueField}, Doc: doc},
		{Name: valueField, Type: DigestValue{AlgorithmField: algField}},
	}
}

// Fields concatenates field lists (a readability helper for descriptions).
func Fields(groups ...[]Field) []Field {
	var out []Field
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// F is a shorthand for a required field.
func F(name string, t Type, doc string) []Field {
	return []Field{{Name: name, Type: t, Doc: doc}}
}

// Opt is a shorthand for an optional field.
func Opt(name string, t Type, doc string) []Field {
	return []Field{{Name: name, Type: t, Optional: true, Doc: doc}}
}

func (i Int) max() int64 {
	if i.Max == 0 {
		return jcs.MaxSafeInteger
	}
	return i.Max
}

var (
	patternCache sync.Map // pattern string → *regexp.Regexp
	algorithmSet = []string{string(digest.JCSSHA256V1)}
)

// Algorithms lists the registered digest algorithm versions the schemas accept.
func Algorithms() []string { return append([]string(nil), algorithmSet...) }

// pattern returns the compiled pattern, cached; descriptions are
// package-level values, so the cache stays small.
func pattern(p string) *regexp.Regexp {
	if re, ok := patternCache.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(p)
	patternCache.Store(p, re)
	return re
}

// Validate checks a description for authoring mistakes (bad patterns,
// duplicate field names, digest value fields without their algorithm field
// before them). Packages call it from tests.
func Validate(t Type) error {
	return validate(t, map[*Def]bool{})
}

func validate(t Type, seen map[*Def]bool) error {
	switch x := t.(type) {
	case Text:
		if x.Pattern != "" {
			if _, err := regexp.Compile(x.Pattern); err != nil {
				return err
			}
		}
	case Object:
		return validateFields(x.Fields, seen)
	case Union:
		for _, b := range x.Branches {
			if err := validateFields(append(F(x.Discriminator, Literal{Value: b.Value}, ""), b.Fields...), seen); err != nil {
				return fmt.Errorf("branch %s: %w", b.Value, err)
			}
		}
	case Array:
		return validate(x.Items, seen)
	case Ref:
		if seen[x.Def] {
			return nil
		}
		seen[x.Def] = true
		return validate(x.Def.Type, seen)
	}
	return nil
}

func validateFields(fields []Field, seen map[*Def]bool) error {
	names := map[string]bool{}
	for _, f := range fields {
		if names[f.Name] {
			return fmt.Errorf("duplicate field %q", f.Name)
		}
		if dv, ok := f.Type.(DigestValue); ok && !names[dv.AlgorithmField] {
			return fmt.Errorf("digest value %q before its algorithm field %q", f.Name, dv.AlgorithmField)
		}
		names[f.Name] = true
		if err := validate(f.Type, seen); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return nil
}
