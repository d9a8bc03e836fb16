// Package schema holds the Gateway owner's migration line: schema gateway
// in the gateway database (dispatch slots, route snapshots and bindings,
// pre-binding rejections, provider evidence, availability chains).
package schema

import (
	"embed"
	"io/fs"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// LineName is the name of the gateway migration line.
const LineName = "gateway"

// RoleGateway is the role of the Gateway owner.
const RoleGateway = "oceanway_gateway"

//go:embed migrations/*.sql
var files embed.FS

// FS is the line's migrations at their root.
var FS = mustSub(files, "migrations")

// Line is the gateway migration line (internal/lines lists it).
func Line() migrate.Line {
	return migrate.Line{
		Name:       LineName,
		Boundaries: []boundary.Boundary{boundary.Gateway},
		FS:         FS,
		// The grants make the gateway role an outbox producer.
		After: []string{outboxschema.LineName},
		Roles: []string{RoleGateway},
	}
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
