package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Stat is one figure of a report. It is NaN where the run's data do not
// define it (a standard error from one question, Fleiss' κ from one judge),
// and NaN is written as null in JSON and read back from null.
type Stat float64

// NA is the undefined figure.
var NA = Stat(math.NaN())

// Defined reports whether the figure has a value.
func (s Stat) Defined() bool { return !math.IsNaN(float64(s)) && !math.IsInf(float64(s), 0) }

// MarshalJSON writes the figure as a JSON number, or null when undefined.
func (s Stat) MarshalJSON() ([]byte, error) {
	if !s.Defined() {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(s), 'g', -1, 64), nil
}

// UnmarshalJSON reads a JSON number, or null as the undefined figure.
func (s *Stat) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*s = NA
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*s = Stat(f)
	return nil
}

// Verdict is the outcome of a run on the ladder.
type Verdict string

// Verdicts.
const (
	// Certified: the interval's lower bound is at least Config.CertifyLower
	// and every gate passes — better than the baseline at one-sided
	// α = Config.Alpha.
	Certified Verdict = "certified"
	// Provisional: the lower bound is in [ProvisionalLower, CertifyLower),
	// or at least CertifyLower with a gate failed — non-inferior within
	// five points, superiority not shown.
	Provisional Verdict = "provisional"
	// NotCertified: the lower bound is below ProvisionalLower.
	NotCertified Verdict = "not_certified"
	// InsufficientSample: the run is too small to show a verdict (a test
	// run under Config.TestMinQuestions, or any run whose standard error
	// is undefined).
	InsufficientSample Verdict = "insufficient_sample"
)

// Report is everything Score finds in a run. It is the stored result of a
// batch; its JSON field names are stable.
type Report struct {
	Kind     Kind     `json:"kind"`
	Protocol Protocol `json:"protocol"`
	// Verdict is the run's place on the ladder and Reason says why in a
	// sentence.
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	// Config is the thresholds the verdict was reached with, with their
	// version.
	Config Config `json:"config"`
	// Attempt is the attempt number the verdict was adjusted for;
	// CriticalValue the t quantile t_{1−α/Attempt} at DF; VerdictLower
	// the bound the ladder reads, W − CriticalValue·SE. On a first attempt
	// VerdictLower equals Lower.
	Attempt       int  `json:"attempt"`
	CriticalValue Stat `json:"critical_value"`
	VerdictLower  Stat `json:"verdict_lower"`

	// W is the question-weighted win rate (stratified by bucket); SE its
	// standard error clustered by template (CR1); Lower and Upper the
	// two-sided 95% interval W ∓ t_{0.975, DF}·SE; DF = clusters − buckets.
	W     Stat `json:"w"`
	SE    Stat `json:"se"`
	Lower Stat `json:"lower"`
	Upper Stat `json:"upper"`
	DF    int  `json:"df"`

	// Questions is the number of questions drawn, N the number scorable
	// (with at least one valid judgment), Clusters the number of clusters
	// among the scorable ones.
	Questions int `json:"questions"`
	N         int `json:"n"`
	Clusters  int `json:"clusters"`
	// JudgmentsPlanned is questions × judges × repeats; JudgmentsValid
	// those with a verdict; JudgmentsPerQuestion the mean number of valid
	// judgments of a scorable question.
	JudgmentsPlanned     int  `json:"judgments_planned"`
	JudgmentsValid       int  `json:"judgments_valid"`
	JudgmentsPerQuestion Stat `json:"judgments_per_question"`

	// Rho is the intra-question correlation of judgment scores (one-way
	// ANOVA within buckets); DesignEffect the variance ratio
	// (SE/NaiveSE)²; EffectiveSampleSize JudgmentsValid/DesignEffect, the
	// number of independent judgments the run was worth.
	Rho                 Stat `json:"rho"`
	DesignEffect        Stat `json:"design_effect"`
	EffectiveSampleSize Stat `json:"effective_sample_size"`
	// NaiveSE treats every judgment as independent; NaiveLower and
	// NaiveUpper are W ∓ t_{0.975}·NaiveSE. For contrast only: nothing
	// reads them.
	NaiveSE    Stat `json:"naive_se"`
	NaiveLower Stat `json:"naive_lower"`
	NaiveUpper Stat `json:"naive_upper"`

	// Buckets has one entry per bucket, light, medium, hard.
	Buckets []BucketReport `json:"buckets"`
	// Judges has one entry per judge, in Run.Judges order.
	Judges []JudgeReport `json:"judges"`

	// PositionConsistency is the share of swapped pairs (one judge, one
	// question, two repeats with the mode in different positions, both
	// valid) in which the judge found the same winner; PositionPairs is
	// how many pairs there were.
	PositionConsistency Stat `json:"position_consistency"`
	PositionPairs       int  `json:"position_pairs"`
	// FleissKappa is the judges' agreement on each (question, repeat).
	FleissKappa Stat `json:"fleiss_kappa"`
	// TieRate is the share of valid judgments that were ties (plurality:
	// votes for neither the mode nor the baseline); MissingRate the share
	// of planned judgments without a verdict.
	TieRate     Stat `json:"tie_rate"`
	MissingRate Stat `json:"missing_rate"`

	// MeanModeLength and MeanBaselineLength are over scorable questions.
	// LengthSlope is the change in a question's score per unit of
	// ln((mode length+1)/(baseline length+1)), within buckets;
	// LengthControlledW is W at equal lengths, W − LengthSlope·(mean log
	// ratio).
	MeanModeLength     Stat `json:"mean_mode_length"`
	MeanBaselineLength Stat `json:"mean_baseline_length"`
	LengthSlope        Stat `json:"length_slope"`
	LengthControlledW  Stat `json:"length_controlled_w"`

	// Verifiable is the programmatic check of verifiable items; absent
	// when the run had none.
	Verifiable *VerifiableReport `json:"verifiable,omitempty"`

	// Gates are g1–g4, each with the figures it read.
	Gates []Gate `json:"gates"`

	Provenance Provenance `json:"provenance"`
}

