package jcs_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
)

// Golden layout (see testdata/README.md and docs/contracts/jcs.md):
//
//	testdata/golden/frozen/<name>.{json,canonical,digest}     expected bytes from an outside authority; never regenerated
//	testdata/golden/generated/<name>.{json,canonical,digest}  our hard cases; -update rewrites .canonical and .digest
//	testdata/negative/<name>.json + manifest.json             rejections: sentinel name and byte offset
//	testdata/frozen.sha256                                    append-only lock over every frozen vector
var update = flag.Bool("update", false, "rewrite testdata/golden/generated/*.{canonical,digest} and append new frozen files to testdata/frozen.sha256")

const (
	frozenDir    = "testdata/golden/frozen"
	generatedDir = "testdata/golden/generated"
	negativeDir  = "testdata/negative"
	lockFile     = "testdata/frozen.sha256"
)

// digestLine is the text of a .digest file: what `oceanway contracts digest` prints.
func digestLine(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return string(digest.JCSSHA256V1) + ":" + hex.EncodeToString(sum[:]) + "\n"
}

func goldenNames(t *testing.T, dir string) []string {
	t.Helper()
	inputs, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs, dir)
	names := make([]string, len(inputs))
	for i, in := range inputs {
		names[i] = strings.TrimSuffix(filepath.Base(in), ".json")
	}
	// Every .canonical/.digest belongs to an input.
	others, err := filepath.Glob(filepath.Join(dir, "*.*"))
	require.NoError(t, err)
	for _, o := range others {
		base := filepath.Base(o)
		ext := filepath.Ext(base)
		require.Contains(t, []string{".json", ".canonical", ".digest"}, ext, "unexpected file %s", o)
		require.Contains(t, names, strings.TrimSuffix(base, ext), "orphan golden file %s", o)
	}
	return names
}

// TestGolden recomputes every golden vector and byte-compares canonical bytes
// and digest (CT-1, CT-4), then re-canonicalizes the canonical output and
// expects identical bytes (idempotency).
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{frozenDir, generatedDir} {
		generated := dir == generatedDir
		for _, name := range goldenNames(t, dir) {
			t.Run(filepath.Base(dir)+"/"+name, func(t *testing.T) {
				t.Parallel()
				base := filepath.Join(dir, name)
				input, err := os.ReadFile(base + ".json")
				require.NoError(t, err)
				got, err := jcs.Canonicalize(input)
				require.NoError(t, err)
				if *update && generated {
					require.NoError(t, os.WriteFile(base+".canonical", got, 0o644))
					require.NoError(t, os.WriteFile(base+".digest", []byte(digestLine(got)), 0o644))
				}
				want, err := os.ReadFile(base + ".canonical")
				require.NoError(t, err, "missing golden; run go test ./contracts/jcs -run TestGolden -update")
				require.Equal(t, string(want), string(got), "canonical bytes of %s.json", base)

				wantDigest, err := os.ReadFile(base + ".digest")
				require.NoError(t, err)
				require.Equal(t, digestLine(want), string(wantDigest), "%s.digest is not SHA-256 of %s.canonical", base, base)
				d, err := digest.OfJSON(digest.JCSSHA256V1, input)
				require.NoError(t, err)
				require.Equal(t, strings.TrimSuffix(string(wantDigest), "\n"), d.String())

				again, err := jcs.Canonicalize(want)
				require.NoError(t, err)
				require.Equal(t, string(want), string(again), "canonicalization is not idempotent")
				require.True(t, json.Valid(want))
			})
		}
	}
}

// TestRFC8785Section324Bytes checks the §3.2.2 sample against the UTF-8 bytes
// RFC 8785 §3.2.4 prints in hexadecimal.
func TestRFC8785Section324Bytes(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("testdata/rfc8785/section-3.2.4.hex")
	require.NoError(t, err)
	want, err := hex.DecodeString(strings.Join(strings.Fields(string(text)), ""))
	require.NoError(t, err)
	input, err := os.ReadFile(filepath.Join(frozenDir, "rfc8785-sample.json"))
	require.NoError(t, err)
	got, err := jcs.Canonicalize(input)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestRFC8785AppendixB runs the number table of RFC 8785 Appendix B through
// AppendNumber (CT-1): IEEE-754 bits → ECMAScript text; NaN and Infinity fail.
func TestRFC8785AppendixB(t *testing.T) {
	t.Parallel()
	rows := readCSV(t, "testdata/rfc8785/appendix-b.csv")
	require.Len(t, rows, 26)
	for _, row := range rows {
		bits, err := strconv.ParseUint(row[0], 16, 64)
		require.NoError(t, err)
		f := math.Float64frombits(bits)
		got, err := jcs.AppendNumber(nil, f)
		if row[1] == "" {
			require.ErrorIs(t, err, jcs.ErrNonFiniteNumber, row[0])
			continue
		}
		require.NoError(t, err, row[0])
		require.Equal(t, row[1], string(got), "IEEE-754 %s (%s)", row[0], row[2])
	}
}

// readCSV reads comma-separated lines, skipping blank lines and # comments.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // read-only file: a close error loses nothing
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rows = append(rows, strings.Split(line, ","))
	}
	require.NoError(t, sc.Err())
	return rows
}

