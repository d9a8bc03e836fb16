// Package inbox is the consumer side of the outbox: the receipt mechanics
// every consumer shares (DESIGN.md §4; CON-1..CON-3, OB-DELIVER-6).
//
// A consumer (the Operations projector, the Metering input processor, the
// Billing finalization coordinator and the Billing settlement catch-up)
// implements Consumer: its destination, its receipt table and ApplyTx, the
// effect of one event inside a transaction. Inbox.Consume wraps it into a
// transport.ConsumerFunc that plugs into transport.InProcess.
//
// # One delivery
//
//  1. Verify, before anything is written: the frozen member names this
//     consumer's destination, consumer and receipt contract and the
//     delivery's event pair; the envelope decodes strictly (an unknown or
//     alias pair is CON-3's non_retryable); the delivery's event id, type and
//     schema version are the envelope's; the carried envelope digest
//     recomputes over the canonical envelope. Any failure is non_retryable.
//  2. One transaction (READ COMMITTED, db.WithTx) with a lock timeout and a
//     statement timeout: a transaction-scoped advisory lock on the receipt
//     key serializes concurrent deliveries of one event (a lease-expiry race
//     can hand the same event to two workers), and the receipt is looked up
//     by its key — (consumerName, eventId), plus (projectionName,
//     projectionVersion) for Operations.
//  3. Receipt found: the same envelope digest returns the first receipt
//     byte for byte, with the ack built from it (duplicate delivery, and the
//     crash window "consumer committed, dispatcher died before the ack");
//     another digest for the same event id is non_retryable. No effect runs.
//  4. Receipt not found: ApplyTx runs the effect and returns either a sealed
//     receipt, which is checked against the event and the key and inserted
//     in the same transaction (CON-1: the receipt commits with the effect or
//     not at all), or a Wait: the effect's durable bookkeeping (a revision
//     gap record, a watermark) commits, no receipt is written and the
//     delivery gets a retryable error with the wait's code.
//  5. Any error inside the transaction rolls everything back. Temporary
//     failures (lock or statement timeout, serialization failure, deadlock,
//     lost connection, owner read unavailable) are retryable with nothing
//     written (CON-2); database errors nobody classified are retryable too,
//     because an unknown failure must never turn into quarantine or success.
//
// # A batch
//
// ConsumeBatch is Consume for several deliveries of one destination in one
// transaction (transport.BatchConsumerFunc): verification first, then the
// receipt-key locks of the batch in key order, then steps 3-4 for each
// event in its own savepoint, so each answer is the one Consume would give
// and one event's failure rolls back that event only. A failed transaction
// answers every delivery that reached the database with its retryable
// error. BatchHooks lets a consumer lock once per batch and finish once;
// BatchOrder, apply a batch in the order of the entity its events lock.
//
// # Receipts
//
// Receipt bodies are stored as their RFC 8785 canonical bytes and returned
// verbatim, so a redelivery returns a byte-identical body and the same
// ActiveConsumerAck@1. Table describes a receipt table with the standard
// columns (see Table); each consumer's own migration line creates it in the
// consumer's schema, so receipts live with the module that owns them.
//
// The conformance suite every consumer must pass is package inboxtest.
package inbox
