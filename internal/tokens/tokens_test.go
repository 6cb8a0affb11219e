package tokens_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/tokens"
)

// reference is tiktoken-go's cl100k_base, the count this package must
// agree with on ordinary text.
var reference = sync.OnceValue(func() *tiktoken.Tiktoken {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(tokens.Encoding)
	if err != nil {
		panic(err)
	}
	return enc
})

func exact(s string) int { return len(reference().EncodeOrdinary(s)) }

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		// tiktoken-go's own test: [15339 1917 0 57668 53901 3922 3574 244 98220 6447].
		{"hello world!你好，世界！", 10},
		// OpenAI cookbook, "How to count tokens with tiktoken", cl100k_base.
		{"tiktoken is great!", 6},
		{"antidisestablishmentarianism", 6},
		{"2 + 2 = 4", 7},
		{"お誕生日おめでとう", 9},
	}
	for _, tt := range tests {
		require.Equalf(t, tt.want, tokens.Text(tt.text), "tokens of %q", tt.text)
	}
	// A special-token marker in a prompt is text, not the special token.
	require.Greater(t, tokens.Text("<|endoftext|>"), 1)
}

func TestCount(t *testing.T) {
	t.Parallel()
	require.Zero(t, tokens.Count(nil))
	one := []core.Message{{Role: core.RoleUser, Content: "hello world"}}
	// 3 reply priming + 3 framing + 1 role + 2 content.
	require.Equal(t, 9, tokens.Count(one))
	two := append(one, core.Message{Role: core.RoleSystem, Content: "tiktoken is great!"})
	require.Equal(t, 9+3+1+6, tokens.Count(two))
	for _, role := range []string{core.RoleSystem, core.RoleUser, core.RoleAssistant} {
		require.Equal(t, 1, tokens.Text(role), "role %s is one token", role)
	}
}

// samples are ordinary texts of several kinds: prose in a few scripts,
// code, markup, data.
var samples = []string{
	"Compare the consistency models of two replicated databases, citing how each handles a network partition.",
	"分布式数据库在网络分区期间必须在一致性和可用性之间做出选择。当主节点与多数副本失去联系时，系统要么拒绝写入以保证线性一致性，要么继续接受写入。",
	"分散データベースはネットワーク分断の間、一貫性と可用性のどちらかを選ばなければならない。",
	"Die Bundesverfassungsgerichtsentscheidung über die Datenschutzgrundverordnungsumsetzung betrifft Versicherungsunternehmen.",
	"वितरित डेटाबेस को नेटवर्क विभाजन के दौरान स्थिरता और उपलब्धता के बीच चुनाव करना पड़ता है।",
	"Распределённая база данных должна выбирать между согласованностью и доступностью.",
	"func (s *Service) check(ctx context.Context) error {\n\tif n, over, err := s.d.TokensOver(ctx, m, 8000); err != nil {\n\t\treturn fmt.Errorf(\"counting: %w\", err)\n\t}\n}\n",
	"# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n" + strings.Repeat("=", 80) + "\n\n    indented\r\n\t\ttabs  \n\n\n",
	`{"id":"req_01HZX","amount_usd":"12.50","tags":["a","b"],"nested":{"ok":true,"n":-3.5e10}}`,
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
	"It's, we'RE, they've, I'M, you'll, he'd, 'S 'T ' s 'll 'LL 'Ll ſ İ ǅ Ⅻ ½ ² ٣ 🙂👍🏽 \u00a0\u3000\u2028\u0085 \v\f\x1c",
	"   leading spaces, trailing spaces   ",
	"\n\n\n   \n  \t \r\n x",
	// Runs of whitespace longer than a piece whose pre-tokens are not.
	"\n" + strings.Repeat(" ", 200) + "\n" + strings.Repeat(" ", 200) + "x",
	strings.Repeat("\t", 100) + "\r\n" + strings.Repeat(" ", 100) + "z " + strings.Repeat("\u3000", 80) + "\n",
}

func TestTextAgreesWithTiktoken(t *testing.T) {
	t.Parallel()
	for _, s := range samples {
		require.Equalf(t, exact(s), tokens.Text(s), "tokens of %q", s)
	}
	// Random texts of fragments the pattern tells apart: letters in
	// several scripts and cases, digits, contractions, punctuation,
	// whitespace of every kind, marks, invalid UTF-8.
	fragments := []string{"a", "B", "z", "the", " the", "ing", "é", "ſ", "İ", "中", "文", "お", "ـ", "\u0301",
		"1", "23", "456", "½", "²", "٣", "'", "'s", "'S", "'re", "'LL", "'d", "'x",
		".", "!", "?", ",", "-", "=", "*", "/", "#", "🙂", "\x00", "\x1c", "\xff", "\xe4\xb8",
		" ", "  ", "\t", "\n", "\r\n", "\r", "\v", "\f", "\u00a0", "\u3000", "\u0085", "\u2028", "\u200b", " x", " !"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		var b strings.Builder
		for range 1 + rng.IntN(40) {
			b.WriteString(fragments[rng.IntN(len(fragments))])
		}
		s := b.String()
		require.Equalf(t, exact(s), tokens.Text(s), "tokens of %q", s)
	}
	// Single pre-tokens up to a piece long, merged whole.
	for _, gen := range []func(*rand.Rand, int) string{longTokens, words, letters, cjk} {
		for range 50 {
			s := gen(rng, 1+rng.IntN(tokens.MaxPiece))
			s = strings.ToValidUTF8(s[:min(len(s), tokens.MaxPiece)], "")
			require.Equalf(t, exact(s), tokens.Text(s), "tokens of %q", s)
		}
	}
}

