package bench

import (
	"fmt"
	"math"
)

// tally is one run's judgments gathered by question and judge.
type tally struct {
	nq, nj, reps int
	// sum and count of valid judgment scores per (question, judge).
	sum []float64
	cnt []int
	// outcome and mode position per (question, judge, repeat); "" when the
	// judgment is absent or missing.
	out []Outcome
	pos []int
	// Per question: the mean score over all valid judgments (NaN when
	// none), the number of valid judgments, and their sum of squares.
	ybar []float64
	m    []int
	sq   []float64

	valid, ties int
}

func (t *tally) at(i, j int) int      { return i*t.nj + j }
func (t *tally) slot(i, j, r int) int { return (i*t.nj+j)*t.reps + r - 1 }
func (t *tally) judgeMean(i, j int) float64 {
	k := t.at(i, j)
	if t.cnt[k] == 0 {
		return math.NaN()
	}
	return t.sum[k] / float64(t.cnt[k])
}

func newTally(r *Run, judgeOf []int) *tally {
	nq, nj := len(r.Questions), len(r.Judges)
	t := &tally{
		nq: nq, nj: nj, reps: r.Repeats,
		sum: make([]float64, nq*nj), cnt: make([]int, nq*nj),
		out: make([]Outcome, nq*nj*r.Repeats), pos: make([]int, nq*nj*r.Repeats),
		ybar: make([]float64, nq), m: make([]int, nq), sq: make([]float64, nq),
	}
	for k := range r.Judgments {
		jm := &r.Judgments[k]
		o := jm.outcome(r.Protocol)
		s, ok := o.score()
		if !ok {
			continue
		}
		i, j := jm.Question, judgeOf[k]
		t.sum[t.at(i, j)] += s
		t.cnt[t.at(i, j)]++
		t.out[t.slot(i, j, jm.Repeat)] = o
		t.pos[t.slot(i, j, jm.Repeat)] = jm.ModePosition
		t.sq[i] += s * s
		t.valid++
		if s == 0.5 {
			t.ties++
		}
	}
	for i := range nq {
		var s float64
		for j := range nj {
			s += t.sum[t.at(i, j)]
			t.m[i] += t.cnt[t.at(i, j)]
		}
		t.ybar[i] = math.NaN()
		if t.m[i] > 0 {
			t.ybar[i] = s / float64(t.m[i])
		}
	}
	return t
}

// Score computes the report of one run under cfg (zero fields take their
// defaults). It returns an error wrapping ErrInvalidRun when the run's data
// do not hold together, and a config error naming the field when cfg is out
// of range. Score is pure and safe for concurrent use.
func Score(run *Run, cfg Config) (*Report, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	judgeOf, err := run.check()
	if err != nil {
		return nil, err
	}
	d := newDesign(run.Questions)
	t := newTally(run, judgeOf)
	resid := make([]float64, d.clusters)
	p := 1 - cfg.Alpha

	r := &Report{
		Kind:             run.Kind,
		Protocol:         run.Protocol,
		Config:           cfg,
		Attempt:          max(run.Attempt, 1),
		Questions:        len(run.Questions),
		JudgmentsPlanned: len(run.Questions) * len(run.Judges) * run.Repeats,
		JudgmentsValid:   t.valid,
		Provenance:       run.Provenance,
	}
	est := d.mean(t.ybar, resid)
	r.W, r.SE, r.DF, r.N, r.Clusters = est.W, est.SE, est.DF, est.N, est.Clusters
	r.Lower, r.Upper, _ = est.interval(p)
	r.JudgmentsPerQuestion = ratio(float64(t.valid), float64(r.N))
	r.TieRate = ratio(float64(t.ties), float64(t.valid))
	r.MissingRate = ratio(float64(r.JudgmentsPlanned-t.valid), float64(r.JudgmentsPlanned))

	r.Rho = t.icc(d)
	r.NaiveSE, r.NaiveLower, r.NaiveUpper = t.naive(r.W, p)
	r.DesignEffect = NA
	if r.SE.Defined() && r.NaiveSE > 0 {
		r.DesignEffect = (r.SE / r.NaiveSE) * (r.SE / r.NaiveSE)
	}
	r.EffectiveSampleSize = NA
	if r.DesignEffect > 0 {
		r.EffectiveSampleSize = Stat(float64(t.valid)) / r.DesignEffect
	}

	for b, name := range Buckets {
		v := make([]float64, len(t.ybar))
		for i, y := range t.ybar {
			v[i] = math.NaN()
			if d.bucket[i] == b {
				v[i] = y
			}
		}
		e := d.mean(v, resid)
		br := BucketReport{Bucket: name, N: e.N, W: e.W, SE: e.SE}
		br.Lower, br.Upper, _ = e.interval(p)
		r.Buckets = append(r.Buckets, br)
	}

	var pairs, same int
	for j, jd := range run.Judges {
		jr := JudgeReport{Judge: jd.ID, Family: jd.Family}
		only, without := make([]float64, t.nq), make([]float64, t.nq)
		for i := range t.nq {
			k := t.at(i, j)
			jr.Valid += t.cnt[k]
			only[i] = t.judgeMean(i, j)
			without[i] = math.NaN()
			if rest := t.m[i] - t.cnt[k]; rest > 0 {
				without[i] = (t.ybar[i]*float64(t.m[i]) - t.sum[k]) / float64(rest)
			}
		}
		e := d.mean(only, resid)
		jr.W = e.W
		jr.Lower, jr.Upper, _ = e.interval(p)
		jr.WWithout = d.mean(without, resid).W
		jp, js := t.positionPairs(j)
		jr.PositionConsistency = ratio(float64(js), float64(jp))
		pairs += jp
		same += js
		r.Judges = append(r.Judges, jr)
	}
	r.PositionPairs = pairs
	r.PositionConsistency = ratio(float64(same), float64(pairs))
	r.FleissKappa = t.fleiss()

	r.lengths(run.Questions, t.ybar, d)
	r.Verifiable = verifiable(run.Questions, d, resid, p)

	r.Gates = r.gates(cfg)
	r.decide(cfg, est)
	return r, nil
}

