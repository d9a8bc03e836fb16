package integrity

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/internal/billing"
	"github.com/oceanway/core/internal/billing/catchup"
)

// lateGroup is the posting group of the late command "op-1".
var lateGroup = catchup.LatePostingGroupID("op-1")

// lateLedger is one reservation settled 60 of 100 and charged 7 more by a
// funded late settlement command (issue 32 part 2): the hold, the
// finalization, the late adjustment group and the result naming it.
func lateLedger() *ledger {
	const res, account, identity = "res-1", "acct-1", "credits"
	l := &ledger{groups: map[string]*ledgerGroup{}, reservations: map[string]*ledgerReservation{}}
	settled, released, ref := "60", "40", "bfc-1"
	l.reservations[res] = &ledgerReservation{id: res, account: account, identity: identity, reserved: "100",
		state: billingc.ReservationSettled, settled: &settled, released: &released, committedRef: &ref}
	add := func(id, kind string, postings []billingc.Posting) {
		g := &ledgerGroup{id: id, reservation: res, kind: kind, identity: identity}
		for _, p := range postings {
			g.lines = append(g.lines, ledgerLine{group: id, lineNo: int32(p.LineNo), reservation: res, account: account, identity: identity,
				accountKind: p.AccountKind, direction: p.Direction, amount: p.Amount})
		}
		l.groups[id] = g
		l.groupOrder = append(l.groupOrder, id)
	}
	add(billing.PostingGroupID(res, billing.GroupReservationHold), billing.GroupReservationHold, []billingc.Posting{
		{LineNo: 1, AccountKind: billingc.AccountReservationHold, Direction: billingc.Credit, Amount: "100"},
		{LineNo: 2, AccountKind: billingc.AccountCustomerWallet, Direction: billingc.Debit, Amount: "100"},
	})
	fin := billing.PostingGroupID(res, billing.GroupFinalization)
	add(fin, billing.GroupFinalization, billingc.FinalizationPostings("100", "60", "40"))
	l.committed = append(l.committed, ledgerCommitted{ref: ref, reservation: res, decision: billingc.DecisionSettleAndReleaseRemainder,
		reserved: "100", settled: "60", released: "40", group: fin})
	add(lateGroup, billing.GroupLateSettlementAdjustment, []billingc.Posting{
		{LineNo: 1, AccountKind: billingc.AccountCustomerWallet, Direction: billingc.Debit, Amount: "7"},
		{LineNo: 2, AccountKind: billingc.AccountSettledRevenue, Direction: billingc.Credit, Amount: "7"},
	})
	l.lateResults = append(l.lateResults, ledgerLateResult{operation: "op-1", dimension: "dim-1", reservation: res, group: lateGroup, amount: "7"})
	return l
}

func lateMismatches(l *ledger) []string {
	var out []string
	(&ledgerCheck{l: l, db: "core", report: func(m Mismatch) { out = append(out, m.Table+" "+m.Key+": "+m.Problem) }}).run()
	return out
}

// BI-2 (issue 32 part 2, found by the loop's demo in issue 35): `oceanway
// verify` recomputes a late settlement adjustment group from the command
// result that names it (wallet debit, settled revenue credit, the result's
// amount) and counts it in the reservation's balances; it no longer
// reports the group kind as unknown. A line edited to another amount, a
// group no result names, a group whose id is not derived from its command,
// and a result naming a missing group are reported.
func TestBI2VerifyRecomputesLateSettlementAdjustments(t *testing.T) {
	require.Empty(t, lateMismatches(lateLedger()), "a funded late adjustment recomputes")

	edited := lateLedger()
	edited.groups[lateGroup].lines[0].amount = "9"
	got := strings.Join(lateMismatches(edited), "\n")
	require.Contains(t, got, "line_no=1")
	require.Contains(t, got, "the late settlement adjustment of command op-1")

	orphan := lateLedger()
	orphan.lateResults = nil
	require.Contains(t, strings.Join(lateMismatches(orphan), "\n"), "without a late settlement command result naming it")

	// The same group and result under an id no command derives.
	underived := lateLedger()
	g := underived.groups[lateGroup]
	delete(underived.groups, lateGroup)
	g.id = "late-group-x"
	underived.groups[g.id] = g
	underived.groupOrder[len(underived.groupOrder)-1] = g.id
	underived.lateResults[0].group = g.id
	require.Contains(t, strings.Join(lateMismatches(underived), "\n"), "is not the one derived from its command op-1")

	missing := lateLedger()
	missing.lateResults[0].group = "late-group-2"
	require.Contains(t, strings.Join(lateMismatches(missing), "\n"), "is not a late_settlement_adjustment group of reservation res-1")
}
