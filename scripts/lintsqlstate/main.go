// Command lintsqlstate fails when Go code spells a SQLSTATE as a bare string:
// a five-character code such as "23505" or "OW009", or a class prefix in
// strings.HasPrefix(state, "40"). Codes come from github.com/jackc/pgerrcode
// (pgerrcode.UniqueViolation, pgerrcode.IsTransactionRollback) or, for the
// project's own codes, from a named constant (outbox.CodeImmutable): a literal
// is allowed only in a const declaration. Generated files are skipped.
// golangci-lint's forbidigo matches identifiers, not string literals, so
// make lint runs this next to it.
//
// Usage: go run ./scripts/lintsqlstate [file.go ...] (default: git ls-files '*.go')
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

var (
	codeRE  = regexp.MustCompile(`^[0-9A-Z]{5}$`)
	classRE = regexp.MustCompile(`^[0-9A-Z]{2}$`)
	digitRE = regexp.MustCompile(`[0-9]`)
)

func main() {
	files := os.Args[1:]
	if len(files) == 0 {
		out, err := exec.Command("git", "ls-files", "*.go").Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "lintsqlstate: git ls-files:", err)
			os.Exit(2)
		}
		files = strings.Fields(string(out))
	}
	fset := token.NewFileSet()
	found := 0
	for _, path := range files {
		if strings.HasPrefix(path, "tools/") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lintsqlstate:", err)
			os.Exit(2)
		}
		if ast.IsGenerated(f) {
			continue
		}
		for _, p := range check(f) {
			fmt.Printf("%s: bare SQLSTATE %s: use a pgerrcode constant or a named Code constant\n", fset.Position(p.pos), p.lit)
			found++
		}
	}
	if found > 0 {
		os.Exit(1)
	}
}

type finding struct {
	pos token.Pos
	lit string
}

// check returns the bare SQLSTATE literals of f outside const declarations.
func check(f *ast.File) []finding {
	var out []finding
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			return n.Tok != token.CONST // a named constant is where a code belongs
		case *ast.CallExpr:
			if isHasPrefix(n.Fun) && len(n.Args) == 2 {
				if s, ok := stringLit(n.Args[1]); ok && classRE.MatchString(s) && digitRE.MatchString(s) {
					out = append(out, finding{n.Args[1].Pos(), strconv.Quote(s)})
				}
			}
		case *ast.BasicLit:
			if s, ok := stringLit(n); ok && codeRE.MatchString(s) && digitRE.MatchString(s) {
				out = append(out, finding{n.Pos(), strconv.Quote(s)})
			}
		}
		return true
	})
	return out
}

func isHasPrefix(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "HasPrefix" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "strings"
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
