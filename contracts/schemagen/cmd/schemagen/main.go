// Command schemagen writes the generated JSON Schema and TypeScript files
// (see package schemagen). It is run by go generate.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/oceanway/core/contracts/schemagen"
)

func main() {
	out := flag.String("out", "", "output directory (contains json/ and ts/)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "schemagen: -out is required")
		os.Exit(2)
	}
	if _, err := schemagen.Write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}
