package tokens

import (
	"context"
	"math"
	"unicode/utf8"
)

// maxPiece is the longest piece, in bytes, that goes through byte-pair
// merging whole. A pre-token longer than that is cut after its last rune that
// ends within maxPiece bytes, and the text is pre-tokenized again from the
// cut. 256 is twice the longest token of the vocabulary (MaxTokenBytes), so
// every token can still form whole inside a piece, and ordinary text never
// has a pre-token that long: an English word is under 30 bytes; a run of
// Chinese between two punctuation marks rarely reaches 85 characters. Only a
// run of one kind of character (letters, whitespace, punctuation) makes
// one.
const maxPiece = 256

// checkEvery is how many pieces a count takes between two looks at its
// context; a piece costs at most some tens of microseconds.
const checkEvery = 256

// Merging costs some tens of nanoseconds a byte, and ordinary text pays for
// it in tokens: the pieces it merges make a token per 1 to 3.5 bytes (code
// 1.1, Hindi 2.1, Japanese 2.6, Chinese 2.8, German compounds 3.3), and a
// count stops at its limit. A piece made of the vocabulary's long tokens
// makes far fewer (a line of 100 '=' is 3 tokens; words run together
// without spaces, 4), so what merging makes beyond a token per 2.5 bytes is
// paid from a budget of budgetPerToken bytes per token of the limit: 8,000
// bytes for the default limit of 8,000, over three times what Chinese text
// at the limit spends. Once the budget is spent, a piece that would need
// merging counts one token per byte, which no count exceeds.
const (
	freeHalfBytesPerToken = 5 // 2.5 bytes
	budgetPerToken        = 1
)

// counter counts the tokens of texts, stopping once the count passes
// limit or ctx ends. It is not safe for concurrent use; each count has
// its own.
type counter struct {
	ctx   context.Context
	vocab *vocab
	cls   *classes
	limit int
	n     int
	err   error
	// budget is what merging may still spend beyond what it pays for in
	// tokens, in bytes.
	budget int
	// cuts memoizes the counts of the pieces of long pre-tokens: a long
	// run of one character is the same piece over and over.
	cuts    map[string]int
	scratch mergeScratch

	// What the count did, for tests: pieces looked at, pieces and bytes
	// merged.
	pieces, merges, merged int
}

func newCounter(ctx context.Context, limit int) *counter {
	budget := noLimit
	if limit < noLimit/budgetPerToken {
		budget = max(budgetPerToken*limit, maxPiece)
	}
	return &counter{ctx: ctx, vocab: vocabulary(), cls: runeClasses(), limit: limit, budget: budget}
}

// done reports whether the count can stop: it passed the limit, or its
// context ended (err is set then).
func (c *counter) done() bool { return c.n > c.limit || c.err != nil }

// text adds the tokens of s.
func (c *counter) text(s string) {
	// s[:valid] is known to be valid UTF-8, checked a stretch ahead of the
	// pieces rather than piece by piece (which costs more) or all at once
	// (which reads a text the count may stop early in); the pieces of a
	// stretch that is not, up to checked, are checked one by one.
	valid, checked := 0, 0
	for i := 0; i < len(s) && !c.done(); {
		e := c.cls.preToken(s, i)
		cut := e-i > maxPiece
		if cut {
			e = i + maxPiece
			for !utf8.RuneStart(s[e]) {
				e--
			}
		}
		if e > checked {
			end := min(e+validAhead, len(s))
			for end < len(s) && !utf8.RuneStart(s[end]) {
				end++
			}
			if checked = end; utf8.ValidString(s[i:end]) {
				valid = end
			}
		}
		if p := s[i:e]; e <= valid || utf8.ValidString(p) {
			c.piece(p, cut)
		} else {
			c.invalid(p, cut)
		}
		i = e
	}
}

// validAhead is how far text checks the text's UTF-8 ahead of its pieces.
const validAhead = 4096

// invalid adds the tokens of a piece that is not valid UTF-8 as tiktoken-go
// reads it: each invalid byte is U+FFFD. The piece may grow past maxPiece
// so; it is cut again then.
func (c *counter) invalid(p string, cut bool) {
	p = string([]rune(p))
	for len(p) > maxPiece {
		e := maxPiece
		for !utf8.RuneStart(p[e]) {
			e--
		}
		c.piece(p[:e], true)
		p = p[e:]
	}
	c.piece(p, cut)
}

