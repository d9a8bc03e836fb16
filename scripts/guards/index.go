package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// clause is one refusal a test must prove: a marked condition, trigger or
// CHECK in the live definition of a migration line, or a marked Go check.
type clause struct {
	id    string
	line  string // migration line (its directory under internal/), or "go"
	file  string // repository-relative path
	lineN int    // line number of the marker
	where string // the function, trigger or Go function that holds it
	kind  string // "condition", "trigger", "check" or "go"
	// The mutation: replace file[mutStart:mutEnd] with mutText.
	src              string // the file as indexed: the mutation applies to it
	mutStart, mutEnd int
	mutText          string
	tests            []testRef
}

type testRef struct{ pkg, name string } // pkg: ./internal/outbox

// gap is a refusal no clause covers, or a marker that cannot be used.
type gap struct{ file, msg string }

type funcDef struct {
	line      string
	key, name string
	trigger   bool // RETURNS trigger: it refuses only through a live trigger
	file      string
	src       string
	toks      []sqlToken // the body's tokens
}

type trigDef struct {
	line          string
	key, name, fn string
	file          string
	src           string
	toks          []sqlToken // the statement's tokens
	marker        string
	markerTok     int
}

// dynamicDDL is trigger or function DDL inside a DO block (EXECUTE
// format(...)): the index cannot see what it creates or renames.
var dynamicDDL = regexp.MustCompile(`(?is)\b(create\s+(or\s+replace\s+)?(constraint\s+)?trigger|alter\s+(function|trigger)|rename\s+to)\b`)

// dynamicDDLReplayed are the landed migrations that did so, each with the
// later migration that restates what it made in plain statements.
var dynamicDDLReplayed = map[string]string{
	"00040_billing_finality_guards.sql": "billing 00041 re-creates each TRUNCATE trigger",
	"00096_outbox_recovery_drills.sql":  "outbox 00102 restates the renamed retention_archive_unproven",
}

var gooseDown = regexp.MustCompile(`(?m)^--\s*\+goose Down\b`)

type index struct {
	clauses []*clause
	gaps    []gap
	// The schema replayed so far, across lines: one line may drop or move
	// what another created (billing 00001 moves admission's tables).
	funcs     map[string]*funcDef
	funcOrder []string
	trigs     map[string]*trigDef
	trigOrder []string
}

// lineDirs returns the migration directories, line name → directory.
func lineDirs() (map[string]string, error) {
	dirs, err := filepath.Glob("internal/*/schema/migrations")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range dirs {
		out[strings.Split(d, string(filepath.Separator))[1]] = d
	}
	return out, nil
}

func buildIndex() (*index, error) {
	ix := &index{}
	dirs, err := lineDirs()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(dirs))
	for n := range dirs {
		names = append(names, n)
	}
	// The outbox line first (every other line applies after it), then by
	// name, which puts admission before billing (billing's After).
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "outbox") != (names[j] == "outbox") {
			return names[i] == "outbox"
		}
		return names[i] < names[j]
	})
	for _, line := range names {
		if err := ix.scanLine(line, dirs[line]); err != nil {
			return nil, err
		}
	}
	if err := ix.readClauses(); err != nil {
		return nil, err
	}
	if err := ix.scanGo(); err != nil {
		return nil, err
	}
	seen := map[string]*clause{}
	for _, c := range ix.clauses {
		if o := seen[c.id]; o != nil {
			ix.gaps = append(ix.gaps, gap{c.file, fmt.Sprintf("clause %s is marked twice (also %s:%d)", c.id, o.file, o.lineN)})
		}
		seen[c.id] = c
	}
	if err := ix.mapTests(); err != nil {
		return nil, err
	}
	sort.Slice(ix.clauses, func(i, j int) bool {
		if ix.clauses[i].line != ix.clauses[j].line {
			return ix.clauses[i].line < ix.clauses[j].line
		}
		return ix.clauses[i].id < ix.clauses[j].id
	})
	return ix, nil
}

