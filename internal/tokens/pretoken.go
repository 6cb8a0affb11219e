package tokens

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The classes of runes cl100k_base's pattern tells apart, as bits.
const (
	letter    uint8 = 1 << iota // \p{L}
	number                      // \p{N}
	space                       // \s
	lineBreak                   // [\r\n], also space
	blank                       // space other than a line break
	other                       // [^\s\p{L}\p{N}]
)

// classOf is the class of r, as regexp2 reads \s, \p{L} and \p{N}:
// unicode.IsSpace, unicode.IsLetter, unicode.IsNumber.
func classOf(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		return letter
	case unicode.IsNumber(r):
		return number
	case r == '\r' || r == '\n':
		return space | lineBreak
	case unicode.IsSpace(r):
		return space | blank
	}
	return other
}

// classes is the class of every rune of the Basic Multilingual Plane, so
// that finding one is a load rather than a search of Unicode's tables
// (which takes tens of nanoseconds for most runes past Latin-1); runes
// past the plane are classified as they come. It is read-only once built.
type classes [1 << 16]uint8

var runeClasses = sync.OnceValue(func() *classes {
	t := new(classes)
	for r := range rune(len(t)) {
		t[r] = classOf(r)
	}
	return t
})

// of is the class of r.
func (t *classes) of(r rune) uint8 {
	if r < rune(len(t)) {
		return t[r]
	}
	return classOf(r)
}

// at is the class of the rune at s[i] and its width; i < len(s). The
// compiler does not inline it, so scan, which reads runs, repeats its test
// for ASCII.
func (t *classes) at(s string, i int) (uint8, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return t[b], 1
	}
	return t.decode(s, i)
}

// decode is at past ASCII.
func (t *classes) decode(s string, i int) (uint8, int) {
	r, w := utf8.DecodeRuneInString(s[i:])
	return t.of(r), w
}

// runeAt decodes the rune at s[i], with a fast path for ASCII; width 0 past
// the end.
func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return utf8.RuneError, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return rune(b), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// preToken returns the end of the pre-token of cl100k_base that starts at
// s[i], the piece its pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// matches there, as tiktoken-go's backtracking engine (regexp2) matches it:
// \s is unicode.IsSpace, \p{L} unicode.IsLetter, \p{N} unicode.IsNumber, and
// (?i:…) compares unicode.ToLower of each rune. s must be valid UTF-8 and
// i < len(s).
//
// When that pre-token is longer than maxPiece bytes, preToken returns some
// end past i+maxPiece rather than the pre-token's own: it reads only a few
// bytes past i+maxPiece, except in a run of whitespace whose only line
// breaks come within its first maxPiece bytes, which it reads to its end once
// (the next pre-token starts after that run's last line break, and is then
// one whose end is found lazily).
func (t *classes) preToken(s string, i int) int {
	lim := i + maxPiece + 1
	r0, w0 := runeAt(s, i)
	c0 := t.of(r0)
	switch {
	case c0&letter != 0:
		return t.scan(s, i+w0, lim, letter)
	case c0&number != 0:
		j := i + w0
		for n := 1; n < 3 && j < len(s); n++ {
			cl, w := t.at(s, j)
			if cl&number == 0 {
				break
			}
			j += w
		}
		return j
	}
	// r0 is whitespace or other (neither letter nor number).
	if r0 == '\'' {
		if n := contraction(s[i+w0:]); n > 0 {
			return i + w0 + n
		}
	}
	var c1 uint8
	if i+w0 < len(s) {
		c1, _ = t.at(s, i+w0)
	}
	switch {
	case c0&lineBreak == 0 && c1&letter != 0:
		return t.scan(s, i+w0, lim, letter)
	case c0&other != 0, r0 == ' ' && c1&other != 0:
		j := t.scan(s, i+w0, lim, other)
		if j >= lim {
			return j
		}
		return t.scan(s, j, lim, lineBreak)
	}
	return t.whitespace(s, i, lim)
}

