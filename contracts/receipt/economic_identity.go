package receipt

import (
	"regexp"

	"github.com/oceanway/core/contracts/strict"
)

// SettlementEconomicIdentity@1 kinds.
const (
	EconomicCredits     = "credits"
	EconomicEntitlement = "entitlement"
	EconomicMoney       = "money"
)

// SettlementEconomicIdentity is SettlementEconomicIdentity@1 — our definition
// (the outbox document names it without fields; ADR-031 names the economic
// identity credits | entitlement{entitlementKey,unit} | money{currency}). It
// is the same shape contracts/envelope uses in event payloads:
//
//	{ kind=credits } | { kind=entitlement; entitlementKey; unit } | { kind=money; currency }
type SettlementEconomicIdentity struct {
	Kind           string
	EntitlementKey string // entitlement
	Unit           string // entitlement
	Currency       string // money: ISO 4217 alphabetic code
}

var currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)

func readEconomicIdentity(o *strict.Object) SettlementEconomicIdentity {
	var e SettlementEconomicIdentity
	e.Kind = o.Union("kind", map[string]func(*strict.Object){
		EconomicCredits: func(*strict.Object) {},
		EconomicEntitlement: func(b *strict.Object) {
			e.EntitlementKey = b.String("entitlementKey")
			e.Unit = b.String("unit")
		},
		EconomicMoney: func(b *strict.Object) {
			e.Currency = b.String("currency")
			if e.Currency != "" && !currencyPattern.MatchString(e.Currency) {
				b.Fail("currency", strict.ErrInvalidValue, "want an ISO 4217 alphabetic code")
			}
		},
	})
	return e
}

func (e SettlementEconomicIdentity) toJSON() map[string]any {
	m := map[string]any{"kind": e.Kind}
	switch e.Kind {
	case EconomicEntitlement:
		m["entitlementKey"] = e.EntitlementKey
		m["unit"] = e.Unit
	case EconomicMoney:
		m["currency"] = e.Currency
	}
	return m
}

func (e SettlementEconomicIdentity) validate(v *strict.Reader, path string) {
	switch e.Kind {
	case EconomicCredits:
		if e.EntitlementKey != "" || e.Unit != "" || e.Currency != "" {
			v.Fail(path, strict.ErrMixedUnion, "credits carries no further field")
		}
	case EconomicEntitlement:
		if e.Currency != "" {
			v.Fail(path+".currency", strict.ErrMixedUnion, "")
		}
	case EconomicMoney:
		if !currencyPattern.MatchString(e.Currency) {
			v.Fail(path+".currency", strict.ErrInvalidValue, "want an ISO 4217 alphabetic code")
		}
		if e.EntitlementKey != "" || e.Unit != "" {
			v.Fail(path, strict.ErrMixedUnion, "")
		}
	default:
		v.Fail(path+".kind", strict.ErrUnknownEnum, e.Kind)
	}
}
