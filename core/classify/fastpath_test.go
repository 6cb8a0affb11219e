package classify

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/benchtest"
)

// The regular expressions countWords, looksLikeCode and the fact-risk
// search stand for: the rules they keep, written the short way.
var (
	wordRe     = regexp.MustCompile(`[\p{L}\p{N}'-]+`)
	codeRe     = regexp.MustCompile("```|\\bfunc\\b|\\bdef\\b|\\bclass\\b|\\breturn\\b|;\\s*$|\\bSELECT\\b")
	factRiskRe = regexp.MustCompile(`\b(cite|citation|source|sources|statistic|statistics|exact|percent|figure|figures|in what year|what year|how many|date of|population)\b`)
)

// checkFastPaths fails t when countWords, looksLikeCode or the fact-risk
// search answers s otherwise than the regular expression it stands for.
func checkFastPaths(t *testing.T, s string) {
	t.Helper()
	if got, want := countWords(s), len(wordRe.FindAllString(s, -1)); got != want {
		t.Errorf("countWords(%q) = %d, the regexp finds %d", s, got, want)
	}
	if got, want := looksLikeCode(s), codeRe.MatchString(s); got != want {
		t.Errorf("looksLikeCode(%q) = %v, the regexp %v", s, got, want)
	}
	for _, v := range []string{s, strings.ToLower(s)} {
		if got, want := hasAnyWord(v, factRiskWords), factRiskRe.MatchString(v); got != want {
			t.Errorf("fact risk in %q: %v, the regexp %v", v, got, want)
		}
	}
}

// fastPathSeeds hold every alternative of codeRe and factRiskRe alone, in
// a sentence and glued to other words, the heuristic's signals, and words
// of other scripts, digits, apostrophes, hyphens and invalid UTF-8.
func fastPathSeeds() []string {
	seeds := []string{
		"", " ", "a", "don't stop-gap 42", "x--y ''", "naïve café 東京 ٣٤ Ⅻ", "\xff\xfeword\x80", "tab\tnew\nline",
		"What is 2 + 2?", "Should a twelve-person team split its monolith into microservices this year?",
		"```go\nfmt.Println()\n```", "x := 1;", "x := 1;  \n", "x;\v", "x;\u00a0", "x; \t\r\f", "a;b", "SELECT * FROM t", "select * from t",
		"functional definition classes returned", "_func def_ class2 returnx", "Cited sources, per cent",
		"éfunc funcé ßource source's figures-2 what  year how many? date of: population.", "sourcesource sources sources",
	}
	for _, alt := range []string{"func", "def", "class", "return", "SELECT",
		"cite", "citation", "source", "sources", "statistic", "statistics", "exact", "percent", "figure", "figures",
		"in what year", "what year", "how many", "date of", "population"} {
		seeds = append(seeds, alt, "so "+alt+" it", alt+"s", "x"+alt, alt+"_", strings.ToUpper(alt))
	}
	for _, s := range signals {
		seeds = append(seeds, s.phrase, "Please "+s.phrase+" this.")
	}
	return seeds
}

func TestWordSearchesKeepTheRegexpsAnswers(t *testing.T) {
	t.Parallel()
	for _, s := range fastPathSeeds() {
		checkFastPaths(t, s)
	}
}

func FuzzFastPathsMatchTheirRegexps(f *testing.F) {
	for _, s := range fastPathSeeds() {
		f.Add(s)
	}
	f.Fuzz(checkFastPaths)
}

// BenchmarkHeuristic classifies, on each call, the benchmarks' deliberation
// question, the express call's, and a 2,000-word brief (smoke: once each).
func BenchmarkHeuristic(b *testing.B) {
	brief := strings.Repeat("Our twelve-person team runs one monolith; the database holds 40 tables and the deploys take 25 minutes. ", 120)
	for _, c := range []struct{ name, q string }{
		{"deliberation", "Should a twelve-person team split its monolith into microservices this year?"},
		{"express", "What is 2 + 2?"},
		{"brief_2000_words", brief + "Should we split it this year?"},
	} {
		msgs := []core.Message{{Role: core.RoleUser, Content: c.q}}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (Heuristic{}).Classify(context.Background(), msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestHeuristicSmoke(t *testing.T) {
	t.Parallel()
	benchtest.Smoke(t, "BenchmarkHeuristic")
}