type negativeVector struct {
	Reason string `json:"reason"`
	Offset int    `json:"offset"`
	Note   string `json:"note"`
}

// sentinels maps the reason names used in testdata/negative/manifest.json.
var sentinels = map[string]error{
	"ErrSyntax":            jcs.ErrSyntax,
	"ErrUnexpectedEOF":     jcs.ErrUnexpectedEOF,
	"ErrTrailingData":      jcs.ErrTrailingData,
	"ErrDuplicateKey":      jcs.ErrDuplicateKey,
	"ErrInvalidUTF8":       jcs.ErrInvalidUTF8,
	"ErrLoneSurrogate":     jcs.ErrLoneSurrogate,
	"ErrNoncharacter":      jcs.ErrNoncharacter,
	"ErrControlCharacter":  jcs.ErrControlCharacter,
	"ErrByteOrderMark":     jcs.ErrByteOrderMark,
	"ErrNumberOutOfRange":  jcs.ErrNumberOutOfRange,
	"ErrNumberUnderflow":   jcs.ErrNumberUnderflow,
	"ErrTooDeep":           jcs.ErrTooDeep,
	"ErrInvalidNumberText": jcs.ErrInvalidNumberText,
}

func readNegativeManifest(t *testing.T) map[string]negativeVector {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(negativeDir, "manifest.json"))
	require.NoError(t, err)
	var manifest map[string]negativeVector
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&manifest))
	return manifest
}

// TestNegative checks that every negative artefact is rejected with its named
// reason at its byte offset (CT-1, CT-4), by the parser and by the digest path.
func TestNegative(t *testing.T) {
	t.Parallel()
	manifest := readNegativeManifest(t)
	files, err := filepath.Glob(filepath.Join(negativeDir, "*.json"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); name != "manifest" {
			names = append(names, name)
			require.Contains(t, manifest, name, "negative vector %s is not in manifest.json", f)
		}
	}
	require.Len(t, names, len(manifest), "manifest.json names a vector without a file")
	for _, name := range names {
		want := manifest[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sentinel, ok := sentinels[want.Reason]
			require.True(t, ok, "unknown reason %q", want.Reason)
			input, err := os.ReadFile(filepath.Join(negativeDir, name+".json"))
			require.NoError(t, err)

			_, err = jcs.Canonicalize(input)
			require.ErrorIs(t, err, sentinel, want.Note)
			var perr *jcs.ParseError
			require.ErrorAs(t, err, &perr)
			require.Equal(t, want.Offset, perr.Offset, "byte offset (%v)", err)
			require.NotContains(t, err.Error(), "\n", "errors are one line")

			_, err = digest.OfJSON(digest.JCSSHA256V1, input)
			require.ErrorIs(t, err, sentinel)
		})
	}
}

// frozenFiles lists every file the append-only lock must cover.
func frozenFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{frozenDir, negativeDir, "testdata/rfc8785", "testdata/independent/cyberphone"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			// The negative manifest grows as vectors are appended; its
			// entries are checked by TestNegative instead.
			if path == filepath.Join(negativeDir, "manifest.json") || filepath.Base(path) == "README.md" {
				return nil
			}
			out = append(out, filepath.ToSlash(strings.TrimPrefix(path, "testdata/")))
			return nil
		})
		require.NoError(t, err)
	}
	slices.Sort(out)
	return out
}

// TestFrozenVectorsAppendOnly checks testdata/frozen.sha256 (sha256sum format:
// `cd testdata && sha256sum -c frozen.sha256` works too): every frozen vector
// is listed and unchanged. -update appends new frozen files; it never rewrites
// a line. Changing a frozen vector means changing the contract (CT-6).
func TestFrozenVectorsAppendOnly(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(lockFile)
	require.NoError(t, err)
	locked := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, path, ok := strings.Cut(line, "  ")
		require.True(t, ok, "malformed lock line %q", line)
		require.NotContains(t, locked, path, "duplicate lock line for %s", path)
		locked[path] = sum
	}
	var appended []string
	for _, path := range frozenFiles(t) {
		data, err := os.ReadFile(filepath.Join("testdata", path))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		got := hex.EncodeToString(sum[:])
		want, ok := locked[path]
		if !ok {
			if *update {
				appended = append(appended, fmt.Sprintf("%s  %s\n", got, path))
				continue
			}
			t.Errorf("frozen vector %s is not in %s; run go test ./contracts/jcs -run TestFrozen -update", path, lockFile)
			continue
		}
		require.Equal(t, want, got, "frozen vector %s changed: frozen vectors are append-only", path)
		delete(locked, path)
	}
	for path := range locked {
		t.Errorf("frozen vector %s was removed: frozen vectors are append-only", path)
	}
	if len(appended) > 0 {
		f, err := os.OpenFile(lockFile, os.O_APPEND|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = f.WriteString(strings.Join(appended, ""))
		require.NoError(t, errors.Join(err, f.Close()))
	}
}
