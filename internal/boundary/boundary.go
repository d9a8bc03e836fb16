// Package boundary names the fact boundaries of OceanWay Core: the four
// producer databases of DESIGN.md §2. It is a leaf package so migrations,
// the server wiring, the admin reader and the test harness share one
// definition.
package boundary

import "fmt"

// Boundary is a fact boundary, i.e. one producer database.
type Boundary string

const (
	Core      Boundary = "core"
	Execution Boundary = "execution"
	Gateway   Boundary = "gateway"
	Metering  Boundary = "metering"
)

// All lists the four boundaries in their fixed order (also the display
// order of the admin page and the command line).
var All = []Boundary{Core, Execution, Gateway, Metering}

// Parse accepts the four exact names.
func Parse(s string) (Boundary, error) {
	for _, b := range All {
		if string(b) == s {
			return b, nil
		}
	}
	return "", fmt.Errorf("unknown boundary %q", s)
}
