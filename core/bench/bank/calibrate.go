package bank

import (
	"errors"
	"math"
	"sort"
)

// Band is the range a baseline's pass rate on a bucket's verifiable items
// is calibrated to, as shares from 0 to 1.
type Band struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// BandOf is the certification design's band for a bucket: buckets are
// labelled by the generators' parameters, then re-calibrated so that the
// baseline passes light ≈ 85–95%, medium ≈ 50–70% and hard ≈ 15–40% of
// their verifiable items. The zero Band for a bucket it does not know.
func BandOf(b Bucket) Band {
	switch b {
	case Light:
		return Band{0.85, 0.95}
	case Medium:
		return Band{0.50, 0.70}
	case Hard:
		return Band{0.15, 0.40}
	}
	return Band{}
}

// Contains reports whether the rate p lies in the band, ends included.
func (b Band) Contains(p float64) bool { return p >= b.Lo && p <= b.Hi }

// Graded is one stored answer to a bank question: the question's id and
// the answer's text.
type Graded struct {
	QuestionID string
	Answer     string
}

// PassRate is how often answers to a bucket's verifiable items, or to one
// template family's in the bucket, passed their checker, against the
// bucket's band.
type PassRate struct {
	Bucket Bucket `json:"bucket"`
	// Family is the template family; "" for the bucket as a whole.
	Family string `json:"family,omitempty"`
	N      int    `json:"n"`
	Passed int    `json:"passed"`
	// Rate is Passed/N; CILo and CIHi its 95% Wilson interval.
	Rate float64 `json:"rate"`
	CILo float64 `json:"ci_lo"`
	CIHi float64 `json:"ci_hi"`
	Band Band    `json:"band"`
	// Flag is "low" or "high" when Rate is outside the band, "" inside.
	Flag string `json:"flag,omitempty"`
	// Clear is true when the whole 95% interval is outside the band: the
	// answers are enough to say the family (or bucket) is mislabelled, not
	// just unlucky.
	Clear bool `json:"clear,omitempty"`
}

// Calibration is a baseline's pass rates on the bank's verifiable items:
// per bucket, and per template family within its bucket.
type Calibration struct {
	Version  string     `json:"bank_version"`
	Buckets  []PassRate `json:"buckets"`
	Families []PassRate `json:"families"`
	// Open counts answers to open items, which have no checker.
	Open int `json:"open"`
	// OtherVersion counts answers to items of a bank version this build
	// does not serve, which it cannot check.
	OtherVersion int `json:"other_version"`
}

// Calibrate checks each answer against its item (Item.Check) and reports
// the pass rates per bucket and per template family, each against its
// bucket's band (BandOf). Answers to open items and to other bank versions
// are counted, not checked; an id of this version that names no item is
// an error. Buckets come lightest first, families by bucket then name.
func Calibrate(answers []Graded) (*Calibration, error) {
	type key struct {
		b Bucket
		f string
	}
	counts := map[key]*PassRate{}
	tally := func(k key, passed bool) {
		r := counts[k]
		if r == nil {
			r = &PassRate{Bucket: k.b, Family: k.f, Band: BandOf(k.b)}
			counts[k] = r
		}
		r.N++
		if passed {
			r.Passed++
		}
	}
	out := &Calibration{Version: Version, Buckets: []PassRate{}, Families: []PassRate{}}
	for _, a := range answers {
		it, err := Lookup(a.QuestionID)
		switch {
		case errors.Is(err, ErrUnknownVersion):
			out.OtherVersion++
			continue
		case err != nil:
			return nil, err
		case it.Kind != Verifiable:
			out.Open++
			continue
		}
		ok := it.Check(a.Answer)
		tally(key{it.Bucket, ""}, ok)
		tally(key{it.Bucket, it.Family}, ok)
	}
	for _, r := range counts {
		r.Rate = float64(r.Passed) / float64(r.N)
		r.CILo, r.CIHi = wilson(r.Passed, r.N)
		switch {
		case r.Rate < r.Band.Lo:
			r.Flag, r.Clear = "low", r.CIHi < r.Band.Lo
		case r.Rate > r.Band.Hi:
			r.Flag, r.Clear = "high", r.CILo > r.Band.Hi
		}
		if r.Family == "" {
			out.Buckets = append(out.Buckets, *r)
		} else {
			out.Families = append(out.Families, *r)
		}
	}
	order := func(rs []PassRate) {
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].Bucket != rs[j].Bucket {
				return rs[i].Bucket.level() < rs[j].Bucket.level()
			}
			return rs[i].Family < rs[j].Family
		})
	}
	order(out.Buckets)
	order(out.Families)
	return out, nil
}

// wilson is the 95% Wilson score interval of k successes in n trials.
func wilson(k, n int) (lo, hi float64) {
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return max(0, mid-half), min(1, mid+half)
}