// FuzzText checks that a text no longer than a piece, so none of whose
// pre-tokens is cut, counts exactly as tiktoken-go counts it.
func FuzzText(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > tokens.MaxPiece {
			s = s[:tokens.MaxPiece]
		}
		require.Equalf(t, exact(s), tokens.Text(s), "tokens of %q", s)
	})
}

func TestLongRunsNeverCountFewer(t *testing.T) {
	t.Parallel()
	// A pre-token longer than a piece is cut, and its pieces counted
	// alone plus one token per cut; tiktoken-go merges it whole. Byte-pair
	// merging is not additive (257 dots are 6 tokens; 256 dots and one are
	// 4 and 1), hence the token per cut.
	units := []string{"a", "ab", "xyz", "A", ".", "-", "=", "*", "/", "#", "//", "- ", ".,;:", "!@#$%^&*()",
		" ", "\t", "\n", " \n", "\r\n", "\u3000", "\u00a0", "中", "é", "🙂", "'", "ACGT", "0"}
	for _, unit := range units {
		for _, n := range []int{255, 256, 257, 300, 513, 1000, 2500} {
			s := strings.Repeat(unit, n/len(unit)+1)[:n]
			s = strings.ToValidUTF8(s, "")
			require.GreaterOrEqualf(t, tokens.Text(s), exact(s), "%q × %d bytes", unit, n)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, gen := range []func(*rand.Rand, int) string{longTokens, words, letters} {
		for range 20 {
			s := gen(rng, 300+rng.IntN(1500))
			require.GreaterOrEqualf(t, tokens.Text(s), exact(s), "%q", s)
		}
	}
}

func TestBoundIsNeverBelowCount(t *testing.T) {
	t.Parallel()
	require.Zero(t, tokens.Bound(nil))
	require.Zero(t, tokens.Least(nil))
	texts := []string{"", "a", "hello world", "hello world!你好，世界！", "お誕生日おめでとう", "<|endoftext|>",
		"\x00\x01\x02 \t\n\n\n   ", strings.Repeat("!", 1000), strings.Repeat("z", 4096), strings.Repeat("🙂", 300),
		"antidisestablishmentarianism", strings.Repeat("ab ", 2000), strings.Repeat(" ", 5000),
		strings.Repeat(" "+strings.Repeat("-", 112), 20), "\xff\xfe\xfd"}
	for _, text := range texts {
		for _, role := range []string{core.RoleSystem, core.RoleUser, core.RoleAssistant} {
			msgs := []core.Message{{Role: role, Content: text}, {Role: core.RoleUser, Content: text + "?"}}
			n := tokens.Count(msgs)
			require.GreaterOrEqualf(t, tokens.Bound(msgs), n, "bound of %q as %s", text, role)
			require.LessOrEqualf(t, tokens.Least(msgs), n, "least of %q as %s", text, role)
		}
		require.LessOrEqualf(t, tokens.Least([]core.Message{{Content: text}})-tokens.ReplyPriming-tokens.MessageOverhead,
			exact(text), "least of %q", text)
	}
	// The bounds are the bytes plus the same framing as Count, and the
	// bytes over the longest token's.
	one := []core.Message{{Role: core.RoleUser, Content: "hello world"}}
	require.Equal(t, tokens.ReplyPriming+tokens.MessageOverhead+len("user")+len("hello world"), tokens.Bound(one))
	long := []core.Message{{Role: core.RoleUser, Content: strings.Repeat("a", 3*tokens.MaxTokenBytes+1)}}
	require.Equal(t, tokens.ReplyPriming+tokens.MessageOverhead+1+4, tokens.Least(long))
}

func TestOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	short := []core.Message{{Role: core.RoleUser, Content: "What is 2 + 2?"}}
	bytes, count := tokens.Bound(short), tokens.Count(short) // 24 and 15
	require.Less(t, count+1, bytes)
	n, over, err := tokens.Over(ctx, short, bytes)
	require.NoError(t, err)
	require.False(t, over, "within by its bytes")
	require.Zero(t, n, "and not counted")
	n, over, err = tokens.Over(ctx, short, count+1)
	require.NoError(t, err)
	require.False(t, over, "over by its bytes, within by its tokens")
	require.Equal(t, count, n)
	_, over, err = tokens.Over(ctx, short, count)
	require.NoError(t, err)
	require.False(t, over, "exactly at the limit")
	n, over, err = tokens.Over(ctx, short, count-1)
	require.NoError(t, err)
	require.True(t, over)
	require.Equal(t, count, n)

	// Over stops counting once past the limit: n is what it had counted.
	long := []core.Message{{Role: core.RoleUser, Content: strings.Repeat("Consider the trade-offs carefully. ", 20)}}
	n, over, err = tokens.Over(ctx, long, 20)
	require.NoError(t, err)
	require.True(t, over)
	require.Greater(t, n, 20)
	require.Less(t, n, tokens.Count(long))
}

func TestOverSettledByBytesCountsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const limit = 8000
	// One byte more than the longest tokens could carry within the limit.
	msgs := []core.Message{{Role: core.RoleUser, Content: strings.Repeat("a", limit*tokens.MaxTokenBytes+1)}}
	n, over, w, err := tokens.OverWork(ctx, msgs, limit)
	require.NoError(t, err)
	require.True(t, over)
	require.Equal(t, tokens.Least(msgs), n)
	require.Zero(t, w, "refused from its bytes, without looking at a piece")

	// Within by its bytes: nothing counted either.
	n, over, w, err = tokens.OverWork(ctx, []core.Message{{Role: core.RoleUser, Content: "hi"}}, limit)
	require.NoError(t, err)
	require.False(t, over)
	require.Zero(t, n)
	require.Zero(t, w)
}

