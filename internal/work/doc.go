// Package work is the one fenced Work primitive behind every queue of Work
// outside the outbox: Metering's input lanes, Billing finalization and
// Billing settlement catch-up. It knows no queue's domain; a queue plugs in
// behind a small interface (Queue or LockedQueue) and keeps its own rules
// (lanes, generations, supersede, watermarks) in its owner package.
//
// What the primitive gives every queue:
//
//   - Claim SQL (Claimable): one statement that locks claimable rows of one
//     index range with FOR UPDATE SKIP LOCKED (concurrent workers never claim
//     the same Work and never wait on each other), re-checks them under the
//     lock, moves their lease forward and hands the claimed rows to the
//     queue's own tail (which starts one immutable attempt per row with a
//     fresh fencing token). No other package writes SKIP LOCKED for Work.
//   - Release and renewal SQL scoped to the exact attempt (the queue's Owner
//     predicate: the latest token, or the claim's attempt number): a stale
//     worker's release or renewal matches zero rows.
//   - A Runner: Slots loops that each claim one Work when free, run it and
//     act on its typed Result (Finished, Retry, Blocked, Fenced, Failed);
//     retries and blocks are handed back with a delay (Backoff doubles per
//     attempt or block, capped); a running attempt's lease is renewed at a
//     third of the lease, and a lost renewal cancels the attempt; on stop
//     the loops claim nothing more and in-flight attempts finish (drain) on
//     a context that outlives the caller's by at most Drain.
//   - The same Prometheus metrics for every queue (Metrics), labelled only by
//     queue name (OBS-2): attempts, results, finishes by outcome, blocked,
//     lease expiries, attempt duration, and at scrape time the depth and
//     oldest claimable age of each queue's backlog.
//
// What it never does: decide a Work's outcome, write a finish or a fact, or
// trust the lease for safety. Safety is the queue's database guard: every
// finish and fact names its attempt's fencing token, and PostgreSQL refuses
// a write whose token is not the Work's latest attempt (Metering ME003,
// Billing catch-up BC006). The lease only decides when a Work may be claimed
// again.
//
// Locked queues (Billing finalization) claim inside the transaction that
// does the work: the row lock taken with SKIP LOCKED is the fence for the
// whole evaluation and commit, so no attempt outlives it and no token is
// needed; the Runner gives them the same loops, drain and metrics.
//
// A new queue of Work: its tables (queue row with a lease column, attempts,
// finishes, a latest-token trigger) go in its owner's migration line; its
// Claimable spec, tail SQL and Queue implementation in its owner package;
// its Runner is built in the owner's worker with a queue name, and serve
// registers it on the shared Metrics. Its tests run the claim race, the
// stale-token refusal and the plan check against its own tables.
package work
