package billing

import (
	"errors"
	"fmt"
	"math/big"
	"sort"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/strict"
)

// KindBillingFinalizationCommitted is the contract name.
const KindBillingFinalizationCommitted = "BillingFinalizationCommitted@1"

// CommittedSchemaVersion1 is BillingFinalizationCommitted@1's schema version.
const CommittedSchemaVersion1 = "1"

// The two success outcomes (ADR-031): only they write a committed fact.
const (
	SuccessSettleAndReleaseRemainder = "settle_and_release_remainder"
	SuccessReleaseAll                = "release_all"
)

// Reservation terminal states a committed fact leaves behind.
const (
	ReservationSettled  = "settled"  // settle_and_release_remainder
	ReservationReleased = "released" // release_all
)

// Ledger accounts and directions of a finalization's postings.
//
//	reservation_hold  credit-normal: what is held for the reservation
//	customer_wallet   debit-normal: credits drawn from the customer's wallet and not returned
//	settled_revenue   credit-normal: what the customer was charged
const (
	AccountReservationHold = "reservation_hold"
	AccountCustomerWallet  = "customer_wallet"
	AccountSettledRevenue  = "settled_revenue"

	Debit  = "debit"
	Credit = "credit"
)

// Prefixes of the quadruples a committed fact carries.
const (
	PrefixCommitted                = "billingFinalizationCommitted"
	PrefixFinalizationWork         = "billingFinalizationWork"
	PrefixCoordinatorReceipt       = "billingFinalizationCoordinatorConsumerReceipt"
	PrefixRunAdmissionManifest     = "runAdmissionManifest"
	PrefixRunExecutionFinalization = "runExecutionFinalization"
	PrefixAttemptSetManifest       = "attemptSetManifest"
	PrefixInputManifest            = "finalizationInputManifest"
	PrefixValidationBundle         = "finalizationValidationBundle"
	PrefixDecision                 = "billingFinalizationDecision"
)

var committedSelf = strict.SelfAddressed{Prefix: PrefixCommitted, TimeFields: []string{"committedAt"}}

// Refinement errors of BillingFinalizationCommitted@1.
var (
	// ErrAmountsDoNotAddUp: settled + released != reserved.
	ErrAmountsDoNotAddUp = errors.New("billing: settledAmount + releasedAmount must equal reservedAmount")
	// ErrOutcomeState: the outcome and the reservation state or amounts disagree.
	ErrOutcomeState = errors.New("billing: outcome does not match the reservation state or amounts")
	// ErrPostings: the ledger postings are not the finalization's balanced postings.
	ErrPostings = errors.New("billing: ledger postings are not balanced or do not match the amounts")
	// ErrInvalidCommitted: a Go-built fact that does not satisfy its description.
	ErrInvalidCommitted = errors.New("billing: invalid BillingFinalizationCommitted@1")
)

var selfQuad = func(prefix, doc string) []schema.Field {
	q := schema.Quad(prefix, doc)
	q[1].Type = schema.SchemaVersion{Known: []string{CommittedSchemaVersion1}}
	return q
}

var postingDef = &schema.Def{Name: "BillingLedgerPostingV1", Doc: "One line of a balanced ledger posting group.",
	Type: schema.Object{Fields: schema.Fields(
		schema.F("lineNo", schema.Int{Min: 1, Max: 16}, "1-based, strictly increasing"),
		schema.F("accountKind", schema.Enum{Values: []string{AccountReservationHold, AccountCustomerWallet, AccountSettledRevenue}}, ""),
		schema.F("direction", schema.Enum{Values: []string{Debit, Credit}}, ""),
		schema.F("amount", schema.AmountText, "positive exact decimal"),
	)}}

