package jcs_test

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/jcs"
)

// Vectors we did not write (CT-1). testdata/independent/README.md says where
// each set comes from and how to regenerate it; the tests never run node.

// TestIndependentNodeNumbers compares against V8's Number serialization:
// IEEE-754 bits → AppendNumber, and a differently spelled literal of the same
// double → Canonicalize (decimal-to-binary and back).
func TestIndependentNodeNumbers(t *testing.T) {
	t.Parallel()
	rows := readCSV(t, "testdata/independent/node/numbers.csv")
	require.GreaterOrEqual(t, len(rows), 10000)
	for i, row := range rows {
		require.Len(t, row, 3, "line %d", i+1)
		bits, err := strconv.ParseUint(row[0], 16, 64)
		require.NoError(t, err)
		f := math.Float64frombits(bits)
		got, err := jcs.AppendNumber(nil, f)
		require.NoError(t, err)
		if string(got) != row[2] {
			t.Fatalf("line %d: AppendNumber(%s) = %s, V8 says %s", i+1, row[0], got, row[2])
		}
		doc, err := jcs.Canonicalize([]byte("[" + row[1] + "]"))
		require.NoError(t, err, "line %d literal %s", i+1, row[1])
		if string(doc) != "["+row[2]+"]" {
			t.Fatalf("line %d: Canonicalize([%s]) = %s, V8 says [%s]", i+1, row[1], doc, row[2])
		}
		again, err := jcs.Canonicalize([]byte(row[2]))
		require.NoError(t, err)
		require.Equal(t, row[2], string(again), "line %d: not a fixed point", i+1)
	}
}

// TestIndependentNodeObjects compares whole documents with random Unicode
// member names, layout and escapes against the RFC 8785 Appendix A
// algorithm run by Node (JSON.parse, sort by UTF-16 code units, JSON.stringify).
func TestIndependentNodeObjects(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/independent/node/objects.jsonl")
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // read-only file: a close error loses nothing
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<22)
	n := 0
	for sc.Scan() {
		var v struct{ Name, Input, Expected string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v))
		got, err := jcs.Canonicalize([]byte(v.Input))
		require.NoError(t, err, v.Name)
		require.Equal(t, v.Expected, string(got), v.Name)
		again, err := jcs.Canonicalize(got)
		require.NoError(t, err)
		require.Equal(t, string(got), string(again), v.Name)
		n++
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, n, 250)
}

// TestIndependentCyberphone runs the input/output pairs of the testdata
// directory of github.com/cyberphone/json-canonicalization, the RFC 8785
// author's reference implementations.
func TestIndependentCyberphone(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob("testdata/independent/cyberphone/input/*.json")
	require.NoError(t, err)
	require.Len(t, inputs, 6)
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		input, err := os.ReadFile(in)
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join("testdata/independent/cyberphone/output", name+".json"))
		require.NoError(t, err)
		got, err := jcs.Canonicalize(input)
		require.NoError(t, err, name)
		require.Equal(t, string(want), string(got), name)
	}
}
