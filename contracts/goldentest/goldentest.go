// Package goldentest holds the golden-file helpers the contracts tests share:
// the -update flag, the indented JSON every golden and negative artefact is
// written in, and the byte comparison. Test helper: only _test.go files
// import it. It is standard library only, like every package under contracts/.
package goldentest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/oceanway/core/contracts/jcs"
)

// Update rewrites the goldens instead of comparing them: go test -update.
var Update = flag.Bool("update", false, "rewrite golden files and negative artefacts")

// Indent returns v as two-space indented JSON with a trailing newline, HTML
// characters unescaped: the form of every golden file.
func Indent(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatalf("goldentest: encode: %v", err)
	}
	return buf.Bytes()
}

// Encodable turns the jcs.Number leaves of a parsed document (jcs.Parse)
// into json.Number, so encoding/json writes them as numbers.
func Encodable(v any) any {
	switch x := v.(type) {
	case jcs.Number:
		return json.Number(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = Encodable(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = Encodable(val)
		}
		return out
	}
	return v
}

// Check byte-compares got with the file at path, or rewrites the file with -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden %s (run go test -update): %v", path, err)
	}
	if string(want) != string(got) {
		t.Fatalf("%s is stale: run go test -update and review the diff\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// negative is the part of a manifest.json entry CheckNegatives reads.
type negative struct {
	Name        string `json:"name"`
	Requirement string `json:"requirement"`
	Reason      string `json:"reason"`
}

// CheckNegatives reads dir/manifest.json and runs one parallel subtest per
// artefact, named after its requirement: decoding dir/<name>.json must fail
// with the error reasons maps the artefact's reason to.
func CheckNegatives(t *testing.T, dir string, reasons map[string]error, decode func([]byte) error) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest []negative
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatalf("%s/manifest.json: %v", dir, err)
	}
	for _, n := range manifest {
		t.Run(n.Requirement+"/"+n.Name, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(filepath.Join(dir, n.Name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			want, ok := reasons[n.Reason]
			if !ok {
				t.Fatalf("unknown reason %q", n.Reason)
			}
			if err := decode(body); !errors.Is(err, want) {
				t.Fatalf("decode %s: got %v, want %v", n.Name, err, want)
			}
		})
	}
}

// AddSeeds adds every file matching the glob patterns (goldens, negative
// artefacts) to the fuzz corpus.
func AddSeeds(f *testing.F, patterns ...string) {
	for _, p := range patterns {
		paths, _ := filepath.Glob(p) // the patterns are literals of the test
		for _, path := range paths {
			if b, err := os.ReadFile(path); err == nil {
				f.Add(b)
			}
		}
	}
}
