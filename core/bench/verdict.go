package bench

import (
	"fmt"
	"strings"
)

// DefaultConfigVersion names the thresholds of docs/certify.md, those of the
// certification design. A Config with other thresholds must carry another
// version.
const DefaultConfigVersion = "certify-v1"

// Config is the thresholds of the verdict ladder and its gates. It is
// recorded in every report; change a threshold only after re-running the
// calibration (BenchmarkCertifyCalibration), and give the changed set a new
// Version.
type Config struct {
	// Version names this set of thresholds. Defaults to
	// DefaultConfigVersion when every threshold is the default; a config
	// with other thresholds must name its own version.
	Version string `json:"version"`
	// Alpha is the one-sided error rate of the verdict; the reported
	// interval is the two-sided 1 − 2·Alpha one. Defaults to 0.025.
	Alpha float64 `json:"alpha"`
	// CertifyLower is the least lower bound that certifies. Defaults to
	// 0.50 (parity).
	CertifyLower float64 `json:"certify_lower"`
	// ProvisionalLower is the least lower bound that is provisional.
	// Defaults to 0.45 (non-inferior within five points).
	ProvisionalLower float64 `json:"provisional_lower"`
	// MinValidShare is gate g1's least share of planned judgments with a
	// verdict. Defaults to 0.95.
	MinValidShare float64 `json:"min_valid_share"`
	// MinBucketQuestions is gate g1's least number of scorable questions in
	// every bucket. Defaults to 40.
	MinBucketQuestions int `json:"min_bucket_questions"`
	// MinWithoutJudge is gate g2's least W with any one judge left out.
	// Defaults to 0.50.
	MinWithoutJudge float64 `json:"min_w_without_judge"`
	// MinBucketUpper is gate g3's least upper bound of any bucket's
	// interval. Defaults to 0.50.
	MinBucketUpper float64 `json:"min_bucket_upper"`
	// MaxLengthDrop is gate g4's most that the length-controlled W may fall
	// below W. Defaults to 0.05.
	MaxLengthDrop float64 `json:"max_length_drop"`
	// TestMinQuestions is the least number of scorable questions for a test
	// run to show a verdict. Defaults to 60.
	TestMinQuestions int `json:"test_min_questions"`
	// TestMinBucketQuestions is the least number of scorable questions in
	// every bucket for a test run to show a verdict. Defaults to 10.
	TestMinBucketQuestions int `json:"test_min_bucket_questions"`
}

// DefaultConfig is the thresholds of docs/certify.md.
func DefaultConfig() Config {
	return Config{
		Version:                DefaultConfigVersion,
		Alpha:                  0.025,
		CertifyLower:           0.50,
		ProvisionalLower:       0.45,
		MinValidShare:          0.95,
		MinBucketQuestions:     40,
		MinWithoutJudge:        0.50,
		MinBucketUpper:         0.50,
		MaxLengthDrop:          0.05,
		TestMinQuestions:       60,
		TestMinBucketQuestions: 10,
	}
}

// WithDefaults returns c with every zero threshold set to its default, and
// the default Version when every threshold is then the default.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	set := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&c.Alpha, d.Alpha)
	set(&c.CertifyLower, d.CertifyLower)
	set(&c.ProvisionalLower, d.ProvisionalLower)
	set(&c.MinValidShare, d.MinValidShare)
	setInt(&c.MinBucketQuestions, d.MinBucketQuestions)
	set(&c.MinWithoutJudge, d.MinWithoutJudge)
	set(&c.MinBucketUpper, d.MinBucketUpper)
	set(&c.MaxLengthDrop, d.MaxLengthDrop)
	setInt(&c.TestMinQuestions, d.TestMinQuestions)
	setInt(&c.TestMinBucketQuestions, d.TestMinBucketQuestions)
	if c.Version == "" && c.sameThresholds(d) {
		c.Version = d.Version
	}
	return c
}

func (c Config) sameThresholds(d Config) bool {
	c.Version = d.Version
	return c == d
}

// Validate reports the first field of c that is out of range, by its name.
func (c Config) Validate() error {
	switch {
	case c.Version == "":
		return fmt.Errorf("config: Version: thresholds differ from %s's; name their version", DefaultConfigVersion)
	case c.Version == DefaultConfigVersion && !c.sameThresholds(DefaultConfig()):
		return fmt.Errorf("config: Version: %s names the default thresholds; these differ", DefaultConfigVersion)
	case !(c.Alpha > 0 && c.Alpha < 0.5):
		return fmt.Errorf("config: Alpha: %v is not in (0, 0.5)", c.Alpha)
	case !(c.CertifyLower > 0 && c.CertifyLower < 1):
		return fmt.Errorf("config: CertifyLower: %v is not in (0, 1)", c.CertifyLower)
	case !(c.ProvisionalLower > 0 && c.ProvisionalLower <= c.CertifyLower):
		return fmt.Errorf("config: ProvisionalLower: %v is not in (0, CertifyLower]", c.ProvisionalLower)
	case !(c.MinValidShare > 0 && c.MinValidShare <= 1):
		return fmt.Errorf("config: MinValidShare: %v is not in (0, 1]", c.MinValidShare)
	case c.MinBucketQuestions < 2:
		return fmt.Errorf("config: MinBucketQuestions: %d is less than 2", c.MinBucketQuestions)
	case !(c.MinWithoutJudge > 0 && c.MinWithoutJudge < 1):
		return fmt.Errorf("config: MinWithoutJudge: %v is not in (0, 1)", c.MinWithoutJudge)
	case !(c.MinBucketUpper > 0 && c.MinBucketUpper < 1):
		return fmt.Errorf("config: MinBucketUpper: %v is not in (0, 1)", c.MinBucketUpper)
	case !(c.MaxLengthDrop > 0 && c.MaxLengthDrop < 1):
		return fmt.Errorf("config: MaxLengthDrop: %v is not in (0, 1)", c.MaxLengthDrop)
	case c.TestMinQuestions < 2:
		return fmt.Errorf("config: TestMinQuestions: %d is less than 2", c.TestMinQuestions)
	case c.TestMinBucketQuestions < 2:
		return fmt.Errorf("config: TestMinBucketQuestions: %d is less than 2", c.TestMinBucketQuestions)
	}
	return nil
}

