package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"sync"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/bank"
	"github.com/conclavehq/conclave/core/classify"
)

// Buckets: how hard a question is, as the question bank labels it. The
// simulator takes a question's bucket from a bucket= directive, else from
// the question bank when the question is a bank item, else from its depth
// under core/classify's heuristic (light, medium, deep → hard).
const (
	BucketLight  = "light"
	BucketMedium = "medium"
	BucketHard   = "hard"
)

var buckets = []string{BucketLight, BucketMedium, BucketHard}

// taskTypes are the task types Skill.TaskType may name: core/classify's.
var taskTypes = []string{
	classify.TaskArithmetic, classify.TaskLookup, classify.TaskFormatting, classify.TaskVerbatim,
	classify.TaskCode, classify.TaskCreative, classify.TaskAnalysis, classify.TaskJudgement,
	classify.TaskOpenQuestion,
}

// Kinds of answer the simulator remembers.
const (
	// KindAnswer is an answer to the question itself.
	KindAnswer = "answer"
	// KindRevision is an answer revised after reading others' (a critique
	// round).
	KindRevision = "revision"
	// KindSynthesis is one answer written from several (the panel's
	// synthesis).
	KindSynthesis = "synthesis"
)

// Skill is an engine's latent skill, on the scale the simulated judges
// compare answers on: an answer's quality is the skill for the question's
// bucket, plus the offset for its task type, plus the answer's own noise
// (QualityConfig.AnswerNoise). A difference of 1 in quality between two
// answers makes a judge with the default noise prefer the better one with
// probability σ(1) ≈ 0.73. Only differences matter; 0 is the quality of an
// answer the simulator did not write.
type Skill struct {
	Light, Medium, Hard float64
	// TaskType adds to the bucket's skill for questions of a task type
	// (core/classify's: arithmetic, lookup, formatting, verbatim, code,
	// creative, analysis, judgement, open_question). Nil adds nothing.
	TaskType map[string]float64
}

// For is the skill on a question of the bucket and task type.
func (k Skill) For(bucket, taskType string) float64 {
	return byBucket(bucket, k.Light, k.Medium, k.Hard) + k.TaskType[taskType]
}

// byBucket is the value of the three for the bucket; a bucket it does not
// know is medium.
func byBucket(bucket string, light, medium, hard float64) float64 {
	switch bucket {
	case BucketLight:
		return light
	case BucketHard:
		return hard
	}
	return medium
}

func (k Skill) validate() error {
	for _, v := range []float64{k.Light, k.Medium, k.Hard} {
		if !finite(v) {
			return fieldError("Skill", "values must be finite")
		}
	}
	for t, v := range k.TaskType {
		if !contains(taskTypes, t) {
			return fieldError("Skill.TaskType", fmt.Sprintf("unknown task type %q", t))
		}
		if !finite(v) {
			return fieldError(fmt.Sprintf("Skill.TaskType[%q]", t), "must be finite")
		}
	}
	return nil
}

// QualityConfig is the simulator's quality model: how good the answers it
// writes are. Every field's zero value is its default.
type QualityConfig struct {
	// AnswerNoise is the standard deviation of an answer's quality around
	// its engine's skill; each (engine, question, seed) draws its own
	// deviation, so an engine answers some questions better than others. A
	// negative value means none: every answer sits at its engine's skill.
	// Defaults to 1.
	AnswerNoise float64
	// SynthesisLift is added to the quality of a synthesis (the panel's one
	// answer, written from the seats' answers): positive for deliberation
	// that improves on its seats, negative for deliberation that loses.
	// Defaults to 0.
	SynthesisLift float64
	// SynthesisBest is the weight of the best seat answer in a synthesis's
	// quality, 0 to 1: the synthesis is worth
	// SynthesisBest·max + (1 − SynthesisBest)·mean of the qualities of the
	// answers it read, plus SynthesisLift. Defaults to 0: the mean.
	SynthesisBest float64
	// Difficulty is, per bucket, how hard the question bank's verifiable
	// items are: an answer of quality q to one states the right final
	// answer with probability σ(q − difficulty) (PCorrect). Defaults to
	// DefaultDifficulty when nil.
	Difficulty *Difficulty
}