// CommittedDef describes BillingFinalizationCommitted@1.
var CommittedDef = &schema.Def{Name: "BillingFinalizationCommittedV1",
	Doc: "BillingFinalizationCommitted@1: the absorbing successful finalization of one reservation (ADR-031), written with its ledger postings, the reservation terminal state and billing.finalization.committed@1 in one Billing transaction.",
	Type: schema.Object{Fields: schema.Fields(
		selfQuad(PrefixCommitted, "assigned by Billing's repository; excluded from the digest candidate"),
		schema.F("tenantKind", schema.Enum{Values: []string{envelope.TenantOrganization, "personal"}}, ""),
		schema.F("tenantId", schema.UUID{}, ""),
		schema.F("workspaceId", schema.UUID{}, ""),
		schema.Opt("projectId", schema.UUID{}, ""),
		schema.F("billingReservationId", schema.UUID{}, ""),
		schema.F("billingAccountId", schema.UUID{}, ""),
		schema.F("runId", schema.UUID{}, ""),
		schema.F("billingFinalizationFenceId", schema.UUID{}, ""),
		schema.F("finalizationFenceRevision", schema.Int{Min: 1}, "the fence revision the commit wrote"),
		schema.F("workGeneration", schema.Int{Min: 1}, "the winning Work generation"),
		schema.F("billingFinalizationOperationId", schema.UUID{}, "the winning generation's operation"),
		schema.Quad(PrefixFinalizationWork, "BillingFinalizationWork@1 of the winning generation"),
		schema.Quad(PrefixRunAdmissionManifest, "the Run's admission manifest"),
		schema.F("closureEventId", schema.UUID{}, "execution.run-finalization.closed@1 the coordinator applied"),
		schema.DigestPairFields("closureEventEnvelopeDigestAlgorithmVersion", "closureEventEnvelopeSha256", "that event's envelope digest"),
		schema.Quad(PrefixCoordinatorReceipt, "the coordinator receipt of that event"),
		schema.Quad(PrefixRunExecutionFinalization, "RunExecutionFinalizationFact@1 the event carries"),
		schema.F("runExecutionFinalizationStateVersion", schema.Int{Min: 1}, ""),
		schema.Quad(PrefixAttemptSetManifest, "RunAttemptSetManifest@1 the event carries"),
		schema.F("attemptCount", schema.Int{Min: 0}, ""),
		schema.Quad(PrefixInputManifest, "FinalizationInputManifest@1"),
		schema.Quad(PrefixValidationBundle, "FinalizationValidationBundle@1"),
		schema.Quad(PrefixDecision, "BillingFinalizationDecision the commit applies"),
		schema.F("billingFinalizationDecision", schema.Enum{Values: []string{SuccessSettleAndReleaseRemainder, SuccessReleaseAll}}, "only the two success outcomes commit"),
		schema.F("reservationEconomicIdentity", schema.Ref{Def: envelope.EconomicIdentityDef}, ""),
		schema.F("reservedAmount", schema.AmountText, ""),
		schema.F("settledAmount", schema.AmountText, ""),
		schema.F("releasedAmount", schema.AmountText, ""),
		schema.F("reservationState", schema.Enum{Values: []string{ReservationSettled, ReservationReleased}}, "the reservation's terminal state after the commit"),
		schema.F("ledgerPostingGroupId", schema.UUID{}, "the balanced posting group"),
		schema.F("ledgerPostings", schema.Array{Items: schema.Ref{Def: postingDef}}, "sorted by lineNo"),
		schema.F("committedAt", schema.Timestamp{}, "excluded from the digest candidate"),
	)}}

// Posting is one ledger line.
type Posting struct {
	LineNo      int64
	AccountKind string
	Direction   string
	Amount      string // canonical decimal text, > 0
}

