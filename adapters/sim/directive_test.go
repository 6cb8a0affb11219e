package sim

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func TestParseDirectives(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text  string
		model string
		want  directives
		err   string
	}{
		{text: "no directives here", model: "atlas"},
		{text: "x [[sim: error=rate_limited]] y", model: "atlas", want: directives{failure: core.ErrorRateLimited}},
		{text: "[[sim: error=overloaded count=2]]", model: "atlas", want: directives{failure: core.ErrorOverloaded, count: 2}},
		{text: "[[sim: malformed count=1]]", model: "atlas", want: directives{failure: core.ErrorMalformed, count: 1}},
		{text: "[[sim:delay=1500ms]]", model: "atlas", want: directives{delay: 1500 * time.Millisecond, hasDelay: true}},
		{text: "[[sim: tokens_out=12 finish=length]]", model: "atlas", want: directives{tokensOut: 12, finish: core.FinishLength}},
		{text: "[[sim: answer=The answer is 42, really.]]", model: "atlas", want: directives{answer: "The answer is 42, really.", hasAnswer: true}},
		{text: `[[sim: answer="two words" delay=1s]]`, model: "atlas", want: directives{answer: "two words", hasAnswer: true, delay: time.Second, hasDelay: true}},
		{text: "[[sim@atlas: error=timeout]]", model: "atlas", want: directives{failure: core.ErrorTimeout, scope: "atlas"}},
		{text: "[[sim@sim/atlas: error=timeout]]", model: "atlas", want: directives{failure: core.ErrorTimeout, scope: "atlas"}},
		{text: "[[sim@atlas: error=timeout]]", model: "sonnet"},
		{text: "[[sim@atlas: error=timeout]] [[sim: error=rate_limited]]", model: "atlas", want: directives{failure: core.ErrorTimeout, scope: "atlas"}},
		{text: "[[sim: error=rate_limited]] [[sim: error=overloaded]]", model: "atlas", want: directives{failure: core.ErrorOverloaded}},
		{text: "[[sim:\n  delay=2s\n]]", model: "atlas", want: directives{delay: 2 * time.Second, hasDelay: true}},
		{text: "[[sim: error=on_fire]]", model: "atlas", err: "unknown error class"},
		{text: "[[sim: count=2]]", model: "atlas", err: "count needs"},
		{text: "[[sim: delay=soon]]", model: "atlas", err: "delay"},
		{text: "[[sim: finish=eventually]]", model: "atlas", err: "finish"},
		{text: "[[sim: tokens_out=0]]", model: "atlas", err: "tokens_out"},
		{text: "[[sim: colour=blue]]", model: "atlas", err: "unknown key"},
		{text: `[[sim: answer="unterminated]]`, model: "atlas", err: "unterminated"},
	}
	for _, c := range cases {
		got, err := parseDirectives(c.text, c.model)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.text)
			continue
		}
		require.NoError(t, err, c.text)
		require.Equal(t, c.want, got, c.text)
	}
	require.Equal(t, "Hello", stripDirectives("Hello [[sim: error=timeout]]"))
}

func FuzzParseDirectives(f *testing.F) {
	for _, s := range []string{"[[sim: error=rate_limited count=2]]", `[[sim: answer="a b" delay=1s]]`, "[[sim@x: malformed]]", "[[sim: answer=]]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDirectives(s, "atlas")
		if err == nil && d.count > 0 {
			require.NotEmpty(t, d.failure)
		}
		_ = stripDirectives(s)
	})
}

func FuzzSolve(f *testing.F) {
	for _, s := range []string{"What is 17 * 23?", "What is ((((1))))?", "Is 3 > 2?", "All a are b. x is an a. Is x a b?", "What is 2^2^2^2^2?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if sol, ok := solve(s); ok {
			require.NotEmpty(t, sol.key)
		}
	})
}

func TestRetryDirective(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	for _, f := range formats {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			q := ask{format: f, model: "atlas", user: "What is 2 + 2? [[sim: error=rate_limited count=2]] (" + f + ")"}
			require.Equal(t, http.StatusTooManyRequests, b.do(t, q).status)
			require.Equal(t, http.StatusTooManyRequests, b.do(t, q).status)
			third := b.do(t, q)
			require.Equal(t, http.StatusOK, third.status)
			require.Equal(t, "4", conclusionKey(third.text))
			require.Equal(t, "3", third.header.Get("X-Sim-Attempt"))
			require.Equal(t, http.StatusOK, b.do(t, q).status, "later attempts succeed too")
		})
	}
}

func TestTargetedDirective(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	user := "Should we ship on Friday? [[sim@atlas: error=overloaded count=1]] [[sim@sonnet: answer=Never on a Friday.]]"
	require.Equal(t, http.StatusServiceUnavailable, b.do(t, ask{format: "openai", model: "atlas", user: user}).status)
	require.Equal(t, http.StatusOK, b.do(t, ask{format: "openai", model: "atlas", user: user}).status)
	sonnet := b.do(t, ask{format: "anthropic", model: "sonnet", user: user})
	require.Equal(t, "Never on a Friday.", sonnet.text)
	gemini := b.do(t, ask{format: "gemini", model: "gemini-pro", user: user})
	require.Equal(t, http.StatusOK, gemini.status)
	require.NotContains(t, gemini.text, "Friday.", "the other directives do not apply to gemini-pro")
	st := b.srv.Stats()
	require.Equal(t, 1, st.Count("atlas", OutcomeOverloaded))
	require.Equal(t, 1, st.Count("atlas", OutcomeOK))
}

func TestDelayDirectiveIsScaled(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.1})
	start := time.Now()
	a := b.do(t, ask{format: "openai", model: "swift", user: "Hi [[sim: delay=3s]]"})
	elapsed := time.Since(start)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "3000.000", a.header.Get("X-Sim-Latency-Ms"))
	require.GreaterOrEqual(t, elapsed, 300*time.Millisecond)
	require.Less(t, elapsed, 2*time.Second, "3 s of simulated time at TimeScale 0.1")

	start = time.Now()
	a = b.do(t, ask{format: "openai", model: "swift", user: "Hi [[sim: error=rate_limited delay=2s]]"})
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "a delayed refusal waits too")
	require.Equal(t, "0", a.header.Get("Retry-After"))
}

func TestRandomFailureRates(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.001, Engines: map[string]EngineProfile{
		"swift": {ErrorRates: map[core.ErrorClass]float64{core.ErrorRateLimited: 0.3, core.ErrorMalformed: 0.2}},
	}})
	const n = 200
	for i := range n {
		b.do(t, ask{format: "openai", model: "swift", user: "Question number " + strconv.Itoa(i)})
	}
	st := b.srv.Stats()
	require.Equal(t, n, st.Count("swift", OutcomeOK)+st.Count("swift", OutcomeRateLimited)+st.Count("swift", OutcomeMalformed))
	require.InDelta(t, 0.3*n, st.Count("swift", OutcomeRateLimited), 0.1*n)
	require.InDelta(t, 0.2*n, st.Count("swift", OutcomeMalformed), 0.1*n)
}
