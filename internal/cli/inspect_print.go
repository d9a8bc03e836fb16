package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/oceanway/core/internal/admin"
)

// Human-readable output of `oceanway inspect`. JSON output is the admin
// types as they are; these tables are for people and may change.

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

func row(tw *tabwriter.Writer, cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = cellText(fmt.Sprint(c))
	}
	fmt.Fprintln(tw, strings.Join(parts, "\t"))
}

// cellText keeps a table cell on one line: control characters (tabs,
// newlines, escapes) become spaces, and long text is clipped.
func cellText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	const max = 160
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

func age(seconds float64) string {
	if seconds <= 0 {
		return "-"
	}
	return admin.FormatAge(seconds)
}

func printDeliveries(w io.Writer, res admin.DeliveriesResult) error {
	tw := newTable(w)
	row(tw, "BOUNDARY", "DESTINATION", "PENDING", "RETRYING", "LEASED", "LEASE_EXPIRED", "ACKNOWLEDGED", "QUARANTINED", "TOTAL", "OLDEST_PENDING")
	for _, c := range res.Deliveries {
		row(tw, c.Boundary, c.Destination, c.Pending, c.Retrying, c.Leased, c.LeaseExpired, c.Acknowledged, c.Quarantined, c.Total, age(c.OldestPendingAgeSeconds))
	}
	return tw.Flush()
}