// scanLine replays a line's migrations in order, keeping the live
// definition of every function and trigger, then reads clauses off them.
func (ix *index) scanLine(line, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if ix.funcs == nil {
		ix.funcs, ix.trigs = map[string]*funcDef{}, map[string]*trigDef{}
	}
	funcs, trigs := ix.funcs, ix.trigs
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		src := string(b)
		// Only the Up section defines what is live; a Down section re-creates
		// what its Up dropped and would read as a later definition.
		up := src
		if k := gooseDown.FindStringIndex(src); k != nil {
			up = src[:k[0]]
		}
		toks, err := lex(up)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for i := 0; i < len(toks); i++ {
			t := toks[i]
			if t.kind == tDollar { // a DO block or a body we did not recognise
				end := matchingDollar(toks, i)
				body := up[t.end:toks[end].start]
				if dynamicDDL.MatchString(body) && dynamicDDLReplayed[filepath.Base(f)] == "" {
					ix.gaps = append(ix.gaps, gap{f, fmt.Sprintf("line %d: a dollar-quoted block creates, alters or renames a trigger or function by dynamic SQL, which the index cannot replay: write each as its own statement", lineOf(src, t.start))})
				}
				i = end
				continue
			}
			if t.kind == tComment {
				id := markerID(t)
				switch {
				case id != "" && i >= 2 && isWord(toks[i-2], "check") && toks[i-1].text == "(":
					cl, err := closeParen(toks, i-1)
					if err != nil {
						return fmt.Errorf("%s: %w", f, err)
					}
					ix.clauses = append(ix.clauses, &clause{id: id, line: line, file: f, src: src, lineN: lineOf(src, t.start),
						where: "CHECK", kind: "check", mutStart: t.end, mutEnd: toks[cl].start, mutText: " true "})
				case id != "" && i >= 1 && isWord(toks[i-1], "trigger"):
					// read with its CREATE TRIGGER
				case id != "" || looksLikeMarker(t):
					ix.gaps = append(ix.gaps, gap{f, fmt.Sprintf("line %d: marker %s is not after IF/ELSIF/WHEN, CREATE TRIGGER or CHECK (", lineOf(src, t.start), t.text)})
				}
				continue
			}
			if !isWord(t, "create") && !isWord(t, "drop") && !isWord(t, "alter") {
				continue
			}
			end := statementEnd(toks, i)
			stmt := toks[i : end+1]
			switch {
			case isWord(t, "create") && hasFunctionHead(stmt):
				fd, next, err := parseFunction(f, src, toks, i)
				if err != nil {
					return err
				}
				fd.line = line
				if old, ok := funcs[fd.key]; ok {
					ix.staleMarkers(old)
				} else {
					ix.funcOrder = append(ix.funcOrder, fd.key)
				}
				funcs[fd.key] = fd
				i = next
			case isWord(t, "create") && hasTriggerHead(stmt):
				td := parseTrigger(f, src, stmt)
				if td == nil {
					return fmt.Errorf("%s:%d: cannot read CREATE TRIGGER", f, lineOf(src, t.start))
				}
				td.line = line
				if old, ok := trigs[td.key]; ok {
					ix.staleTrigger(old)
				} else {
					ix.trigOrder = append(ix.trigOrder, td.key)
				}
				trigs[td.key] = td
			case isWord(t, "drop") && len(stmt) > 2 && isWord(stmt[1], "function"):
				name := stmt[2].text
				if isWord(stmt[2], "if") && len(stmt) > 4 {
					name = stmt[4].text
				}
				for k, fd := range funcs {
					if fd.name == name {
						ix.staleMarkers(fd)
						delete(funcs, k)
					}
				}
			case isWord(t, "drop") && len(stmt) > 2 && isWord(stmt[1], "table"):
				for _, tt := range stmt[2:] {
					if tt.kind != tWord || tt.text == "if" || tt.text == "exists" || tt.text == "cascade" || tt.text == "restrict" {
						continue
					}
					for k, td := range trigs {
						if strings.HasSuffix(k, " on "+tt.text) {
							ix.staleTrigger(td)
							delete(trigs, k)
						}
					}
				}
			case isWord(t, "drop") && len(stmt) > 2 && isWord(stmt[1], "trigger"):
				j := 2
				if isWord(stmt[2], "if") {
					j = 4
				}
				if j+2 < len(stmt) {
					key := stmt[j].text + " on " + stmt[j+2].text
					if old, ok := trigs[key]; ok {
						ix.staleTrigger(old)
					}
					delete(trigs, key)
				}
			case isWord(t, "alter") && len(stmt) > 5 && isWord(stmt[1], "table") && isWord(stmt[end-i-2], "schema") && isWord(stmt[end-i-3], "set"):
				// ALTER TABLE a.t SET SCHEMA b: its triggers move with it.
				from := stmt[2].text
				to := stmt[end-i-1].text + from[strings.LastIndex(from, "."):]
				for k, td := range trigs {
					if strings.HasSuffix(k, " on "+from) {
						delete(trigs, k)
						td.key = td.name + " on " + to
						trigs[td.key] = td
						ix.trigOrder = append(ix.trigOrder, td.key)
					}
				}
			}
		}
	}
	return nil
}

