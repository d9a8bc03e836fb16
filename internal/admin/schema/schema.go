// Package schema holds the admin migration line: the payload lookup indexes
// the admin's events-by-reference lookup needs, on the outbox table of every
// producer database (all four boundaries). Importing it registers the line
// with internal/migrate.
package schema

import (
	"embed"
	"io/fs"

	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
)

// LineName is the name of the admin migration line.
const LineName = "admin"

//go:embed migrations/*.sql
var files embed.FS

// FS is the line's migrations at their root.
var FS = mustSub(files, "migrations")

func init() {
	migrate.RegisterLine(migrate.Line{
		Name:       LineName,
		Boundaries: migrate.Boundaries,
		FS:         FS,
		// The indexes are on outbox.outbox_events.
		After: []string{outboxschema.LineName},
	})
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
