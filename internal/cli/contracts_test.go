package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/cli"
)

const jcsGoldenDir = "../../contracts/jcs/testdata/golden"

// mainResult is one in-process run of cli.Main.
type mainResult struct {
	code           int
	stdout, stderr string
}

func runMain(t *testing.T, stdin []byte, args ...string) mainResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(args, bytes.NewReader(stdin), &stdout, &stderr)
	return mainResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// CT-1: `oceanway contracts canonicalize` writes exactly the JCS bytes, no trailing newline.
func TestContractsCanonicalize(t *testing.T) {
	t.Parallel()
	res := runMain(t, []byte(" {\"b\": 1, \"a\": [1E2, -0, \"\\u00e9\"], \"\\ufb33\": 0, \"\\ud83d\\ude00\": 1}\n"), "contracts", "canonicalize")
	require.Equal(t, 0, res.code, res.stderr)
	require.Empty(t, res.stderr)
	require.Equal(t, "{\"a\":[100,0,\"\u00e9\"],\"b\":1,\"\U0001F600\":1,\"\ufb33\":0}", res.stdout, "U+1F600 sorts before U+FB33 (UTF-16 order)")
}

// The CLI agrees with every golden vector, byte for byte.
func TestContractsCanonicalizeAndDigestGoldens(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob(filepath.Join(jcsGoldenDir, "*", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		base := strings.TrimSuffix(in, ".json")
		t.Run(filepath.Base(base), func(t *testing.T) {
			t.Parallel()
			input, err := os.ReadFile(in)
			require.NoError(t, err)
			wantCanonical, err := os.ReadFile(base + ".canonical")
			require.NoError(t, err)
			wantDigest, err := os.ReadFile(base + ".digest")
			require.NoError(t, err)

			res := runMain(t, input, "contracts", "canonicalize")
			require.Equal(t, 0, res.code, res.stderr)
			require.Equal(t, string(wantCanonical), res.stdout)

			res = runMain(t, input, "contracts", "digest")
			require.Equal(t, 0, res.code, res.stderr)
			require.Empty(t, res.stderr)
			require.Equal(t, string(wantDigest), res.stdout)
			require.Regexp(t, `^jcs-sha256-v1:[0-9a-f]{64}\n$`, res.stdout)
		})
	}
}

// Invalid input: non-zero exit, one line on stderr naming the reason and
// offset, and nothing at all on stdout.
func TestContractsRejectInvalidInput(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		input []byte
		want  string
	}{
		"duplicate key":   {[]byte(`{"a":1,"a":2}`), "duplicate object member name at byte offset 7"},
		"byte-order mark": {[]byte("\xef\xbb\xbf{}"), "byte-order mark at byte offset 0"},
		"trailing data":   {[]byte(`{} x`), "trailing data after the JSON value at byte offset 3"},
		"invalid UTF-8":   {[]byte("[\"\xff\"]"), "invalid UTF-8 at byte offset 2"},
		"lone surrogate":  {[]byte(`["\ud800"]`), "lone UTF-16 surrogate at byte offset 2"},
		"raw newline":     {[]byte("[\"a\nb\"]"), "unescaped control character in string at byte offset 3"},
		"out of range":    {[]byte(`[1e400]`), "not representable as a finite IEEE-754 double at byte offset 1"},
		"underflow":       {[]byte(`[1e-400]`), "underflows to zero at byte offset 1"},
		"empty input":     {nil, "unexpected end of input at byte offset 0"},
	}
	for name, c := range cases {
		for _, cmd := range []string{"canonicalize", "digest"} {
			t.Run(name+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				res := runMain(t, c.input, "contracts", cmd)
				require.NotEqual(t, 0, res.code)
				require.Empty(t, res.stdout, "nothing on stdout when the input is invalid")
				require.True(t, strings.HasSuffix(res.stderr, "\n"), "%q", res.stderr)
				require.Equal(t, 1, strings.Count(res.stderr, "\n"), "one line: %q", res.stderr)
				require.Contains(t, res.stderr, c.want)
			})
		}
	}
}

func TestContractsRejectArguments(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"contracts", "canonicalize", "file.json"},
		{"contracts", "digest", "extra"},
		{"contracts", "canonicalize", "--no-such-flag"},
	} {
		res := runMain(t, []byte(`{}`), args...)
		require.NotEqual(t, 0, res.code, args)
		require.Empty(t, res.stdout, args)
		require.Equal(t, 1, strings.Count(res.stderr, "\n"), "%v: %q", args, res.stderr)
	}
}