// readClauses reads the clauses off the live definitions once every line
// is replayed.
func (ix *index) readClauses() error {
	// Triggers: each live, marked trigger is a clause; mutation adds or
	// replaces its WHEN condition with false.
	byFn := map[string][]*trigDef{}
	done := map[string]bool{}
	for _, k := range ix.trigOrder {
		td, ok := ix.trigs[k]
		if !ok || done[k] {
			continue
		}
		done[k] = true
		byFn[td.fn] = append(byFn[td.fn], td)
		if td.marker == "" {
			continue
		}
		c := &clause{id: td.marker, line: td.line, file: td.file, src: td.src, lineN: lineOf(td.src, td.toks[td.markerTok].start),
			where: "trigger " + td.key, kind: "trigger"}
		for j, t := range td.toks {
			if isWord(t, "when") && j+1 < len(td.toks) && td.toks[j+1].text == "(" {
				cl, err := closeParen(td.toks, j+1)
				if err != nil {
					return err
				}
				c.mutStart, c.mutEnd, c.mutText = td.toks[j+1].end, td.toks[cl].start, "false"
				break
			}
			if isWord(t, "execute") {
				c.mutStart, c.mutEnd, c.mutText = t.start, t.start, "WHEN (false) "
				break
			}
		}
		ix.clauses = append(ix.clauses, c)
	}
	// Functions: every marker in a live body is a clause; every RAISE must
	// be governed by a marked condition, or the function is a trigger
	// function whose every live trigger is marked.
	for _, k := range ix.funcOrder {
		fd, ok := ix.funcs[k]
		if !ok || done["fn "+k] {
			continue
		}
		done["fn "+k] = true
		if err := ix.scanBody(fd.line, fd, byFn[fd.name]); err != nil {
			return err
		}
	}
	return nil
}

// staleMarkers reports markers left in a definition a later migration
// replaced: only the live definition is mutated, so they would prove nothing.
func (ix *index) staleMarkers(fd *funcDef) {
	for _, t := range fd.toks {
		if markerID(t) != "" {
			ix.gaps = append(ix.gaps, gap{fd.file, fmt.Sprintf("line %d: marker %s is in a definition of %s that a later migration replaces", lineOf(fd.src, t.start), t.text, fd.name)})
		}
	}
}

func (ix *index) staleTrigger(td *trigDef) {
	if td.marker != "" {
		ix.gaps = append(ix.gaps, gap{td.file, fmt.Sprintf("line %d: marker %s is on trigger %s, which a later migration drops", lineOf(td.src, td.toks[td.markerTok].start), td.marker, td.key)})
	}
}

func hasFunctionHead(stmt []sqlToken) bool {
	for j := 1; j < len(stmt) && j < 4; j++ {
		if isWord(stmt[j], "function") {
			return true
		}
		if !isWord(stmt[j], "or") && !isWord(stmt[j], "replace") {
			return false
		}
	}
	return false
}

// hasTriggerHead: CREATE [OR REPLACE] [CONSTRAINT] TRIGGER.
func hasTriggerHead(stmt []sqlToken) bool {
	j := triggerWord(stmt)
	return j > 0 && isWord(stmt[j], "trigger")
}

// triggerWord is the index of TRIGGER in CREATE [OR REPLACE] [CONSTRAINT]
// TRIGGER, or 0.
func triggerWord(stmt []sqlToken) int {
	j := 1
	if len(stmt) > 3 && isWord(stmt[1], "or") && isWord(stmt[2], "replace") {
		j = 3
	}
	if j < len(stmt) && isWord(stmt[j], "constraint") {
		j++
	}
	if j < len(stmt) && isWord(stmt[j], "trigger") {
		return j
	}
	return 0
}

