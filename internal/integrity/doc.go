// Package integrity re-verifies what the owner databases store against the
// digests and facts that justify it, for `oceanway verify` (issue 30). It is
// an operator tool above the owners (like internal/admin): it reads several
// owners' databases, each on its own, and never writes.
//
// # What it checks
//
//   - Content addresses (CT-3): every stored content-addressed body listed in
//     Facts is strictly decoded and its digest recomputed with the
//     contracts' own functions (contracts/kinds: strict decode, refinement
//     rules, self-addressing with its exclusions); the result must equal the
//     stored digest column, the digest and ref the body carries must equal
//     the stored columns, and the body must be its own RFC 8785 canonical
//     form. A few objects are defined outside contracts/ (the finalization
//     trigger snapshot and Work, Metering's input Work, eligibility decision
//     and meter event, admission requests, readiness proofs); Facts states
//     how their writers compute their digests. A test fails when a table
//     gets a *_body column that Facts neither covers nor exempts.
//   - The billing ledger (core, BI-1, BI-2), derived from
//     billing.ledger_postings alone (never from billing.ledger_balances):
//     every posting group balanced, at least two dense lines, every line on
//     its group's reservation, account and economic identity; a
//     reservation_hold group equals the hold of the reservation's
//     reserved_amount, a finalization group equals
//     FinalizationPostings(reserved, settled, released) of the
//     finalization_committed row that names it (and the committed body's
//     ledgerPostings), a settlement_transition group equals the refund of
//     the transition its id derives from; per reservation no derived
//     balance is negative after any group, a reserved reservation holds
//     exactly its reserved amount, and a settled or released one holds 0
//     with revenue = wallet = committed settled amount minus its refunds and
//     a committed fact that agrees with its state and amounts.
//
// # Read-only and consistent
//
// Each database is read in one transaction begun READ ONLY (PostgreSQL
// refuses any write in it, SQLSTATE 25006) and REPEATABLE READ, so one
// database's answer is one snapshot. Databases are never joined (DESIGN.md
// §2): each is verified on its own snapshot.
//
// # Why it exists
//
// The databases refuse forged writes with triggers and constraints. A
// superuser (or a table owner) can still switch those off, for example with
// session_replication_role = replica, and then change any row. What the
// guards no longer refuse, the content addresses and the ledger's
// justifications still show: docs/integrity.md.
package integrity
