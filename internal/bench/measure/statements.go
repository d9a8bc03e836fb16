package measure

import (
	"embed"

	"github.com/oceanway/core/internal/db"
)

// The measurement's statements (catalog reads and the limit workload) are
// loaded from sql/ with named arguments; they read PostgreSQL's statistics
// views, which sqlc does not model.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var stmts = db.MustLoadStatements("measure", sqlFiles, "sql")
