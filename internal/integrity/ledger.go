package integrity

import (
	"context"
	"embed"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
	"github.com/oceanway/core/internal/db"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = db.MustLoadStatements("integrity", sqlFiles, "sql")

var (
	qLedgerGroups       = statements.Get("ledger_groups")
	qLedgerPostings     = statements.Get("ledger_postings")
	qLedgerReservations = statements.Get("ledger_reservations")
	qLedgerCommitted    = statements.Get("ledger_committed")
	qLedgerTransitions  = statements.Get("ledger_transitions")
	qLedgerLateResults  = statements.Get("ledger_late_results")
)

const reservationReserved = "reserved"

const (
	tPostings     = "billing.ledger_postings"
	tGroups       = "billing.ledger_posting_groups"
	tReservations = "billing.reservation_states"
	tCommitted    = "billing.finalization_committed"
	tTransitions  = "billing.settlement_transitions"
	tLateResults  = "billing.late_settlement_command_results"
)

type ledgerGroup struct {
	id, reservation, kind, identity string
	lines                           []ledgerLine
}

type ledgerLine struct {
	group                          string
	lineNo                         int32
	reservation, account, identity string
	accountKind, direction, amount string
}

type ledgerReservation struct {
	id, account, identity, reserved, state string
	settled, released, committedRef        *string
}

type ledgerCommitted struct {
	ref, reservation, decision, reserved, settled, released, group, body string
}

type ledgerTransition struct {
	ref, dimension    string
	toRevision        int64
	reservation, kind string
	amount            string
}

// ledgerLateResult is a late settlement command's result: the adjustment
// it charged and the posting group it names.
type ledgerLateResult struct {
	operation, dimension, reservation, group, amount string
}

// ledger is the billing ledger of one snapshot.
type ledger struct {
	groups       map[string]*ledgerGroup
	groupOrder   []string
	reservations map[string]*ledgerReservation
	orphans      []ledgerLine // lines whose group does not exist
	committed    []ledgerCommitted
	transitions  []ledgerTransition
	lateResults  []ledgerLateResult
	lines        int64
}

func readLedger(ctx context.Context, tx pgx.Tx) (*ledger, error) {
	l := &ledger{groups: map[string]*ledgerGroup{}, reservations: map[string]*ledgerReservation{}}
	if err := scanAll(ctx, tx, qLedgerGroups, func(r pgx.Rows) error {
		g := &ledgerGroup{}
		if err := r.Scan(&g.id, &g.reservation, &g.kind, &g.identity); err != nil {
			return err
		}
		l.groups[g.id] = g
		l.groupOrder = append(l.groupOrder, g.id)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read %s: %w", tGroups, err)
	}
	if err := scanAll(ctx, tx, qLedgerPostings, func(r pgx.Rows) error {
		var x ledgerLine
		if err := r.Scan(&x.group, &x.lineNo, &x.reservation, &x.account, &x.identity, &x.accountKind, &x.direction, &x.amount); err != nil {
			return err
		}
		l.lines++
		if g, ok := l.groups[x.group]; ok {
			g.lines = append(g.lines, x)
		} else {
			l.orphans = append(l.orphans, x)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read %s: %w", tPostings, err)
	}
	if err := scanAll(ctx, tx, qLedgerReservations, func(r pgx.Rows) error {
		x := &ledgerReservation{}
		if err := r.Scan(&x.id, &x.account, &x.identity, &x.reserved, &x.state, &x.settled, &x.released, &x.committedRef); err != nil {
			return err
		}
		l.reservations[x.id] = x
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read %s: %w", tReservations, err)
	}
	if err := scanAll(ctx, tx, qLedgerCommitted, func(r pgx.Rows) error {
		var x ledgerCommitted
		if err := r.Scan(&x.ref, &x.reservation, &x.decision, &x.reserved, &x.settled, &x.released, &x.group, &x.body); err != nil {
			return err
		}
		l.committed = append(l.committed, x)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read %s: %w", tCommitted, err)
	}
	if err := scanAll(ctx, tx, qLedgerTransitions, func(r pgx.Rows) error {
		var x ledgerTransition
		if err := r.Scan(&x.ref, &x.dimension, &x.toRevision, &x.reservation, &x.kind, &x.amount); err != nil {
			return err
		}
		l.transitions = append(l.transitions, x)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read %s: %w", tTransitions, err)
	}
	if err := scanAll(ctx, tx, qLedgerLateResults, func(r pgx.Rows) error {
		var x ledgerLateResult
		if err := r.Scan(&x.operation, &x.dimension, &x.reservation, &x.group, &x.amount); err != nil {
			return err
		}
		l.lateResults = append(l.lateResults, x)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read %s: %w", tLateResults, err)
	}
	return l, nil
}

func scanAll(ctx context.Context, tx pgx.Tx, q string, each func(pgx.Rows) error) error {
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// checkLedger reads the billing ledger and reports every posting group
// that is unbalanced or does not equal the fact that justifies it, and
// every reservation whose derived balances do not add up (BI-1, BI-2).
// It returns the number of posting lines read.
func checkLedger(ctx context.Context, tx pgx.Tx, dbName string, report func(Mismatch)) (int64, error) {
	l, err := readLedger(ctx, tx)
	if err != nil {
		return 0, err
	}
	(&ledgerCheck{l: l, db: dbName, report: report}).run()
	return l.lines, nil
}

type ledgerCheck struct {
	l      *ledger
	db     string
	report func(Mismatch)
}

func (c *ledgerCheck) bad(table, key, format string, args ...any) {
	c.report(Mismatch{Database: c.db, Table: table, Key: key, Problem: fmt.Sprintf(format, args...)})
}

func groupKey(id string) string { return "posting_group_id=" + id }

func lineKey(group string, lineNo int64) string {
	return fmt.Sprintf("posting_group_id=%s,line_no=%d", group, lineNo)
}

func (c *ledgerCheck) run() {
	l := c.l
	committedByGroup := map[string]ledgerCommitted{}
	committedByReservation := map[string]ledgerCommitted{}
	for _, x := range l.committed {
		committedByGroup[x.group] = x
		committedByReservation[x.reservation] = x
	}
	transitionByGroup := map[string]ledgerTransition{}
	for _, t := range l.transitions {
		transitionByGroup[billing.TransitionPostingGroupID(t.ref)] = t
	}
	lateByGroup := map[string]ledgerLateResult{}
	for _, x := range l.lateResults {
		lateByGroup[x.group] = x
	}
	// groups of each reservation by kind
	byReservation := map[string]map[string][]*ledgerGroup{}
	for _, id := range l.groupOrder {
		g := l.groups[id]
		if byReservation[g.reservation] == nil {
			byReservation[g.reservation] = map[string][]*ledgerGroup{}
		}
		byReservation[g.reservation][g.kind] = append(byReservation[g.reservation][g.kind], g)
		c.checkGroup(g, committedByGroup, transitionByGroup, lateByGroup)
	}
	// lines whose group does not exist
	for _, x := range l.orphans {
		c.bad(tPostings, lineKey(x.group, int64(x.lineNo)), "posting line without its posting group")
	}
	// reservations
	ids := make([]string, 0, len(l.reservations))
	for id := range l.reservations {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c.checkReservation(l.reservations[id], byReservation[id], committedByReservation)
	}
	// committed facts and transitions that name a posting group
	for _, x := range l.committed {
		g, ok := l.groups[x.group]
		if !ok || g.kind != billing.GroupFinalization || g.reservation != x.reservation {
			c.bad(tCommitted, "committed_ref="+x.ref, "posting group %s is not a finalization group of reservation %s", x.group, x.reservation)
		}
	}
	for _, x := range l.lateResults {
		g, ok := l.groups[x.group]
		if !ok || g.kind != billing.GroupLateSettlementAdjustment || g.reservation != x.reservation {
			c.bad(tLateResults, "command_operation_id="+x.operation, "posting group %s is not a late_settlement_adjustment group of reservation %s", x.group, x.reservation)
		}
	}
	for _, t := range l.transitions {
		gid := billing.TransitionPostingGroupID(t.ref)
		_, posted := l.groups[gid]
		key := fmt.Sprintf("settlement_dimension_id=%s,to_settlement_state_revision=%d", t.dimension, t.toRevision)
		switch {
		case t.kind == billingc.TransitionRefund && !posted:
			c.bad(tTransitions, key, "refund transition %s has no posting group %s", t.ref, gid)
		case t.kind != billingc.TransitionRefund && posted:
			c.bad(tTransitions, key, "%s transition %s has a posting group %s (only refunds are posted)", t.kind, t.ref, gid)
		}
	}
}

// checkGroup: balanced, at least two dense lines on the group's
// reservation, account and economic identity, and equal to the lines of
// the fact that justifies it.
func (c *ledgerCheck) checkGroup(g *ledgerGroup, committed map[string]ledgerCommitted, transitions map[string]ledgerTransition, late map[string]ledgerLateResult) {
	res := c.l.reservations[g.reservation]
	if len(g.lines) < 2 {
		c.bad(tGroups, groupKey(g.id), "%s group has %d line(s), want at least 2", g.kind, len(g.lines))
	}
	debit, credit := new(big.Rat), new(big.Rat)
	for i, x := range g.lines {
		key := lineKey(g.id, int64(x.lineNo))
		if int(x.lineNo) != i+1 {
			c.bad(tPostings, key, "line numbers of the group are not dense from 1 (line %d at position %d)", x.lineNo, i+1)
		}
		if x.reservation != g.reservation {
			c.bad(tPostings, key, "line on reservation %s, its group is on %s", x.reservation, g.reservation)
		}
		if x.identity != g.identity {
			c.bad(tPostings, key, "line on economic identity %s, its group is on %s", x.identity, g.identity)
		}
		if res != nil && x.account != res.account {
			c.bad(tPostings, key, "line on billing account %s, the reservation's is %s", x.account, res.account)
		}
		a, ok := new(big.Rat).SetString(x.amount)
		if !ok {
			c.bad(tPostings, key, "amount %q is not a number", x.amount)
			continue
		}
		if x.direction == billingc.Debit {
			debit.Add(debit, a)
		} else {
			credit.Add(credit, a)
		}
	}
	if debit.Cmp(credit) != 0 {
		c.bad(tGroups, groupKey(g.id), "%s group is not balanced: debits %s, credits %s", g.kind, ratText(debit), ratText(credit))
	}
	if res == nil {
		c.bad(tGroups, groupKey(g.id), "group on reservation %s, which has no reservation state", g.reservation)
		return
	}
	if g.identity != res.identity {
		c.bad(tGroups, groupKey(g.id), "group on economic identity %s, the reservation's is %s", g.identity, res.identity)
	}
	switch g.kind {
	case billing.GroupReservationHold:
		if want := billing.PostingGroupID(g.reservation, g.kind); g.id != want {
			c.bad(tGroups, groupKey(g.id), "hold group id is not the one derived from its reservation (%s)", want)
		}
		c.sameLines(g, []billingc.Posting{
			{LineNo: 1, AccountKind: billingc.AccountReservationHold, Direction: billingc.Credit, Amount: res.reserved},
			{LineNo: 2, AccountKind: billingc.AccountCustomerWallet, Direction: billingc.Debit, Amount: res.reserved},
		}, "the hold of reserved_amount "+res.reserved)
	case billing.GroupFinalization:
		if want := billing.PostingGroupID(g.reservation, g.kind); g.id != want {
			c.bad(tGroups, groupKey(g.id), "finalization group id is not the one derived from its reservation (%s)", want)
		}
		x, ok := committed[g.id]
		if !ok {
			c.bad(tGroups, groupKey(g.id), "finalization group without a finalization_committed row naming it")
			return
		}
		want := billingc.FinalizationPostings(canonicalAmount(x.reserved), canonicalAmount(x.settled), canonicalAmount(x.released))
		c.sameLines(g, want, "the finalization of committed "+x.ref)
		if body, err := billingc.DecodeCommitted([]byte(x.body)); err == nil && !samePostings(body.Postings, want) {
			c.bad(tCommitted, "committed_ref="+x.ref, "ledgerPostings of the body differ from the postings of its amounts")
		}
	case billing.GroupSettlementTransition:
		t, ok := transitions[g.id]
		if !ok {
			c.bad(tGroups, groupKey(g.id), "settlement_transition group whose id derives from no settlement transition")
			return
		}
		if t.kind != billingc.TransitionRefund {
			c.bad(tGroups, groupKey(g.id), "settlement_transition group of %s transition %s (only refunds are posted)", t.kind, t.ref)
		}
		if t.reservation != g.reservation {
			c.bad(tGroups, groupKey(g.id), "group on reservation %s, its transition %s is on %s", g.reservation, t.ref, t.reservation)
		}
		c.sameLines(g, []billingc.Posting{
			{LineNo: 1, AccountKind: billingc.AccountSettledRevenue, Direction: billingc.Debit, Amount: t.amount},
			{LineNo: 2, AccountKind: billingc.AccountCustomerWallet, Direction: billingc.Credit, Amount: t.amount},
		}, "the refund of transition "+t.ref)
	case billing.GroupLateSettlementAdjustment:
		x, ok := late[g.id]
		if !ok {
			c.bad(tGroups, groupKey(g.id), "late_settlement_adjustment group without a late settlement command result naming it")
			return
		}
		if want := catchup.LatePostingGroupID(x.operation); g.id != want {
			c.bad(tGroups, groupKey(g.id), "late_settlement_adjustment group id is not the one derived from its command %s (%s)", x.operation, want)
		}
		if x.reservation != g.reservation {
			c.bad(tGroups, groupKey(g.id), "group on reservation %s, its late result %s is on %s", g.reservation, x.operation, x.reservation)
		}
		c.sameLines(g, []billingc.Posting{
			{LineNo: 1, AccountKind: billingc.AccountCustomerWallet, Direction: billingc.Debit, Amount: x.amount},
			{LineNo: 2, AccountKind: billingc.AccountSettledRevenue, Direction: billingc.Credit, Amount: x.amount},
		}, "the late settlement adjustment of command "+x.operation)
	default:
		c.bad(tGroups, groupKey(g.id), "unknown group kind %q", g.kind)
	}
}

// sameLines reports each line of g that differs from want (and missing or
// extra lines), naming the line.
func (c *ledgerCheck) sameLines(g *ledgerGroup, want []billingc.Posting, what string) {
	got := map[int64]ledgerLine{}
	for _, x := range g.lines {
		got[int64(x.lineNo)] = x
	}
	for _, w := range want {
		x, ok := got[w.LineNo]
		if !ok {
			c.bad(tPostings, lineKey(g.id, w.LineNo), "line missing: want %s %s %s (%s)", w.AccountKind, w.Direction, w.Amount, what)
			continue
		}
		delete(got, w.LineNo)
		var diffs []string
		if x.accountKind != w.AccountKind {
			diffs = append(diffs, fmt.Sprintf("account_kind %s, want %s", x.accountKind, w.AccountKind))
		}
		if x.direction != w.Direction {
			diffs = append(diffs, fmt.Sprintf("direction %s, want %s", x.direction, w.Direction))
		}
		if !sameAmount(x.amount, w.Amount) {
			diffs = append(diffs, fmt.Sprintf("amount %s, want %s", x.amount, w.Amount))
		}
		if len(diffs) > 0 {
			c.bad(tPostings, lineKey(g.id, w.LineNo), "%s (%s)", strings.Join(diffs, ", "), what)
		}
	}
	extra := make([]int64, 0, len(got))
	for n := range got {
		extra = append(extra, n)
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i] < extra[j] })
	for _, n := range extra {
		x := got[n]
		c.bad(tPostings, lineKey(g.id, n), "extra line %s %s %s (%s has %d lines)", x.accountKind, x.direction, x.amount, what, len(want))
	}
}

// checkReservation derives the reservation's balances from its postings
// (never from billing.ledger_balances): never negative after any group, and
// at the end what its state says.
func (c *ledgerCheck) checkReservation(r *ledgerReservation, groups map[string][]*ledgerGroup, committed map[string]ledgerCommitted) {
	key := "billing_reservation_id=" + r.id
	balance := map[string]*big.Rat{
		billingc.AccountReservationHold: new(big.Rat), billingc.AccountCustomerWallet: new(big.Rat), billingc.AccountSettledRevenue: new(big.Rat),
	}
	refunded, adjusted := new(big.Rat), new(big.Rat)
	var ordered []*ledgerGroup
	for _, kind := range []string{billing.GroupReservationHold, billing.GroupFinalization, billing.GroupSettlementTransition, billing.GroupLateSettlementAdjustment} {
		ordered = append(ordered, groups[kind]...)
	}
	for _, g := range ordered {
		for _, x := range g.lines {
			a, ok := new(big.Rat).SetString(x.amount)
			if !ok {
				continue
			}
			if balance[x.accountKind] == nil {
				balance[x.accountKind] = new(big.Rat)
			}
			// As billing signs it: the wallet's balance is what the customer
			// was charged (debit +), the others are credit +.
			if (x.accountKind == billingc.AccountCustomerWallet) == (x.direction == billingc.Debit) {
				balance[x.accountKind].Add(balance[x.accountKind], a)
			} else {
				balance[x.accountKind].Sub(balance[x.accountKind], a)
			}
			if g.kind == billing.GroupSettlementTransition && x.accountKind == billingc.AccountSettledRevenue && x.direction == billingc.Debit {
				refunded.Add(refunded, a)
			}
			if g.kind == billing.GroupLateSettlementAdjustment && x.accountKind == billingc.AccountSettledRevenue && x.direction == billingc.Credit {
				adjusted.Add(adjusted, a)
			}
		}
		for _, account := range []string{billingc.AccountReservationHold, billingc.AccountCustomerWallet, billingc.AccountSettledRevenue} {
			if balance[account].Sign() < 0 {
				c.bad(tReservations, key, "%s balance %s after posting group %s (%s) is negative", account, ratText(balance[account]), g.id, g.kind)
			}
		}
	}
	if n := len(groups[billing.GroupReservationHold]); n != 1 {
		c.bad(tReservations, key, "%d reservation_hold groups, want 1", n)
	}
	hold, wallet, revenue := balance[billingc.AccountReservationHold], balance[billingc.AccountCustomerWallet], balance[billingc.AccountSettledRevenue]
	x, hasCommitted := committed[r.id]
	switch r.state {
	case reservationReserved:
		if n := len(groups[billing.GroupFinalization]) + len(groups[billing.GroupSettlementTransition]) + len(groups[billing.GroupLateSettlementAdjustment]); n != 0 {
			c.bad(tReservations, key, "reserved, yet %d finalization, transition or late adjustment group(s) are posted", n)
		}
		if hasCommitted {
			c.bad(tReservations, key, "reserved, yet finalization_committed %s names it", x.ref)
		}
		if !sameAmount(ratText(hold), r.reserved) || !sameAmount(ratText(wallet), r.reserved) || revenue.Sign() != 0 {
			c.bad(tReservations, key, "reserved %s: derived hold %s, wallet %s, revenue %s (want hold = wallet = reserved, revenue 0)",
				r.reserved, ratText(hold), ratText(wallet), ratText(revenue))
		}
	case billingc.ReservationSettled, billingc.ReservationReleased:
		if n := len(groups[billing.GroupFinalization]); n != 1 {
			c.bad(tReservations, key, "%s with %d finalization groups, want 1", r.state, n)
		}
		if !hasCommitted {
			c.bad(tReservations, key, "%s without a finalization_committed row", r.state)
			return
		}
		settled, released := deref(r.settled), deref(r.released)
		if r.committedRef == nil || *r.committedRef != x.ref {
			c.bad(tReservations, key, "committed_ref %s, finalization_committed is %s", deref(r.committedRef), x.ref)
		}
		wantDecision := billingc.DecisionSettleAndReleaseRemainder
		if r.state == billingc.ReservationReleased {
			wantDecision = billingc.DecisionReleaseAll
		}
		if x.decision != wantDecision {
			c.bad(tReservations, key, "%s, yet its committed decision is %s", r.state, x.decision)
		}
		if !sameAmount(x.reserved, r.reserved) || !sameAmount(x.settled, settled) || !sameAmount(x.released, released) {
			c.bad(tReservations, key, "reserved/settled/released %s/%s/%s, committed %s says %s/%s/%s",
				r.reserved, settled, released, x.ref, x.reserved, x.settled, x.released)
		}
		wantRevenue, ok := new(big.Rat).SetString(settled)
		if !ok {
			c.bad(tReservations, key, "settled_amount %q is not a number", settled)
			return
		}
		wantRevenue.Sub(wantRevenue, refunded)
		wantRevenue.Add(wantRevenue, adjusted)
		if hold.Sign() != 0 || revenue.Cmp(wantRevenue) != 0 || wallet.Cmp(revenue) != 0 {
			c.bad(tReservations, key, "%s %s of %s: derived hold %s, revenue %s, wallet %s (want hold 0, revenue = wallet = settled %s - refunded %s + late adjustments %s)",
				r.state, settled, r.reserved, ratText(hold), ratText(revenue), ratText(wallet), settled, ratText(refunded), ratText(adjusted))
		}
	default:
		c.bad(tReservations, key, "unknown state %q", r.state)
	}
}

func samePostings(a, b []billingc.Posting) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].LineNo != b[i].LineNo || a[i].AccountKind != b[i].AccountKind || a[i].Direction != b[i].Direction || !sameAmount(a[i].Amount, b[i].Amount) {
			return false
		}
	}
	return true
}

// sameAmount compares decimal texts by value ("7.60" = "7.6").
func sameAmount(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// canonicalAmount is a numeric's text as canonical decimal text.
func canonicalAmount(s string) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	return ratText(r)
}

// ratText renders a finite decimal exactly, without trailing zeros.
func ratText(r *big.Rat) string {
	if r.Sign() < 0 {
		return "-" + ratText(new(big.Rat).Neg(r))
	}
	if s, ok := billingc.FormatAmount(r); ok {
		return s
	}
	return r.RatString()
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
