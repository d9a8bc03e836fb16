package dispatcher

import (
	"embed"

	"github.com/oceanway/core/internal/db"
)

// The statements kept out of sqlc live in sql/*.sql (one statement per
// file, named arguments): the calls of the batched fenced acks and retries.
//
//go:embed sql/*.sql
var statementFiles embed.FS

var statements = db.MustLoadStatements("dispatcher", statementFiles, "sql")

// stDeliveryAckBatch runs once per ack batch: its named arguments are
// rewritten into positional parameters once, here.
var stDeliveryAckBatch = statements.Statement("delivery_ack_batch")

// stDeliveryRetryBatch runs once per retry batch.
var stDeliveryRetryBatch = statements.Statement("delivery_retry_batch")