func (q QualityConfig) withDefaults() QualityConfig {
	switch {
	case q.AnswerNoise == 0:
		q.AnswerNoise = 1
	case q.AnswerNoise < 0:
		q.AnswerNoise = 0
	}
	return q
}

func (q QualityConfig) validate() error {
	switch {
	case !finite(q.AnswerNoise):
		return fieldError("Quality.AnswerNoise", "must be finite")
	case !finite(q.SynthesisLift):
		return fieldError("Quality.SynthesisLift", "must be finite")
	case !(q.SynthesisBest >= 0 && q.SynthesisBest <= 1):
		return fieldError("Quality.SynthesisBest", "want 0 to 1")
	case q.Difficulty != nil:
		return q.Difficulty.validate()
	}
	return nil
}

// synthesize is the quality of a synthesis of answers of the qualities qs.
func (q QualityConfig) synthesize(qs []float64) float64 {
	if len(qs) == 0 {
		return q.SynthesisLift
	}
	best, sum := qs[0], 0.0
	for _, v := range qs {
		best = max(best, v)
		sum += v
	}
	mean := sum / float64(len(qs))
	return q.SynthesisBest*best + (1-q.SynthesisBest)*mean + q.SynthesisLift
}

// AnswerRecord is what the simulator remembers of an answer it wrote, and
// its judges read: which engine wrote it and how good it is.
type AnswerRecord struct {
	// Engine is the model id that wrote the answer ("atlas").
	Engine string
	// Family is that engine's family (EngineProfile.Family); "" when it has
	// none.
	Family string
	// Quality is the answer's latent quality.
	Quality float64
	// Kind is KindAnswer, KindRevision or KindSynthesis.
	Kind string
	// Bucket and TaskType are the question's, as the quality draw read them.
	Bucket, TaskType string
	// Verifiable is true for an answer to a verifiable item of the question
	// bank; Correct then says whether its final answer is the item's
	// reference answer (drawn with probability QualityConfig.PCorrect).
	Verifiable, Correct bool
}

// less orders records, so that when two engines write the same text the
// one remembered does not depend on which call finished first.
func (r AnswerRecord) less(o AnswerRecord) bool {
	switch {
	case r.Engine != o.Engine:
		return r.Engine < o.Engine
	case r.Kind != o.Kind:
		return r.Kind < o.Kind
	}
	return r.Quality < o.Quality
}

// answerKey is the key of an answer text: a hash of its normalised words,
// so that the whitespace, case and markdown a host's anonymisation changes
// do not hide an answer from the judges.
type answerKey [16]byte

func keyOf(text string) answerKey {
	h := fnv.New128a()
	_, _ = h.Write([]byte(normalizeText(text)))
	var k answerKey
	h.Sum(k[:0])
	return k
}

// normalizeText is the text's words — runs of letters, digits and non-ASCII
// bytes — lower-cased and joined by single spaces.
func normalizeText(s string) string {
	out := make([]byte, 0, len(s))
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80 {
			if !in && len(out) > 0 {
				out = append(out, ' ')
			}
			out = append(out, c)
			in = true
			continue
		}
		in = false
	}
	return string(out)
}

// memoGeneration is how many answers one generation of the memo holds. The
// memo keeps two generations, so it remembers at least the last
// memoGeneration answers and at most twice as many — a certification run
// writes about 1,500.
const memoGeneration = 1 << 16

// memo remembers the answers the simulator wrote. It is safe for
// concurrent use.
type memo struct {
	mu       sync.Mutex
	cur, old map[answerKey]AnswerRecord
}

func (m *memo) put(text string, r AnswerRecord) {
	k := keyOf(text)
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.cur[k]; ok && !r.less(prev) {
		return
	}
	if m.cur == nil || len(m.cur) >= memoGeneration {
		m.old, m.cur = m.cur, make(map[answerKey]AnswerRecord)
	}
	m.cur[k] = r
}

func (m *memo) get(text string) (AnswerRecord, bool) {
	k := keyOf(text)
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.cur[k]; ok {
		return r, true
	}
	r, ok := m.old[k]
	return r, ok
}

// Answer looks up an answer this server wrote by its text, compared after
// normalisation (case, whitespace and punctuation, markdown included, are
// ignored). It is how a test learns the truth its judges see: the answer's
// quality, engine and family. Answers given by an answer= directive are
// not remembered.
func (s *Server) Answer(text string) (AnswerRecord, bool) { return s.memo.get(text) }