// Committed is BillingFinalizationCommitted@1.
type Committed struct {
	Committed                strict.Quadruple
	TenantKind               string
	TenantID                 string
	WorkspaceID              string
	ProjectID                string // optional
	BillingReservationID     string
	BillingAccountID         string
	RunID                    string
	FenceID                  string
	FenceRevision            int64
	WorkGeneration           int64
	OperationID              string
	Work                     strict.Quadruple
	RunAdmissionManifest     strict.Quadruple
	ClosureEventID           string
	ClosureEnvelopeDigest    digest.Digest
	CoordinatorReceipt       strict.Quadruple
	RunExecutionFinalization strict.Quadruple
	FinalizationStateVersion int64
	AttemptSetManifest       strict.Quadruple
	AttemptCount             int64
	InputManifest            strict.Quadruple
	ValidationBundle         strict.Quadruple
	Decision                 strict.Quadruple
	Outcome                  string // SuccessSettleAndReleaseRemainder | SuccessReleaseAll
	EconomicIdentity         envelope.SettlementEconomicIdentityV1
	ReservedAmount           string
	SettledAmount            string
	ReleasedAmount           string
	ReservationState         string
	LedgerPostingGroupID     string
	Postings                 []Posting
	CommittedAt              time.Time
}

// ToJSON returns the full JSON form.
func (c *Committed) ToJSON() map[string]any {
	m := map[string]any{
		"tenantKind":                     c.TenantKind,
		"tenantId":                       c.TenantID,
		"workspaceId":                    c.WorkspaceID,
		"billingReservationId":           c.BillingReservationID,
		"billingAccountId":               c.BillingAccountID,
		"runId":                          c.RunID,
		"billingFinalizationFenceId":     c.FenceID,
		"finalizationFenceRevision":      c.FenceRevision,
		"workGeneration":                 c.WorkGeneration,
		"billingFinalizationOperationId": c.OperationID,
		"closureEventId":                 c.ClosureEventID,
		"closureEventEnvelopeDigestAlgorithmVersion": string(c.ClosureEnvelopeDigest.Algorithm),
		"closureEventEnvelopeSha256":                 c.ClosureEnvelopeDigest.Value,
		"runExecutionFinalizationStateVersion":       c.FinalizationStateVersion,
		"attemptCount":                               c.AttemptCount,
		"billingFinalizationDecision":                c.Outcome,
		"reservationEconomicIdentity":                c.EconomicIdentity.Map(),
		"reservedAmount":                             c.ReservedAmount,
		"settledAmount":                              c.SettledAmount,
		"releasedAmount":                             c.ReleasedAmount,
		"reservationState":                           c.ReservationState,
		"ledgerPostingGroupId":                       c.LedgerPostingGroupID,
		"committedAt":                                strict.FormatTimestamp(c.CommittedAt),
	}
	if c.ProjectID != "" {
		m["projectId"] = c.ProjectID
	}
	postings := make([]any, 0, len(c.Postings))
	for _, p := range c.Postings {
		postings = append(postings, map[string]any{"lineNo": p.LineNo, "accountKind": p.AccountKind, "direction": p.Direction, "amount": p.Amount})
	}
	m["ledgerPostings"] = postings
	c.Committed.Put(m, PrefixCommitted)
	c.Work.Put(m, PrefixFinalizationWork)
	c.RunAdmissionManifest.Put(m, PrefixRunAdmissionManifest)
	c.CoordinatorReceipt.Put(m, PrefixCoordinatorReceipt)
	c.RunExecutionFinalization.Put(m, PrefixRunExecutionFinalization)
	c.AttemptSetManifest.Put(m, PrefixAttemptSetManifest)
	c.InputManifest.Put(m, PrefixInputManifest)
	c.ValidationBundle.Put(m, PrefixValidationBundle)
	c.Decision.Put(m, PrefixDecision)
	return m
}

// FinalizationPostings returns the balanced posting lines of a finalization
// that settles settled and releases released of reserved: the hold is
// debited in full, revenue and the wallet are credited (zero lines are left
// out). Amounts are canonical decimal text.
func FinalizationPostings(reserved, settled, released string) []Posting {
	out := []Posting{{LineNo: 1, AccountKind: AccountReservationHold, Direction: Debit, Amount: reserved}}
	if settled != "0" {
		out = append(out, Posting{LineNo: int64(len(out) + 1), AccountKind: AccountSettledRevenue, Direction: Credit, Amount: settled})
	}
	if released != "0" {
		out = append(out, Posting{LineNo: int64(len(out) + 1), AccountKind: AccountCustomerWallet, Direction: Credit, Amount: released})
	}
	return out
}

