// Command guards indexes and mutation-tests the database guards and the Go
// checks that refuse a write.
//
// A clause is one refusal: a condition of a guard function (the IF, ELSIF
// or CASE WHEN that leads to a RAISE), a trigger whose function refuses
// unconditionally, a CHECK constraint, or a Go if statement. Each carries a
// marker with its ID, CODE.slug, in the live definition (the migration that
// last defines the function):
//
//	IF /* guard OW019.ack-without-lease */ OLD.status <> 'leased' THEN
//	CREATE TRIGGER /* guard OW002.events-no-delete */ outbox_events_no_delete ...
//	CHECK (/* guard OW020.attempt-positive */ attempt_count >= 0)
//	// guard OB-ACK-2.fence      (the line above a Go if)
//
// Tests name the IDs they prove; the index (docs/guard-clauses.md) is
// derived from the markers and the tests, never hand-kept.
//
//	go run ./scripts/guards index          write docs/guard-clauses.md
//	go run ./scripts/guards check          fail on gaps: a RAISE no marker governs, a clause no test names
//	go run ./scripts/guards mutate [-run RE] [-j N]
//	                                       disable each clause in turn and run its tests: KILLED or SURVIVED
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "index":
		err = cmdIndex(os.Args[2:])
	case "check":
		err = cmdCheck(os.Args[2:])
	case "mutate":
		err = cmdMutate(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "guards:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: guards index | check | mutate [-run RE] [-j N]")
	os.Exit(2)
}

func cmdIndex(args []string) error {
	out := "docs/guard-clauses.md"
	if len(args) == 2 && args[0] == "-out" {
		out = args[1]
	}
	ix, err := buildIndex()
	if err != nil {
		return err
	}
	return os.WriteFile(out, render(ix), 0o644)
}

func cmdCheck([]string) error {
	ix, err := buildIndex()
	if err != nil {
		return err
	}
	n := 0
	for _, g := range ix.gaps {
		fmt.Printf("%s: %s\n", g.file, g.msg)
		n++
	}
	for _, c := range ix.clauses {
		if len(c.tests) == 0 {
			fmt.Printf("%s:%d: clause %s: no test names it\n", c.file, c.lineN, c.id)
			n++
		}
	}
	fmt.Printf("%d clauses, %d gaps\n", len(ix.clauses), n)
	if n > 0 {
		return fmt.Errorf("%d gaps (see docs/guard-clauses.md for the convention)", n)
	}
	return nil
}
