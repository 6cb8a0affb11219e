package runs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// Launch limits (the spec's Limits table).
const (
	// MaxPerBucket is the most questions one bucket (or difficulty) of a
	// test run asks for; the least is 1.
	MaxPerBucket = 100
	// MaxQuestions is the most questions one test run asks, over every
	// bucket and tier.
	MaxQuestions = 300
	// MaxRepeats is the most times each judge reads each question.
	MaxRepeats = 3
	// CertifyPerBucket is how many questions of each bucket a certification
	// asks; CertifyRepeats how many times each of the three judges reads
	// each.
	CertifyPerBucket = 50
	CertifyRepeats   = 2
)

// TestRequest is the body of POST /v1/tests — the run_test tool's
// arguments — as sent. Every field is kept raw so that each is checked
// against its own code (invalid_bucket_count for a count that is not a
// whole number, say) rather than failing the body's decoding.
type TestRequest struct {
	Model json.RawMessage `json:"model"`
	// The bucket form.
	Buckets json.RawMessage `json:"buckets"`
	// The questions form.
	Questions json.RawMessage `json:"questions"`
	Tiers     json.RawMessage `json:"tiers"`
	PunchUp   json.RawMessage `json:"punch_up"`
	// Both forms.
	Judges          json.RawMessage `json:"judges"`
	JudgeRepeats    json.RawMessage `json:"judge_repeats"`
	JudgingProtocol json.RawMessage `json:"judging_protocol"`
	DryRun          json.RawMessage `json:"dry_run"`
}

// CertifyRequest is the body of POST /v1/certify as sent.
type CertifyRequest struct {
	Model  json.RawMessage `json:"model"`
	DryRun json.RawMessage `json:"dry_run"`
}

// Form is which form of the test request a launch used.
type Form string

// Request forms.
const (
	FormBuckets   Form = "buckets"
	FormQuestions Form = "questions"
	// FormCertify is a certification's fixed plan.
	FormCertify Form = "certify"
)

// Plan is a launch's request as accepted: validated, defaults filled in,
// in a canonical order (its JSON is what a repeat of an Idempotency-Key is
// compared by, and what a batch keeps as its request).
type Plan struct {
	Kind  Kind   `json:"kind"`
	Model string `json:"model"`
	Form  Form   `json:"form"`
	// Counts are the questions drawn per bucket; each is asked at every
	// tier.
	Counts   map[Bucket]int `json:"counts"`
	Tiers    []core.Tier    `json:"tiers"`
	PunchUp  bool           `json:"punch_up"`
	Judges   []Judge        `json:"judges"`
	Repeats  int            `json:"judge_repeats"`
	Protocol Protocol       `json:"judging_protocol"`
	DryRun   bool           `json:"-"`
}

// Drawn is how many questions the plan draws from the bank.
func (p *Plan) Drawn() int {
	n := 0
	for _, c := range p.Counts {
		n += c
	}
	return n
}

// Total is how many questions the batch runs: every drawn question at
// every tier.
func (p *Plan) Total() int { return p.Drawn() * len(p.Tiers) }

// PerBucket is how many questions of bucket b the batch runs.
func (p *Plan) PerBucket(b Bucket) int { return p.Counts[b] * len(p.Tiers) }

