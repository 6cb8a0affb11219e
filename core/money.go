package core

import (
	"fmt"
	"strconv"
	"strings"
)

// Micros is an amount of money in millionths of a US dollar. All money in
// Conclave is Micros; floats never hold money.
type Micros int64

// MicrosPerUSD is the number of Micros in one dollar.
const MicrosPerUSD Micros = 1_000_000

// USD converts whole dollars to Micros.
func USD(dollars int64) Micros { return Micros(dollars) * MicrosPerUSD }

// ParseUSD parses a decimal dollar amount such as "10", "0.05" or "-1.5" into
// Micros exactly. More than six decimal places is an error, never a rounding.
func ParseUSD(s string) (Micros, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("parsing dollar amount: empty")
	}
	neg := false
	switch s[0] {
	case '-':
		neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" && (!hasDot || frac == "") {
		return 0, fmt.Errorf("parsing dollar amount %q: no digits", s)
	}
	if len(frac) > 6 {
		return 0, fmt.Errorf("parsing dollar amount %q: more than six decimal places", s)
	}
	for _, part := range []string{whole, frac} {
		for _, r := range part {
			if r < '0' || r > '9' {
				return 0, fmt.Errorf("parsing dollar amount %q: not a decimal number", s)
			}
		}
	}
	var w int64
	if whole != "" {
		var err error
		w, err = strconv.ParseInt(whole, 10, 64)
		if err != nil || w > int64(maxMicros/MicrosPerUSD) {
			return 0, fmt.Errorf("parsing dollar amount %q: out of range", s)
		}
	}
	f := int64(0)
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	m := Micros(w)*MicrosPerUSD + Micros(f)
	if neg {
		m = -m
	}
	return m, nil
}

const maxMicros = Micros(1<<63 - 1)

// Float is m in dollars as a float64, for figures shown or exported
// (metrics, trace attributes), never for arithmetic on money.
func (m Micros) Float() float64 { return float64(m) / float64(MicrosPerUSD) }

// String formats m as a dollar amount with no trailing zeros: "10", "0.05".
func (m Micros) String() string {
	neg := m < 0
	u := uint64(m)
	if neg {
		u = uint64(-m)
	}
	whole := u / uint64(MicrosPerUSD)
	frac := u % uint64(MicrosPerUSD)
	s := strconv.FormatUint(whole, 10)
	if frac != 0 {
		fs := fmt.Sprintf("%06d", frac)
		s += "." + strings.TrimRight(fs, "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Dollars is Micros that marshals to JSON as a dollar number (10, 0.05),
// written from the integer so no float rounding can creep in.
type Dollars Micros

// MarshalJSON writes the amount as a JSON number of dollars.
func (d Dollars) MarshalJSON() ([]byte, error) { return []byte(Micros(d).String()), nil }

// UnmarshalJSON reads a JSON number of dollars exactly.
func (d *Dollars) UnmarshalJSON(b []byte) error {
	m, err := ParseUSD(string(b))
	if err != nil {
		return err
	}
	*d = Dollars(m)
	return nil
}