// piece adds the tokens of one piece; cut says it was cut from a longer
// pre-token, and counts one token more than its own for the cut.
func (c *counter) piece(p string, cut bool) {
	c.pieces++
	if c.pieces%checkEvery == 0 {
		c.err = c.ctx.Err()
	}
	if len(p) <= MaxTokenBytes && c.vocab.has(p) {
		c.n++
		return
	}
	if cut {
		if n, ok := c.cuts[p]; ok {
			c.n += n
			return
		}
	}
	n := len(p) // no token is shorter than a byte
	if c.budget > 0 {
		n = c.merge(p)
		c.budget -= max(len(p)-freeHalfBytesPerToken*n/2, 0)
	}
	if cut {
		n++
		if c.cuts == nil {
			c.cuts = map[string]int{}
		}
		c.cuts[p] = n
	}
	c.n += n
}

// merge is how many tokens byte-pair merging makes of p, exactly as
// tiktoken's byte_pair_merge: every byte is a part; the adjacent pair whose
// union is the lowest-ranked token merges first (the leftmost of equals),
// until no adjacent pair forms a token. Where tiktoken scans every part for
// the lowest rank after each merge, a tournament tree over the parts finds
// it, so a piece of n bytes costs O(n log n), not O(n²). len(p) <= maxPiece.
func (c *counter) merge(p string) int {
	c.merges++
	c.merged += len(p)
	n := len(p)
	m := &c.scratch
	// Parts are named by where they start; next links each to the next
	// (the last to n), prev to the one before (the first to -1).
	v := c.vocab
	for i := range n {
		m.next[i], m.prev[i] = int16(i+1), int16(i-1)
		m.hash[i] = uint64(p[i]) + 1
	}
	// The leaves of the tree are the parts' keys: the rank of the union of
	// a part and the next, then the part, so that the root is the lowest
	// rank and, among equals, the leftmost part; none where the union is
	// no token.
	leaves := 1
	for leaves < n {
		leaves *= 2
	}
	t := &m.tree
	const mask = len(m.tree) - 1 // spares the bounds checks
	for i := range leaves {
		key := none
		if i+1 < n {
			if r := v.pairs[int(p[i])<<8|int(p[i+1])]; r != noMerge {
				key = uint32(r)<<9 | uint32(i)
			}
		}
		t[(leaves+i)&mask] = key
	}
	for i := leaves - 1; i > 0; i-- {
		t[i&mask] = min(t[(2*i)&mask], t[(2*i+1)&mask])
	}
	set := func(i int, key uint32) {
		i += leaves
		t[i&mask] = key
		for i > 1 {
			i /= 2
			low := min(t[(2*i)&mask], t[(2*i+1)&mask])
			if t[i&mask] == low {
				break // and so are the nodes above
			}
			t[i&mask] = low
		}
	}
	// key is the key of part i, as it now is.
	key := func(i int) uint32 {
		j := int(m.next[i])
		if j >= n {
			return none
		}
		k := int(m.next[j])
		if r, ok := v.union(m.hash[i]*v.pow[k-j]+m.hash[j], p[i:k]); ok {
			return uint32(r)<<9 | uint32(i)
		}
		return none
	}
	tokens := n
	for t[1] != none {
		i := int(t[1] & 0x1ff)
		j := int(m.next[i])
		k := m.next[j]
		m.next[i] = k
		m.hash[i] = m.hash[i]*v.pow[int(k)-j] + m.hash[j]
		if int(k) < n {
			m.prev[k] = int16(i)
		}
		tokens--
		set(j, none)
		set(i, key(i))
		if h := int(m.prev[i]); h >= 0 {
			set(h, key(h))
		}
	}
	return tokens
}

// none is the key of a part whose union with the next is no token.
const none uint32 = math.MaxUint32

// noMerge is the rank of a pair that is no token.
const noMerge = math.MaxInt32

// mergeScratch is merge's working space, kept with its counter so that
// merging allocates nothing.
type mergeScratch struct {
	next, prev [maxPiece]int16
	hash       [maxPiece]uint64 // each part's, as vocab.hash
	tree       [2 * maxPiece]uint32
}