// cancelAfter is a context whose Err is nil for its first calls, then
// context.Canceled: a request whose caller leaves while it is counted.
type cancelAfter struct {
	context.Context
	calls, after atomic.Int32
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) > c.after.Load() {
		return context.Canceled
	}
	return nil
}

func TestOverStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	msgs := prompt8k(t)
	within := tokens.Count(msgs) + 1

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, w, err := tokens.OverWork(ctx, msgs, within)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, w, "ended before: nothing counted")

	// Ended while counting: the count stops at its next look.
	mid := &cancelAfter{Context: context.Background()}
	mid.after.Store(1)
	n, over, w, err := tokens.OverWork(mid, msgs, within)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, over)
	require.Zero(t, n)
	require.Equal(t, tokens.CheckEvery, w.Pieces)
	_, _, full, err := tokens.OverWork(context.Background(), msgs, within)
	require.NoError(t, err)
	require.Greater(t, full.Pieces, 10*tokens.CheckEvery)
}

func TestHostileInputsAreCheap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const limit = 8000
	for _, h := range hostile() {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			msgs := []core.Message{{Role: core.RoleUser, Content: h.text}}
			n, over, w, err := tokens.OverWork(ctx, msgs, limit)
			require.NoError(t, err)
			require.True(t, over, "%d tokens", n)
			// The work is bounded by the limit, not by the text: every
			// piece counts at least one token, and merging beyond 2.5
			// bytes a token is paid from a budget of one byte per token
			// of the limit (each may be passed by a piece).
			require.LessOrEqual(t, w.Pieces, limit+1)
			require.LessOrEqual(t, w.Merged, 3*(limit+tokens.MaxPiece)+limit+tokens.MaxPiece, "bytes merged")
		})
	}
}

func TestConcurrentCountsAgree(t *testing.T) {
	t.Parallel()
	texts := make([]string, 16)
	want := make([]int, len(texts))
	for i := range texts {
		texts[i] = strings.Repeat(fmt.Sprintf("Question %d: why is the sky blue? ", i), 20+i)
	}
	// Counted concurrently first, so the lazy load itself races too.
	got := make([]int, len(texts))
	var wg sync.WaitGroup
	for i := range texts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = tokens.Count([]core.Message{{Role: core.RoleUser, Content: texts[i]}})
		}()
	}
	wg.Wait()
	for i := range texts {
		want[i] = tokens.Count([]core.Message{{Role: core.RoleUser, Content: texts[i]}})
	}
	require.Equal(t, want, got)
}

// prompt8k is a realistic prompt of at least 8000 tokens, the default input
// limit.
func prompt8k(tb testing.TB) []core.Message {
	tb.Helper()
	para := "Compare the consistency models of two replicated databases, citing how each handles " +
		"a network partition, what a client observes during failover, and which anomalies (lost updates, " +
		"write skew, stale reads) remain possible. Give concrete examples with timestamps 2026-11-22T03:14:15Z. "
	var b strings.Builder
	for tokens.Text(b.String()) < 8000 {
		for range 20 {
			b.WriteString(para)
		}
	}
	return []core.Message{
		{Role: core.RoleSystem, Content: "You are a careful distributed-systems reviewer."},
		{Role: core.RoleUser, Content: b.String()},
	}
}