// ParseTest validates a test launch, answering the first refusal with its
// code: invalid_model, invalid_buckets, invalid_bucket,
// invalid_bucket_count, invalid_questions, invalid_difficulty,
// invalid_question_count, invalid_tiers, invalid_punch_up,
// too_many_questions, invalid_judges, and launch_refused for a body that
// mixes the two forms, a judge_repeats outside 1–3, an unknown
// judging_protocol or a dry_run that is not a boolean. docs/tests.md
// describes both forms.
func ParseTest(r *TestRequest) (*Plan, error) {
	p := &Plan{Kind: KindTest, Tiers: []core.Tier{core.DefaultTier}, Judges: Judges, Repeats: 1, Protocol: ProtocolPairwise}
	var err error
	if p.Model, err = parseModel(r.Model); err != nil {
		return nil, err
	}
	switch {
	case present(r.Buckets) && present(r.Questions):
		return nil, core.Errorf(core.CodeLaunchRefused,
			"Send either buckets (light, medium, hard) or questions (easy, medium, hard), not both.").WithParam("questions")
	case present(r.Questions):
		p.Form = FormQuestions
		if p.Counts, err = parseCounts(r.Questions, questionsForm); err != nil {
			return nil, err
		}
	default:
		p.Form = FormBuckets
		if p.Counts, err = parseCounts(r.Buckets, bucketsForm); err != nil {
			return nil, err
		}
	}
	if present(r.Tiers) {
		if p.Tiers, err = parseTiers(r.Tiers); err != nil {
			return nil, err
		}
	}
	if present(r.PunchUp) {
		if p.PunchUp, err = parseBool(r.PunchUp); err != nil {
			return nil, core.Errorf(core.CodeInvalidPunchUp, "punch_up is true or false.").WithParam("punch_up")
		}
	}
	if total := p.Total(); total > MaxQuestions {
		return nil, core.Errorf(core.CodeTooManyQuestions,
			"The run asks for %d questions (%d drawn, each at %d tiers); a test run asks at most %d.",
			total, p.Drawn(), len(p.Tiers), MaxQuestions).WithParam(string(p.Form))
	}
	if present(r.Judges) {
		if p.Judges, err = parseJudges(r.Judges); err != nil {
			return nil, err
		}
	}
	if present(r.JudgeRepeats) {
		n, ok := wholeNumber(r.JudgeRepeats)
		if !ok || n < 1 || n > MaxRepeats {
			return nil, core.Errorf(core.CodeLaunchRefused, "judge_repeats is a whole number from 1 to %d.", MaxRepeats).WithParam("judge_repeats")
		}
		p.Repeats = int(n)
	}
	if present(r.JudgingProtocol) {
		var s string
		if json.Unmarshal(r.JudgingProtocol, &s) != nil || (Protocol(s) != ProtocolPairwise && Protocol(s) != ProtocolPlurality) {
			return nil, core.Errorf(core.CodeLaunchRefused, "judging_protocol is pairwise or plurality.").WithParam("judging_protocol")
		}
		p.Protocol = Protocol(s)
	}
	if p.DryRun, err = parseDryRun(r.DryRun); err != nil {
		return nil, err
	}
	return p, nil
}

// ParseCertify validates a certification launch: invalid_model, or
// launch_refused for a dry_run that is not a boolean. The plan is fixed:
// 50 questions of each bucket, the three judges, two repeats, pairwise, at
// the tier Service.Certify picks for the mode.
func ParseCertify(r *CertifyRequest) (*Plan, error) {
	p := &Plan{
		Kind: KindCertify, Form: FormCertify, Tiers: []core.Tier{core.DefaultTier}, Judges: Judges,
		Repeats: CertifyRepeats, Protocol: ProtocolPairwise,
		Counts: map[Bucket]int{BucketLight: CertifyPerBucket, BucketMedium: CertifyPerBucket, BucketHard: CertifyPerBucket},
	}
	var err error
	if p.Model, err = parseModel(r.Model); err != nil {
		return nil, err
	}
	if p.DryRun, err = parseDryRun(r.DryRun); err != nil {
		return nil, err
	}
	return p, nil
}

// present reports whether a field was sent with a value (not left out and
// not null).
func present(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && !bytes.Equal(b, []byte("null"))
}

func parseModel(raw json.RawMessage) (string, error) {
	var s string
	if !present(raw) || json.Unmarshal(raw, &s) != nil || strings.TrimSpace(s) == "" {
		return "", core.Errorf(core.CodeInvalidModel, "Send model: the identifier of a mode your organisation owns, as GET /v1/models lists it.").WithParam("model")
	}
	return s, nil
}

func parseBool(raw json.RawMessage) (bool, error) {
	var v bool
	err := json.Unmarshal(raw, &v)
	return v, err
}

func parseDryRun(raw json.RawMessage) (bool, error) {
	if !present(raw) {
		return false, nil
	}
	v, err := parseBool(raw)
	if err != nil {
		return false, core.Errorf(core.CodeLaunchRefused, "dry_run is true or false.").WithParam("dry_run")
	}
	return v, nil
}

// wholeNumber reads a JSON number written as a whole number ("3", not
// "3.0" or "3e0").
func wholeNumber(raw json.RawMessage) (int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return n, err == nil
}