// whitespace is the pre-token at s[i], the start of a run of whitespace
// that no earlier alternative matched: \s*[\r\n]+ ends after the run's last
// line break; without one, \s+(?!\S) leaves out the run's last rune unless
// the run ends the text; \s+ takes a run of one rune.
func (t *classes) whitespace(s string, i, lim int) int {
	j := t.scan(s, i, lim, space)
	lastBreak := max(last(s[i:j], '\n'), last(s[i:j], '\r'))
	if lastBreak >= 0 {
		lastBreak += i
	}
	if j >= lim && j < len(s) {
		if cl, _ := t.at(s, j); cl&space != 0 {
			// The run goes on past lim. Without a line break so far, the
			// pre-token ends at a later break or near the run's end: past
			// lim either way. So it does after a break past the first
			// maxPiece bytes.
			if lastBreak < 0 || lastBreak+1 > i+maxPiece {
				return j
			}
			// Otherwise it ends after the run's last break: find whether
			// one comes later.
			if k := t.scan(s, j, len(s), blank); k < len(s) && (s[k] == '\r' || s[k] == '\n') {
				return k + 1
			}
			return lastBreak + 1
		}
	}
	switch {
	case lastBreak >= 0:
		return lastBreak + 1
	case j == len(s):
		return j
	}
	if _, w := utf8.DecodeLastRuneInString(s[i:j]); j-w > i {
		return j - w
	}
	return j
}

// last is strings.LastIndexByte, after a look with IndexByte, which is
// vectorized, for whether c is in s at all: most runs of whitespace have no
// line break, or no carriage return.
func last(s string, c byte) int {
	if strings.IndexByte(s, c) < 0 {
		return -1
	}
	return strings.LastIndexByte(s, c)
}

// scan returns the end of the run of runes of class from s[i], reading no
// further once it reaches lim (so the result is at least lim when the run
// goes on).
func (t *classes) scan(s string, i, lim int, class uint8) int {
	end := min(lim, len(s))
	for look := i + skipAfter; i < end; {
		if i >= look {
			// Look again after a repetition, for the next.
			skip := t.repeats(s, i, end, class)
			if i, look = i+skip, end; skip > 0 {
				look = i + skipAfter
			}
			if i >= end {
				break
			}
		}
		cl, w := uint8(0), 1
		if b := s[i]; b < utf8.RuneSelf {
			cl = t[b]
		} else {
			cl, w = t.decode(s, i)
		}
		if cl&class == 0 {
			break
		}
		i += w
	}
	return i
}

// skipAfter is how far into a run scanning looks for a repeated unit (see
// repeats): further than an ordinary word goes, so that ordinary text never
// pays for looking.
const skipAfter = 16

// repeats looks for a unit of one to four bytes that s repeats from i on,
// whose runes are all of class. If there is one, it returns how many bytes
// from i its whole repetitions take, up to end; otherwise 0. A run of one
// character, or of a short cycle of them ("ab", "中", "🙂"), is so read at
// the speed of comparing memory.
func (t *classes) repeats(s string, i, end int, class uint8) int {
	for p := 1; p <= utf8.UTFMax && i+2*p <= end; p++ {
		// s[i:i+p+m] repeats s[i:i+p].
		m := commonPrefix(s[i:end-p], s[i+p:end])
		if m < p {
			continue
		}
		unit := s[i : i+p]
		ok := utf8.ValidString(unit)
		for _, r := range unit {
			ok = ok && t.of(r)&class != 0
		}
		if ok {
			return (p + m) / p * p
		}
	}
	return 0
}

// commonPrefix is the length of the longest common prefix of a and b,
// len(a) <= len(b), compared 256 bytes at a time, then 16.
func commonPrefix(a, b string) int {
	n := 0
	for n+256 <= len(a) && a[n:n+256] == b[n:n+256] {
		n += 256
	}
	for n+16 <= len(a) && a[n:n+16] == b[n:n+16] {
		n += 16
	}
	for n < len(a) && a[n] == b[n] {
		n++
	}
	return n
}

// contraction is the length of the contraction (?i:s|t|re|ve|m|ll|d) that
// s starts with, after an apostrophe; 0 if none.
func contraction(s string) int {
	r1, w1 := runeAt(s, 0)
	switch unicode.ToLower(r1) {
	case 's', 't', 'm', 'd':
		return w1
	case 'r', 'v', 'l':
		want := 'e'
		if unicode.ToLower(r1) == 'l' {
			want = 'l'
		}
		if r2, w2 := runeAt(s, w1); w2 > 0 && unicode.ToLower(r2) == want {
			return w1 + w2
		}
	}
	return 0
}
