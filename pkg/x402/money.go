package x402

import (
	"errors"
	"strings"
)

// USDToAtomic converts a USD price such as "0.02" into USDC atomic units ("20000"), exactly: it
// works on the decimal digits, never on a float, because a price that rounds differently on two
// paths makes the 402 answer and the payment disagree. More than six decimals (USDC's precision),
// anything but plain digits with an optional fraction, and non-positive prices are errors.
func USDToAtomic(usd string) (string, error) {
	if len(usd) == 0 || len(usd) > maxPriceLen {
		return "", errors.New("price must be a decimal number of USD such as 0.02")
	}
	whole, frac, hasDot := strings.Cut(usd, ".")
	if whole == "" || (hasDot && frac == "") || !allDigits(whole) || !allDigits(frac) {
		return "", errors.New("price must be a decimal number of USD such as 0.02")
	}
	if len(frac) > usdcDecimals {
		return "", errors.New("price has more than 6 decimals, finer than USDC's smallest unit")
	}
	atomic := strings.TrimLeft(whole+frac+strings.Repeat("0", usdcDecimals-len(frac)), "0")
	if atomic == "" {
		return "", errors.New("price must be positive")
	}
	return atomic, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
