package bench

import "math"

// design is what the estimator needs to know about the questions of a run:
// each question's bucket and cluster.
type design struct {
	bucket   []int // index into Buckets
	cluster  []int // dense cluster id
	clusters int
}

// newDesign clusters questions by template; a question without one is its
// own cluster.
func newDesign(qs []Question) design {
	d := design{bucket: make([]int, len(qs)), cluster: make([]int, len(qs))}
	ids := make(map[string]int)
	for i, q := range qs {
		d.bucket[i] = q.Bucket.index()
		if q.Template == "" {
			d.cluster[i] = d.clusters
			d.clusters++
			continue
		}
		id, ok := ids[q.Template]
		if !ok {
			id = d.clusters
			ids[q.Template] = id
			d.clusters++
		}
		d.cluster[i] = id
	}
	return d
}

// estimate is a stratified mean over questions with its clustered standard
// error.
type estimate struct {
	W, SE    Stat
	DF       int // clusters − strata
	N        int // questions counted
	Clusters int
}

// mean estimates the stratified mean of the per-question values v over the
// questions where v is not NaN (resid is scratch, one entry per cluster):
//
//	W  = Σ_b (n_b/n) · mean_{i∈b} v_i
//	SE = sqrt( c · Σ_g e_g² ) / n,   e_g = Σ_{i∈g} (v_i − mean_{b(i)} v)
//	c  = G/(G−1) · (n−1)/(n−B)
//
// that is, the mean of v from a regression on bucket indicators, with the
// cluster-robust (sandwich) variance and its usual CR1 small-sample factor
// (Cameron & Miller 2015, "A Practitioner's Guide to Cluster-Robust
// Inference", §VI.A). With every question its own cluster and equal buckets
// this is exactly the textbook stratified variance Σ_b (n_b/n)² s_b²/n_b with
// s_b² over n_b − 1. docs/rationale.md says why c is this one.
func (d design) mean(v []float64, resid []float64) estimate {
	var nb [3]int
	var sb [3]float64
	for i, x := range v {
		if math.IsNaN(x) {
			continue
		}
		nb[d.bucket[i]]++
		sb[d.bucket[i]] += x
	}
	var e estimate
	strata := 0
	var total float64
	for b := range nb {
		if nb[b] > 0 {
			strata++
			e.N += nb[b]
			total += sb[b]
		}
	}
	if e.N == 0 {
		return estimate{W: NA, SE: NA}
	}
	e.W = Stat(total / float64(e.N))

	clear(resid)
	seen := make([]bool, d.clusters)
	for i, x := range v {
		if math.IsNaN(x) {
			continue
		}
		b := d.bucket[i]
		g := d.cluster[i]
		resid[g] += x - sb[b]/float64(nb[b])
		if !seen[g] {
			seen[g] = true
			e.Clusters++
		}
	}
	e.DF = e.Clusters - strata
	if e.DF < 1 || e.N-strata < 1 {
		e.SE = NA
		return e
	}
	var ss float64
	for g, r := range resid {
		if seen[g] {
			ss += r * r
		}
	}
	n, g := float64(e.N), float64(e.Clusters)
	c := g / (g - 1) * (n - 1) / (n - float64(strata))
	e.SE = Stat(math.Sqrt(c*ss) / n)
	return e
}

// interval is W ∓ t_{p, DF}·SE, and the t quantile used.
func (e estimate) interval(p float64) (lower, upper, t Stat) {
	if !e.SE.Defined() || e.DF < 1 {
		return NA, NA, NA
	}
	t = Stat(TQuantile(p, float64(e.DF)))
	return e.W - t*e.SE, e.W + t*e.SE, t
}
