package db

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Statements is the one loader for the SQL that sqlc cannot express (dynamic
// fragments, statements over views whose shape sqlc cannot infer): one
// statement per file in an embedded directory, loaded and checked once at
// package initialisation, addressed by file name without ".sql".
//
// Statements use pgx named arguments (@name) and are run with pgx.NamedArgs
// (Get), or, on hot paths, rewritten once at load time into positional
// parameters and run with Statement.Args, which takes the same named map;
// results are read with pgx.RowToStructByName, so neither the arguments nor
// the columns depend on position. Everything sqlc can express lives in the
// owning package's sqlc queries instead (see sqlc.yaml at the module root).
type Statements struct {
	owner string
	byKey map[string]string
	// positional holds every statement's named arguments rewritten once,
	// at load time, into positional parameters (see Statement).
	positional map[string]Statement
}

// Statement is one loaded statement with its named arguments rewritten once,
// at load time, into positional parameters ($1, $2, …) and the order of the
// names. Run it as
//
//	tx.Exec(ctx, st.SQL, st.Args(pgx.NamedArgs{"name": v, …})...)
//
// which sends exactly what passing st's named text with the same
// pgx.NamedArgs sends (pgx's own rewrite produced SQL), without re-lexing
// the statement on every call: hot paths use it, the rest may keep Get.
type Statement struct {
	// SQL is the positional text.
	SQL string
	// names[i] is the named argument bound to $(i+1).
	names []string
}

// Args lays out named in the statement's positional order. A name the
// statement uses but named lacks binds NULL, as with pgx.NamedArgs.
func (st Statement) Args(named pgx.NamedArgs) []any {
	args := make([]any, len(st.names))
	for i, n := range st.names {
		args[i] = named[n]
	}
	return args
}

// Names lists the statement's named arguments in positional order.
func (st Statement) Names() []string { return append([]string(nil), st.names...) }

// candidateName over-approximates pgx's named-argument lexer (names inside
// strings or comments are harmless extras); pgx itself does the rewrite.
var candidateName = regexp.MustCompile(`@([A-Za-z_][A-Za-z0-9_]*)`)

// argName marks, during the load-time rewrite, which name pgx bound to a
// position.
type argName string

// positionalOf rewrites text's named arguments with pgx's own NamedArgs
// rewrite, once, and records the order of the names.
func positionalOf(text string) (Statement, error) {
	markers := pgx.NamedArgs{}
	for _, m := range candidateName.FindAllStringSubmatch(text, -1) {
		markers[m[1]] = argName(m[1])
	}
	sql, args, err := markers.RewriteQuery(context.Background(), nil, text, nil)
	if err != nil {
		return Statement{}, fmt.Errorf("rewrite named arguments: %w", err)
	}
	st := Statement{SQL: sql, names: make([]string, len(args))}
	for i, a := range args {
		n, ok := a.(argName)
		if !ok {
			return Statement{}, fmt.Errorf("rewrite named arguments: parameter $%d has no name", i+1)
		}
		st.names[i] = string(n)
	}
	return st, nil
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
	out := &Statements{owner: owner, byKey: make(map[string]string, len(raw)), positional: make(map[string]Statement, len(raw))}
	for key, text := range raw {
		for frag, body := range fragments {
			text = strings.ReplaceAll(text, "{{"+frag+"}}", body)
		}
		if i := strings.Index(text, "{{"); i >= 0 {
			return nil, fmt.Errorf("%s: statement %s names an unknown fragment at byte %d", owner, key, i)
		}
		out.byKey[key] = text
		st, err := positionalOf(text)
		if err != nil {
			return nil, fmt.Errorf("%s: statement %s: %w", owner, key, err)
		}
		out.positional[key] = st
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

// Statement returns the statement named key with its named arguments
// rewritten into positional ones at load time (see Statement). It panics on
// an unknown key, like Get.
func (s *Statements) Statement(key string) Statement {
	st, ok := s.positional[key]
	if !ok {
		panic(fmt.Sprintf("%s: unknown statement %q", s.owner, key))
	}
	return st
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
