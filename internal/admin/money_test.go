package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/admin"
	"github.com/oceanway/core/internal/admin/admintest"
)

// OBS-4, issue 36 item 5: the overview shows the money, each section read in
// its owner's database (core for billing, metering for the Work queue):
// reservations by state and why they wait with the oldest, ledger totals
// that add up (every check computed by the SQL), the open exposures, the
// open cases (a pointer to the Cases page, and the reservations waiting with
// reconciliation deferred) and the blocked Metering Work by lane.
func TestOverviewShowsTheMoney(t *testing.T) {
	t.Parallel()
	w := admintest.NewMoneyWorld(t)
	o := w.Reader.Overview(t.Context())
	require.Empty(t, admin.Failed(o.Boundaries))
	b := o.Money.Billing
	require.True(t, b.Readable(), "%+v", b.SectionStatus)
	require.Equal(t, "core", b.Boundary)
	require.Equal(t, w.Bundle.Prefix+"_core", b.Database)

	require.Equal(t, admin.ReservationCounts{Total: 3, Settled: 1, Released: 0, StillReserved: 2}, b.Reservations)
	require.Equal(t, int64(1), b.Reservations.Finalized())
	require.Len(t, b.Waiting, 2)
	waiting, pending := b.Waiting[0], b.Waiting[1]
	require.Equal(t, "awaiting_finalization", waiting.CoordinationState)
	require.Equal(t, admintest.WaitingReason, waiting.WaitingReason)
	require.Equal(t, int64(1), waiting.Count)
	require.Equal(t, w.Waiting.BillingReservationID, waiting.OldestReservationID)
	require.False(t, waiting.OldestSince.IsZero())
	require.GreaterOrEqual(t, waiting.OldestAgeSeconds, 0.0)
	require.Equal(t, "pending_evaluation", pending.CoordinationState)
	require.Empty(t, pending.WaitingReason)
	require.Equal(t, w.Pending.BillingReservationID, pending.OldestReservationID)

	// reserved 40 + 25 + 100 = settled 30 + released 70 + still held 65.
	l := b.Ledger
	require.Equal(t, []string{"165", "30", "70", "65"}, []string{l.Reserved, l.Settled, l.Released, l.Held})
	require.True(t, l.AddsUp)
	// Holds 165 (debit wallet, credit hold) + the finalization 100 (debit
	// hold; credit revenue 30, wallet 70).
	require.Equal(t, "265", l.Debit)
	require.Equal(t, "265", l.Credit)
	require.True(t, l.Balanced)
	require.Zero(t, l.UnbalancedGroups)
	require.Equal(t, int64(4), l.PostingGroups)
	require.Equal(t, "65", l.HoldBalance)
	require.True(t, l.HoldMatchesHeld)
	require.Equal(t, []admin.AccountBalance{{AccountKind: "customer_wallet", Balance: "95"},
		{AccountKind: "reservation_hold", Balance: "65"}, {AccountKind: "settled_revenue", Balance: "30"}}, l.Accounts)

	e := b.Exposures
	require.Equal(t, int64(1), e.Open)
	require.Equal(t, admintest.ExposureAmount, e.Amount)
	require.NotNil(t, e.OldestRecordedAt)
	require.False(t, e.Truncated)
	require.Len(t, e.Items, 1)
	require.Equal(t, w.ExposureRef, e.Items[0].ExposureRef)
	require.Equal(t, w.Settled.BillingReservationID, e.Items[0].ReservationID)
	require.Equal(t, w.ExposureRunID, e.Items[0].RunID)
	require.Equal(t, "blocked", e.Items[0].AutomaticCharge)

	require.True(t, b.Cases.ChainBuilt)
	require.Equal(t, admin.CasesOnTheirPage, b.Cases.Note)
	require.Equal(t, int64(1), b.Cases.WaitingForReconciliation)

	bw := o.Money.BlockedWork
	require.True(t, bw.Readable(), "%+v", bw.SectionStatus)
	require.Equal(t, "metering", bw.Boundary)
	require.Equal(t, int64(1), bw.Total, "the unblocked active Work is not counted")
	require.Len(t, bw.Lanes, 1)
	require.Equal(t, admintest.BlockedLane, bw.Lanes[0].Lane)
	require.Equal(t, int64(1), bw.Lanes[0].Blocked)
	require.Len(t, bw.Items, 1)
	item := bw.Items[0]
	require.Equal(t, w.BlockedWorkRef, item.WorkRef)
	require.Equal(t, "eligibility_processing_conflict", item.Cause)
	require.Equal(t, admintest.BlockedReason, item.Reason)
	require.Equal(t, admintest.BlockedStage, item.Stage)
	require.Equal(t, w.BlockedRunID, item.RunID)
	require.Equal(t, int64(1), item.Attempt)
}

