package billing

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// Amounts are canonical decimal text (schema.AmountText): no sign, no
// leading zeros, no trailing fractional zeros, at most 18 fractional digits.
// Arithmetic runs on exact rationals; a decimal sum or difference of such
// amounts is again such an amount, so nothing is ever rounded.

var amountPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,29}(\.[0-9]{0,17}[1-9])?|0\.[0-9]{0,17}[1-9])$`)

// ErrAmount marks text that is not a canonical non-negative decimal amount.
var ErrAmount = fmt.Errorf("billing: not a canonical decimal amount")

// parseDecimal parses canonical decimal text exactly.
func parseDecimal(s string) (*big.Rat, error) {
	if !amountPattern.MatchString(s) {
		return nil, fmt.Errorf("%w: %q", ErrAmount, s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrAmount, s)
	}
	return r, nil
}

// formatDecimal renders a non-negative decimal rational canonically; it fails
// on a negative value or one that needs more than 18 fractional digits.
func formatDecimal(r *big.Rat) (string, error) {
	if r.Sign() < 0 {
		return "", fmt.Errorf("%w: negative %s", ErrAmount, r.RatString())
	}
	s := r.FloatString(18)
	if back, _ := new(big.Rat).SetString(s); back.Cmp(r) != 0 {
		return "", fmt.Errorf("%w: %s is not a decimal of at most 18 fractional digits", ErrAmount, r.RatString())
	}
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if !amountPattern.MatchString(s) {
		return "", fmt.Errorf("%w: %q", ErrAmount, s)
	}
	return s, nil
}

// SumAmounts adds canonical amounts exactly.
func SumAmounts(amounts ...string) (string, error) {
	total := new(big.Rat)
	for _, a := range amounts {
		r, err := parseDecimal(a)
		if err != nil {
			return "", err
		}
		total.Add(total, r)
	}
	return formatDecimal(total)
}

// CompareAmounts compares two canonical amounts (-1, 0, +1).
func CompareAmounts(a, b string) (int, error) {
	x, err := parseDecimal(a)
	if err != nil {
		return 0, err
	}
	y, err := parseDecimal(b)
	if err != nil {
		return 0, err
	}
	return x.Cmp(y), nil
}

// SubtractAmounts returns a − b; it fails when b exceeds a (an amount is
// never negative).
func SubtractAmounts(a, b string) (string, error) {
	x, err := parseDecimal(a)
	if err != nil {
		return "", err
	}
	y, err := parseDecimal(b)
	if err != nil {
		return "", err
	}
	return formatDecimal(new(big.Rat).Sub(x, y))
}
