package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/oceanway/core/contracts/jcs"
)

// Draft202012 is the JSON Schema dialect of every generated schema.
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// JSONSchema renders root as a standalone JSON Schema (draft 2020-12)
// document: the root definition inline, every other referenced definition
// under $defs, and comment as "$comment" when not empty. The output is
// indented JSON with sorted keys and a final newline.
func JSONSchema(root *Def, comment string) ([]byte, error) {
	defs := Reachable(root)
	doc := nodeSchema(root.Type)
	doc["$schema"] = Draft202012
	if comment != "" {
		doc["$comment"] = comment
	}
	doc["title"] = root.Name
	if root.Doc != "" {
		doc["description"] = root.Doc
	}
	if len(defs) > 1 {
		m := map[string]any{}
		for _, d := range defs {
			if d != root {
				m[d.Name] = defSchema(d)
			}
		}
		doc["$defs"] = m
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func defSchema(d *Def) map[string]any {
	s := nodeSchema(d.Type)
	if d.Doc != "" {
		s["description"] = d.Doc
	}
	return s
}

// Reachable returns root and every definition it references, root first,
// the rest sorted by name. Two distinct definitions with one name panic: a
// description bug that would corrupt the generated files.
func Reachable(roots ...*Def) []*Def {
	seen := map[*Def]bool{}
	byName := map[string]*Def{}
	var walk func(t Type)
	visit := func(d *Def) {
		if seen[d] {
			return
		}
		if other, dup := byName[d.Name]; dup && other != d {
			panic("schema: two definitions named " + d.Name)
		}
		seen[d] = true
		byName[d.Name] = d
		walk(d.Type)
	}
	walk = func(t Type) {
		switch x := t.(type) {
		case Object:
			for _, f := range x.Fields {
				walk(f.Type)
			}
		case Union:
			for _, b := range x.Branches {
				for _, f := range b.Fields {
					walk(f.Type)
				}
			}
		case Array:
			walk(x.Items)
		case Ref:
			visit(x.Def)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	var rest []*Def
	for _, d := range byName {
		if !isRoot(d, roots) {
			rest = append(rest, d)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].Name < rest[j].Name })
	return append(append([]*Def(nil), roots...), rest...)
}

func isRoot(d *Def, roots []*Def) bool {
	for _, r := range roots {
		if r == d {
			return true
		}
	}
	return false
}

func nodeSchema(t Type) map[string]any {
	switch x := t.(type) {
	case Text:
		s := map[string]any{"type": "string", "minLength": 1}
		if x.MaxLength > 0 {
			s["maxLength"] = x.MaxLength
		}
		if x.Pattern != "" {
			s["pattern"] = x.Pattern
		}
		if x.Doc != "" {
			s["description"] = x.Doc
		}
		return s
	case UUID:
		return map[string]any{"type": "string", "pattern": UUIDPattern}
	case Timestamp:
		return map[string]any{"type": "string", "pattern": TimestampPattern}
	case Literal:
		return map[string]any{"type": "string", "const": x.Value}
	case Enum:
		return map[string]any{"type": "string", "enum": x.Values}
	case SchemaVersion:
		return map[string]any{"type": "string", "enum": x.Known}
	case DigestAlgorithm:
		return map[string]any{"type": "string", "enum": Algorithms()}
	case DigestValue:
		return map[string]any{"type": "string", "pattern": DigestPattern}
	case Int:
		min := x.Min
		if min < -jcs.MaxSafeInteger {
			min = -jcs.MaxSafeInteger
		}
		return map[string]any{"type": "integer", "minimum": min, "maximum": x.max()}
	case Bool:
		return map[string]any{"type": "boolean"}
	case Object:
		return objectSchema(x.Fields)
	case Union:
		branches := make([]any, len(x.Branches))
		for i, b := range x.Branches {
			fields := append(F(x.Discriminator, Literal{Value: b.Value}, ""), b.Fields...)
			bs := objectSchema(fields)
			if b.Doc != "" {
				bs["description"] = b.Doc
			}
			branches[i] = bs
		}
		return map[string]any{"type": "object", "oneOf": branches}
	case Array:
		s := map[string]any{"type": "array", "items": nodeSchema(x.Items)}
		if x.MinItems > 0 {
			s["minItems"] = x.MinItems
		}
		if x.MaxItems > 0 {
			s["maxItems"] = x.MaxItems
		}
		return s
	case Ref:
		return map[string]any{"$ref": "#/$defs/" + x.Def.Name}
	default:
		panic(fmt.Sprintf("schema: unsupported description %T", t))
	}
}

func objectSchema(fields []Field) map[string]any {
	props := map[string]any{}
	required := []any{}
	for _, f := range fields {
		p := nodeSchema(f.Type)
		if f.Doc != "" {
			if _, isRef := f.Type.(Ref); isRef {
				p = map[string]any{"allOf": []any{p}, "description": f.Doc}
			} else {
				p["description"] = f.Doc
			}
		}
		props[f.Name] = p
		if !f.Optional {
			required = append(required, f.Name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// TypeScript renders the given definitions and everything they reference as
// TypeScript declarations (one exported type per definition, sorted by
// name after the roots), preceded by header as a line comment block.
func TypeScript(header string, roots ...*Def) []byte {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		b.WriteString("// " + line + "\n")
	}
	for _, d := range Reachable(roots...) {
		b.WriteString("\n")
		writeDoc(&b, "", d.Doc)
		fmt.Fprintf(&b, "export type %s =%s;\n", d.Name, spaced(tsType(d.Type, "")))
	}
	return []byte(b.String())
}

func writeDoc(b *strings.Builder, indent, doc string) {
	if doc == "" {
		return
	}
	b.WriteString(indent + "/** " + strings.ReplaceAll(doc, "*/", "*\\/") + " */\n")
}

func tsType(t Type, indent string) string {
	switch x := t.(type) {
	case Text, UUID, Timestamp, DigestValue:
		return "string"
	case Literal:
		return strconv.Quote(x.Value)
	case Enum:
		return tsLiterals(x.Values)
	case SchemaVersion:
		return tsLiterals(x.Known)
	case DigestAlgorithm:
		return tsLiterals(Algorithms())
	case Int:
		return "number"
	case Bool:
		return "boolean"
	case Object:
		return tsObject(x.Fields, indent)
	case Union:
		parts := make([]string, len(x.Branches))
		for i, br := range x.Branches {
			parts[i] = tsObject(append(F(x.Discriminator, Literal{Value: br.Value}, ""), br.Fields...), indent+"  ")
		}
		return "\n" + indent + "  | " + strings.Join(parts, "\n"+indent+"  | ")
	case Array:
		return "ReadonlyArray<" + tsType(x.Items, indent) + ">"
	case Ref:
		return x.Def.Name
	default:
		panic(fmt.Sprintf("schema: unsupported description %T", t))
	}
}

// spaced puts a space before a type unless it starts on a new line.
func spaced(ts string) string {
	if strings.HasPrefix(ts, "\n") {
		return ts
	}
	return " " + ts
}

func tsLiterals(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, " | ")
}

func tsObject(fields []Field, indent string) string {
	var b strings.Builder
	b.WriteString("{\n")
	for _, f := range fields {
		writeDoc(&b, indent+"  ", f.Doc)
		opt := ""
		if f.Optional {
			opt = "?"
		}
		fmt.Fprintf(&b, "%s  readonly %s%s:%s;\n", indent, f.Name, opt, spaced(tsType(f.Type, indent+"  ")))
	}
	b.WriteString(indent + "}")
	return b.String()
}
