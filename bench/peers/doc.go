// Package peers benchmarks general PostgreSQL queues side by side with
// OceanWay's outbox on the same server: River (riverqueue/river with the
// pgx v5 driver, a no-op worker, InsertManyTx, its default batch completer)
// and watermill-sql (the default PostgreSQL schema adapter and the queue
// schema adapter). It is a separate Go module so that the main module never
// depends on them; cmd/peerbench runs everything and prints one table.
package peers