// parseFunction reads CREATE [OR REPLACE] FUNCTION name(args) ... AS $x$
// body $x$ ...; it returns the definition and the index of its last token.
func parseFunction(file, src string, toks []sqlToken, i int) (*funcDef, int, error) {
	j := i
	for !isWord(toks[j], "function") {
		j++
	}
	name := toks[j+1].text
	if toks[j+2].text != "(" {
		return nil, 0, fmt.Errorf("%s:%d: cannot read function %s", file, lineOf(src, toks[j].start), name)
	}
	cl, err := closeParen(toks, j+2)
	if err != nil {
		return nil, 0, err
	}
	var args []string
	for _, t := range toks[j+3 : cl] {
		args = append(args, t.text)
	}
	k := cl
	for k < len(toks) && toks[k].kind != tDollar {
		if toks[k].text == ";" { // an SQL-standard body (RETURN expr): it cannot RAISE
			for _, t := range toks[cl:k] {
				if isWord(t, "plpgsql") {
					return nil, 0, fmt.Errorf("%s:%d: function %s has a quoted PL/pgSQL body: dollar-quote it so its refusals can be read", file, lineOf(src, toks[j].start), name)
				}
			}
			return &funcDef{key: name + "(" + argTypes(args) + ")", name: name, file: file, src: src}, k, nil
		}
		k++
	}
	close := matchingDollar(toks, k)
	fd := &funcDef{key: name + "(" + argTypes(args) + ")", name: name, file: file, src: src, toks: toks[k+1 : close]}
	fd.trigger = cl+2 < k && isWord(toks[cl+1], "returns") && isWord(toks[cl+2], "trigger")
	return fd, statementEnd(toks, close+1), nil
}

// argTypes drops parameter names so a redefinition with renamed
// parameters keeps its key: the type is the last word of each argument.
func argTypes(words []string) string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur[max(0, len(cur)-1):], " "))
		}
		cur = nil
	}
	for _, w := range words {
		if w == "," {
			flush()
			continue
		}
		if w == "[" || w == "]" {
			if len(cur) > 0 {
				cur[len(cur)-1] += w
			}
			continue
		}
		cur = append(cur, w)
	}
	flush()
	return strings.Join(out, ",")
}

func parseTrigger(file, src string, stmt []sqlToken) *trigDef {
	td := &trigDef{file: file, src: src, toks: stmt, markerTok: -1}
	j := triggerWord(stmt) + 1
	if id := markerID(stmt[j]); id != "" {
		td.marker, td.markerTok = id, j
		j++
	}
	td.name = stmt[j].text
	for k := j; k+1 < len(stmt); k++ {
		if isWord(stmt[k], "on") && td.key == "" {
			td.key = td.name + " on " + stmt[k+1].text
		}
		if (isWord(stmt[k], "function") || isWord(stmt[k], "procedure")) && k > 0 && isWord(stmt[k-1], "execute") {
			td.fn = stmt[k+1].text
		}
	}
	if td.key == "" || td.fn == "" {
		return nil
	}
	return td
}

type frame struct {
	kind   string // block, if, case, loop, handler
	marker string // the marker of the condition governing the current branch
	cond   bool   // whether the current branch has a condition at all
}

var nonErrorLevels = map[string]bool{"notice": true, "warning": true, "info": true, "log": true, "debug": true}

