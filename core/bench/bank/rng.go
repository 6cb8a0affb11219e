package bank

import (
	"hash/fnv"
	"strconv"
)

// rng is the bank's own pseudo-random stream: SplitMix64 seeded from an
// FNV-1a hash of the names that identify what is being generated. The bank
// writes it out rather than using math/rand so that a bank version's items
// and draws depend on nothing the Go release may change (math/rand/v2 keeps
// the right to change how IntN or Shuffle consume the stream).
type rng struct{ s uint64 }

// newRNG seeds a stream from parts; the same parts give the same stream.
func newRNG(parts ...string) *rng {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return &rng{s: h.Sum64()}
}

func (r *rng) uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a uniform integer in [0, n); it rejects the top of the range
// that would bias small values.
func (r *rng) intn(n int) int {
	if n <= 0 {
		panic("bank: intn of a non-positive bound " + strconv.Itoa(n))
	}
	bound := uint64(n)
	limit := ^uint64(0) - (^uint64(0)%bound+1)%bound
	for {
		v := r.uint64()
		if v <= limit {
			return int(v % bound)
		}
	}
}

// between returns a uniform integer in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// byLevel returns a uniform integer in the range a level selects: ranges[0]
// for level 1, ranges[1] for 2, ranges[2] for 3.
func (r *rng) byLevel(level int, ranges [3][2]int) int {
	lr := ranges[min(max(level, 1), 3)-1]
	return r.between(lr[0], lr[1])
}

// chance is true with probability num/den.
func (r *rng) chance(num, den int) bool { return r.intn(den) < num }

// perm is a uniform permutation of 0..n-1 (Fisher–Yates).
func (r *rng) perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	shuffle(r, p)
	return p
}

func pick[T any](r *rng, xs []T) T { return xs[r.intn(len(xs))] }

func shuffle[T any](r *rng, xs []T) {
	for i := len(xs) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// sample returns k distinct elements of xs in random order.
func sample[T any](r *rng, xs []T, k int) []T {
	c := append([]T(nil), xs...)
	shuffle(r, c)
	return c[:k]
}
