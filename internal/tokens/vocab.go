package tokens

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// vocab is the encoding's tokens and their ranks (merge priorities), in a
// table made for merging. Merging looks up the union of two adjacent parts
// after every merge; a polynomial hash makes the union's hash from its
// parts' in O(1), where a Go map would hash the union's bytes again. It is
// read-only once built.
type vocab struct {
	// pairs is the rank of each token of two bytes, indexed by the bytes
	// (first<<8 | second), noMerge for a pair that is no token: merging
	// looks up every adjacent pair of a piece first.
	pairs *[1 << 16]int32
	// filter has the bit hash*golden >> (64-filterBits) set for every
	// token. At 256 KiB it stays in a core's cache, where the table does
	// not, and most unions merging looks up are no token: the filter turns
	// away all but about 5% of those.
	filter *[1 << filterBits / 64]uint64
	// slots is an open-addressing table (linear probing, under 40% full)
	// of every token, at index hash*golden >> shift.
	slots []slot
	shift uint
	text  string // every token's bytes, end to end
	// pow[k] is base to the power k: hash(a+b) = hash(a)*pow[len(b)] + hash(b).
	pow  [maxPiece + 1]uint64
	base uint64
	// long holds the tokens longer than 16 bytes (under 1,000) again,
	// for looking up whole pieces: Go's hash reads a long piece several
	// times faster than the polynomial one, which pays off only in
	// merging.
	long map[string]bool
}

// slot is one token of the table.
type slot struct {
	hash uint64
	ref  uint32 // where the token is in text: offset<<8 | length; 0 for an empty slot
	rank int32
}

// golden spreads a hash over the table's index bits (Fibonacci hashing).
const golden = 0x9e3779b97f4a7c15

const filterBits = 21

var vocabulary = sync.OnceValue(func() *vocab {
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(Encoding + ".tiktoken")
	if err != nil {
		// The vocabulary is embedded: failing to read it is a broken
		// build, not a condition to handle.
		panic(fmt.Sprintf("tokens: loading the embedded %s vocabulary: %v", Encoding, err))
	}
	return newVocab(ranks)
})

func newVocab(ranks map[string]int) *vocab {
	// A base drawn per process: no one can choose texts whose unions
	// collide in the table.
	v := &vocab{pairs: new([1 << 16]int32), filter: new([1 << filterBits / 64]uint64), base: rand.Uint64() | 1,
		long: map[string]bool{}}
	v.pow[0] = 1
	for k := 1; k < len(v.pow); k++ {
		v.pow[k] = v.pow[k-1] * v.base
	}
	for i := range v.pairs {
		v.pairs[i] = noMerge
	}
	size := 1 << bits.Len(uint(len(ranks))*5/2)
	v.slots, v.shift = make([]slot, size), uint(64-bits.TrailingZeros(uint(size)))
	var text []byte
	for t, r := range ranks {
		if len(t) > MaxTokenBytes || r > maxRank || len(text) >= 1<<24 {
			panic(fmt.Sprintf("tokens: the %s vocabulary does not fit: a token of %d bytes, rank %d, at %d", Encoding, len(t), r, len(text)))
		}
		switch {
		case len(t) == 2:
			v.pairs[int(t[0])<<8|int(t[1])] = int32(r)
		case len(t) > 16:
			v.long[t] = true
		}
		h := v.hash(t)
		f := h * golden >> (64 - filterBits)
		v.filter[f/64] |= 1 << (f % 64)
		i := h * golden >> v.shift
		for v.slots[i].ref != 0 {
			i = (i + 1) & uint64(size-1)
		}
		v.slots[i] = slot{hash: h, ref: uint32(len(text))<<8 | uint32(len(t)), rank: int32(r)}
		text = append(text, t...)
	}
	v.text = string(text)
	return v
}

// maxRank is the highest rank merging can hold (see merge's keys).
const maxRank = 1<<23 - 1

// hash is s's polynomial hash: each byte plus one, in base v.base. It takes
// eight bytes a step so that the multiplications do not wait on each other.
func (v *vocab) hash(s string) uint64 {
	var h uint64
	p := &v.pow
	for len(s) >= 8 {
		h = h*p[8] + (uint64(s[0])+1)*p[7] + (uint64(s[1])+1)*p[6] + (uint64(s[2])+1)*p[5] + (uint64(s[3])+1)*p[4] +
			(uint64(s[4])+1)*p[3] + (uint64(s[5])+1)*p[2] + (uint64(s[6])+1)*p[1] + uint64(s[7]) + 1
		s = s[8:]
	}
	for i := range len(s) {
		h = h*v.base + uint64(s[i]) + 1
	}
	return h
}

// union is rank for merging, where most unions are no token: the filter
// turns those away first.
func (v *vocab) union(h uint64, s string) (int32, bool) {
	if f := h * golden >> (64 - filterBits); v.filter[f/64]&(1<<(f%64)) == 0 {
		return noMerge, false
	}
	return v.rank(h, s)
}

// rank is the rank of the token s, whose hash is h.
func (v *vocab) rank(h uint64, s string) (int32, bool) {
	mask := uint64(len(v.slots) - 1)
	for i := h * golden >> v.shift; ; i = (i + 1) & mask {
		sl := &v.slots[i]
		if sl.ref == 0 {
			return noMerge, false
		}
		if sl.hash == h && int(sl.ref&0xff) == len(s) {
			if off := int(sl.ref >> 8); v.text[off:off+len(s)] == s {
				return sl.rank, true
			}
		}
	}
}

// has reports whether s is a token.
func (v *vocab) has(s string) bool {
	if len(s) > 16 {
		return v.long[s]
	}
	_, ok := v.rank(v.hash(s), s)
	return ok
}
