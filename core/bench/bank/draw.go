package bank

import (
	"fmt"
	"strconv"
)

// Counts is how many items a draw takes from each bucket.
type Counts struct {
	Light  int `json:"light"`
	Medium int `json:"medium"`
	Hard   int `json:"hard"`
}

// Of returns the count for a bucket.
func (c Counts) Of(b Bucket) int {
	switch b {
	case Light:
		return c.Light
	case Medium:
		return c.Medium
	case Hard:
		return c.Hard
	}
	return 0
}

// Certify is the draw of a certification run: 50 questions per bucket.
var Certify = Counts{Light: 50, Medium: 50, Hard: 50}

// Draw takes a stratified sample of the bank: counts.Of(b) items from each
// bucket b, at most MaxPerTemplate from any one template family. The draw is
// a pure function of (version, seed, counts): a batch that stores those
// three (and, for reading, the item ids) can draw the same questions again
// with the same build. Callers choose the seed (from crypto/rand, say); the
// bank reads no clock and no global random source.
//
// Within a bucket, half the items (rounded up) are verifiable and half open,
// so that every run has programmatic accuracy to report; when one kind runs
// short, the other makes up the difference. Each kind's templates are
// shuffled by the seed and take one item each, in that order, before any
// takes a second, so a draw spreads over as many templates as it can. The
// items come back bucket by bucket (light, medium, hard), shuffled within
// each bucket.
//
// Draw fails with ErrUnknownVersion for another bank version, ErrBadCount
// for a negative count or a draw of nothing, and ErrPoolTooSmall when a
// bucket cannot supply its count under the per-template cap.
func Draw(version string, seed uint64, counts Counts) ([]Item, error) {
	total := 0
	for _, b := range Buckets {
		if counts.Of(b) < 0 {
			return nil, fmt.Errorf("%w: %s %d", ErrBadCount, b, counts.Of(b))
		}
		total += counts.Of(b)
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: nothing to draw", ErrBadCount)
	}
	var out []Item
	for _, b := range Buckets {
		n := counts.Of(b)
		if n == 0 {
			continue
		}
		pool, err := Pool(version, b)
		if err != nil {
			return nil, err
		}
		items, err := drawBucket(newRNG(version, "draw", string(b), strconv.FormatUint(seed, 10)), b, pool, n)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// templates groups a pool by family, keeping the pool's order.
func templates(pool []Item, kind Kind) [][]Item {
	var out [][]Item
	at := map[string]int{}
	for _, it := range pool {
		if it.Kind != kind {
			continue
		}
		i, ok := at[it.Family]
		if !ok {
			i = len(out)
			at[it.Family] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], it)
	}
	return out
}

// capacity is how many items the templates give at MaxPerTemplate each.
func capacity(ts [][]Item) int {
	c := 0
	for _, t := range ts {
		c += min(len(t), MaxPerTemplate)
	}
	return c
}

func drawBucket(r *rng, b Bucket, pool []Item, n int) ([]Item, error) {
	ver, open := templates(pool, Verifiable), templates(pool, Open)
	cv, co := capacity(ver), capacity(open)
	if n > cv+co {
		return nil, fmt.Errorf("%w: %s holds %d items at %d per template, the draw asks %d",
			ErrPoolTooSmall, b, cv+co, MaxPerTemplate, n)
	}
	nv := (n + 1) / 2
	no := n - nv
	if no > co {
		nv, no = nv+no-co, co
	}
	if nv > cv {
		nv, no = cv, no+nv-cv
	}
	out := append(spread(r, ver, nv), spread(r, open, no)...)
	shuffle(r, out)
	return out, nil
}

// spread takes k items from the templates: the templates in a seeded order,
// one item each per pass, at most MaxPerTemplate passes.
func spread(r *rng, ts [][]Item, k int) []Item {
	order := r.perm(len(ts))
	picks := make([][]int, len(ts)) // per template, the item indexes in a seeded order
	for i, t := range ts {
		picks[i] = r.perm(len(t))
	}
	var out []Item
	for pass := 0; pass < MaxPerTemplate && len(out) < k; pass++ {
		for _, i := range order {
			if len(out) == k {
				break
			}
			if pass < len(ts[i]) {
				out = append(out, ts[i][picks[i][pass]])
			}
		}
	}
	return out
}
