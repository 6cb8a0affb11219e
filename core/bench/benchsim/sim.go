// Package benchsim simulates the judgments of test and certification runs
// from a known truth, for statistics only: no engines, no HTTP, no answers,
// just the verdicts a judge panel would return. With the truth known,
// Calibrate measures how often bench.Score's interval covers it and how
// often its ladder certifies, which is how docs/certify.md's operating
// characteristics are checked.
//
// # The model
//
// Every judgment is a latent preference for the mode's answer,
//
//	u = μ + σ_q·z_i + λ·d_i + ℓ_j + π·s + φ·f_j + ν_j·ε
//
// cut into a baseline win (u < −τ), a tie (|u| ≤ τ) or a mode win (u > τ).
// z_i is the question's own effect, shared by every judgment of the question
// (and, with TemplateShare, partly by the other question of its template);
// d_i the log ratio of the two answers' lengths and λ the judges' taste for
// length; ℓ_j judge j's leniency; s = +1 when the mode's answer is shown
// first and −1 when second, so π is a position bias; f_j = +1 when the judge
// is of a family among the mode's, −1 when of the baseline's, so φ is
// self-family preference; ν_j the judge's noise and ε standard normal.
// Judgments go missing at random with probability MissingRate.
//
// Under the plurality protocol with two answers (Config.Protocol) the
// judge votes for the mode's answer when u > 0 and for the baseline's
// otherwise: a vote names one answer, so there is no tie band, and the
// vote scores 1 or 0 on the pairwise scale (W = ½ + ½(share_mode −
// share_baseline) for one vote). A missing judgment is a reply the
// protocol could not read twice.
//
// New solves μ and σ_q so that the design's expected win rate equals W and
// the correlation of two judgments of one question equals Rho, both on the
// score scale (win 1, tie ½, loss 0) that bench.Score reads. That W is the
// quantity a run estimates: what this panel, with its biases, would find on
// average over the bank.
package benchsim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/conclavehq/conclave/core/bench"
)

// Judge is a simulated judge.
type Judge struct {
	bench.Judge
	// Noise is the standard deviation of the judge's noise on the latent
	// scale. Defaults to 1.
	Noise float64
	// Leniency is the judge's lean toward the mode on the latent scale
	// (negative: toward the baseline).
	Leniency float64
}

// CertifyJudges is the certification panel of the spec, one judge of each
// of three vendor families, with no leniency and unit noise.
func CertifyJudges() []Judge {
	return []Judge{
		{Judge: bench.Judge{ID: "nova_pro", Family: "amazon"}, Noise: 1},
		{Judge: bench.Judge{ID: "mistral_large", Family: "mistral"}, Noise: 1},
		{Judge: bench.Judge{ID: "llama4_maverick", Family: "meta"}, Noise: 1},
	}
}

