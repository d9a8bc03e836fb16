package envelope

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/oceanway/core/contracts/digest"
)

//go:embed testdata/golden
var goldenFS embed.FS

// GoldenResult is the outcome of RunGoldens: how many golden envelopes were
// decoded, canonicalized and digested, and which ones differed.
type GoldenResult struct {
	Vectors  int      `json:"vectors"`
	Passed   int      `json:"passed"`
	Failures []string `json:"failures"`
}

// RunGoldens replays the compiled-in golden vectors (testdata/golden: raw
// envelope, RFC 8785 canonical bytes, jcs-sha256-v1 digest) through this
// implementation, so a tool that digests with it (e.g. legacy adoption,
// OB-BOOT-1) can record that the implementation it ran reproduces the
// goldens.
func RunGoldens() GoldenResult {
	dirs, err := fs.ReadDir(goldenFS, "testdata/golden")
	res := GoldenResult{Failures: []string{}}
	if err != nil {
		res.Failures = append(res.Failures, "read goldens: "+err.Error())
		return res
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].Name() < dirs[j].Name() })
	for _, d := range dirs {
		res.Vectors++
		if err := runGolden(path.Join("testdata/golden", d.Name())); err != nil {
			res.Failures = append(res.Failures, d.Name()+": "+err.Error())
			continue
		}
		res.Passed++
	}
	return res
}

func runGolden(dir string) error {
	raw, err := goldenFS.ReadFile(dir + "/raw.json")
	if err != nil {
		return err
	}
	wantCanonical, err := goldenFS.ReadFile(dir + "/canonical.json")
	if err != nil {
		return err
	}
	wantDigest, err := goldenFS.ReadFile(dir + "/digest.txt")
	if err != nil {
		return err
	}
	e, err := DecodeEnvelope(raw)
	if err != nil {
		return err
	}
	canonical, err := e.Canonical()
	if err != nil {
		return err
	}
	if !bytes.Equal(canonical, bytes.TrimRight(wantCanonical, "\n")) {
		return fmt.Errorf("canonical bytes differ")
	}
	d, err := e.Digest()
	if err != nil {
		return err
	}
	want, err := digest.Parse(strings.TrimSpace(string(wantDigest)))
	if err != nil {
		return err
	}
	if d != want {
		return fmt.Errorf("digest %s, golden %s", d, want)
	}
	return nil
}
