// Package measure is the measuring kit shared by `oceanway bench` and the
// peer benchmarks in the separate module bench/peers (River, watermill-sql),
// so that every system is timed, counted and reported by the same code.
//
// One measured run (Drive) is: N messages produced by P producers in
// transactions of TxSize messages, consumed exactly once by the system under
// test, on fresh databases of one PostgreSQL server. Drive reports
//
//   - produced/s: N / (first transaction begin → last commit);
//   - consumed/s: N / (window → the moment the N-th consumption is durable),
//     where the window starts with production in Concurrent mode and with
//     the start of the consumers in BurnDown mode;
//   - latency: commit of the producing transaction (process clock, stamped
//     when Commit returned) → durable consumption (as reported by the
//     target: for a system that records the consumption time in the
//     database, that column; else the process clock when the consumer's
//     acknowledgement became durable);
//   - rows written per message: the sum of n_tup_ins + n_tup_upd + n_tup_del
//     of every user table of the run's databases (pg_stat_user_tables),
//     after − before; read after the system's connections closed, so every
//     backend has flushed its counters;
//   - CPU: this process (getrusage RUSAGE_SELF) and the PostgreSQL backends
//     serving the run's databases (utime+stime from /proc/<pid>/stat of the
//     pids pg_stat_activity lists for those databases, sampled every 100 ms;
//     available when the server runs on this machine), per 1,000 messages;
//     and how busy the whole machine was (/proc/stat), which includes
//     anything else running at the same time;
//   - the dead tuples of the system's queue table at the end, and, in the
//     held-xmin variant, how long a REPEATABLE READ snapshot was held open on
//     the queue database while the run went on.
//
// Limit measures the machine's physical limit for the same shape of work:
// single-row INSERT commits/s and batched INSERT rows/s at a given
// concurrency.
package measure