// Config is the truth a simulator draws runs from.
type Config struct {
	// Kind is the kind of run drawn. Defaults to bench.KindCertify.
	Kind bench.Kind
	// Protocol is the judging protocol whose verdicts are drawn:
	// bench.Pairwise (win, tie or loss) or bench.Plurality (a vote for the
	// best of two answers, the mode's and the baseline's). Defaults to
	// bench.Pairwise.
	Protocol bench.Protocol
	// Questions is the number of questions per bucket, light, medium,
	// hard. Defaults to 50 each (a certification run).
	Questions [3]int
	// Judges is the panel. Defaults to CertifyJudges.
	Judges []Judge
	// Attempt is the attempt number the runs are scored as (see
	// bench.Run.Attempt). Defaults to 1.
	Attempt int
	// Repeats is how many times each judge sees each question: repeat 1
	// in a random order, repeat 2 swapped, later repeats random again; one
	// repeat shows each judge the mode first on half the questions.
	// Defaults to 2.
	Repeats int

	// W is the true win rate, in (0, 1). Defaults to 0.5 (parity).
	W float64
	// Rho is the true correlation of two judgments of one question on the
	// score scale, in (0, 1). Defaults to 0.5.
	Rho float64
	// TieWidth is τ, the half-width of the latent band read as a tie.
	// Zero means no ties; it must be zero under plurality, whose votes
	// never tie.
	TieWidth float64
	// PositionBias is π, the latent lean toward the answer shown first.
	PositionBias float64
	// SelfPreference is φ, the latent lean of a judge toward an answer from
	// its own vendor family.
	SelfPreference float64
	// ModeFamilies are the vendor families of the mode's engines;
	// BaselineFamily the baseline's.
	ModeFamilies   []string
	BaselineFamily string
	// MissingRate is the chance a judgment has no verdict, in [0, 1).
	MissingRate float64
	// TemplateShare, in [0, 1), pairs the questions of each bucket into
	// templates whose two items share this share of the question effect's
	// variance. Zero gives every question a template of its own.
	TemplateShare float64

	// BaselineLength is the median length of the baseline's answers.
	// Defaults to 400.
	BaselineLength float64
	// LengthLogRatio is the mean of ln(mode length / baseline length)
	// over questions; LengthSpread its standard deviation (Defaults to
	// 0.3).
	LengthLogRatio float64
	LengthSpread   float64
	// LengthBias is λ, the judges' latent lean per unit of that log ratio.
	LengthBias float64

	// VerifiableShare is the share of questions with a machine-checked
	// answer, in [0, 1].
	VerifiableShare float64
	// BaselineAccuracy is the baseline's chance of a correct answer on a
	// verifiable item, per bucket. Defaults to 0.9, 0.6, 0.3.
	BaselineAccuracy [3]float64
	// AccuracyLift is added to the baseline's chance for the mode's
	// (clamped to [0, 1]); the two answers are checked independently.
	AccuracyLift float64
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Kind == "" {
		c.Kind = bench.KindCertify
	}
	if c.Protocol == "" {
		c.Protocol = bench.Pairwise
	}
	if c.Questions == [3]int{} {
		c.Questions = [3]int{50, 50, 50}
	}
	if len(c.Judges) == 0 {
		c.Judges = CertifyJudges()
	}
	c.Judges = slices.Clone(c.Judges)
	for i := range c.Judges {
		if c.Judges[i].Noise == 0 {
			c.Judges[i].Noise = 1
		}
	}
	if c.Attempt == 0 {
		c.Attempt = 1
	}
	if c.Repeats == 0 {
		c.Repeats = 2
	}
	if c.W == 0 {
		c.W = 0.5
	}
	if c.Rho == 0 {
		c.Rho = 0.5
	}
	if c.BaselineLength == 0 {
		c.BaselineLength = 400
	}
	if c.LengthSpread == 0 {
		c.LengthSpread = 0.3
	}
	if c.BaselineAccuracy == [3]float64{} {
		c.BaselineAccuracy = [3]float64{0.9, 0.6, 0.3}
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Kind != bench.KindTest && c.Kind != bench.KindCertify:
		return fmt.Errorf("benchsim: Kind: %q is not test or certify", c.Kind)
	case c.Questions[0] < 0 || c.Questions[1] < 0 || c.Questions[2] < 0:
		return errors.New("benchsim: Questions: negative count")
	case c.Attempt < 1:
		return fmt.Errorf("benchsim: Attempt: %d is less than 1", c.Attempt)
	case c.Repeats < 1:
		return fmt.Errorf("benchsim: Repeats: %d is less than 1", c.Repeats)
	case !(c.W > 0 && c.W < 1):
		return fmt.Errorf("benchsim: W: %v is not in (0, 1)", c.W)
	case !(c.Rho > 0 && c.Rho < 1):
		return fmt.Errorf("benchsim: Rho: %v is not in (0, 1)", c.Rho)
	case c.Protocol != bench.Pairwise && c.Protocol != bench.Plurality:
		return fmt.Errorf("benchsim: Protocol: %q is not pairwise or plurality", c.Protocol)
	case c.TieWidth < 0:
		return fmt.Errorf("benchsim: TieWidth: %v is negative", c.TieWidth)
	case c.Protocol == bench.Plurality && c.TieWidth != 0:
		return fmt.Errorf("benchsim: TieWidth: %v, but a plurality vote names one answer and never ties", c.TieWidth)
	case !(c.MissingRate >= 0 && c.MissingRate < 1):
		return fmt.Errorf("benchsim: MissingRate: %v is not in [0, 1)", c.MissingRate)
	case !(c.TemplateShare >= 0 && c.TemplateShare < 1):
		return fmt.Errorf("benchsim: TemplateShare: %v is not in [0, 1)", c.TemplateShare)
	case !(c.VerifiableShare >= 0 && c.VerifiableShare <= 1):
		return fmt.Errorf("benchsim: VerifiableShare: %v is not in [0, 1]", c.VerifiableShare)
	case c.BaselineLength < 1 || c.LengthSpread < 0:
		return errors.New("benchsim: BaselineLength must be at least 1 and LengthSpread not negative")
	}
	for i, j := range c.Judges {
		if j.Noise <= 0 {
			return fmt.Errorf("benchsim: Judges[%d].Noise: %v is not positive", i, j.Noise)
		}
	}
	return nil
}

// Truth is what a simulator's runs estimate, and the latent parameters that
// make it so.
type Truth struct {
	// W and Rho are the configured win rate and intra-question
	// correlation.
	W, Rho float64
	// Mean is μ and QuestionSD σ_q of the model, as solved.
	Mean, QuestionSD float64
	// LengthControlledW is the design's win rate had every pair of
	// answers been of equal length.
	LengthControlledW float64
	// AccuracyDifference is the expected difference between the mode's
	// and the baseline's accuracy on verifiable items.
	AccuracyDifference float64
}

// Sim draws runs from one truth. It is safe for concurrent use: Run reads
// only its own random source.
type Sim struct {
	cfg   Config
	truth Truth
	self  []float64 // f_j per judge
}