// check is one gate comparison.
func check(figure, subject string, v Stat, atLeast bool, threshold float64) Check {
	c := Check{Figure: figure, Subject: subject, Value: v, Op: ">=", Threshold: threshold}
	if atLeast {
		c.Passed = v.Defined() && float64(v) >= threshold
	} else {
		c.Op = "<="
		c.Passed = v.Defined() && float64(v) <= threshold
	}
	return c
}

func gate(id, name string, checks ...Check) Gate {
	g := Gate{ID: id, Name: name, Passed: true, Checks: checks}
	for _, c := range checks {
		g.Passed = g.Passed && c.Passed
	}
	return g
}

// gates evaluates g1–g4 on a report whose figures are filled in.
func (r *Report) gates(c Config) []Gate {
	g1 := []Check{check("valid_share", "", Stat(float64(r.JudgmentsValid)/float64(max(r.JudgmentsPlanned, 1))), true, c.MinValidShare)}
	g3 := make([]Check, 0, len(r.Buckets))
	for _, b := range r.Buckets {
		g1 = append(g1, check("bucket_n", string(b.Bucket), Stat(b.N), true, float64(c.MinBucketQuestions)))
		g3 = append(g3, check("bucket_upper", string(b.Bucket), b.Upper, true, c.MinBucketUpper))
	}
	g2 := make([]Check, 0, len(r.Judges))
	for _, j := range r.Judges {
		g2 = append(g2, check("w_without_judge", j.Judge, j.WWithout, true, c.MinWithoutJudge))
	}
	return []Gate{
		gate("g1", "sample", g1...),
		gate("g2", "judges", g2...),
		gate("g3", "buckets", g3...),
		gate("g4", "length", check("length_drop", "", r.W-r.LengthControlledW, false, c.MaxLengthDrop)),
	}
}

// decide places the run on the ladder. The critical value is Bonferroni's
// for the attempt number k, t_{1−α/k}: after k attempts at true parity the
// chance that any of them certified is at most α.
func (r *Report) decide(c Config, est estimate) {
	r.CriticalValue, r.VerdictLower = NA, NA
	if est.SE.Defined() && est.DF >= 1 {
		r.CriticalValue = Stat(TQuantile(1-c.Alpha/float64(r.Attempt), float64(est.DF)))
		r.VerdictLower = r.W - r.CriticalValue*r.SE
	}
	switch {
	case !r.VerdictLower.Defined():
		r.Verdict, r.Reason = InsufficientSample, "too few scorable questions for a standard error"
		return
	case r.Kind == KindTest && r.N < c.TestMinQuestions:
		r.Verdict = InsufficientSample
		r.Reason = fmt.Sprintf("a test run shows a verdict from %d scorable questions; it has %d", c.TestMinQuestions, r.N)
		return
	case r.Kind == KindTest:
		for _, b := range r.Buckets {
			if b.N < c.TestMinBucketQuestions {
				r.Verdict = InsufficientSample
				r.Reason = fmt.Sprintf("a test run shows a verdict with %d scorable questions in every bucket; %s has %d",
					c.TestMinBucketQuestions, b.Bucket, b.N)
				return
			}
		}
	}
	bound := fmt.Sprintf("lower bound %.3f", float64(r.VerdictLower))
	if r.Attempt > 1 {
		bound += fmt.Sprintf(" (attempt %d)", r.Attempt)
	}
	switch {
	case float64(r.VerdictLower) >= c.CertifyLower:
		var failed []string
		for _, g := range r.Gates {
			if !g.Passed {
				failed = append(failed, g.ID+" ("+g.Name+")")
			}
		}
		if len(failed) == 0 {
			r.Verdict = Certified
			r.Reason = fmt.Sprintf("%s ≥ %.2f and every gate passes", bound, c.CertifyLower)
			return
		}
		r.Verdict = Provisional
		r.Reason = fmt.Sprintf("%s ≥ %.2f but gate %s failed", bound, c.CertifyLower, strings.Join(failed, ", "))
	case float64(r.VerdictLower) >= c.ProvisionalLower:
		r.Verdict = Provisional
		r.Reason = fmt.Sprintf("%s is in [%.2f, %.2f): non-inferior, superiority not shown", bound, c.ProvisionalLower, c.CertifyLower)
	default:
		r.Verdict = NotCertified
		r.Reason = fmt.Sprintf("%s < %.2f", bound, c.ProvisionalLower)
	}
}
