package memlimit

import (
	"fmt"
	"math"
	"math/bits"
)

// Size is a byte count computed with overflow checks. The zero value is 0
// bytes. Once a product or sum does not fit in a uint64 the Size stays
// overflowed (Bytes reports ok false) and keeps its approximate value as a
// float64 for messages; a negative factor makes it invalid the same way.
type Size struct {
	n    uint64
	f    float64 // the value as a float64: exact below 2^53, approximate above and past 2^64
	over bool
}

// Of is n bytes.
func Of(n uint64) Size { return Size{n: n, f: float64(n)} }

// Mul is the product of factors (e.g. Mul(n, k, 4): n×k float32 values),
// checked for overflow. No factors gives 1.
func Mul(factors ...int) Size { return Of(1).Times(factors...) }

// Times multiplies s by factors, checked for overflow.
func (s Size) Times(factors ...int) Size {
	for _, x := range factors {
		s.f *= float64(x)
		if x < 0 {
			s.over = true
			continue
		}
		hi, lo := bits.Mul64(s.n, uint64(x))
		if hi != 0 {
			s.over = true
		}
		s.n = lo
	}
	return s
}

// TimesFloat multiplies s by a non-negative factor such as bytes per
// weight of a block-quantized format (0.5625), rounding up.
func (s Size) TimesFloat(x float64) Size {
	s.f *= x
	switch {
	case !(x >= 0) || math.IsInf(x, 0):
		s.over = true
	case s.over:
	case s.f >= 0x1p64:
		s.over = true
	default:
		s.n = uint64(math.Ceil(s.f))
	}
	return s
}

// Plus is s + t, checked for overflow.
func (s Size) Plus(t Size) Size {
	n, carry := bits.Add64(s.n, t.n, 0)
	return Size{n: n, f: s.f + t.f, over: s.over || t.over || carry != 0}
}

// Max is the larger of s and t (an overflowed one is larger than any other).
func (s Size) Max(t Size) Size {
	switch {
	case s.over && t.over:
		if t.f > s.f {
			return t
		}
		return s
	case s.over:
		return s
	case t.over || t.n > s.n:
		return t
	}
	return s
}

// Bytes returns the count and true, or false when it overflowed a uint64
// or a factor was negative.
func (s Size) Bytes() (uint64, bool) { return s.n, !s.over }

// Int returns the count as an int and true, or false when it does not fit.
func (s Size) Int() (int, bool) {
	if s.over || s.n > math.MaxInt {
		return 0, false
	}
	return int(s.n), true
}

// String is the count in SI units to three significant digits (GB =
// 1e9 bytes), e.g. "1.93 GB"; an overflowed count prints its approximate
// value ("36 EB"), a negative one says so.
func (s Size) String() string {
	if s.over && s.f < 0 {
		return "a negative size"
	}
	if !s.over {
		return FormatBytes(float64(s.n))
	}
	return FormatBytes(s.f)
}

// FormatBytes prints b bytes in SI units to three significant digits: "512
// B", "1.93 GB", "36 EB"; beyond yottabytes in e-notation.
func FormatBytes(b float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"}
	if math.IsNaN(b) || math.IsInf(b, 0) || b < 0 {
		return fmt.Sprintf("%g B", b)
	}
	for i, u := range units {
		v := b / math.Pow(1000, float64(i))
		if v < 999.5 || i == len(units)-1 {
			if v >= 1e4 {
				return fmt.Sprintf("%.3g B", b)
			}
			return fmt.Sprintf("%.3g %s", v, u)
		}
	}
	return fmt.Sprintf("%.3g B", b)
}