// OBS-4, issue 36: the money lists are bounded and say how many more there are.
func TestMoneyListsAreBounded(t *testing.T) {
	t.Parallel()
	w := admintest.NewMoneyWorld(t)
	w.AddBlockedWork(t)
	m := admin.NewReader(w.Boundaries(), admin.Config{MoneyListLimit: 1}).Money(t.Context())
	require.Equal(t, int64(2), m.BlockedWork.Total)
	require.True(t, m.BlockedWork.Truncated)
	require.Len(t, m.BlockedWork.Items, 1)
	require.Equal(t, int64(1), m.BlockedWork.More())
	require.Equal(t, w.BlockedWorkRef, m.BlockedWork.Items[0].WorkRef, "oldest queued first")
	require.Equal(t, 1, m.BlockedWork.Limit)
	require.False(t, m.Billing.Exposures.Truncated, "one open exposure fits")
	require.Zero(t, m.Billing.Exposures.More())
}

// OBS-4, issue 36: a boundary with no pool shows "not configured" and a
// database without the owner's tables "not installed", never an error
// page: the outbox world has a core database without the billing line and
// no metering database.
func TestMoneyNotConfiguredIsNotAnError(t *testing.T) {
	t.Parallel()
	w := admintest.NewWorld(t)
	m := w.Reader.Money(t.Context())
	require.Equal(t, admin.SectionStatus{Boundary: "metering"}, m.BlockedWork.SectionStatus)
	require.Empty(t, m.BlockedWork.Items)
	require.True(t, m.Billing.Configured)
	require.False(t, m.Billing.Installed)
	require.Empty(t, m.Billing.Error)
	require.False(t, m.Billing.Readable())

	srv := httptest.NewServer(admin.NewHandler(w.Reader, admin.HandlerConfig{}))
	t.Cleanup(srv.Close)
	status, _, page := admintest.Do(t, http.MethodGet, srv.URL+"/", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `Not configured: no <b>metering</b> database is configured`)
	require.Contains(t, page, `Not installed: the core database`)
	require.NotContains(t, page, `class="badge`, "no ledger badge without a ledger")
	status, _, body := admintest.Do(t, http.MethodGet, srv.URL+"/api/money", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `"configured": false`)
}

// OBS-4, issue 36: the page and its JSON show the money with every id
// linked to the exact-id lookup, and the lookup a link leads to finds the
// reservation and its waiting fence.
func TestOverviewPageShowsTheMoney(t *testing.T) {
	t.Parallel()
	w := admintest.NewMoneyWorld(t)
	srv := httptest.NewServer(admin.NewHandler(w.Reader, admin.HandlerConfig{BasePath: "/admin"}))
	t.Cleanup(srv.Close)
	status, _, page := admintest.Do(t, http.MethodGet, srv.URL+"/admin/", "")
	require.Equal(t, http.StatusOK, status)
	for _, want := range []string{
		`<h2>Reservations by state</h2>`, `<h2>Ledger totals</h2>`, `<h2>Open late settlement exposures</h2>`,
		`<h2>Open cases</h2>`, `<h2>Blocked Work (Metering)</h2>`,
		`data-field="ledgerBadge">balanced</span>`, `data-field="addsUpBadge">reservations add up</span>`,
		`data-field="stillReserved">2</td>`, `data-field="settled">1</td>`, `data-field="released">0</td>`,
		`data-field="reserved">165</td>`, `data-field="held">65</td>`, `data-field="debit">265</td>`, `data-field="credit">265</td>`,
		`data-field="exposuresOpen">1</b>`, `data-field="exposuresAmount">7.5</b>`,
		`data-field="waitingForReconciliation">1</b>`, admin.CasesOnTheirPage, `<a href="/admin/cases" data-field="casesLink">Cases</a>`,
		`data-reason="` + admintest.WaitingReason + `"`,
		`href="/admin/lookup?kind=reservation&amp;id=` + w.Waiting.BillingReservationID + `"`,
		`href="/admin/lookup?kind=reservation&amp;id=` + w.Pending.BillingReservationID + `"`,
		`href="/admin/lookup?kind=reservation&amp;id=` + w.Settled.BillingReservationID + `"`,
		`href="/admin/lookup?kind=run&amp;id=` + w.ExposureRunID + `"`,
		`href="/admin/lookup?kind=run&amp;id=` + w.BlockedRunID + `"`,
		`<code>` + w.BlockedWorkRef + `</code>`, admintest.BlockedStage + `: ` + admintest.BlockedReason,
	} {
		require.Contains(t, page, want)
	}
	require.NotContains(t, page, w.UnblockedWorkRef)
	require.NotContains(t, page, "NOT balanced")

	var o admin.Overview
	status, _, body := admintest.Do(t, http.MethodGet, srv.URL+"/admin/api/overview", "")
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, json.Unmarshal([]byte(body), &o))
	require.True(t, o.Money.Billing.Ledger.Balanced)
	require.Equal(t, int64(1), o.Money.BlockedWork.Total)
	require.Equal(t, w.Waiting.BillingReservationID, o.Money.Billing.Waiting[0].OldestReservationID)

	// The oldest waiting reservation's link leads to its lookup: the
	// fence's state and its reason.
	status, _, page = admintest.Do(t, http.MethodGet, srv.URL+"/admin/lookup?kind=reservation&id="+w.Waiting.BillingReservationID, "")
	require.Equal(t, http.StatusOK, status)
	require.True(t, strings.Contains(page, `data-field="fenceState">awaiting_finalization<`), "lookup shows the fence")
}
