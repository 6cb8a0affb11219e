package bank

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testBundle is the current version's pool, per bucket.
type testBundle struct {
	pool map[Bucket][]Item
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	tb := &testBundle{pool: map[Bucket][]Item{}}
	for _, b := range Buckets {
		p, err := Pool(Version, b)
		require.NoError(t, err)
		tb.pool[b] = p
	}
	return tb
}

// The bar of the certification design: a certify draw of 50 per bucket from
// a pool at least three times larger; at least 50 verifiable template
// families per bucket (curated items are not counted as templates here);
// at least 25 curated items per bucket.
func TestPoolMeetsTheSizeBar(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, b := range Buckets {
		ids, questions := map[string]bool{}, map[string]bool{}
		ver, open := map[string]bool{}, 0
		tasks := map[TaskType]int{}
		for _, it := range tb.pool[b] {
			require.False(t, ids[it.ID], "repeated id %s", it.ID)
			require.False(t, questions[it.Question], "repeated question in %s: %s", b, it.ID)
			ids[it.ID], questions[it.Question] = true, true
			if it.Kind == Verifiable {
				ver[it.Family] = true
			} else {
				open++
			}
			tasks[it.Task]++
		}
		require.GreaterOrEqual(t, len(tb.pool[b]), 3*Certify.Of(b), "bucket %s", b)
		require.GreaterOrEqual(t, open, 25, "bucket %s open items", b)
		require.GreaterOrEqual(t, len(ver), 50, "bucket %s verifiable template families", b)
		for _, task := range []TaskType{TaskArithmetic, TaskConversion, TaskDates, TaskWordProblem, TaskLogic,
			TaskPlanning, TaskDecision, TaskCritique, TaskUnknowable} {
			require.Positive(t, tasks[task], "bucket %s has no %s items", b, task)
		}
		t.Logf("%s: %d items, %d verifiable families, %d open items", b, len(tb.pool[b]), len(ver), open)
	}
}

// A question text names one item of the version, across the buckets too:
// the simulator finds an item, and its bucket, by its question.
func TestNoQuestionRepeatsAcrossBuckets(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	at := map[string]string{}
	for _, b := range Buckets {
		for _, it := range tb.pool[b] {
			prev, seen := at[it.Question]
			require.False(t, seen, "%s asks the question of %s", it.ID, prev)
			at[it.Question] = it.ID
		}
	}
}

func TestEveryIDCarriesTheVersionAndLooksUp(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, b := range Buckets {
		for _, it := range tb.pool[b] {
			require.True(t, strings.HasPrefix(it.ID, Version+"/"), it.ID)
			require.Equal(t, Version, it.Version)
			require.Equal(t, fmt.Sprintf("%s/%s/%s/%d", Version, b, it.Family, it.Index), it.ID)
			require.Equal(t, fmt.Sprintf("%s/%s/%s", Version, b, it.Family), it.Template())
			got, err := Lookup(it.ID)
			require.NoError(t, err)
			require.Equal(t, it.Question, got.Question)
			require.Equal(t, it.Answer, got.Answer)
		}
	}
	for _, id := range []string{"v0/light/knights/0", Version + "/easy/knights/0", Version + "/light/knights/99",
		Version + "/light/nope/0", "junk"} {
		_, err := Lookup(id)
		require.Error(t, err, id)
	}
	_, err := Lookup("v0/light/knights/0")
	require.ErrorIs(t, err, ErrUnknownVersion)
	_, err = Lookup(Version + "/light/knights/99")
	require.ErrorIs(t, err, ErrUnknownItem)
}

// answerForms are ways a model writes its final answer: bare, on the line
// the question asks for, after working, inside a sentence.
var answerForms = []func(string) string{
	func(a string) string { return a },
	func(a string) string { return "Answer: " + a },
	func(a string) string {
		return "Let me work through this step by step.\n\nFirst the givens, then the steps.\n\n**Final answer:** " + a
	},
	func(a string) string { return "Working it through carefully, the answer is " + a + "." },
	func(a string) string { return "Some working.\n\nAnswer: " + a + "\n\nI checked this twice." },
}

