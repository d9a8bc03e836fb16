package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oceanway/core/internal/dbtest"
)

func TestOverlayEnvIsDbtests(t *testing.T) {
	if overlayEnv != dbtest.MigrationsOverlayEnv {
		t.Fatalf("overlayEnv %q, dbtest reads %q", overlayEnv, dbtest.MigrationsOverlayEnv)
	}
}

func TestLexSkipsStringsAndKeepsMarkers(t *testing.T) {
	src := `SELECT 'IF x THEN', E'it\'s', "Quoted" -- IF y THEN
/* guard OW001.x-y */ $fn$ $$ $1`
	toks, err := lex(src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, tk.text)
	}
	want := "select , e , quoted /* guard OW001.x-y */ $fn$ $$ $ 1"
	if strings.Join(got, " ") != want {
		t.Fatalf("tokens %q, want %q", strings.Join(got, " "), want)
	}
	if id := markerID(toks[5]); id != "OW001.x-y" {
		t.Fatalf("marker %q", id)
	}
}

func TestCondEndSkipsNestedCaseAndParens(t *testing.T) {
	src := `IF /* guard OW001.a */ (CASE WHEN a THEN 1 ELSE 2 END) = 1 AND f(b, (c)) THEN RAISE`
	toks, err := lex(src)
	if err != nil {
		t.Fatal(err)
	}
	end, err := condEnd(toks, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := src[toks[1].end:toks[end].start]; got != " (CASE WHEN a THEN 1 ELSE 2 END) = 1 AND f(b, (c)) " {
		t.Fatalf("condition %q", got)
	}
}

// writeLine writes migrations into a temporary line directory.
func writeLine(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func scan(t *testing.T, files map[string]string) *index {
	ix := &index{}
	if err := ix.scanLine("x", writeLine(t, files)); err != nil {
		t.Fatal(err)
	}
	if err := ix.readClauses(); err != nil {
		t.Fatal(err)
	}
	return ix
}

func gapsText(ix *index) string {
	var b strings.Builder
	for _, g := range ix.gaps {
		b.WriteString(g.msg + "\n")
	}
	return b.String()
}

func TestCheckFindsEveryUnmarkedRefusal(t *testing.T) {
	ix := scan(t, map[string]string{
		"00001_a.sql": `
CREATE FUNCTION x.f() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.a THEN RAISE EXCEPTION 'a'; END IF;
  IF /* guard XX001.b */ NEW.b THEN RAISE EXCEPTION 'b';
  ELSIF NEW.c THEN RAISE EXCEPTION 'c';
  ELSE RAISE EXCEPTION 'd';
  END IF;
  RAISE NOTICE 'fine';
  RETURN NEW;
EXCEPTION WHEN unique_violation THEN RAISE;
END $fn$;
CREATE FUNCTION x.no() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN RAISE EXCEPTION 'no'; END $fn$;
CREATE TRIGGER t1 BEFORE DELETE ON x.t FOR EACH ROW EXECUTE FUNCTION x.no();
CREATE TRIGGER /* guard XX002.t2 */ t2 BEFORE TRUNCATE ON x.t FOR EACH STATEMENT EXECUTE FUNCTION x.no();
CREATE TRIGGER tf BEFORE UPDATE ON x.t FOR EACH ROW EXECUTE FUNCTION x.f();
`})
	g := gapsText(ix)
	for _, want := range []string{
		"line 4: RAISE in x.f under an unmarked condition",
		"line 6: RAISE in x.f under an unmarked condition",
		"line 7: RAISE in x.f under an unmarked ELSE branch",
		"trigger t1 on x.t executes x.no, which refuses unconditionally",
	} {
		if !strings.Contains(g, want) {
			t.Errorf("gaps lack %q:\n%s", want, g)
		}
	}
	if n := len(ix.gaps); n != 4 {
		t.Errorf("%d gaps, want 4:\n%s", n, g)
	}
	if len(ix.clauses) != 2 {
		t.Fatalf("%d clauses, want 2", len(ix.clauses))
	}
}

func TestOnlyTheLiveDefinitionCounts(t *testing.T) {
	ix := scan(t, map[string]string{
		"00001_a.sql": `CREATE FUNCTION x.f(a int) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN IF /* guard XX001.old */ a > 1 THEN RAISE EXCEPTION 'a'; END IF; END $fn$;
CREATE TRIGGER /* guard XX002.t */ t BEFORE DELETE ON x.t FOR EACH ROW EXECUTE FUNCTION x.g();`,
		"00002_b.sql": `CREATE OR REPLACE FUNCTION x.f(p_a int) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN IF /* guard XX001.new */ p_a > 2 THEN RAISE EXCEPTION 'a'; END IF; END $fn$;
DROP TRIGGER t ON x.t;`,
	})
	if len(ix.clauses) != 1 || ix.clauses[0].id != "XX001.new" {
		t.Fatalf("clauses %+v, want only XX001.new", ix.clauses)
	}
	g := gapsText(ix)
	if !strings.Contains(g, "XX001.old */ is in a definition of x.f that a later migration replaces") ||
		!strings.Contains(g, "XX002.t is on trigger t on x.t, which a later migration drops") {
		t.Fatalf("gaps:\n%s", g)
	}
}

func TestMutationsDisableExactlyTheClause(t *testing.T) {
	files := map[string]string{"00001_a.sql": `CREATE FUNCTION x.f() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF /* guard XX001.a */ NEW.a AND (NEW.b OR NEW.c) THEN RAISE EXCEPTION 'a'; END IF;
  SELECT CASE WHEN /* guard XX001.b */ NEW.d THEN 'd' END INTO v;
  RETURN NEW;
END $fn$;
CREATE TRIGGER /* guard XX002.t */ t BEFORE DELETE ON x.t FOR EACH ROW EXECUTE FUNCTION x.f();
CREATE TRIGGER /* guard XX002.w */ w BEFORE UPDATE ON x.t FOR EACH ROW WHEN (OLD.a IS DISTINCT FROM NEW.a) EXECUTE FUNCTION x.f();
CREATE TABLE x.u (n int CHECK (/* guard XX003.n */ n > 0));
`}
	ix := scan(t, files)
	src := files["00001_a.sql"]
	want := map[string]string{
		"XX001.a": "IF /* guard XX001.a */ false THEN RAISE",
		"XX001.b": "CASE WHEN /* guard XX001.b */ false THEN 'd'",
		"XX002.t": "FOR EACH ROW WHEN (false) EXECUTE FUNCTION x.f();\nCREATE TRIGGER /* guard XX002.w */",
		"XX002.w": "FOR EACH ROW WHEN (false) EXECUTE FUNCTION x.f();\nCREATE TABLE",
		"XX003.n": "CHECK (/* guard XX003.n */ true )",
	}
	if len(ix.clauses) != len(want) {
		t.Fatalf("%d clauses, want %d; gaps:\n%s", len(ix.clauses), len(want), gapsText(ix))
	}
	for _, c := range ix.clauses {
		if c.src != src {
			t.Fatalf("%s: the clause does not carry the file it indexed", c.id)
		}
		got := src[:c.mutStart] + c.mutText + src[c.mutEnd:]
		if !strings.Contains(got, want[c.id]) {
			t.Errorf("%s: mutated text lacks %q:\n%s", c.id, want[c.id], got)
		}
	}
}

func TestDownSectionsDefineNothing(t *testing.T) {
	ix := scan(t, map[string]string{
		"00001_a.sql": `-- +goose Up
CREATE FUNCTION x.f() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN IF /* guard XX001.a */ NEW.a THEN RAISE EXCEPTION 'a'; END IF; RETURN NEW; END $fn$;
CREATE TRIGGER t BEFORE INSERT ON x.t FOR EACH ROW EXECUTE FUNCTION x.f();
-- +goose Down
DROP FUNCTION x.f();`,
		"00002_b.sql": `-- +goose Up
DROP TRIGGER u ON x.t;
-- +goose Down
CREATE FUNCTION x.f() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN IF NEW.b THEN RAISE EXCEPTION 'b'; END IF; RETURN NEW; END $fn$;`,
	})
	if len(ix.gaps) != 0 || len(ix.clauses) != 1 || ix.clauses[0].id != "XX001.a" {
		t.Fatalf("clauses %+v, gaps:\n%s", ix.clauses, gapsText(ix))
	}
}

func TestTriggerFunctionsNoTriggerExecutesRefuseNothing(t *testing.T) {
	ix := scan(t, map[string]string{
		"00001_a.sql": `CREATE FUNCTION x.f() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN IF NEW.a THEN RAISE EXCEPTION 'a'; END IF; RETURN NEW; END $fn$;
CREATE TRIGGER t BEFORE INSERT ON x.t FOR EACH ROW EXECUTE FUNCTION x.f();
CREATE FUNCTION x.g() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN IF /* guard XX001.g */ NEW.a THEN RAISE EXCEPTION 'a'; END IF; RETURN NEW; END $fn$;`,
		"00002_b.sql": `DROP TRIGGER t ON x.t;`,
	})
	g := gapsText(ix)
	if len(ix.clauses) != 0 || len(ix.gaps) != 1 || !strings.Contains(g, "XX001.g */ is in trigger function x.g, which no live trigger executes") {
		t.Fatalf("clauses %+v, gaps:\n%s", ix.clauses, g)
	}
}

func TestGoMarkersOnIfAndCase(t *testing.T) {
	dir := t.TempDir()
	src := `package p

func f(a, b int) error {
	// guard XX-1.if
	if err := g(); a > b && err == nil {
		return nil
	}
	switch {
	// guard XX-1.case
	case a == b:
		return nil
	case a < b:
	}
	return nil
}

func g() error { return nil }
`
	file := filepath.Join(dir, "p.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ix := &index{}
	if err := ix.scanGoFile(file); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"XX-1.if":   "if err := g(); false && (a > b && err == nil) {",
		"XX-1.case": "case false && (a == b):",
	}
	if len(ix.clauses) != 2 || len(ix.gaps) != 0 {
		t.Fatalf("clauses %+v, gaps:\n%s", ix.clauses, gapsText(ix))
	}
	for _, c := range ix.clauses {
		if got := src[:c.mutStart] + c.mutText + src[c.mutEnd:]; !strings.Contains(got, want[c.id]) {
			t.Errorf("%s: mutated text lacks %q:\n%s", c.id, want[c.id], got)
		}
	}
}

func TestATableMovedToAnotherSchemaTakesItsTriggers(t *testing.T) {
	ix := scan(t, map[string]string{
		"00001_a.sql": `CREATE TRIGGER /* guard XX001.t */ t BEFORE DELETE ON a.t FOR EACH ROW EXECUTE FUNCTION a.f();
CREATE TRIGGER /* guard XX001.u */ u BEFORE UPDATE ON a.t FOR EACH ROW EXECUTE FUNCTION a.f();`,
		"00002_b.sql": `ALTER TABLE a.t SET SCHEMA b;
DROP TRIGGER t ON b.t;`,
	})
	if len(ix.clauses) != 1 || ix.clauses[0].id != "XX001.u" || ix.clauses[0].where != "trigger u on b.t" {
		t.Fatalf("clauses %+v", ix.clauses)
	}
	if g := gapsText(ix); !strings.Contains(g, "XX001.t is on trigger t on b.t, which a later migration drops") {
		t.Fatalf("gaps:\n%s", g)
	}
}

func TestHandlersReplacedTriggersAndDroppedTables(t *testing.T) {
	src := `CREATE FUNCTION x.f() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  BEGIN
    PERFORM 1;
  EXCEPTION WHEN /* guard XX001.h */ invalid_text_representation THEN
    RAISE EXCEPTION 'relabelled' USING ERRCODE = 'XX001';
  WHEN unique_violation THEN
    RAISE;
  WHEN others THEN
    RAISE EXCEPTION 'unmarked';
  END;
  RETURN NEW;
END $fn$;
CREATE TRIGGER /* guard XX002.old */ t BEFORE INSERT ON x.t FOR EACH ROW EXECUTE FUNCTION x.f();
CREATE OR REPLACE TRIGGER /* guard XX002.new */ t BEFORE INSERT ON x.t FOR EACH ROW EXECUTE FUNCTION x.f();
CREATE TRIGGER /* guard XX002.gone */ g BEFORE INSERT ON x.g FOR EACH ROW EXECUTE FUNCTION x.f();
DROP TABLE IF EXISTS x.g;
`
	ix := scan(t, map[string]string{"00001_a.sql": src})
	g := gapsText(ix)
	for _, want := range []string{
		"line 10: RAISE in x.f under an unmarked condition",
		"XX002.old is on trigger t on x.t, which a later migration drops",
		"XX002.gone is on trigger g on x.g, which a later migration drops",
	} {
		if !strings.Contains(g, want) {
			t.Errorf("gaps lack %q:\n%s", want, g)
		}
	}
	if len(ix.gaps) != 3 {
		t.Errorf("%d gaps, want 3:\n%s", len(ix.gaps), g)
	}
	ids := map[string]*clause{}
	for _, c := range ix.clauses {
		ids[c.id] = c
	}
	if len(ids) != 2 || ids["XX001.h"] == nil || ids["XX002.new"] == nil {
		t.Fatalf("clauses %+v", ix.clauses)
	}
	h := ids["XX001.h"]
	if got := src[:h.mutStart] + h.mutText + src[h.mutEnd:]; !strings.Contains(got, "WHEN /* guard XX001.h */ SQLSTATE 'ZZ999' THEN") {
		t.Errorf("handler mutation:\n%s", got)
	}
}

func TestAQuotedPLpgSQLBodyIsRefused(t *testing.T) {
	ix := &index{}
	err := ix.scanLine("x", writeLine(t, map[string]string{"00001_a.sql": `CREATE FUNCTION x.f() RETURNS void LANGUAGE plpgsql AS 'BEGIN RAISE EXCEPTION ''x''; END';`}))
	if err == nil || !strings.Contains(err.Error(), "quoted PL/pgSQL body") {
		t.Fatalf("err %v", err)
	}
}

func TestDynamicTriggerDDLIsAGap(t *testing.T) {
	ix := scan(t, map[string]string{"00001_a.sql": `DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['a', 'b'] LOOP
    EXECUTE format('CREATE TRIGGER %I_no_truncate BEFORE TRUNCATE ON x.%I FOR EACH STATEMENT EXECUTE FUNCTION x.no()', t, t);
  END LOOP;
END $$;
DO $$ BEGIN PERFORM 1; END $$;`})
	if g := gapsText(ix); len(ix.gaps) != 1 || !strings.Contains(g, "line 1: a dollar-quoted block creates, alters or renames a trigger or function by dynamic SQL") {
		t.Fatalf("gaps:\n%s", g)
	}
}
