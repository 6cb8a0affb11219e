package sim

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// sample draws one latency. It always consumes one uniform and one normal
// variate, so the draws that follow do not depend on which branch ran.
func (l Latency) sample(r *rand.Rand) time.Duration {
	return l.at(r.Float64(), r.NormFloat64())
}

// at is the latency for the uniform u (straggler or not) and the standard
// normal z. The calibration fit calls it with pre-drawn variates.
func (l Latency) at(u, z float64) time.Duration {
	median, sigma := l.Median, l.Sigma
	if u < l.TailWeight {
		median, sigma = l.TailMedian, l.TailSigma
	}
	d := time.Duration(float64(median) * math.Exp(sigma*z))
	if d < l.Min {
		d = l.Min
	}
	if l.Max > 0 && d > l.Max {
		d = l.Max
	}
	return d
}

// seeded returns a random source determined by the seed and the parts, so
// that a draw depends on what is asked (seed, model, prompt, attempt) and
// not on the order in which concurrent requests arrive.
func seeded(seed int64, parts ...string) *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	s := h.Sum64()
	return rand.New(rand.NewPCG(s, splitmix(s)))
}

// splitmix is SplitMix64's finaliser: it decorrelates the PCG's two seeds.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// digest is a short stable fingerprint of a text, used in draw keys.
func digest(s string) string {
	h := fnv.New128a()
	h.Write([]byte(s))
	return string(h.Sum(nil))
}

// counters counts attempts per key (model and prompt; directive scope and
// prompt). To stay bounded in a long run it forgets everything once it
// holds maxCounterKeys keys, so attempt numbers restart after about a
// million distinct prompts.
type counters struct {
	mu sync.Mutex
	m  map[string]int
}

const maxCounterKeys = 1 << 20

// next returns how many times key was seen before, and counts this time.
func (c *counters) next(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCounterKeys {
		c.m = make(map[string]int)
	}
	n := c.m[key]
	c.m[key] = n + 1
	return n
}
