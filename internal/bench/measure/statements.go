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

// The loaded statements, resolved once (a typo fails at package init).
var (
	qBackends         = stmts.Get("backends")
	qClientBackends   = stmts.Get("client_backends")
	qDeadTuples       = stmts.Get("dead_tuples")
	qLimitInsertBatch = stmts.Get("limit_insert_batch")
	qLimitInsertRow   = stmts.Get("limit_insert_row")
	qLimitTable       = stmts.Get("limit_table")
	qServerInfo       = stmts.Get("server_info")
	qTableStats       = stmts.Get("table_stats")
)
