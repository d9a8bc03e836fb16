package outbox

import (
	"embed"

	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/dbsqlc"
)

// Statements sqlc can express are generated from queries/*.sql into dbsqlc
// (sqlc.yaml); every call takes the caller's executor.
var queries = dbsqlc.New()

// The rest lives in sql/*.sql (one statement per file, named arguments):
// the two append inserts sent in one batch, the members' multi-array
// unnest, and the read of outbox.lock_active_definition()'s OUT columns.
//
//go:embed sql/*.sql
var statementFiles embed.FS

var statements = db.MustLoadStatements("outbox", statementFiles, "sql")

var (
	sqlDefinitionLockActive = statements.Get("definition_lock_active")
	// The append inserts run on every append: rewritten into positional
	// parameters once, here, instead of by pgx.NamedArgs on every call.
	stEventInsert    = statements.Statement("event_insert")
	stDeliveryInsert = statements.Statement("delivery_insert")
	sqlMemberInsert  = statements.Get("member_insert")
)
