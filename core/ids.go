package core

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
	"unicode"
)

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewID returns a random identifier with a type prefix: "org_…", "key_…",
// "req_…". Ids carry 100 bits of randomness.
func NewID(prefix string) string {
	var b [13]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return prefix + "_" + idEncoding.EncodeToString(b[:])[:20]
}

// ValidTicker reports whether s is an organisation ticker: four letters A–Z.
func ValidTicker(s string) bool {
	if len(s) != 4 {
		return false
	}
	for i := 0; i < 4; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// TickerCandidates returns tickers to try, in order, for an organisation that
// did not choose one: the first four letters of its name, then variants with
// the last letter stepped through the alphabet.
func TickerCandidates(name string) []string {
	var letters []byte
	for _, r := range strings.ToUpper(name) {
		if r < unicode.MaxASCII && r >= 'A' && r <= 'Z' {
			letters = append(letters, byte(r))
		}
	}
	for len(letters) < 4 {
		letters = append(letters, 'X')
	}
	base := string(letters[:4])
	out := []string{base}
	for c := byte('A'); c <= 'Z'; c++ {
		if cand := base[:3] + string(c); cand != base {
			out = append(out, cand)
		}
	}
	for c := byte('A'); c <= 'Z'; c++ {
		for d := byte('A'); d <= 'Z'; d++ {
			out = append(out, base[:2]+string(c)+string(d))
		}
	}
	return out
}
