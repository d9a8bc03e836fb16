package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

var inner = &schema.Def{Name: "Inner", Doc: "inner union", Type: schema.Union{Discriminator: "kind", Branches: []schema.Branch{
	{Value: "a"},
	{Value: "b", Fields: schema.F("n", schema.Int{Min: 1, Max: 3}, "")},
}}}

var sample = &schema.Def{Name: "Sample", Type: schema.Object{Fields: schema.Fields(
	schema.F("id", schema.UUID{}, "an id"),
	schema.Opt("note", schema.Text{MaxLength: 5, Pattern: `^[a-z]+$`}, ""),
	schema.F("at", schema.Timestamp{}, ""),
	schema.F("flag", schema.Bool{}, ""),
	schema.F("mode", schema.Enum{Values: []string{"x", "y"}}, ""),
	schema.F("v", schema.SchemaVersion{Known: []string{"1"}}, ""),
	schema.Quad("thing", "a quadruple"),
	schema.F("inner", schema.Ref{Def: inner}, ""),
	schema.F("items", schema.Array{Items: schema.Ref{Def: inner}}, ""),
	schema.F("tags", schema.Array{Items: schema.KeyText}, ""),
)}}

const good = `{"id":"00000000-0000-7000-8000-000000000001","note":"abc","at":"2026-01-01T00:00:00.000000Z","flag":true,"mode":"x","v":"1",
"thingRef":"r","thingSchemaVersion":"1","thingDigestAlgorithmVersion":"jcs-sha256-v1","thingDigest":"` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `",
"inner":{"kind":"b","n":2},"items":[{"kind":"a"}],"tags":["k1"]}`

func mutate(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(good), &m))
	f(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// CT-2, CT-5: one description decodes strictly.
func TestCT2DecodeFromDescription(t *testing.T) {
	t.Parallel()
	require.NoError(t, schema.Validate(sample.Type))
	v, err := schema.DecodeDocument([]byte(good), schema.Ref{Def: sample})
	require.NoError(t, err)
	require.Equal(t, int64(2), v["inner"].(map[string]any)["n"])
	require.Equal(t, "abc", v["note"])

	cases := map[string]struct {
		f    func(m map[string]any)
		want error
	}{
		"unknown field":   {func(m map[string]any) { m["zzz"] = 1 }, strict.ErrUnknownField},
		"missing field":   {func(m map[string]any) { delete(m, "flag") }, strict.ErrMissingField},
		"pattern":         {func(m map[string]any) { m["note"] = "ABC" }, strict.ErrInvalidValue},
		"too long":        {func(m map[string]any) { m["note"] = "abcdefg" }, strict.ErrInvalidValue},
		"timestamp":       {func(m map[string]any) { m["at"] = "2026-01-01T00:00:00Z" }, strict.ErrInvalidTimestamp},
		"enum":            {func(m map[string]any) { m["mode"] = "z" }, strict.ErrUnknownEnum},
		"schema version":  {func(m map[string]any) { m["v"] = "2" }, strict.ErrUnknownSchemaVersion},
		"bare digest":     {func(m map[string]any) { delete(m, "thingDigestAlgorithmVersion") }, digest.ErrMissingAlgorithm},
		"unknown alg":     {func(m map[string]any) { m["thingDigestAlgorithmVersion"] = "md5" }, digest.ErrUnknownAlgorithm},
		"bad digest":      {func(m map[string]any) { m["thingDigest"] = "00" }, digest.ErrMalformedDigest},
		"range":           {func(m map[string]any) { m["inner"] = map[string]any{"kind": "b", "n": 4} }, strict.ErrOutOfRange},
		"mixed branch":    {func(m map[string]any) { m["inner"] = map[string]any{"kind": "a", "n": 1} }, strict.ErrMixedUnion},
		"unknown branch":  {func(m map[string]any) { m["items"] = []any{map[string]any{"kind": "c"}} }, strict.ErrUnknownEnum},
		"wrong type":      {func(m map[string]any) { m["flag"] = "true" }, strict.ErrWrongType},
		"array item text": {func(m map[string]any) { m["tags"] = []any{"Bad"} }, strict.ErrInvalidValue},
		"uuid":            {func(m map[string]any) { m["id"] = "x" }, strict.ErrInvalidUUID},
	}
	for name, c := range cases {
		_, err := schema.DecodeDocument(mutate(t, c.f), schema.Ref{Def: sample})
		require.ErrorIs(t, err, c.want, name)
	}
}

func TestValidateCatchesAuthoringMistakes(t *testing.T) {
	t.Parallel()
	dup := schema.Object{Fields: schema.Fields(schema.F("a", schema.Bool{}, ""), schema.F("a", schema.Bool{}, ""))}
	require.Error(t, schema.Validate(dup))
	order := schema.Object{Fields: []schema.Field{{Name: "d", Type: schema.DigestValue{AlgorithmField: "alg"}}, {Name: "alg", Type: schema.DigestAlgorithm{ValueField: "d"}}}}
	require.Error(t, schema.Validate(order))
	require.Error(t, schema.Validate(schema.Text{Pattern: "("}))
}

// CT-5: JSON Schema and TypeScript come from the same description.
func TestCT5Render(t *testing.T) {
	t.Parallel()
	b, err := schema.JSONSchema(sample, "generated")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, schema.Draft202012, m["$schema"])
	require.Equal(t, false, m["additionalProperties"])
	require.Contains(t, m["$defs"].(map[string]any), "Inner")
	require.Contains(t, m["required"], "thingDigestAlgorithmVersion")
	require.NotContains(t, m["required"], "note")

	ts := string(schema.TypeScript("header", sample))
	require.Contains(t, ts, "export type Sample =")
	require.Contains(t, ts, "readonly note?: string;")
	require.Contains(t, ts, `readonly kind: "b";`)
	require.Contains(t, ts, "ReadonlyArray<Inner>")
	require.False(t, strings.Contains(ts, " \n"), "no trailing spaces")
}

// CT-2, CT-5: an array's item bounds are checked by the decoder and rendered
// as minItems/maxItems.
func TestCT2ArrayBounds(t *testing.T) {
	t.Parallel()
	bounded := &schema.Def{Name: "Bounded", Type: schema.Object{Fields: schema.F("tags", schema.Array{Items: schema.KeyText, MinItems: 1, MaxItems: 2}, "")}}
	for doc, want := range map[string]error{
		`{"tags":["a"]}`:           nil,
		`{"tags":["a","b"]}`:       nil,
		`{"tags":[]}`:              strict.ErrOutOfRange,
		`{"tags":["a","b","c"]}`:   strict.ErrOutOfRange,
		`{"tags":"a"}`:             strict.ErrWrongType,
		`{"tags":["a","B"]}`:       strict.ErrInvalidValue,
		`{"other":["a"],"tags":1}`: strict.ErrWrongType,
	} {
		_, err := schema.DecodeDocument([]byte(doc), schema.Ref{Def: bounded})
		if want == nil {
			require.NoError(t, err, doc)
			continue
		}
		require.ErrorIs(t, err, want, doc)
	}
	b, err := schema.JSONSchema(bounded, "")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	tags := m["properties"].(map[string]any)["tags"].(map[string]any)
	require.Equal(t, float64(1), tags["minItems"])
	require.Equal(t, float64(2), tags["maxItems"])
}
