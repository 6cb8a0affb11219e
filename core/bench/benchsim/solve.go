package benchsim

import (
	"fmt"
	"math"
)

// slot is one kind of judgment of a question: a judge with the mode's
// answer in one position. Every design here gives each judge both positions
// equally often, so the design's expectations are the averages over slots.
type slot struct{ shift, noise float64 }

func (s *Sim) slots() []slot {
	c := &s.cfg
	out := make([]slot, 0, 2*len(c.Judges))
	for j, jd := range c.Judges {
		base := jd.Leniency + c.SelfPreference*s.self[j]
		out = append(out, slot{base + c.PositionBias, jd.Noise}, slot{base - c.PositionBias, jd.Noise})
	}
	return out
}

// moments are the score-scale expectations of a design whose questions'
// latent effect is normal with the given mean and standard deviation.
type moments struct{ w, rho float64 }

// Simpson's rule over the standard normal density on [−8, 8]; the
// integrands are smooth and bounded, so this is exact to far below the
// tolerance of the solve.
const (
	gridHalfWidth = 8.0
	gridPoints    = 161 // odd
)

func (s *Sim) moments(sl []slot, mean, sd float64) moments {
	tau := s.cfg.TieWidth
	k := len(sl)
	m := make([]float64, k)
	var ew, ey2, cross float64 // E[mean slot score], E[mean slot y²], E[Σ_{s≠s'} m_s m_s']
	h := 2 * gridHalfWidth / (gridPoints - 1)
	var total float64
	for p := range gridPoints {
		z := -gridHalfWidth + float64(p)*h
		wt := math.Exp(-z * z / 2)
		switch {
		case p == 0 || p == gridPoints-1:
		case p%2 == 1:
			wt *= 4
		default:
			wt *= 2
		}
		total += wt
		a := mean + sd*z
		var sum, sumsq, y2 float64
		for i, x := range sl {
			win := phi((a + x.shift - tau) / x.noise)
			loss := phi((-tau - a - x.shift) / x.noise)
			m[i] = 0.5 * (1 + win - loss)
			y2 += win + 0.25*(1-win-loss)
			sum += m[i]
			sumsq += m[i] * m[i]
		}
		ew += wt * sum / float64(k)
		ey2 += wt * y2 / float64(k)
		cross += wt * (sum*sum - sumsq) / float64(k*(k-1))
	}
	ew /= total
	ey2 /= total
	cross /= total
	variance := ey2 - ew*ew
	return moments{w: ew, rho: (cross - ew*ew) / variance}
}

func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// root finds x in [lo, hi] with f(x) = target for an increasing f, by
// regula falsi with the Illinois modification: it keeps a bracket like
// bisection but converges superlinearly on smooth functions, so a solve takes
// tens of evaluations rather than hundreds.
func root(lo, hi, target float64, f func(float64) float64) float64 {
	flo, fhi := f(lo)-target, f(hi)-target
	if flo >= 0 {
		return lo
	}
	if fhi <= 0 {
		return hi
	}
	side := 0
	for range 200 {
		x := (lo*fhi - hi*flo) / (fhi - flo)
		fx := f(x) - target
		switch {
		case fx == 0:
			return x
		case fx < 0:
			lo, flo = x, fx
			if side == -1 {
				fhi /= 2
			}
			side = -1
		default:
			hi, fhi = x, fx
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
		if hi-lo < 1e-11 || math.Abs(fx) < 1e-13 {
			return x
		}
	}
	return (lo + hi) / 2
}

// solve finds the latent mean and the total standard deviation of the
// question effect (σ_q and the length term together) that give the design's
// W and Rho, then splits off the length term.
func (s *Sim) solve() error {
	c := &s.cfg
	sl := s.slots()
	if len(sl) < 2 {
		return fmt.Errorf("benchsim: Judges: none")
	}
	const maxSD, meanRange = 30.0, 40.0
	meanFor := func(sd float64) float64 {
		return root(-meanRange, meanRange, c.W, func(mu float64) float64 { return s.moments(sl, mu, sd).w })
	}
	if r := s.moments(sl, meanFor(maxSD), maxSD).rho; r < c.Rho {
		return fmt.Errorf("benchsim: Rho: %v is out of reach of this panel (at most %.3f)", c.Rho, r)
	}
	sd := root(0, maxSD, c.Rho, func(sd float64) float64 { return s.moments(sl, meanFor(sd), sd).rho })
	mean := meanFor(sd)
	if m := s.moments(sl, mean, sd); math.Abs(m.w-c.W) > 1e-7 || math.Abs(m.rho-c.Rho) > 1e-7 {
		return fmt.Errorf("benchsim: no latent model gives W %v and Rho %v with this panel (closest: %.6f, %.6f)", c.W, c.Rho, m.w, m.rho)
	}

	lengthVar := c.LengthBias * c.LengthBias * c.LengthSpread * c.LengthSpread
	if lengthVar > sd*sd {
		return fmt.Errorf("benchsim: LengthBias × LengthSpread (%.3f) exceeds the question effect's spread (%.3f) for this Rho",
			math.Sqrt(lengthVar), sd)
	}
	s.truth = Truth{
		W:          c.W,
		Rho:        c.Rho,
		Mean:       mean - c.LengthBias*c.LengthLogRatio,
		QuestionSD: math.Sqrt(sd*sd - lengthVar),
	}
	s.truth.LengthControlledW = s.moments(sl, s.truth.Mean, s.truth.QuestionSD).w

	var n, diff float64
	for b, k := range c.Questions {
		p := c.BaselineAccuracy[b]
		diff += float64(k) * (clamp01(p+c.AccuracyLift) - p)
		n += float64(k)
	}
	if n > 0 {
		s.truth.AccuracyDifference = diff / n
	}
	return nil
}