// ParseAmount parses canonical decimal text exactly (never a float).
func ParseAmount(s string) (*big.Rat, error) {
	if err := schema.AmountText.Check(s); err != nil {
		return nil, err
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("amount %q", s)
	}
	return r, nil
}

// FormatAmount renders a non-negative exact decimal as canonical text.
// ok is false for a value with no finite canonical form within AmountText.
func FormatAmount(r *big.Rat) (string, bool) {
	if r.Sign() < 0 {
		return "", false
	}
	if r.IsInt() {
		return r.Num().String(), true
	}
	s := r.FloatString(18)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	back, ok := new(big.Rat).SetString(s)
	if !ok || back.Cmp(r) != 0 || schema.AmountText.Check(s) != nil {
		return "", false
	}
	return s, true
}

// rules checks the refinements a shape cannot express.
func committedRules(m map[string]any) error {
	amount := func(k string) *big.Rat {
		s, _ := m[k].(string)
		r, err := ParseAmount(s)
		if err != nil {
			return new(big.Rat)
		}
		return r
	}
	reserved, settled, released := amount("reservedAmount"), amount("settledAmount"), amount("releasedAmount")
	if new(big.Rat).Add(settled, released).Cmp(reserved) != 0 || reserved.Sign() <= 0 {
		return fmt.Errorf("%w: %s + %s != %s", ErrAmountsDoNotAddUp, m["settledAmount"], m["releasedAmount"], m["reservedAmount"])
	}
	switch outcome, state := m["billingFinalizationDecision"], m["reservationState"]; {
	case outcome == SuccessReleaseAll && state == ReservationReleased && settled.Sign() == 0:
	case outcome == SuccessSettleAndReleaseRemainder && state == ReservationSettled && settled.Sign() > 0:
	default:
		return fmt.Errorf("%w: %v with reservation %v, settled %v", ErrOutcomeState, outcome, state, m["settledAmount"])
	}
	want := FinalizationPostings(m["reservedAmount"].(string), m["settledAmount"].(string), m["releasedAmount"].(string))
	got, _ := m["ledgerPostings"].([]any)
	if len(got) != len(want) {
		return fmt.Errorf("%w: %d lines, want %d", ErrPostings, len(got), len(want))
	}
	for i, w := range want {
		g, _ := got[i].(map[string]any)
		if g["lineNo"] != w.LineNo || g["accountKind"] != w.AccountKind || g["direction"] != w.Direction || g["amount"] != w.Amount {
			return fmt.Errorf("%w: line %d is %v, want %+v", ErrPostings, i+1, g, w)
		}
	}
	return nil
}

// Seal sets the schema version, jcs-sha256-v1 and the digest of the
// candidate, checks the result against the description and returns the
// canonical body. The ref must already be set.
func (c *Committed) Seal() ([]byte, error) {
	sort.SliceStable(c.Postings, func(i, j int) bool { return c.Postings[i].LineNo < c.Postings[j].LineNo })
	c.Committed.SchemaVersion = CommittedSchemaVersion1
	c.Committed.DigestAlgorithmVersion = digest.JCSSHA256V1
	c.Committed.Digest = ""
	d, err := committedSelf.Compute(digest.JCSSHA256V1, c.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", KindBillingFinalizationCommitted, err)
	}
	c.Committed.Digest = d.Value
	body, err := jcs.Marshal(c.ToJSON())
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", KindBillingFinalizationCommitted, err)
	}
	if _, err := decodeCommittedMap(body); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCommitted, err)
	}
	return body, nil
}

func decodeCommittedMap(doc []byte) (map[string]any, error) {
	m, err := schema.DecodeDocument(doc, schema.Ref{Def: CommittedDef})
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", KindBillingFinalizationCommitted, err)
	}
	if err := committedRules(m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", KindBillingFinalizationCommitted, err)
	}
	if err := committedSelf.Verify(m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", KindBillingFinalizationCommitted, err)
	}
	return m, nil
}