func (ix *index) scanBody(line string, fd *funcDef, trigs []*trigDef) error {
	toks := fd.toks
	if fd.trigger && len(trigs) == 0 {
		// No live trigger executes it: it refuses nothing, and a marker
		// there would name a clause no write can reach.
		for _, t := range toks {
			if markerID(t) != "" {
				ix.gaps = append(ix.gaps, gap{fd.file, fmt.Sprintf("line %d: marker %s is in trigger function %s, which no live trigger executes", lineOf(fd.src, t.start), t.text, fd.name)})
			}
		}
		return nil
	}
	var stack []frame
	top := func() *frame {
		if len(stack) == 0 {
			return nil
		}
		return &stack[len(stack)-1]
	}
	pop := func(kind string) {
		for len(stack) > 0 {
			k := stack[len(stack)-1].kind
			stack = stack[:len(stack)-1]
			if kind == "" || k == kind {
				return
			}
		}
	}
	marked := func(i int) string {
		if i+1 < len(toks) {
			return markerID(toks[i+1])
		}
		return ""
	}
	unconditional := false
	for i, t := range toks {
		prev := sqlToken{}
		if i > 0 {
			prev = toks[i-1]
		}
		if t.kind == tComment {
			id := markerID(t)
			if id == "" && !looksLikeMarker(t) {
				continue
			}
			if id == "" || !(isWord(prev, "if") || isWord(prev, "elsif") || isWord(prev, "elseif") || isWord(prev, "when")) {
				ix.gaps = append(ix.gaps, gap{fd.file, fmt.Sprintf("line %d: marker %s is not after IF/ELSIF/WHEN", lineOf(fd.src, t.start), t.text)})
				continue
			}
			then, err := condEnd(toks, i+1)
			if err != nil {
				return fmt.Errorf("%s:%d: %w", fd.file, lineOf(fd.src, t.start), err)
			}
			// In an EXCEPTION handler the condition names errors, not a
			// boolean: disabled, it catches an SQLSTATE nothing raises.
			mut := " false "
			if f := top(); f != nil && f.kind == "handler" && isWord(prev, "when") {
				mut = " SQLSTATE 'ZZ999' "
			}
			ix.clauses = append(ix.clauses, &clause{id: id, line: line, file: fd.file, src: fd.src, lineN: lineOf(fd.src, t.start),
				where: fd.name, kind: "condition", mutStart: t.end, mutEnd: toks[then].start, mutText: mut})
			continue
		}
		if t.kind != tWord {
			continue
		}
		switch t.text {
		case "begin":
			stack = append(stack, frame{kind: "block"})
		case "if":
			if isWord(prev, "end") {
				pop("if")
			} else {
				stack = append(stack, frame{kind: "if", marker: marked(i), cond: true})
			}
		case "elsif", "elseif":
			if f := top(); f != nil {
				f.marker, f.cond = marked(i), true
			}
		case "else":
			if f := top(); f != nil {
				f.marker, f.cond = "", false
			}
		case "case":
			if isWord(prev, "end") {
				pop("case")
			} else {
				stack = append(stack, frame{kind: "case"})
			}
		case "when":
			if f := top(); f != nil && (f.kind == "case" || f.kind == "handler") {
				f.marker, f.cond = marked(i), true
			}
		case "loop":
			if isWord(prev, "end") {
				pop("loop")
			} else {
				stack = append(stack, frame{kind: "loop"})
			}
		case "exception":
			if !isWord(prev, "raise") {
				if f := top(); f != nil && f.kind == "block" {
					f.kind = "handler"
				}
			}
		case "end":
			if i+1 < len(toks) && (isWord(toks[i+1], "if") || isWord(toks[i+1], "case") || isWord(toks[i+1], "loop")) {
				continue // handled at the next word
			}
			pop("")
		case "raise":
			if i+1 < len(toks) && nonErrorLevels[toks[i+1].text] {
				continue
			}
			var gov *frame
			for k := len(stack) - 1; k >= 0; k-- {
				if s := stack[k]; s.kind == "if" || s.kind == "case" || s.kind == "handler" {
					gov = &stack[k]
					break
				}
			}
			switch {
			case gov == nil:
				unconditional = true
			case gov.kind == "handler" && i+1 < len(toks) && toks[i+1].text == ";":
				// RAISE; re-raises the caught error: it refuses nothing new
			case gov.marker == "":
				what := "condition"
				if !gov.cond {
					what = "ELSE branch (turn it into a condition)"
				}
				ix.gaps = append(ix.gaps, gap{fd.file, fmt.Sprintf("line %d: RAISE in %s under an unmarked %s", lineOf(fd.src, t.start), fd.name, what)})
			}
		}
	}
	if unconditional {
		if len(trigs) == 0 {
			ix.gaps = append(ix.gaps, gap{fd.file, fmt.Sprintf("%s raises unconditionally and no live trigger executes it", fd.name)})
		}
		for _, td := range trigs {
			if td.marker == "" {
				ix.gaps = append(ix.gaps, gap{td.file, fmt.Sprintf("line %d: trigger %s executes %s, which refuses unconditionally: mark the trigger", lineOf(td.src, td.toks[0].start), td.key, fd.name)})
			}
		}
	}
	return nil
}