func printQuarantine(w io.Writer, res admin.QuarantineResult) error {
	tw := newTable(w)
	row(tw, "QUARANTINED_AT", "BOUNDARY", "DESTINATION", "EVENT_ID", "EVENT_TYPE", "ATTEMPTS", "ERROR_CODE", "REASON")
	for _, q := range res.Quarantine.Items {
		row(tw, fmtTime(q.QuarantinedAt), q.Boundary, q.Destination, q.EventID, q.EventType, q.AttemptCount, q.LastErrorCode, q.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d quarantined deliveries shown (newest first, limit %d)\n",
		len(res.Quarantine.Items), res.Quarantine.Total, res.Quarantine.Limit)
	return err
}

func printDefinitions(w io.Writer, res admin.DefinitionsResult) error {
	tw := newTable(w)
	row(tw, "BOUNDARY", "VERSION", "SCHEMA_VERSION", "DIGEST", "STATUS", "ACTIVATED_AT", "MEMBERS", "EVENT_PAIRS", "DESTINATIONS")
	for _, d := range res.Definitions {
		row(tw, d.Boundary, d.Version, d.SchemaVersion, d.DigestAlgorithmVersion+":"+d.Digest, d.Status, fmtTimePtr(d.ActivatedAt),
			d.MemberCount, d.ApplicableEventCount, strings.Join(d.Destinations, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.Projections) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	row(tw, "BOUNDARY", "PROJECTION", "VERSION", "DEFINITION", "SWITCHED_AT")
	for _, p := range res.Projections {
		row(tw, p.Boundary, p.ProjectionName, p.ProjectionVersion, p.DeliverySetVersion, fmtTime(p.SwitchedAt))
	}
	return tw.Flush()
}

func printCompleteness(w io.Writer, res admin.CompletenessResult) error {
	tw := newTable(w)
	row(tw, "BOUNDARY", "VERDICT", "EVENTS", "PUBLISHED", "UNPUBLISHED", "OLDEST_UNPUBLISHED", "PUBLISHED_WITH_OPEN", "UNPUBLISHED_ALL_ACKED", "REASONS")
	for _, c := range res.Outbox {
		row(tw, c.Boundary, c.Verdict, c.Events, c.Published, c.Unpublished(), age(c.OldestUnpublishedAgeSeconds),
			c.PublishedWithOpenMandatory, c.UnpublishedAllAcknowledged, strings.Join(c.Reasons, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	row(tw, "BOUNDARY", "DESTINATION", "MANDATORY", "OPEN", "QUARANTINED", "ACKNOWLEDGED")
	for _, c := range res.Outbox {
		for _, d := range c.Destinations {
			row(tw, c.Boundary, d.Destination, d.Mandatory, d.Open, d.Quarantined, d.Acknowledged)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if o := res.Operations; o != nil {
		fmt.Fprintln(w)
		if o.Error != "" {
			_, err := fmt.Fprintf(w, "operations projection (%s): query failed: %s\n", o.Boundary, cellText(o.Error))
			return err
		}
		asOf := "-"
		if o.CompletenessAsOf != nil {
			asOf = o.CompletenessAsOf.SnapshotID + " @ " + fmtTime(o.CompletenessAsOf.EvaluatedAt)
		}
		tw = newTable(w)
		row(tw, "operations projection", o.Projection)
		row(tw, "  verification", o.VerificationState)
		row(tw, "  snapshot currency", o.SnapshotCurrency)
		row(tw, "  completeness", o.ProjectionCompleteness)
		row(tw, "  reason", o.VerificationReason)
		row(tw, "  proof", asOf)
		if len(o.ProofReasons) > 0 {
			row(tw, "  proof reasons", strings.Join(o.ProofReasons, ","))
		}
		return tw.Flush()
	}
	return nil
}

func printLookup(w io.Writer, res admin.LookupResult) error {
	fmt.Fprintf(w, "%d event(s) for %s %s\n", len(res.Events), res.Kind, res.ID)
	if res.Truncated {
		fmt.Fprintln(w, "(truncated at the lookup limit; raise --lookup-limit or look up by event id)")
	}
	for _, e := range res.Events {
		published := "not published"
		if e.PublishedAt != nil {
			published = "published " + fmtTime(*e.PublishedAt)
		}
		fmt.Fprintf(w, "\nevent %s  %s  [%s]  %s\n", e.EventID, e.EventType, e.Boundary, published)
		tw := newTable(w)
		kinds := make([]string, len(e.MatchedBy))
		for i, k := range e.MatchedBy {
			kinds[i] = string(k)
		}
		row(tw, "  matched by", strings.Join(kinds, ","))
		row(tw, "  aggregate", fmt.Sprintf("%s %s revision %d", e.AggregateType, e.AggregateID, e.AggregateRevision))
		row(tw, "  envelope digest", e.EventEnvelopeDigestAlgorithmVersion+":"+e.EventEnvelopeSHA256)
		row(tw, "  definition", fmt.Sprintf("version %d, schema %s, %s:%s", e.DeliverySetVersion, e.DeliverySetDefinitionSchemaVersion,
			e.DeliverySetDefinitionDigestAlgorithm, e.DeliverySetDefinitionDigest))
		row(tw, "  correlation", e.CorrelationID)
		row(tw, "  occurred at", fmtTime(e.OccurredAt))
		row(tw, "  appended at", fmtTime(e.CreatedAt))
		row(tw, "  published at", fmtTimePtr(e.PublishedAt))
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "  envelope         %s\n", strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, e.Envelope))
		for _, d := range e.Deliveries {
			fmt.Fprintf(w, "  delivery %s -> %s: %s, %d attempt(s)", d.Destination, d.ConsumerName, d.Status, d.AttemptCount)
			if d.LastErrorCode != "" {
				fmt.Fprintf(w, ", last error %s", cellText(d.LastErrorCode))
			}
			fmt.Fprintln(w)
			if d.Status == "leased" {
				fmt.Fprintf(w, "    lease        %s until %s\n", cellText(d.LeaseOwner), fmtTimePtr(d.LeaseExpiresAt))
			}
			if a := d.Ack; a != nil {
				fmt.Fprintf(w, "    receipt      %s@%s %s %s:%s\n", a.ReceiptType, a.ReceiptSchemaVersion, a.ReceiptKey, a.ReceiptDigestAlgorithmVersion, a.ReceiptDigest)
			}
			if q := d.Quarantine; q != nil {
				fmt.Fprintf(w, "    quarantined  %s: %s\n", fmtTime(q.QuarantinedAt), cellText(q.Reason))
			}
			tw := newTable(w)
			row(tw, "    #", "ATTEMPT_ID", "STARTED_AT", "FINISHED_AT", "OUTCOME", "DISPOSITION", "ERROR_CODE")
			for _, a := range d.Attempts {
				outcome := a.Outcome
				if !a.Finished() {
					outcome = "unfinished"
				}
				row(tw, fmt.Sprintf("    %d", a.Number), a.AttemptID, fmtTime(a.StartedAt), fmtTimePtr(a.FinishedAt), outcome, a.RetryDisposition, a.NormalizedErrorCode)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	if res.Billing != nil {
		return printReservationBilling(w, res.Billing)
	}
	return nil
}

// printReservationBilling prints the reservation's state, fence, ledger
// postings and decision chain (inspect reservation ID).
func printReservationBilling(w io.Writer, b *admin.ReservationBilling) error {
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return cellText(*p)
	}
	fmt.Fprintf(w, "\nbilling: reservation %s, reserved %s, settled %s, released %s, finalized %s\n",
		b.State, b.ReservedAmount, str(b.SettledAmount), str(b.ReleasedAmount), fmtTimePtr(b.FinalizedAt))
	if b.FenceState != nil {
		fmt.Fprintf(w, "  finalization fence: %s", *b.FenceState)
		if b.FenceWaitReason != nil {
			fmt.Fprintf(w, " (waiting: %s)", cellText(*b.FenceWaitReason))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  ledger postings (%d)\n", len(b.Postings))
	tw := newTable(w)
	row(tw, "    GROUP", "LINE", "ACCOUNT", "DIRECTION", "AMOUNT", "IDENTITY", "POSTED_AT")
	for _, p := range b.Postings {
		row(tw, "    "+p.GroupKind, fmt.Sprint(p.LineNo), p.AccountKind, p.Direction, p.Amount, p.EconomicIdentity, fmtTime(p.PostedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  decision chain (%d evaluation(s), %d finalization(s))\n", len(b.Decisions), b.FinalizationCount)
	tw = newTable(w)
	row(tw, "    RECORDED_AT", "DECISION", "REASON", "SETTLED", "RELEASED", "INPUT_MANIFEST", "DIMENSIONS", "TARGET", "BUNDLE", "DECISION_REF")
	for _, d := range b.Decisions {
		row(tw, "    "+fmtTime(d.RecordedAt), d.Decision, str(d.ReasonCode), str(d.SettledAmount), str(d.ReleasedAmount),
			d.ManifestRef, fmt.Sprint(d.Dimensions), d.TargetTotal, str(d.BundleRef), d.DecisionRef)
	}
	return tw.Flush()
}