// hostile are texts of about 1 MB, within the default body cap of 1 MiB,
// that cost tiktoken-go seconds to minutes each, or are the worst this
// package knows for its own design.
func hostile() []struct{ name, text string } {
	const size = 1_000_000
	rng := rand.New(rand.NewPCG(5, 6))
	ordinary := "Compare the consistency models of two replicated databases, citing how each handles a network partition. "
	var punct strings.Builder
	for punct.Len() < size {
		punct.WriteString("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
	}
	return []struct{ name, text string }{
		{"a", strings.Repeat("a", size)},
		{"ab", strings.Repeat("ab", size/2)},
		{"dots", strings.Repeat(".", size)},
		{"spaces", strings.Repeat(" ", size)},
		{"newline-spaces", "\n" + strings.Repeat(" ", size-1)},
		{"newlines", strings.Repeat("\n", size)},
		{"punctuation", punct.String()[:size]},
		{"digits", strings.Repeat("7", size)},
		{"cjk", strings.Repeat("中", size/3)},
		{"ideographic-spaces", strings.Repeat("\u3000", size/3)},
		{"emoji", strings.Repeat("🙂", size/4)},
		{"ordinary-1MB", strings.Repeat(ordinary, size/len(ordinary))},
		// No two pieces alike, so nothing is remembered:
		{"random-letters", letters(rng, size)},
		{"random-cjk", cjk(rng, size)},
		// Words without spaces: one pre-token, pieces of four-byte tokens.
		{"words", words(rng, size)},
		// Runs of the vocabulary's long tokens of punctuation, cut at
		// random: few tokens per byte merged.
		{"long-tokens", longTokens(rng, size)},
		// Whole 113-byte tokens: one token per pre-token.
		{"whole-long-tokens", strings.Repeat(" "+strings.Repeat("-", 112), size/113)},
	}
}

func letters(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

func cjk(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteRune(rune(0x4e00 + rng.IntN(0x5000)))
	}
	return b.String()
}

func words(rng *rand.Rand, n int) string {
	ws := strings.Fields("the quick brown fox jumps over lazy dog consistency model replicated database network " +
		"partition client observes failover anomalies lost updates write skew stale reads remain possible")
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(ws[rng.IntN(len(ws))])
	}
	return b.String()[:n]
}

func longTokens(rng *rand.Rand, n int) string {
	runs := []string{strings.Repeat("-", 80), strings.Repeat("=", 80), strings.Repeat("*", 80), strings.Repeat("/", 80),
		strings.Repeat("#", 80), "//" + strings.Repeat("-", 112), "/" + strings.Repeat("*", 96)}
	var b strings.Builder
	for b.Len() < n {
		r := runs[rng.IntN(len(runs))]
		b.WriteString(r[:1+rng.IntN(len(r))])
	}
	return b.String()[:n]
}

func BenchmarkCount(b *testing.B) {
	msgs := prompt8k(b)
	b.SetBytes(int64(len(msgs[1].Content)))
	n := 0
	for b.Loop() {
		n = tokens.Count(msgs)
	}
	b.ReportMetric(float64(n), "tokens/op")
}

// BenchmarkCountWorstCase reports what admission's count (Over, at the
// default limit of 8,000) costs on an ordinary prompt of 8,000 tokens and on
// each hostile input of about 1 MB, in microseconds per count, all in one
// run, and the worst beside the ordinary: worst/ordinary.
func BenchmarkCountWorstCase(b *testing.B) {
	ctx := context.Background()
	const limit = 8000
	type input struct {
		name string
		msgs []core.Message
	}
	inputs := []input{{"ordinary-8k", prompt8k(b)}}
	for _, h := range hostile() {
		inputs = append(inputs, input{h.name, []core.Message{{Role: core.RoleUser, Content: h.text}}})
	}
	spent := make([]time.Duration, len(inputs))
	runs := 0
	for b.Loop() {
		for i, in := range inputs {
			start := time.Now()
			_, _, err := tokens.Over(ctx, in.msgs, limit)
			spent[i] += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
		}
		runs++
	}
	per := func(i int) float64 { return float64(spent[i]) / float64(time.Microsecond) / float64(runs) }
	worst := 1
	for i := range inputs {
		b.ReportMetric(per(i), "µs/"+inputs[i].name)
		if i > 0 && per(i) > per(worst) {
			worst = i
		}
	}
	b.ReportMetric(per(worst)/per(0), "worst/ordinary")
	b.Logf("worst: %s, %.0f µs; ordinary: %.0f µs", inputs[worst].name, per(worst), per(0))
}