func lineOf(src string, off int) int { return strings.Count(src[:off], "\n") + 1 }

// goMarkerRE is a Go clause marker: a "// guard ID" line directly above an
// if statement, or a one-expression case of a switch with no tag, whose
// condition refuses a write.
var goMarkerRE = regexp.MustCompile(`^//\s*guard\s+(` + idRE.String() + `)\s*$`)

func trackedGo() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "*.go").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	return files, nil
}

func (ix *index) scanGo() error {
	files, err := trackedGo()
	if err != nil {
		return err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "scripts/guards/") {
			continue
		}
		if err := ix.scanGoFile(f); err != nil {
			return err
		}
	}
	return nil
}

// scanGoFile reads the marked Go clauses of one file.
func (ix *index) scanGoFile(f string) error {
	b, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), "// guard ") {
		return nil
	}
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, f, b, parser.ParseComments)
	if err != nil {
		return err
	}
	markers := map[int]string{} // line → ID
	for _, cg := range af.Comments {
		for _, c := range cg.List {
			if m := goMarkerRE.FindStringSubmatch(c.Text); m != nil {
				markers[fset.Position(c.Pos()).Line] = m[1]
			}
		}
	}
	used := map[int]bool{}
	var fn string
	ast.Inspect(af, func(n ast.Node) bool {
		if d, ok := n.(*ast.FuncDecl); ok {
			fn = d.Name.Name
		}
		// An if condition, or a case of a switch with no tag (its one
		// expression): the mutation makes it false && (cond).
		var cond ast.Expr
		switch st := n.(type) {
		case *ast.IfStmt:
			cond = st.Cond
		case *ast.SwitchStmt:
			if st.Tag != nil {
				return true
			}
			for _, s := range st.Body.List {
				cc := s.(*ast.CaseClause)
				ln := fset.Position(cc.Pos()).Line
				if id, ok := markers[ln-1]; ok && len(cc.List) == 1 {
					used[ln-1] = true
					ix.addGo(id, f, ln-1, fn, b, fset, cc.List[0])
				}
			}
			return true
		default:
			return true
		}
		ln := fset.Position(n.Pos()).Line
		id, ok := markers[ln-1]
		if !ok {
			return true
		}
		used[ln-1] = true
		ix.addGo(id, f, ln-1, fn, b, fset, cond)
		return true
	})
	for ln, id := range markers {
		if !used[ln] {
			ix.gaps = append(ix.gaps, gap{f, fmt.Sprintf("line %d: marker %s is not directly above an if statement or a one-expression case of a switch with no tag", ln, id)})
		}
	}
	return nil
}

func (ix *index) addGo(id, file string, line int, fn string, src []byte, fset *token.FileSet, cond ast.Expr) {
	s, e := fset.Position(cond.Pos()).Offset, fset.Position(cond.End()).Offset
	ix.clauses = append(ix.clauses, &clause{id: id, line: "go", file: file, src: string(src), lineN: line, where: fn, kind: "go",
		mutStart: s, mutEnd: e, mutText: "false && (" + string(src[s:e]) + ")"})
}

// mapTests finds, for every clause, the top-level tests whose name, doc
// comment or body names its ID.
func (ix *index) mapTests() error {
	files, err := trackedGo()
	if err != nil {
		return err
	}
	byID := map[string]*clause{}
	for _, c := range ix.clauses {
		byID[c.id] = c
	}
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if !idRE.Match(b) {
			continue
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, f, b, parser.ParseComments)
		if err != nil {
			return err
		}
		pkg := "./" + filepath.Dir(f)
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") {
				continue
			}
			start := fd.Pos()
			if fd.Doc != nil {
				start = fd.Doc.Pos()
			}
			text := string(b[fset.Position(start).Offset:fset.Position(fd.End()).Offset])
			found := map[string]bool{}
			for _, m := range idRE.FindAllStringIndex(text, -1) {
				id := text[m[0]:m[1]]
				if c := byID[id]; c != nil && !found[id] {
					found[id] = true
					c.tests = append(c.tests, testRef{pkg, fd.Name.Name})
				}
			}
		}
	}
	return nil
}