// BucketReport is the win rate within one bucket, with its own clustered
// interval (t with clusters − 1 degrees of freedom).
type BucketReport struct {
	Bucket Bucket `json:"bucket"`
	N      int    `json:"n"`
	W      Stat   `json:"w"`
	SE     Stat   `json:"se"`
	Lower  Stat   `json:"lower"`
	Upper  Stat   `json:"upper"`
}

// JudgeReport is one judge's figures.
type JudgeReport struct {
	Judge  string `json:"judge"`
	Family string `json:"family"`
	// Valid is the number of the judge's valid judgments.
	Valid int `json:"valid"`
	// W, Lower and Upper are the win rate from this judge's judgments
	// alone, with its 95% interval.
	W     Stat `json:"w"`
	Lower Stat `json:"lower"`
	Upper Stat `json:"upper"`
	// WWithout is the run's W with this judge's judgments left out.
	WWithout Stat `json:"w_without"`
	// PositionConsistency is this judge's share of consistent swapped
	// pairs.
	PositionConsistency Stat `json:"position_consistency"`
}

// VerifiableReport is the programmatic accuracy of the two answers on
// verifiable items, and their paired difference with its 95% interval
// (clustered and stratified like W).
type VerifiableReport struct {
	N                int  `json:"n"`
	ModeAccuracy     Stat `json:"mode_accuracy"`
	BaselineAccuracy Stat `json:"baseline_accuracy"`
	Difference       Stat `json:"difference"`
	SE               Stat `json:"se"`
	Lower            Stat `json:"lower"`
	Upper            Stat `json:"upper"`
}

// Gate is one of the gates g1–g4. A failed gate can only lower certified to
// provisional.
type Gate struct {
	// ID is g1, g2, g3 or g4.
	ID string `json:"id"`
	// Name says what the gate guards: sample, judges, buckets, length.
	Name   string  `json:"name"`
	Passed bool    `json:"passed"`
	Checks []Check `json:"checks"`
}

// Check is one comparison a gate made: Value Op Threshold.
type Check struct {
	// Figure names the value compared: valid_share, bucket_n,
	// w_without_judge, bucket_upper, length_drop.
	Figure string `json:"figure"`
	// Subject is the bucket or judge the figure is of, if any.
	Subject   string  `json:"subject,omitempty"`
	Value     Stat    `json:"value"`
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
	// Passed is false when Value is undefined.
	Passed bool `json:"passed"`
}
