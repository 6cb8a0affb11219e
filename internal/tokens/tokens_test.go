package tokens_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/tokens"
)

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

func TestBoundIsNeverBelowCount(t *testing.T) {
	t.Parallel()
	require.Zero(t, tokens.Bound(nil))
	texts := []string{"", "a", "hello world", "hello world!你好，世界！", "お誕生日おめでとう", "<|endoftext|>",
		"\x00\x01\x02 \t\n\n\n   ", strings.Repeat("!", 1000), strings.Repeat("z", 4096), strings.Repeat("🙂", 300),
		"antidisestablishmentarianism", strings.Repeat("ab ", 2000)}
	for _, text := range texts {
		for _, role := range []string{core.RoleSystem, core.RoleUser, core.RoleAssistant} {
			msgs := []core.Message{{Role: role, Content: text}, {Role: core.RoleUser, Content: text + "?"}}
			require.GreaterOrEqualf(t, tokens.Bound(msgs), tokens.Count(msgs), "bound of %q as %s", text, role)
		}
	}
	// The bound is the bytes plus the same framing as Count.
	one := []core.Message{{Role: core.RoleUser, Content: "hello world"}}
	require.Equal(t, tokens.ReplyPriming+tokens.MessageOverhead+len("user")+len("hello world"), tokens.Bound(one))
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
	_, over, err = tokens.Over(ctx, short, count+1)
	require.NoError(t, err)
	require.False(t, over, "over by its bytes, within by its tokens")
	_, over, err = tokens.Over(ctx, short, count)
	require.NoError(t, err)
	require.False(t, over, "exactly at the limit")
	n, over, err = tokens.Over(ctx, short, count-1)
	require.NoError(t, err)
	require.True(t, over)
	require.Equal(t, count, n)

	long := []core.Message{{Role: core.RoleUser, Content: strings.Repeat("Consider the trade-offs carefully. ", 20)}}
	n, over, err = tokens.Over(ctx, long, 20)
	require.NoError(t, err)
	require.True(t, over)
	require.Equal(t, tokens.Count(long), n)

	ended, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = tokens.Over(ended, long, 20)
	require.ErrorIs(t, err, context.Canceled)
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

func BenchmarkCount(b *testing.B) {
	msgs := prompt8k(b)
	b.SetBytes(int64(len(msgs[1].Content)))
	n := 0
	for b.Loop() {
		n = tokens.Count(msgs)
	}
	b.ReportMetric(float64(n), "tokens/op")
}