func TestEveryVerifiableItemAcceptsItsReferenceAndRefusesTheDecoys(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, b := range Buckets {
		for _, it := range tb.pool[b] {
			if it.Kind != Verifiable {
				continue
			}
			require.NotEmpty(t, it.Answer, it.ID)
			require.NotEmpty(t, it.decoys, "%s has no wrong answers to refuse", it.ID)
			require.Equal(t, it.decoys, it.WrongAnswers(), it.ID)
			require.True(t, strings.HasPrefix(it.Question, it.Problem()), it.ID)
			require.NotContains(t, it.Problem(), "Answer:", "%s: the problem keeps the request for an answer line", it.ID)
			require.Greater(t, len(it.Problem()), 20, it.ID)
			require.Contains(t, it.Question, "Answer:", "%s must ask for an answer line", it.ID)
			for i, form := range answerForms {
				require.True(t, it.Check(form(it.Answer)), "%s refuses its reference in form %d: %q", it.ID, i, form(it.Answer))
				for _, d := range it.decoys {
					require.False(t, it.Check(form(d)), "%s accepts the wrong answer %q in form %d", it.ID, d, i)
				}
			}
			// A wrong answer in the working does not spoil a right final
			// answer, and the other way round.
			d := it.decoys[0]
			require.True(t, it.Check("At first I got "+d+", but that was a slip.\n\nAnswer: "+it.Answer), it.ID)
			require.False(t, it.Check("One might think "+it.Answer+", but no.\n\nAnswer: "+d), it.ID)
			require.False(t, it.Check("I cannot work this out."), it.ID)
		}
	}
}

func TestOpenItemsAreJudgedOnly(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, b := range Buckets {
		kinds := map[TaskType]int{}
		for _, it := range tb.pool[b] {
			if it.Kind != Open {
				continue
			}
			kinds[it.Task]++
			require.NotEmpty(t, it.Note, it.ID)
			require.Empty(t, it.Answer, it.ID)
			require.Empty(t, it.WrongAnswers(), it.ID)
			require.Equal(t, it.Question, it.Problem(), it.ID)
			require.Greater(t, len(it.Question), 40, it.ID)
			require.False(t, it.Check(it.Note), "%s has no checker", it.ID)
			require.Zero(t, it.Index, it.ID)
		}
		for _, task := range []TaskType{TaskDecision, TaskPlanning, TaskCritique, TaskUnknowable} {
			require.GreaterOrEqual(t, kinds[task], 6, "%s has too few %s items", b, task)
		}
	}
}

func TestParseOpenRefusesMalformedItems(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"### decision-01\nQ: q\nN: n\n",
		"### decision-01 gossip\nQ: q\nN: n\n",
		"### decision-01 decision\nQ: q\n",
		"### decision-01 decision\nQ: q\nN: n\n### decision-01 decision\nQ: q2\nN: n2\n",
	} {
		_, err := parseOpen(Version, Light, text)
		require.Error(t, err, text)
	}
	items, err := parseOpen(Version, Light, "header\n### critique-03 critique\nQ: first\nline\nN: the note\n")
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, "first line", items[0].Question)
	require.Equal(t, Version+"/light/critique-03/0", items[0].ID)
}

func TestOtherVersionsAreRefused(t *testing.T) {
	t.Parallel()
	_, err := Pool("v0", Light)
	require.ErrorIs(t, err, ErrUnknownVersion)
	_, err = Draw("v999", 1, Certify)
	require.ErrorIs(t, err, ErrUnknownVersion)
	_, err = Pool(Version, "easy")
	require.Error(t, err)
}

// poolDigest pins the current version's content: a changed generator or
// curated item changes it, and must come with a new Version (and a new
// digest here). The checkers are code and escape the digest; changing how
// one reads answers bumps the version all the same.
const poolDigest = "e65f0b3355ad52e88ef508a0776ab8dc041556701ba7780e2ecb7bb7be3ebe25"

func TestPoolDigestPinsTheVersion(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	h := sha256.New()
	for _, b := range Buckets {
		for _, it := range tb.pool[b] {
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00", it.ID, it.Kind, it.Task, it.Question, it.Answer, it.Note)
		}
	}
	got := hex.EncodeToString(h.Sum(nil))
	require.Equal(t, poolDigest, got, "the content of bank %s changed: bump Version and pin the new digest", Version)
}

func TestParseBucket(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Bucket{
		"light": Light, "easy": Light, "medium": Medium, "hard": Hard, "deep": Hard, " Hard ": Hard,
	} {
		got, ok := ParseBucket(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "trivial", "expert"} {
		_, ok := ParseBucket(in)
		require.False(t, ok, in)
	}
}
