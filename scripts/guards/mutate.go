package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// overlayEnv is dbtest.MigrationsOverlayEnv (kept in sync by a test).
const overlayEnv = "OCEANWAY_DBTEST_MIGRATIONS_OVERLAY"

type result struct {
	c       *clause
	verdict string // KILLED, SURVIVED, UNTESTED, BROKEN
	by      []string
	detail  string
	took    time.Duration
}

// cmdMutate disables each selected clause in turn, in a scratch copy of its
// file, and runs the tests that name it. A migration clause is handed to
// the test databases through dbtest's overlay, so the test binaries are
// built once; a Go clause goes through `go test -overlay`.
func cmdMutate(args []string) error {
	fl := flag.NewFlagSet("mutate", flag.ExitOnError)
	run := fl.String("run", "", "only clauses whose ID matches this regexp")
	jobs := fl.Int("j", max(1, runtime.NumCPU()/2), "clauses mutated at once")
	timeout := fl.Duration("timeout", 5*time.Minute, "per clause")
	_ = fl.Parse(args)
	var re *regexp.Regexp
	if *run != "" {
		var err error
		if re, err = regexp.Compile(*run); err != nil {
			return err
		}
	}
	start := time.Now()
	ix, err := buildIndex()
	if err != nil {
		return err
	}
	var todo []*clause
	for _, c := range ix.clauses {
		if re == nil || re.MatchString(c.id) {
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		return errors.New("no clause matches")
	}
	scratch, err := os.MkdirTemp("", "ow-mutate-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(scratch) }()
	root, err := os.Getwd()
	if err != nil {
		return err
	}

	// Build each package's test binary once, for the migration clauses.
	bins := map[string]string{}
	for _, c := range todo {
		if c.kind == "go" {
			continue
		}
		for _, t := range c.tests {
			bins[t.pkg] = ""
		}
	}
	pkgs := make([]string, 0, len(bins))
	for p := range bins {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	fmt.Printf("mutate: %d clauses, building %d test binaries\n", len(todo), len(pkgs))
	for i, p := range pkgs {
		bin := filepath.Join(scratch, fmt.Sprintf("pkg%d.test", i))
		cmd := exec.Command("go", "test", "-c", "-o", bin, p)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go test -c %s: %v\n%s", p, err, out)
		}
		bins[p] = bin
	}

	// Baseline: every mapped test passes with no clause disabled, so a
	// failure below is the mutation's doing.
	if err := baseline(root, todo, bins, *timeout); err != nil {
		return err
	}

	results := make([]*result, len(todo))
	var wg sync.WaitGroup
	sem := make(chan struct{}, *jobs)
	var mu sync.Mutex
	for i, c := range todo {
		wg.Add(1)
		go func(i int, c *clause) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			dir := filepath.Join(scratch, fmt.Sprintf("m%d", i))
			r := mutateOne(root, dir, c, bins, *timeout)
			_ = os.RemoveAll(dir)
			results[i] = r
			mu.Lock()
			printResult(r)
			mu.Unlock()
		}(i, c)
	}
	wg.Wait()

	counts := map[string]map[string]int{}
	bad := 0
	for _, r := range results {
		if counts[r.c.line] == nil {
			counts[r.c.line] = map[string]int{}
		}
		counts[r.c.line][r.verdict]++
		if r.verdict != "KILLED" {
			bad++
		}
	}
	var lines []string
	for l := range counts {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Printf("mutate: %-10s killed %d, survived %d, untested %d, broken %d\n", l,
			counts[l]["KILLED"], counts[l]["SURVIVED"], counts[l]["UNTESTED"], counts[l]["BROKEN"])
	}
	fmt.Printf("mutate: %d clauses, %d not killed, %s\n", len(results), bad, time.Since(start).Round(time.Second))
	if bad > 0 {
		return fmt.Errorf("%d clauses not killed", bad)
	}
	return nil
}

func printResult(r *result) {
	by := strings.Join(r.by, ", ")
	fmt.Printf("%-8s %-48s %s:%d %s\n", r.verdict, r.c.id, r.c.file, r.c.lineN, by)
	if r.verdict == "BROKEN" && r.detail != "" {
		fmt.Printf("         %s\n", r.detail)
	}
}

var failRE = regexp.MustCompile(`(?m)^--- FAIL: (\S+)`)

func mutateOne(root, dir string, c *clause, bins map[string]string, timeout time.Duration) *result {
	t0 := time.Now()
	r := &result{c: c}
	defer func() { r.took = time.Since(t0) }()
	if len(c.tests) == 0 {
		r.verdict = "UNTESTED"
		return r
	}
	orig := c.src
	mutated := orig[:c.mutStart] + c.mutText + orig[c.mutEnd:]
	if mutated == orig {
		r.verdict, r.detail = "BROKEN", "the mutation changes nothing"
		return r
	}
	names := map[string][]string{}
	var pkgs []string
	for _, t := range c.tests {
		if _, ok := names[t.pkg]; !ok {
			pkgs = append(pkgs, t.pkg)
		}
		names[t.pkg] = append(names[t.pkg], t.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var env []string
	var overlay string
	if c.kind == "go" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			r.verdict, r.detail = "BROKEN", err.Error()
			return r
		}
		mf := filepath.Join(dir, filepath.Base(c.file))
		overlay = filepath.Join(dir, "overlay.json")
		j, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, c.file): mf}})
		if err := os.WriteFile(mf, []byte(mutated), 0o644); err != nil {
			r.verdict, r.detail = "BROKEN", err.Error()
			return r
		}
		if err := os.WriteFile(overlay, j, 0o644); err != nil {
			r.verdict, r.detail = "BROKEN", err.Error()
			return r
		}
	} else {
		od := filepath.Join(dir, c.line)
		if err := os.MkdirAll(od, 0o755); err != nil {
			r.verdict, r.detail = "BROKEN", err.Error()
			return r
		}
		if err := os.WriteFile(filepath.Join(od, filepath.Base(c.file)), []byte(mutated), 0o644); err != nil {
			r.verdict, r.detail = "BROKEN", err.Error()
			return r
		}
		env = append(os.Environ(), overlayEnv+"="+dir)
	}
	for _, p := range pkgs {
		pattern := "^(" + strings.Join(names[p], "|") + ")$"
		var cmd *exec.Cmd
		if c.kind == "go" {
			cmd = exec.CommandContext(ctx, "go", "test", "-overlay", overlay, "-count=1", "-v", "-run", pattern, p)
		} else {
			cmd = exec.CommandContext(ctx, bins[p], "-test.count=1", "-test.v", "-test.run", pattern)
			cmd.Dir = filepath.Join(root, p)
			cmd.Env = env
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err == nil {
			continue
		}
		text := out.String()
		switch {
		case ctx.Err() != nil:
			r.verdict, r.detail = "BROKEN", "timed out after "+timeout.String()
			return r
		case strings.Contains(text, "migrate template"):
			r.verdict, r.detail = "BROKEN", "the disabled clause does not migrate: "+firstLine(text, "migrate template")
			return r
		case strings.Contains(text, "[build failed]") || strings.Contains(text, "[setup failed]"):
			r.verdict, r.detail = "BROKEN", "the disabled clause does not build"
			return r
		}
		for _, m := range failRE.FindAllStringSubmatch(text, -1) {
			if !strings.Contains(m[1], "/") {
				r.by = append(r.by, m[1])
			}
		}
		if len(r.by) == 0 {
			r.by = []string{"(exit: " + err.Error() + ")"}
		}
		r.verdict = "KILLED"
		return r
	}
	r.verdict = "SURVIVED"
	return r
}

func firstLine(text, needle string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, needle) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func baseline(root string, todo []*clause, bins map[string]string, timeout time.Duration) error {
	names := map[string]map[string]bool{}
	goPkgs := map[string]bool{}
	for _, c := range todo {
		for _, t := range c.tests {
			if names[t.pkg] == nil {
				names[t.pkg] = map[string]bool{}
			}
			names[t.pkg][t.name] = true
			if c.kind == "go" {
				goPkgs[t.pkg] = true
			}
		}
	}
	for p, set := range names {
		var list []string
		for n := range set {
			list = append(list, n)
		}
		sort.Strings(list)
		pattern := "^(" + strings.Join(list, "|") + ")$"
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		var cmd *exec.Cmd
		if bin, ok := bins[p]; ok && bin != "" && !goPkgs[p] {
			cmd = exec.CommandContext(ctx, bin, "-test.count=1", "-test.run", pattern)
			cmd.Dir = filepath.Join(root, p)
		} else {
			cmd = exec.CommandContext(ctx, "go", "test", "-count=1", "-run", pattern, p)
		}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("baseline: the tests of %s fail with no clause disabled:\n%s", p, out)
		}
	}
	fmt.Printf("mutate: baseline passed (%d packages)\n", len(names))
	return nil
}
