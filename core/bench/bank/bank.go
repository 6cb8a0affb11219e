package bank

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Version is the bank version this build serves. Any change to a generator,
// a checker's reading of an answer, a curated item or the draw bumps it (a
// test pins a digest of every item of the version); other versions are
// refused with ErrUnknownVersion, never approximated.
const Version = "v2"

// PerFamily is how many items every verifiable template family contributes
// to each bucket it serves.
const PerFamily = 8

// MaxPerTemplate is how many items one draw takes from a template family.
const MaxPerTemplate = 2

// Errors callers branch on.
var (
	// ErrUnknownVersion: the version is not the one this build serves.
	ErrUnknownVersion = errors.New("bank: unknown bank version")
	// ErrUnknownItem: an id that names no item of the bank.
	ErrUnknownItem = errors.New("bank: unknown item")
	// ErrPoolTooSmall: a draw asked a bucket for more items than its pool
	// gives at MaxPerTemplate items per template family.
	ErrPoolTooSmall = errors.New("bank: pool too small for the draw")
	// ErrBadCount: a negative count, or a draw of nothing.
	ErrBadCount = errors.New("bank: bad draw count")
)

// Bucket is a difficulty stratum of the bank.
type Bucket string

// The buckets.
const (
	Light  Bucket = "light"
	Medium Bucket = "medium"
	Hard   Bucket = "hard"
)

// Buckets lists the buckets, lightest first.
var Buckets = []Bucket{Light, Medium, Hard}

// ParseBucket reads a bucket name, including the names other parts of the
// spec use for the same strata: "easy" is light, "deep" is hard.
func ParseBucket(s string) (Bucket, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "light", "easy":
		return Light, true
	case "medium":
		return Medium, true
	case "hard", "deep":
		return Hard, true
	}
	return "", false
}

// level is the bucket as the generators' difficulty parameter: 1, 2 or 3.
func (b Bucket) level() int {
	switch b {
	case Light:
		return 1
	case Medium:
		return 2
	case Hard:
		return 3
	}
	return 0
}

// Kind says how an item is scored.
type Kind string

// Kinds.
const (
	// Verifiable items have a machine-checked answer and a checker.
	Verifiable Kind = "verifiable"
	// Open items are judged only; they carry a note of what a good answer
	// covers.
	Open Kind = "open"
)

// TaskType is the kind of work an item asks for.
type TaskType string

// Task types.
const (
	TaskArithmetic  TaskType = "arithmetic"   // multi-step sums, counting, probability
	TaskConversion  TaskType = "conversion"   // units and temperatures
	TaskDates       TaskType = "dates"        // calendar arithmetic
	TaskWordProblem TaskType = "word_problem" // rates, mixtures, ages, coins
	TaskLogic       TaskType = "logic"        // knights and knaves, logic grids, orderings
	TaskPlanning    TaskType = "planning"     // routes, schedules, packing; plans under constraints
	TaskDecision    TaskType = "decision"     // trade-off decisions
	TaskCritique    TaskType = "critique"     // critiques of an argument
	TaskUnknowable  TaskType = "unknowable"   // the honest answer is "not enough information"
)

// Item is one question of the bank. Items are plain values, safe to share
// between goroutines.
type Item struct {
	// ID is "<version>/<bucket>/<family>/<index>", e.g. "v2/medium/knights/3";
	// Lookup turns it back into the item.
	ID      string `json:"id"`
	Version string `json:"version"`
	Bucket  Bucket `json:"bucket"`
	// Family is the template the item comes from: a generator for
	// verifiable items, the curated item itself for open ones.
	Family string   `json:"family"`
	Index  int      `json:"index"`
	Kind   Kind     `json:"kind"`
	Task   TaskType `json:"task"`
	// Question is the text put to the mode and the baseline.
	Question string `json:"question"`
	// Answer is a verifiable item's reference answer; empty for open items.
	Answer string `json:"answer,omitempty"`
	// Note is an open item's reference note (what a good answer covers) and,
	// for some verifiable items, the working behind Answer.
	Note string `json:"note,omitempty"`

	check  func(string) bool
	decoys []string // plausible wrong answers the checker must refuse
	spec   any      // the puzzle or graph, for the tests' independent solvers
}

// Template is the item's template within the bank version, the unit the
// certification statistics cluster on: "<version>/<bucket>/<family>".
func (it Item) Template() string {
	return it.Version + "/" + string(it.Bucket) + "/" + it.Family
}

// Check reports whether answer — a model's free prose — gives the item's
// reference answer. It reads the final answer the way the question asks for
// it: after the last "Answer:" (or "final answer is", or \boxed{…}) the
// first candidate, otherwise the last candidate in the text. It is false
// for open items, which have no checker.
func (it Item) Check(answer string) bool {
	if it.check == nil {
		return false
	}
	return it.check(answer)
}

// Problem is the question without the closing request for an answer line
// that every verifiable question ends with: the problem itself, as a model
// restating it would put it. It is the whole question for an open item.
func (it Item) Problem() string {
	p, _, _ := strings.Cut(it.Question, askLine)
	return strings.TrimSpace(p)
}