func ratio(a, b float64) Stat {
	if b == 0 {
		return NA
	}
	return Stat(a / b)
}

// icc is the intra-question correlation of judgment scores by one-way
// analysis of variance with questions as groups, taken within buckets so
// that differences between buckets do not count as agreement:
//
//	ρ̂ = (MSB − MSW) / (MSB + (m₀ − 1)·MSW)
//
// with MSB on n − B and MSW on N − n degrees of freedom, and m₀ the usual
// average group size for unequal groups, (N − Σ_b Σ_{i∈b} m_i²/N_b)/(n − B).
func (t *tally) icc(d design) Stat {
	var nb, sb [3]float64
	var n, N float64
	for i, y := range t.ybar {
		if math.IsNaN(y) {
			continue
		}
		b := d.bucket[i]
		nb[b] += float64(t.m[i])
		sb[b] += y * float64(t.m[i])
		n++
		N += float64(t.m[i])
	}
	strata := 0.0
	for b := range nb {
		if nb[b] > 0 {
			strata++
		}
	}
	var ssb, ssw, sumsq float64
	for i, y := range t.ybar {
		if math.IsNaN(y) {
			continue
		}
		b := d.bucket[i]
		m := float64(t.m[i])
		dev := y - sb[b]/nb[b]
		ssb += m * dev * dev
		ssw += t.sq[i] - m*y*y
		sumsq += m * m / nb[b]
	}
	if n-strata < 1 || N-n < 1 {
		return NA
	}
	msb, msw := ssb/(n-strata), math.Max(ssw, 0)/(N-n)
	m0 := (N - sumsq) / (n - strata)
	den := msb + (m0-1)*msw
	if den <= 0 {
		return NA
	}
	return Stat((msb - msw) / den)
}

// naive is the per-judgment standard error, sd/√N over every valid
// judgment as if they were independent, and W ∓ t_{p, N−1} times it.
func (t *tally) naive(w Stat, p float64) (se, lower, upper Stat) {
	var s, ss float64
	for i := range t.nq {
		for j := range t.nj {
			s += t.sum[t.at(i, j)]
		}
		ss += t.sq[i]
	}
	n := float64(t.valid)
	if n < 2 {
		return NA, NA, NA
	}
	variance := math.Max(ss-s*s/n, 0) / (n - 1)
	se = Stat(math.Sqrt(variance / n))
	q := Stat(TQuantile(p, n-1))
	return se, w - q*se, w + q*se
}

// positionPairs counts judge j's swapped pairs — two repeats of one
// question, both valid, with the mode in different positions — and those in
// which the judge found the same winner (or a tie both times).
func (t *tally) positionPairs(j int) (pairs, same int) {
	for i := range t.nq {
		for r1 := 1; r1 <= t.reps; r1++ {
			a := t.slot(i, j, r1)
			if t.out[a] == "" {
				continue
			}
			for r2 := r1 + 1; r2 <= t.reps; r2++ {
				b := t.slot(i, j, r2)
				if t.out[b] == "" || t.pos[a] == t.pos[b] {
					continue
				}
				pairs++
				if t.out[a] == t.out[b] {
					same++
				}
			}
		}
	}
	return pairs, same
}

