package jsonschema

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// A decimal is a JSON number exactly, as ±0.digits × 10^exp. Comparing
// two, telling whether one is an integer and writing its canonical form
// cost no more than reading their digits, whatever their exponents: the
// number 1e999999 is an integer above 0 without 10^999999 ever being
// built.
type decimal struct {
	neg    bool
	digits string // significant digits, without leading or trailing zeros; "" is zero
	exp    int64
}

// maxExponentDigits bounds the exponent a number's text may carry, so
// that exponents add up in an int64. A number beyond it is refused
// (errHugeExponent) wherever a keyword needs its value; no model writes
// one by mistake. Every other number is checked exactly.
const maxExponentDigits = 15

var (
	errNotNumber    = errors.New("not a JSON number")
	errHugeExponent = errors.New("its exponent has more than 15 digits, so it cannot be checked; write a number of ordinary size")
)

// parseDecimal reads a JSON number's text. Leading zeros are allowed.
func parseDecimal(s string) (decimal, error) {
	var d decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg, i = true, 1
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	whole := s[start:i]
	var frac string
	if i < len(s) && s[i] == '.' {
		start = i + 1
		for i = start; i < len(s) && isDigit(s[i]); i++ {
		}
		if frac = s[start:i]; frac == "" {
			return decimal{}, errNotNumber
		}
	}
	if whole == "" {
		return decimal{}, errNotNumber
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		var err error
		if exp, err = parseExponent(s[i+1:]); err != nil {
			return decimal{}, err
		}
		i = len(s)
	}
	if i != len(s) {
		return decimal{}, errNotNumber
	}
	digits := whole
	if frac != "" {
		digits = whole + frac
	}
	exp += int64(len(whole))
	trimmed := strings.TrimLeft(digits, "0")
	exp -= int64(len(digits) - len(trimmed))
	d.digits = strings.TrimRight(trimmed, "0")
	if d.digits == "" {
		return decimal{}, nil // zero, and minus zero
	}
	d.exp = exp
	return d, nil
}

// parseExponent reads the signed digits after a number's e.
func parseExponent(s string) (int64, error) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" {
		return 0, errNotNumber
	}
	for i := range len(s) {
		if !isDigit(s[i]) {
			return 0, errNotNumber
		}
	}
	if s = strings.TrimLeft(s, "0"); len(s) > maxExponentDigits {
		return 0, errHugeExponent
	}
	e, _ := strconv.ParseInt("0"+s, 10, 64)
	if neg {
		e = -e
	}
	return e, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// decimalOf is v as a decimal: ok is false when v is no number, and err
// says why a number cannot be checked.
func decimalOf(v any) (d decimal, ok bool, err error) {
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return decimal{}, false, nil
		}
		text = strconv.FormatFloat(x, 'e', -1, 64) // as it would be written in JSON
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return decimal{}, false, nil
		}
		text = strconv.FormatFloat(float64(x), 'e', -1, 32)
	case int:
		text = strconv.FormatInt(int64(x), 10)
	case int64:
		text = strconv.FormatInt(x, 10)
	case int32:
		text = strconv.FormatInt(int64(x), 10)
	case uint:
		text = strconv.FormatUint(uint64(x), 10)
	case uint64:
		text = strconv.FormatUint(x, 10)
	default:
		return decimal{}, false, nil
	}
	d, err = parseDecimal(text)
	if errors.Is(err, errNotNumber) {
		return decimal{}, false, nil
	}
	return d, true, err
}

func (d decimal) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmp compares d and o as numbers: -1, 0 or 1.
func (d decimal) cmp(o decimal) int {
	if sd, so := d.sign(), o.sign(); sd != so || sd == 0 {
		return cmpInt(int64(sd), int64(so))
	}
	c := cmpInt(d.exp, o.exp)
	if c == 0 {
		c = strings.Compare(d.digits, o.digits)
	}
	if d.neg {
		return -c
	}
	return c
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (d decimal) isInt() bool { return d.digits == "" || d.exp >= int64(len(d.digits)) }

// appendCanonical writes d so that equal numbers are written alike.
func (d decimal) appendCanonical(b []byte) []byte {
	if d.neg {
		b = append(b, '-')
	}
	b = append(b, d.digits...)
	b = append(b, 'e')
	return strconv.AppendInt(b, d.exp, 10)
}

// int64Value is d when it is an integer that fits an int64.
func (d decimal) int64Value() (int64, bool) {
	if !d.isInt() || d.exp > 18 {
		return 0, false
	}
	text := d.digits + strings.Repeat("0", int(d.exp)-len(d.digits))
	n, err := strconv.ParseInt("0"+text, 10, 64)
	if d.neg {
		n = -n
	}
	return n, err == nil
}

// isMultipleOf reports whether d is an integer multiple of m, which is
// above 0. With d = D·10^a and m = M·10^b (D and M integers without
// trailing zeros), d/m = D/M · 10^(a-b): when a < b, D would need a factor
// 10 it has not; otherwise D·10^(a-b) mod M is computed without building
// 10^(a-b). It reads D once, a chunk of 18 digits at a time.
func (d decimal) isMultipleOf(m decimal) bool {
	if d.digits == "" {
		return true
	}
	shift := (d.exp - int64(len(d.digits))) - (m.exp - int64(len(m.digits)))
	if shift < 0 {
		return false
	}
	if m.digits == "1" {
		return true
	}
	mod, _ := new(big.Int).SetString(m.digits, 10)
	r, chunk, base := new(big.Int), new(big.Int), big.NewInt(1_000_000_000_000_000_000)
	for s := d.digits; s != ""; {
		n := min(len(s), 18)
		c, _ := strconv.ParseInt(s[:n], 10, 64)
		if n == 18 {
			r.Mul(r, base)
		} else {
			r.Mul(r, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
		}
		r.Add(r, chunk.SetInt64(c)).Mod(r, mod)
		s = s[n:]
	}
	r.Mul(r, new(big.Int).Exp(big.NewInt(10), big.NewInt(shift), mod)).Mod(r, mod)
	return r.Sign() == 0
}
