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

// AtomicToUSD is the inverse of USDToAtomic: USDC atomic units ("20000") as a plain USD decimal
// ("0.02"), exactly, without trailing zeros in the fraction. Anything but plain digits is an error.
func AtomicToUSD(atomic string) (string, error) {
	if atomic == "" || len(atomic) > maxPriceLen || !allDigits(atomic) {
		return "", errors.New("amount must be a whole number of USDC atomic units such as 20000")
	}
	atomic = strings.TrimLeft(atomic, "0")
	if len(atomic) <= usdcDecimals {
		atomic = strings.Repeat("0", usdcDecimals-len(atomic)+1) + atomic
	}
	whole, frac := atomic[:len(atomic)-usdcDecimals], strings.TrimRight(atomic[len(atomic)-usdcDecimals:], "0")
	if frac == "" {
		return whole, nil
	}
	return whole + "." + frac, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