// fleiss is Fleiss' κ for the judges' agreement, each (question, repeat) a
// subject rated by every judge with a valid verdict on it into mode win,
// tie (plurality: neither) or baseline win. Subjects with fewer than two
// ratings are left out; with unequal numbers of ratings each subject's
// agreement is over its own pairs of raters and the category shares are
// over all ratings.
func (t *tally) fleiss() Stat {
	var cat [3]float64
	var agree, subjects, ratings float64
	for i := range t.nq {
		for r := 1; r <= t.reps; r++ {
			var c [3]float64
			var k float64
			for j := range t.nj {
				switch t.out[t.slot(i, j, r)] {
				case ModeWin:
					c[0]++
				case Tie, Neither:
					c[1]++
				case BaselineWin:
					c[2]++
				default:
					continue
				}
				k++
			}
			if k < 2 {
				continue
			}
			agree += (c[0]*c[0] + c[1]*c[1] + c[2]*c[2] - k) / (k * (k - 1))
			subjects++
			ratings += k
			for x := range cat {
				cat[x] += c[x]
			}
		}
	}
	if subjects == 0 {
		return NA
	}
	var pe float64
	for _, c := range cat {
		pe += (c / ratings) * (c / ratings)
	}
	if pe >= 1 {
		return NA
	}
	return Stat((agree/subjects - pe) / (1 - pe))
}

// lengths fills the answer-length figures and the length-controlled W by
// regression adjustment: the per-question score ȳ_i is regressed on
// d_i = ln((mode length + 1)/(baseline length + 1)) with one intercept per
// bucket, and the length-controlled W is the stratified mean of ȳ_i − β̂·d_i,
// which is W − β̂·d̄: the win rate the run predicts for answers of equal
// length. When the log ratio does not vary within any bucket the slope is
// undefined, and so is the length-controlled W unless every ratio is 0.
func (r *Report) lengths(qs []Question, ybar []float64, d design) {
	var nb, sd, sy [3]float64
	var n, lm, lb float64
	logRatio := make([]float64, len(qs))
	for i, q := range qs {
		if math.IsNaN(ybar[i]) {
			continue
		}
		logRatio[i] = math.Log(float64(q.ModeLength+1) / float64(q.BaselineLength+1))
		b := d.bucket[i]
		nb[b]++
		sd[b] += logRatio[i]
		sy[b] += ybar[i]
		n++
		lm += float64(q.ModeLength)
		lb += float64(q.BaselineLength)
	}
	r.MeanModeLength, r.MeanBaselineLength = ratio(lm, n), ratio(lb, n)
	r.LengthSlope, r.LengthControlledW = NA, NA
	if n == 0 {
		return
	}
	var sxy, sxx, dbar float64
	for i := range qs {
		if math.IsNaN(ybar[i]) {
			continue
		}
		b := d.bucket[i]
		x := logRatio[i] - sd[b]/nb[b]
		sxy += x * (ybar[i] - sy[b]/nb[b])
		sxx += x * x
		dbar += logRatio[i] / n
	}
	const flat = 1e-12
	switch {
	case sxx > flat:
		r.LengthSlope = Stat(sxy / sxx)
		r.LengthControlledW = r.W - r.LengthSlope*Stat(dbar)
	case math.Abs(dbar) < flat:
		r.LengthControlledW = r.W
	}
}

// verifiable is the programmatic check of the verifiable items: each
// answer's accuracy, and their paired difference as a stratified, clustered
// mean like W.
func verifiable(qs []Question, d design, resid []float64, p float64) *VerifiableReport {
	diff := make([]float64, len(qs))
	var n, mode, base float64
	for i, q := range qs {
		diff[i] = math.NaN()
		if !q.Verifiable {
			continue
		}
		n++
		mc, bc := b2f(q.ModeCorrect), b2f(q.BaselineCorrect)
		mode += mc
		base += bc
		diff[i] = mc - bc
	}
	if n == 0 {
		return nil
	}
	e := d.mean(diff, resid)
	v := &VerifiableReport{N: int(n), ModeAccuracy: Stat(mode / n), BaselineAccuracy: Stat(base / n), Difference: e.W, SE: e.SE}
	v.Lower, v.Upper, _ = e.interval(p)
	return v
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// String is a one-line summary of the report, for logs and test failures.
func (r *Report) String() string {
	return fmt.Sprintf("%s: W=%.3f [%.3f, %.3f] n=%d ρ̂=%.2f", r.Verdict, float64(r.W), float64(r.Lower),
		float64(r.Upper), r.N, float64(r.Rho))
}
