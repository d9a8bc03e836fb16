package work

import (
	"fmt"
	"strings"
)

// Claimable says where a queue's claimable Work is: the rows of one table
// (read as alias q) that one predicate selects from one index range. The
// claim, release, renewal and backlog statements are built from it, so the
// locking rules are written once, here.
type Claimable struct {
	// Table is the schema-qualified queue table, one row per claimable Work.
	Table string
	// Key are the table's key columns; the claim joins on them and release
	// and renewal take them as named arguments of the same names.
	Key []string
	// Where selects the claimable rows over alias q. It must be one range of
	// the index Order follows (each queue's plan test checks it), so a claim
	// never reads more as history grows.
	Where string
	// Order is the claim's ORDER BY over q (the index order, oldest first);
	// empty for any order.
	Order string
	// Lease is the timestamptz column that holds when the row is claimable
	// again (the lease's end, or the end of a retry's delay).
	Lease string
	// Now is the clock: "now()" (the database's) or "@now::timestamptz"
	// (the caller's, passed by the Store as argument now).
	Now string
	// Set are further assignments the claim makes (e.g. an attempt counter).
	Set string
	// Owner is the predicate over q that names one attempt (the latest
	// token, or the claim's attempt number): release and renewal write only
	// while it holds.
	Owner string
	// Age is the expression over q of when the Work became claimable, for
	// the oldest-claimable-age gauge; empty when the queue cannot tell.
	Age string
	// Columns is what a locked claim returns (locked queues only).
	Columns string
	// Join is joined to q by the locked claim and the backlog read.
	Join string
}

func (c Claimable) keyList(prefix string) string {
	cols := make([]string, len(c.Key))
	for i, k := range c.Key {
		cols[i] = prefix + k
	}
	return strings.Join(cols, ", ")
}

func (c Claimable) keyMatch(right func(string) string) string {
	conds := make([]string, len(c.Key))
	for i, k := range c.Key {
		conds[i] = fmt.Sprintf("q.%s = %s", k, right(k))
	}
	return strings.Join(conds, " AND ")
}

func (c Claimable) orderBy() string {
	if c.Order == "" {
		return ""
	}
	return "\n  ORDER BY " + c.Order
}

// LeasedClaim is the claim of a leased queue: up to @limit claimable rows,
// locked with SKIP LOCKED, re-checked under the lock (a row another claimer
// committed meanwhile is skipped on its new lease), their lease moved to
// Now + @lease_seconds. tail continues the statement over the CTE
// `claimed` (the claimed queue rows): it starts the attempts and returns
// what the queue needs.
func (c Claimable) LeasedClaim(tail string) string {
	var set string
	if c.Set != "" {
		set = ", " + c.Set
	}
	return fmt.Sprintf(`WITH due AS (
  SELECT %s FROM %s q
  WHERE %s%s
  LIMIT @limit
  FOR UPDATE OF q SKIP LOCKED
), claimed AS (
  UPDATE %s q SET %s = %s + make_interval(secs => @lease_seconds)%s
  FROM due WHERE %s AND %s
  RETURNING q.*
)
%s`, c.keyList("q."), c.Table, c.Where, c.orderBy(),
		c.Table, c.Lease, c.Now, set, c.keyMatch(func(k string) string { return "due." + k }), c.Where, tail)
}

// LockedClaim is the claim of a locked queue: one claimable row of q
// (joined as Join), locked with SKIP LOCKED for the caller's transaction;
// the lock is the fence of everything the transaction then writes.
func (c Claimable) LockedClaim() string {
	return fmt.Sprintf(`SELECT %s
  FROM %s q %s
  WHERE %s%s
  LIMIT 1
  FOR UPDATE OF q SKIP LOCKED`, c.Columns, c.Table, c.Join, c.Where, c.orderBy())
}

// Release hands one attempt's Work back: claimable again at Now +
// @after_seconds, only while Owner holds (a stale attempt releases nothing).
func (c Claimable) Release() string {
	return fmt.Sprintf(`UPDATE %s q SET %s = %s + make_interval(secs => @after_seconds)
WHERE %s AND %s`, c.Table, c.Lease, c.Now, c.keyMatch(func(k string) string { return "@" + k }), c.Owner)
}

// Renew extends one attempt's lease to Now + @lease_seconds while Owner
// holds and the lease has not ended; zero rows is ErrLeaseLost.
func (c Claimable) Renew() string {
	return fmt.Sprintf(`UPDATE %s q SET %s = %s + make_interval(secs => @lease_seconds)
WHERE %s AND %s AND q.%s > %s`, c.Table, c.Lease, c.Now, c.keyMatch(func(k string) string { return "@" + k }), c.Owner, c.Lease, c.Now)
}

// Backlog counts the claimable rows and the age in seconds of the oldest
// (0 when none, or when the queue has no Age).
func (c Claimable) Backlog() string {
	age := "0::float8"
	if c.Age != "" {
		age = fmt.Sprintf("coalesce(extract(epoch FROM %s - min(%s)), 0)::float8", c.Now, c.Age)
	}
	return fmt.Sprintf(`SELECT count(*), %s FROM %s q %s WHERE %s`, age, c.Table, c.Join, c.Where)
}