// WrongAnswers are plausible wrong final answers to a verifiable item —
// the slips a careless solver makes (off by one, the reflex angle, a role
// flipped, the second-best route) — each of which Check refuses. The
// slice is the caller's; it is empty for open items.
func (it Item) WrongAnswers() []string { return append([]string(nil), it.decoys...) }

func itemID(version string, b Bucket, family string, index int) string {
	return version + "/" + string(b) + "/" + family + "/" + strconv.Itoa(index)
}

// problem is what a generator makes of one seeded stream.
type problem struct {
	question string
	answer   string
	note     string
	check    func(string) bool
	decoys   []string
	spec     any
}

// family is a verifiable template family: one generator, serving some
// buckets at the difficulty the bucket's level selects. gen reports false
// when the stream gave an unusable instance (a puzzle with two solutions);
// the builder then tries the next stream.
type family struct {
	name    string
	task    TaskType
	buckets []Bucket
	gen     func(r *rng, level int) (problem, bool)
}

var all = []Bucket{Light, Medium, Hard}

// maxAttempts bounds the retries of one item; no generator comes near it,
// and the tests build every item.
const maxAttempts = 2000

// buildFamily generates a family's items for one bucket, in index order,
// each from its own stream (version, bucket, family, index, attempt); an
// instance whose question is in seen — asked by an earlier item of the
// family, in this bucket or a lighter one — is retried. A question text
// names one item of the version: the simulator finds an item, and its
// bucket, by its text.
func buildFamily(version string, f family, b Bucket, seen map[string]bool) ([]Item, error) {
	items := make([]Item, 0, PerFamily)
	for i := range PerFamily {
		var p problem
		ok := false
		for attempt := 0; attempt < maxAttempts && !ok; attempt++ {
			r := newRNG(version, string(b), f.name, strconv.Itoa(i), strconv.Itoa(attempt))
			p, ok = f.gen(r, b.level())
			ok = ok && !seen[p.question]
		}
		if !ok {
			return nil, fmt.Errorf("bank: family %s/%s item %d: no usable instance in %d attempts", b, f.name, i, maxAttempts)
		}
		seen[p.question] = true
		p.decoys = distinct(p.decoys, p.answer)
		items = append(items, Item{
			ID: itemID(version, b, f.name, i), Version: version, Bucket: b, Family: f.name, Index: i,
			Kind: Verifiable, Task: f.task, Question: p.question, Answer: p.answer, Note: p.note,
			check: p.check, decoys: p.decoys, spec: p.spec,
		})
	}
	return items, nil
}

// pools is the current version's pool per bucket, built once: every item is
// a pure function of its id, so building it twice would give the same items.
var pools = sync.OnceValues(func() (map[Bucket][]Item, error) {
	out := map[Bucket][]Item{}
	for _, f := range families {
		seen := map[string]bool{}
		for _, b := range f.buckets {
			items, err := buildFamily(Version, f, b, seen)
			if err != nil {
				return nil, err
			}
			out[b] = append(out[b], items...)
		}
	}
	open, err := openItems(Version)
	if err != nil {
		return nil, err
	}
	for _, it := range open {
		out[it.Bucket] = append(out[it.Bucket], it)
	}
	for _, b := range Buckets {
		sort.SliceStable(out[b], func(i, j int) bool {
			x, y := out[b][i], out[b][j]
			if x.Family != y.Family {
				return x.Family < y.Family
			}
			return x.Index < y.Index
		})
	}
	return out, nil
})

// Pool returns every item of a bucket of the bank version, ordered by
// family then index. The slice is the caller's.
func Pool(version string, b Bucket) ([]Item, error) {
	if version != Version {
		return nil, fmt.Errorf("%w %q (this build serves %q)", ErrUnknownVersion, version, Version)
	}
	if b.level() == 0 {
		return nil, fmt.Errorf("bank: unknown bucket %q", b)
	}
	p, err := pools()
	if err != nil {
		return nil, err
	}
	return append([]Item(nil), p[b]...), nil
}

// Lookup returns the item an id names, so that a stored batch can score its
// answers again.
func Lookup(id string) (Item, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 4 {
		return Item{}, fmt.Errorf("%w: %q", ErrUnknownItem, id)
	}
	b, ok := ParseBucket(parts[1])
	if !ok || string(b) != parts[1] {
		return Item{}, fmt.Errorf("%w: %q", ErrUnknownItem, id)
	}
	pool, err := Pool(parts[0], b)
	if err != nil {
		return Item{}, err
	}
	for _, it := range pool {
		if it.ID == id {
			return it, nil
		}
	}
	return Item{}, fmt.Errorf("%w: %q", ErrUnknownItem, id)
}

// distinct drops repeats, and the answer itself, from decoys.
func distinct(decoys []string, answer string) []string {
	var out []string
	seen := map[string]bool{answer: true}
	for _, d := range decoys {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}