// questionClass is a question's bucket and task type: the bucket a
// directive names, else the question bank's bucket for one of its items,
// else the heuristic classifier's depth.
func (s *Server) questionClass(ctx context.Context, qkey, question, bucket string) (string, string) {
	c, ok := s.classes.get(qkey)
	if !ok {
		c = classOf(ctx, question)
		if it, ok := bankItem(question); ok {
			c.bucket = string(it.Bucket)
		}
		s.classes.put(qkey, c)
	}
	if bucket != "" {
		c.bucket = bucket
	}
	return c.bucket, c.taskType
}

// class is how the heuristic classifier reads a question.
type class struct{ bucket, taskType string }

func classOf(ctx context.Context, question string) class {
	res, err := classify.Heuristic{}.Classify(ctx, []core.Message{{Role: core.RoleUser, Content: question}})
	if err != nil { // the heuristic never fails
		return class{BucketMedium, classify.TaskOpenQuestion}
	}
	switch res.Depth {
	case core.DepthLight:
		return class{BucketLight, res.TaskType}
	case core.DepthDeep:
		return class{BucketHard, res.TaskType}
	}
	return class{BucketMedium, res.TaskType}
}

// classCache remembers the classes of recent questions: every seat, its
// revision and the synthesis ask about one question, and the classifier's
// regular expressions are the costliest part of a simulated call. It keeps
// two generations of classGeneration questions and is safe for concurrent
// use.
type classCache struct {
	mu       sync.Mutex
	cur, old map[string]class
}

const classGeneration = 1 << 12

func (c *classCache) get(k string) (class, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.cur[k]; ok {
		return v, true
	}
	v, ok := c.old[k]
	return v, ok
}

func (c *classCache) put(k string, v class) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || len(c.cur) >= classGeneration {
		c.old, c.cur = c.cur, make(map[string]class)
	}
	c.cur[k] = v
}

// answerRecord is the record of an answer model writes to question: its
// quality is the engine's skill for the question plus the deviation drawn
// for (seed, model, question). A revision of the answer keeps its quality,
// and its correctness.
func (s *Server) answerRecord(ctx context.Context, model string, prof EngineProfile, question, bucket, kind string) *AnswerRecord {
	qkey := questionKey(question)
	b, t := s.questionClass(ctx, qkey, question, bucket)
	z := seeded(s.cfg.Seed, "quality", model, qkey).NormFloat64()
	r := &AnswerRecord{
		Engine: model, Family: prof.Family, Kind: kind, Bucket: b, TaskType: t,
		Quality: prof.Skill.For(b, t) + s.quality.AnswerNoise*z,
	}
	s.drawCorrect(r, model, question, KindAnswer)
	return r
}

// synthesisRecord is the record of a synthesis of the answers in blocks:
// QualityConfig.synthesize of their qualities, 0 for an answer the
// simulator did not write.
func (s *Server) synthesisRecord(ctx context.Context, model string, prof EngineProfile, question, bucket string, blocks []answerBlock) *AnswerRecord {
	qs := make([]float64, len(blocks))
	for i, b := range blocks {
		if r, ok := s.memo.get(b.text); ok {
			qs[i] = r.Quality
		}
	}
	qkey := questionKey(question)
	bk, t := s.questionClass(ctx, qkey, question, bucket)
	r := &AnswerRecord{
		Engine: model, Family: prof.Family, Kind: KindSynthesis, Bucket: bk, TaskType: t,
		Quality: s.quality.synthesize(qs),
	}
	s.drawCorrect(r, model, question, KindSynthesis)
	return r
}

// drawCorrect marks a record of an answer to a verifiable bank item as
// such and draws whether its final answer is right: with probability
// PCorrect of its quality, from (seed, model, item, draw), so that a
// revision, drawing as its answer did, stays right or wrong with it.
func (s *Server) drawCorrect(r *AnswerRecord, model, question, draw string) {
	it, ok := bankItem(question)
	if !ok || it.Kind != bank.Verifiable {
		return
	}
	r.Verifiable = true
	r.Correct = seeded(s.cfg.Seed, "correct", model, it.ID, draw).Float64() < s.quality.PCorrect(r.Quality, r.Bucket)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