// ValidateCommitted strictly decodes doc, checks every refinement rule and
// that the embedded digest recomputes.
func ValidateCommitted(doc []byte) error {
	_, err := decodeCommittedMap(doc)
	return err
}

// DigestCommitted returns the digest of a valid document's candidate.
func DigestCommitted(doc []byte) (digest.Digest, error) {
	m, err := decodeCommittedMap(doc)
	if err != nil {
		return digest.Digest{}, err
	}
	alg, _ := m[strict.Fields(PrefixCommitted)[2]].(string)
	return committedSelf.Compute(digest.Algorithm(alg), m)
}

// CommittedSelfAddressing is where the fact keeps its quadruple and which
// time field its candidate excludes.
func CommittedSelfAddressing() strict.SelfAddressed { return committedSelf }

// DecodeCommitted strictly decodes and validates a committed fact (shape,
// refinements, digest).
func DecodeCommitted(doc []byte) (*Committed, error) {
	m, err := decodeCommittedMap(doc)
	if err != nil {
		return nil, err
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	num := func(k string) int64 { n, _ := m[k].(int64); return n }
	q := func(prefix string) strict.Quadruple {
		f := strict.Fields(prefix)
		return strict.Quadruple{Ref: str(f[0]), SchemaVersion: str(f[1]), DigestAlgorithmVersion: digest.Algorithm(str(f[2])), Digest: str(f[3])}
	}
	c := &Committed{
		Committed: q(PrefixCommitted), TenantKind: str("tenantKind"), TenantID: str("tenantId"), WorkspaceID: str("workspaceId"),
		ProjectID: str("projectId"), BillingReservationID: str("billingReservationId"), BillingAccountID: str("billingAccountId"),
		RunID: str("runId"), FenceID: str("billingFinalizationFenceId"), FenceRevision: num("finalizationFenceRevision"),
		WorkGeneration: num("workGeneration"), OperationID: str("billingFinalizationOperationId"), Work: q(PrefixFinalizationWork),
		RunAdmissionManifest: q(PrefixRunAdmissionManifest), ClosureEventID: str("closureEventId"),
		ClosureEnvelopeDigest: digest.Digest{Algorithm: digest.Algorithm(str("closureEventEnvelopeDigestAlgorithmVersion")),
			Value: str("closureEventEnvelopeSha256")},
		CoordinatorReceipt: q(PrefixCoordinatorReceipt), RunExecutionFinalization: q(PrefixRunExecutionFinalization),
		FinalizationStateVersion: num("runExecutionFinalizationStateVersion"), AttemptSetManifest: q(PrefixAttemptSetManifest),
		AttemptCount: num("attemptCount"), InputManifest: q(PrefixInputManifest), ValidationBundle: q(PrefixValidationBundle),
		Decision: q(PrefixDecision), Outcome: str("billingFinalizationDecision"),
		ReservedAmount: str("reservedAmount"), SettledAmount: str("settledAmount"), ReleasedAmount: str("releasedAmount"),
		ReservationState: str("reservationState"), LedgerPostingGroupID: str("ledgerPostingGroupId"),
	}
	if id, ok := m["reservationEconomicIdentity"].(map[string]any); ok {
		c.EconomicIdentity.Kind, _ = id["kind"].(string)
		c.EconomicIdentity.EntitlementKey, _ = id["entitlementKey"].(string)
		c.EconomicIdentity.Unit, _ = id["unit"].(string)
		c.EconomicIdentity.Currency, _ = id["currency"].(string)
	}
	for _, p := range m["ledgerPostings"].([]any) {
		pm := p.(map[string]any)
		c.Postings = append(c.Postings, Posting{LineNo: pm["lineNo"].(int64), AccountKind: pm["accountKind"].(string),
			Direction: pm["direction"].(string), Amount: pm["amount"].(string)})
	}
	c.CommittedAt, err = strict.ParseTimestamp(str("committedAt"))
	if err != nil {
		return nil, fmt.Errorf("decode %s: committedAt: %w", KindBillingFinalizationCommitted, err)
	}
	return c, nil
}
