// Command oceanway is the OceanWay Core CLI. All wiring lives in internal/cli.
package main

import (
	"os"

	"github.com/oceanway/core/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
