package bench

import "math"

// TQuantile is the p-quantile of Student's t distribution with df degrees of
// freedom: the t with P(T ≤ t) = p. df may be fractional. It returns NaN when
// p is outside (0, 1) or df is not positive.
//
// The quantile is found by safeguarded Newton steps on TCDF, started from the
// normal quantile and kept inside a bracket that halves whenever a step would
// leave it, to a relative precision of about 1e-12 — far finer than any
// threshold it is compared with.
func TQuantile(p, df float64) float64 {
	if !(p > 0 && p < 1) || !(df > 0) {
		return math.NaN()
	}
	if p == 0.5 {
		return 0
	}
	if p < 0.5 {
		return -TQuantile(1-p, df)
	}
	// Closed forms for one and two degrees of freedom, where the tails are
	// heaviest and Newton's start furthest away.
	switch df {
	case 1:
		return math.Tan(math.Pi * (p - 0.5))
	case 2:
		return (2*p - 1) / math.Sqrt(2*p*(1-p))
	}
	z := math.Sqrt2 * math.Erfinv(2*p-1)
	if math.IsInf(df, 1) {
		return z
	}
	lo, hi := 0.0, math.Max(2*z, 1)
	for TCDF(hi, df) < p {
		lo, hi = hi, 2*hi
	}
	t := math.Min(math.Max(z, lo), hi)
	for range 200 {
		f := TCDF(t, df) - p
		if f < 0 {
			lo = t
		} else {
			hi = t
		}
		next := t - f/tPDF(t, df)
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-t) <= 1e-13*math.Max(1, math.Abs(t)) {
			return next
		}
		t = next
	}
	return t
}

// TCDF is P(T ≤ t) for Student's t distribution with df degrees of freedom.
func TCDF(t, df float64) float64 {
	if math.IsNaN(t) || !(df > 0) {
		return math.NaN()
	}
	if math.IsInf(df, 1) {
		return 0.5 * math.Erfc(-t/math.Sqrt2)
	}
	// P(|T| > |t|) = I_x(df/2, 1/2) with x = df/(df+t²).
	tail := 0.5 * regIncBeta(df/2, 0.5, df/(df+t*t))
	if t < 0 {
		return tail
	}
	return 1 - tail
}

// tPDF is the density of Student's t distribution.
func tPDF(t, df float64) float64 {
	lg1, _ := math.Lgamma((df + 1) / 2)
	lg2, _ := math.Lgamma(df / 2)
	return math.Exp(lg1-lg2-0.5*math.Log(df*math.Pi)) * math.Pow(1+t*t/df, -(df+1)/2)
}

// regIncBeta is the regularised incomplete beta function I_x(a, b), by its
// continued fraction evaluated with the modified Lentz method. The fraction
// converges quickly for x < (a+1)/(a+b+2); above that the symmetry
// I_x(a, b) = 1 − I_{1−x}(b, a) is used.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	case x > (a+1)/(a+b+2):
		return 1 - regIncBeta(b, a, 1-x)
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab-la-lb+a*math.Log(x)+b*math.Log1p(-x)) / a
	return front * betaFraction(a, b, x)
}

// betaFraction evaluates the continued fraction 1/(1+ d₁/(1+ d₂/(1+ …)))
// of I_x(a, b), where d₂ₘ₊₁ = −(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and
// d₂ₘ = m(b−m)x / ((a+2m−1)(a+2m)), by the modified Lentz method.
func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-16
	guard := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	// After the first term (d₁, the odd term with m = 0) every step
	// multiplies the value by the ratio of the convergents, c·d.
	c, d := 1.0, 1/guard(1-(a+b)*x/(a+1))
	f := d
	step := func(num float64) float64 {
		d = 1 / guard(1+num*d)
		c = guard(1 + num/c)
		f *= c * d
		return c * d
	}
	for m := 1; m <= 1000; m++ {
		fm := float64(m)
		step(fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)))
		if ratio := step(-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))); math.Abs(ratio-1) < eps {
			break
		}
	}
	return f
}
