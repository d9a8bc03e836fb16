package settlement

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// PriceBookVersion names the price book below. Admission freezes the
// reservation's economic identity (credits) in the RunAdmissionManifest@1 but
// no per-unit price (the manifest has none), so the price comes from this
// versioned, Contracts-published book and the snapshot names both: the book
// version and the admission manifest. A new price is a new book version,
// never an edit of this one.
const PriceBookVersion = "oceanway-price-book@1"

// BillingPolicyVersion is the billing policy the snapshot is settled under
// (lateEligibleDisposition = reconcile_before_charge, BI-2).
const BillingPolicyVersion = "oceanway-billing-policy@1"

// ChargeDimensionNotDispatched is the one charge dimension of a
// not_dispatched attempt: it has no Gateway usage, so its terminal-none
// snapshot is this dimension's.
const ChargeDimensionNotDispatched = "attempt.not_dispatched"

// Price is one registered charge dimension: its unit and credits per unit.
type Price struct {
	Unit      string
	UnitPrice string // exact decimal, credits per unit
}

// priceBook maps the registered charge dimensions (the Gateway usage
// evidence dimensions) to their price.
var priceBook = map[string]Price{
	"text.input_tokens":          {Unit: "token", UnitPrice: "0.001"},
	"text.output_tokens":         {Unit: "token", UnitPrice: "0.003"},
	"media.images":               {Unit: "image", UnitPrice: "2"},
	"media.video_seconds":        {Unit: "second", UnitPrice: "0.5"},
	"tools.calls":                {Unit: "call", UnitPrice: "0.25"},
	ChargeDimensionNotDispatched: {Unit: "attempt", UnitPrice: "0"},
}

// ErrUnregisteredDimension marks a usage dimension the price book does not
// register (a deterministic mapping conflict, not a zero charge).
var ErrUnregisteredDimension = errors.New("settlement: charge dimension is not in the price book")

// PriceOf returns the registered price of a charge dimension.
func PriceOf(chargeDimensionKey string) (Price, error) {
	p, ok := priceBook[chargeDimensionKey]
	if !ok {
		return Price{}, fmt.Errorf("%w: %q (%s)", ErrUnregisteredDimension, chargeDimensionKey, PriceBookVersion)
	}
	return p, nil
}

// ErrAmount marks a decimal that is not a canonical non-negative amount.
var ErrAmount = errors.New("settlement: not a canonical amount")

// Multiply returns a × b exactly, in the canonical amount form (no
// trailing fractional zeros, no exponent); both must be canonical amounts.
func Multiply(a, b string) (string, error) {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	if !ok1 || !ok2 || x.Sign() < 0 || y.Sign() < 0 || strings.ContainsAny(a+b, "eE/+-") {
		return "", fmt.Errorf("%w: %q × %q", ErrAmount, a, b)
	}
	return canonical(new(big.Rat).Mul(x, y), fractionDigits(a)+fractionDigits(b)), nil
}

func fractionDigits(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}

// canonical prints r with at most digits fraction digits (exact: the
// product of two decimals has at most the sum of their fraction digits)
// and trims trailing zeros.
func canonical(r *big.Rat, digits int) string {
	s := r.FloatString(digits)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
