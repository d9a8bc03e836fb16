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
	payloads := flag.String("payloads", "", "also write the typed event payloads (Go) to this file")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "schemagen: -out is required")
		os.Exit(2)
	}
	if *payloads != "" {
		src, err := schemagen.PayloadsGo()
		if err == nil {
			err = os.WriteFile(*payloads, src, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "schemagen:", err)
			os.Exit(1)
		}
	}
	if _, err := schemagen.Write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}