// countForm is what differs between the two forms' counts: the field, the
// names of its keys, and its codes.
type countForm struct {
	field                   string
	names                   map[string]Bucket
	missing, unknown, count core.Code
	what                    string
}

var (
	bucketsForm = countForm{
		field: "buckets", what: "bucket",
		names:   map[string]Bucket{"light": BucketLight, "medium": BucketMedium, "hard": BucketHard},
		missing: core.CodeInvalidBuckets, unknown: core.CodeInvalidBucket, count: core.CodeInvalidBucketCount,
	}
	questionsForm = countForm{
		field: "questions", what: "difficulty",
		names:   map[string]Bucket{"easy": BucketLight, "medium": BucketMedium, "hard": BucketHard},
		missing: core.CodeInvalidQuestions, unknown: core.CodeInvalidDifficulty, count: core.CodeInvalidQuestionCount,
	}
)

// keys lists the form's key names in bucket order.
func (f countForm) keys() string {
	names := make([]string, len(Buckets))
	for name, b := range f.names {
		names[slices.Index(Buckets, b)] = name
	}
	return strings.Join(names, ", ")
}

// parseCounts reads the counts of either form: a non-empty object from the
// form's key names to whole numbers 1–100. Keys are checked in a sorted
// order, so the same body is always refused alike.
func parseCounts(raw json.RawMessage, f countForm) (map[Bucket]int, error) {
	var obj map[string]json.RawMessage
	if !present(raw) || json.Unmarshal(raw, &obj) != nil || len(obj) == 0 {
		return nil, core.Errorf(f.missing, "Send %s: an object from %s to question counts, at least one of them.", f.field, f.keys()).WithParam(f.field)
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	slices.Sort(names)
	counts := map[Bucket]int{}
	for _, name := range names {
		b, ok := f.names[name]
		if !ok {
			return nil, core.Errorf(f.unknown, "%q is not a %s: name %s.", name, f.what, f.keys()).WithParam(f.field + "." + name)
		}
		n, ok := wholeNumber(obj[name])
		if !ok || n < 1 || n > MaxPerBucket {
			return nil, core.Errorf(f.count, "%s.%s is a whole number from 1 to %d.", f.field, name, MaxPerBucket).WithParam(f.field + "." + name)
		}
		counts[b] = int(n)
	}
	return counts, nil
}

// parseTiers reads tiers: a non-empty list, without repeats, from free (or
// its other name, experience), plus and pro; kept lowest first.
func parseTiers(raw json.RawMessage) ([]core.Tier, error) {
	refuse := core.Errorf(core.CodeInvalidTiers, "tiers is a non-empty list from free, plus and pro, each named once (experience is another name for free).").WithParam("tiers")
	var names []string
	if json.Unmarshal(raw, &names) != nil || len(names) == 0 {
		return nil, refuse
	}
	var tiers []core.Tier
	for _, name := range names {
		t := core.Tier(name)
		if name == "free" {
			t = core.TierExperience
		}
		if !t.Valid() || slices.Contains(tiers, t) {
			return nil, refuse
		}
		tiers = append(tiers, t)
	}
	slices.SortFunc(tiers, func(a, b core.Tier) int { return a.Rank() - b.Rank() })
	return tiers, nil
}

// parseJudges reads judges: a non-empty list of the three judges' names,
// each once; kept in the spec's order.
func parseJudges(raw json.RawMessage) ([]Judge, error) {
	var names []string
	if json.Unmarshal(raw, &names) != nil || len(names) == 0 {
		return nil, invalidJudges("judges is a non-empty list")
	}
	seen := map[Judge]bool{}
	for _, name := range names {
		j := Judge(name)
		if !slices.Contains(Judges, j) {
			return nil, invalidJudges(fmt.Sprintf("%q is not a judge", name))
		}
		if seen[j] {
			return nil, invalidJudges(fmt.Sprintf("%q is named twice", name))
		}
		seen[j] = true
	}
	var out []Judge
	for _, j := range Judges {
		if seen[j] {
			out = append(out, j)
		}
	}
	return out, nil
}

func invalidJudges(why string) *core.Error {
	return core.Errorf(core.CodeInvalidJudges, "%s: judges are named from nova_pro, mistral_large and llama4_maverick; leave judges out for all three.", why).WithParam("judges")
}