// New validates cfg (after WithDefaults) and solves the latent model for
// its W and Rho.
func New(cfg Config) (*Sim, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg, self: make([]float64, len(cfg.Judges))}
	for j, jd := range cfg.Judges {
		if slices.Contains(cfg.ModeFamilies, jd.Family) {
			s.self[j]++
		}
		if jd.Family == cfg.BaselineFamily {
			s.self[j]--
		}
	}
	if err := s.solve(); err != nil {
		return nil, err
	}
	return s, nil
}

// Truth is the truth the simulator draws from.
func (s *Sim) Truth() Truth { return s.truth }

// Config is the simulator's configuration, defaults filled in.
func (s *Sim) Config() Config { return s.cfg }

// Run draws one run.
func (s *Sim) Run(rng *rand.Rand) *bench.Run {
	c := &s.cfg
	nq := c.Questions[0] + c.Questions[1] + c.Questions[2]
	run := &bench.Run{
		Kind:      c.Kind,
		Protocol:  c.Protocol,
		Attempt:   c.Attempt,
		Repeats:   c.Repeats,
		Questions: make([]bench.Question, 0, nq),
		Judgments: make([]bench.Judgment, 0, nq*len(c.Judges)*c.Repeats),
	}
	if c.Protocol == bench.Plurality {
		run.Answers = 2
	}
	for _, j := range c.Judges {
		run.Judges = append(run.Judges, j.Judge)
	}
	t := &s.truth
	shared := math.Sqrt(c.TemplateShare)
	own := math.Sqrt(1 - c.TemplateShare)
	latent := make([]float64, 0, nq)
	var templateEffect float64
	for b, bucket := range bench.Buckets {
		for k := range c.Questions[b] {
			q := bench.Question{Bucket: bucket}
			z := rng.NormFloat64()
			if c.TemplateShare > 0 {
				if k%2 == 0 {
					templateEffect = rng.NormFloat64()
				}
				q.Template = string(bucket) + "-" + strconv.Itoa(k/2)
				z = shared*templateEffect + own*z
			}
			d := c.LengthLogRatio + c.LengthSpread*rng.NormFloat64()
			base := c.BaselineLength * math.Exp(0.5*rng.NormFloat64())
			q.BaselineLength = max(1, int(math.Round(base)))
			q.ModeLength = max(1, int(math.Round(base*math.Exp(d))))
			if rng.Float64() < c.VerifiableShare {
				p := c.BaselineAccuracy[b]
				q.Verifiable = true
				q.BaselineCorrect = rng.Float64() < p
				q.ModeCorrect = rng.Float64() < clamp01(p+c.AccuracyLift)
			}
			run.Questions = append(run.Questions, q)
			latent = append(latent, t.Mean+t.QuestionSD*z+c.LengthBias*d)
		}
	}
	first := make([]bool, nq)
	for j, jd := range c.Judges {
		for r := 1; r <= c.Repeats; r++ {
			switch {
			case r == 1 && c.Repeats == 1:
				// Half the questions, at random, with the mode first.
				for i := range first {
					first[i] = i < nq/2
				}
				rng.Shuffle(nq, func(a, b int) { first[a], first[b] = first[b], first[a] })
			case r == 2:
				for i := range first {
					first[i] = !first[i]
				}
			default:
				for i := range first {
					first[i] = rng.IntN(2) == 0
				}
			}
			shift := jd.Leniency + c.SelfPreference*s.self[j]
			for i := range nq {
				jm := bench.Judgment{Question: i, Judge: jd.ID, Repeat: r, ModePosition: 2}
				u := latent[i] + shift - c.PositionBias
				if first[i] {
					jm.ModePosition = 1
					u += 2 * c.PositionBias
				}
				u += jd.Noise * rng.NormFloat64()
				missing := rng.Float64() < c.MissingRate
				if c.Protocol == bench.Plurality {
					run.Judgments = append(run.Judgments, vote(jm, u, missing))
					continue
				}
				switch {
				case missing:
					jm.Outcome = bench.Missing
				case u > c.TieWidth:
					jm.Outcome = bench.ModeWin
				case u < -c.TieWidth:
					jm.Outcome = bench.BaselineWin
				default:
					jm.Outcome = bench.Tie
				}
				run.Judgments = append(run.Judgments, jm)
			}
		}
	}
	return run
}

// vote is a pairwise judgment jm as a plurality judgment of two answers:
// the baseline in the other position, and a vote for the mode's position
// when the latent preference u is positive, else for the baseline's; no
// vote when missing.
func vote(jm bench.Judgment, u float64, missing bool) bench.Judgment {
	jm.BaselinePosition = 3 - jm.ModePosition
	switch {
	case missing:
	case u > 0:
		jm.Vote = jm.ModePosition
	default:
		jm.Vote = jm.BaselinePosition
	}
	return jm
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }
