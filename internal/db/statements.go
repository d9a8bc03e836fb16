package db

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Statements is the one loader for the SQL that sqlc cannot express (dynamic
// fragments, statements over views whose shape sqlc cannot infer): one
// statement per file in an embedded directory, loaded and checked once at
// package initialisation, addressed by file name without ".sql".
//
// Statements use pgx named arguments (@name) and are run with pgx.NamedArgs;
// results are read with pgx.RowToStructByName, so neither the arguments nor
// the columns depend on position. Everything sqlc can express lives in the
// owning package's sqlc queries instead (see sqlc.yaml at the module root).
type Statements struct {
	owner string
	byKey map[string]string
}

// fragmentPrefix marks a file that is not a statement but a fragment,
// spliced into statements as {{name}} (for example a shared column list).
const fragmentPrefix = "fragment_"

// MustLoadStatements reads every *.sql file of dir in fsys. Files named
// fragment_<name>.sql are fragments: their text (without comment lines)
// replaces {{<name>}} in every statement. It panics when the directory is
// empty, a statement names an unknown fragment, or a file is blank: a
// missing statement is a build defect, never a run-time surprise.
func MustLoadStatements(owner string, fsys fs.FS, dir string) *Statements {
	s, err := LoadStatements(owner, fsys, dir)
	if err != nil {
		panic(err)
	}
	return s
}

// LoadStatements is MustLoadStatements returning the error.
func LoadStatements(owner string, fsys fs.FS, dir string) (*Statements, error) {
	entries, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, fmt.Errorf("%s: list statements: %w", owner, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: no statements in %s", owner, dir)
	}
	raw := make(map[string]string, len(entries))
	fragments := map[string]string{}
	for _, name := range entries {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("%s: read %s: %w", owner, name, err)
		}
		key := strings.TrimSuffix(path.Base(name), ".sql")
		text := strings.TrimSpace(string(b))
		if text == "" {
			return nil, fmt.Errorf("%s: statement %s is empty", owner, key)
		}
		if frag, ok := strings.CutPrefix(key, fragmentPrefix); ok {
			fragments[frag] = stripComments(text)
			continue
		}
		raw[key] = text
	}
	out := &Statements{owner: owner, byKey: make(map[string]string, len(raw))}
	for key, text := range raw {
		for frag, body := range fragments {
			text = strings.ReplaceAll(text, "{{"+frag+"}}", body)
		}
		if i := strings.Index(text, "{{"); i >= 0 {
			return nil, fmt.Errorf("%s: statement %s names an unknown fragment at byte %d", owner, key, i)
		}
		out.byKey[key] = text
	}
	return out, nil
}

// Get returns the statement named key. It panics on an unknown key, which
// only a typo in a package-level variable can cause (caught by any test).
func (s *Statements) Get(key string) string {
	text, ok := s.byKey[key]
	if !ok {
		panic(fmt.Sprintf("%s: unknown statement %q", s.owner, key))
	}
	return text
}

// Keys lists the loaded statements, sorted (for plan tests and tools).
func (s *Statements) Keys() []string {
	keys := make([]string, 0, len(s.byKey))
	for k := range s.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func stripComments(text string) string {
	var kept []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			kept = append(kept, line)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}
