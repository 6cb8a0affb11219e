package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
)

// recordSleeps makes back-off waits instant and records them.
func recordSleeps(e *egress.Egress) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	egress.SetSleep(e, func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	})
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()

	t.Run("429 then 200 is one answer after two attempts", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, n int) {
			if n == 1 {
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			_, _ = w.Write([]byte("second time lucky"))
		})
		eng := p.engine("test/retry")
		b := setup(t, egress.Config{}, static, eng)
		a := &testAdapter{auth: core.AuthBearer}
		ans := b.mustAnswer(t, eng, a)
		require.Nil(t, ans.Error)
		require.Equal(t, "second time lucky", ans.Text)
		reqs := p.requests()
		require.Len(t, reqs, 2)
		require.NotEmpty(t, reqs[0].Body)
		require.Equal(t, reqs[0].Body, reqs[1].Body, "the retry sends the whole body again")
		describes, builds, parses := a.counts()
		require.Equal(t, []int{1, 2, 2}, []int{describes, builds, parses}, "described once, built and parsed per attempt")
		require.Equal(t, 2.0, b.metric(t, "conclave_egress_attempts_total", map[string]string{"engine": "test/retry"}))
		require.Equal(t, 1.0, b.metric(t, "conclave_egress_calls_total", map[string]string{"engine": "test/retry", "outcome": "ok"}))
	})

	for _, tc := range []struct {
		status int
		class  core.ErrorClass
	}{{http.StatusBadRequest, core.ErrorBadRequest}, {http.StatusUnauthorized, core.ErrorAuthRefused}, {http.StatusForbidden, core.ErrorAuthRefused}} {
		t.Run(http.StatusText(tc.status)+" is not retried", func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, reply(tc.status, `{"error":"no"}`))
			eng := p.engine("test/final")
			b := setup(t, egress.Config{}, static, eng)
			ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
			requireClass(t, ans, tc.class)
			require.Equal(t, tc.status, ans.Error.Status)
			require.Len(t, p.requests(), 1)
		})
	}

	t.Run("retryable failures stop at MaxAttempts with the last answer", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, reply(http.StatusServiceUnavailable, "busy"))
		eng := p.engine("test/busy")
		b := setup(t, egress.Config{MaxAttempts: 4}, static, eng)
		ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
		requireClass(t, ans, core.ErrorOverloaded)
		require.Equal(t, http.StatusServiceUnavailable, ans.Error.Status)
		require.Len(t, p.requests(), 4)
		require.Equal(t, 4.0, b.metric(t, "conclave_egress_attempts_total", map[string]string{"engine": "test/busy"}))
		require.Equal(t, 1.0, b.metric(t, "conclave_egress_calls_total", map[string]string{"engine": "test/busy", "outcome": "overloaded"}))
	})
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, header, value string
		min, max            time.Duration
	}{
		{"seconds", "Retry-After", "2", 2 * time.Second, 2 * time.Second},
		{"capped", "Retry-After", "3600", 3 * time.Second, 3 * time.Second},
		{"milliseconds", "Retry-After-Ms", "1500", 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"HTTP date", "Retry-After", time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat), time.Second, 3 * time.Second},
		{"garbage falls back to jitter", "Retry-After", "soon", 0, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, n int) {
				if n == 1 {
					w.Header().Set(tc.header, tc.value)
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				_, _ = w.Write([]byte("ok"))
			})
			eng := p.engine("test/ra")
			b := setup(t, egress.Config{BaseBackoff: 100 * time.Millisecond, MaxBackoff: 3 * time.Second}, static, eng)
			waits := recordSleeps(b.eg)
			ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
			require.Nil(t, ans.Error)
			w := waits()
			require.Len(t, w, 1)
			require.GreaterOrEqual(t, w[0], tc.min)
			require.LessOrEqual(t, w[0], tc.max)
		})
	}
}

func TestBackoffIsJitteredAndBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, egress.Config{BaseBackoff: 250 * time.Millisecond, MaxBackoff: 5 * time.Second}, static)
	for n := 1; n <= 64; n++ {
		ceil := min(250*time.Millisecond<<min(n-1, 20), 5*time.Second)
		var distinct = map[time.Duration]bool{}
		for range 200 {
			d := egress.Backoff(b.eg, n, 0)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceil, "retry %d", n)
			distinct[d] = true
		}
		require.Greater(t, len(distinct), 100, "retry %d is jittered", n)
	}
	require.Equal(t, 5*time.Second, egress.Backoff(b.eg, 1, time.Hour), "Retry-After is capped")
	require.Equal(t, 2*time.Second, egress.Backoff(b.eg, 1, 2*time.Second))
}

func TestCallerCancellationStopsRetries(t *testing.T) {
	t.Parallel()
	first := make(chan struct{})
	var once sync.Once
	p := newProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		once.Do(func() { close(first) })
	})
	eng := p.engine("test/cancel")
	b := setup(t, egress.Config{BaseBackoff: time.Second, MaxBackoff: time.Hour, MaxAttempts: 5}, static, eng)

	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		ans *core.SeatAnswer
		err error
	}
	done := make(chan result, 1)
	go func() {
		ans, err := b.call(ctx, eng, &testAdapter{auth: core.AuthBearer})
		done <- result{ans, err}
	}()
	<-first
	cancel()
	select {
	case r := <-done:
		require.ErrorIs(t, r.err, context.Canceled)
		require.Nil(t, r.ans)
	case <-time.After(10 * time.Second):
		t.Fatal("Call kept waiting for a back-off after its context was canceled")
	}
	require.Len(t, p.requests(), 1)
	require.Equal(t, 1.0, b.metric(t, "conclave_egress_calls_total", map[string]string{"engine": "test/cancel", "outcome": "canceled"}))
}

func TestNoRetryPastTheCallersDeadline(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	eng := p.engine("test/deadline")
	b := setup(t, egress.Config{BaseBackoff: time.Second, MaxBackoff: time.Minute}, static, eng)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ans, err := b.call(ctx, eng, &testAdapter{auth: core.AuthBearer})
	require.NoError(t, err, "the provider's answer beats a deadline error")
	requireClass(t, ans, core.ErrorRateLimited)
	require.Len(t, p.requests(), 1)
}

func TestTimeouts(t *testing.T) {
	t.Parallel()

	t.Run("a hanging provider times out per attempt and is retried", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, func(_ http.ResponseWriter, r *http.Request, _ []byte, _ int) { <-r.Context().Done() })
		eng := p.engine("test/hang")
		eng.Timeout = 100 * time.Millisecond
		b := setup(t, egress.Config{MaxAttempts: 2}, static, eng)
		ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
		requireClass(t, ans, core.ErrorTimeout)
		require.Contains(t, ans.Error.Message, "100ms")
		require.Equal(t, 2.0, b.metric(t, "conclave_egress_attempts_total", map[string]string{"engine": "test/hang"}))
		require.Equal(t, 1.0, b.metric(t, "conclave_egress_calls_total", map[string]string{"engine": "test/hang", "outcome": "timeout"}))
	})

	t.Run("a provider that stalls mid-body times out", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			_, _ = w.Write([]byte(`{"partial":`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		eng := p.engine("test/stall")
		eng.Timeout = 100 * time.Millisecond
		b := setup(t, egress.Config{MaxAttempts: 1}, static, eng)
		requireClass(t, b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer}), core.ErrorTimeout)
	})

	t.Run("DefaultTimeout applies when the engine sets none", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, func(_ http.ResponseWriter, r *http.Request, _ []byte, _ int) { <-r.Context().Done() })
		eng := p.engine("test/default")
		b := setup(t, egress.Config{MaxAttempts: 1, DefaultTimeout: 50 * time.Millisecond}, static, eng)
		requireClass(t, b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer}), core.ErrorTimeout)
	})

	t.Run("the caller's deadline is the caller's error", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, func(_ http.ResponseWriter, r *http.Request, _ []byte, _ int) { <-r.Context().Done() })
		eng := p.engine("test/caller")
		eng.Timeout = time.Minute
		b := setup(t, egress.Config{}, static, eng)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		ans, err := b.call(ctx, eng, &testAdapter{auth: core.AuthBearer})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Nil(t, ans)
	})

	t.Run("connection refused is overloaded and retried", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		eng := &core.Engine{ID: "test/refused", Endpoint: "http://" + addr}
		b := setup(t, egress.Config{}, static, eng)
		ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
		requireClass(t, ans, core.ErrorOverloaded)
		require.Equal(t, 3.0, b.metric(t, "conclave_egress_attempts_total", map[string]string{"engine": "test/refused"}))
	})

	t.Run("a dropped connection is overloaded", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		})
		eng := p.engine("test/dropped")
		b := setup(t, egress.Config{MaxAttempts: 2}, static, eng)
		requireClass(t, b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer}), core.ErrorOverloaded)
		require.Len(t, p.requests(), 2)
	})
}

func TestAdapterFailuresAreNotRetried(t *testing.T) {
	t.Parallel()
	boom := errors.New("adapter exploded")
	for _, tc := range []struct {
		name               string
		adapter            func() *testAdapter
		attempts, requests int
	}{
		{"Describe fails", func() *testAdapter { return &testAdapter{auth: core.AuthBearer, describeErr: boom} }, 0, 0},
		{"unknown scheme", func() *testAdapter { return &testAdapter{auth: "kerberos"} }, 0, 0},
		{"BuildRequest fails", func() *testAdapter {
			return &testAdapter{auth: core.AuthBearer, build: func(*core.SeatRequest) (*core.HTTPRequest, error) { return nil, boom }}
		}, 1, 0},
		{"BuildRequest builds nothing", func() *testAdapter {
			return &testAdapter{auth: core.AuthBearer, build: func(*core.SeatRequest) (*core.HTTPRequest, error) { return nil, nil }}
		}, 1, 0},
		{"ParseResponse fails, even on a 429", func() *testAdapter {
			return &testAdapter{auth: core.AuthBearer, parse: func(*core.HTTPResponse) (*core.SeatAnswer, error) { return nil, boom }}
		}, 1, 1},
		{"ParseResponse answers nothing", func() *testAdapter {
			return &testAdapter{auth: core.AuthBearer, parse: func(*core.HTTPResponse) (*core.SeatAnswer, error) { return nil, nil }}
		}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, reply(http.StatusTooManyRequests, "slow down"))
			eng := p.engine("test/adapter")
			b := setup(t, egress.Config{}, static, eng)
			a := tc.adapter()
			ans := b.mustAnswer(t, eng, a)
			requireClass(t, ans, core.ErrorAdapterFailed)
			require.Len(t, p.requests(), tc.requests)
			require.NotContains(t, ans.Error.Message, secret)
			require.Equal(t, float64(tc.attempts), b.metric(t, "conclave_egress_attempts_total", map[string]string{"engine": "test/adapter"}))
			if strings.HasSuffix(tc.name, "fails") || strings.Contains(tc.name, "fails,") {
				require.Contains(t, ans.Error.Message, "adapter exploded", "the adapter's own error is kept")
			}
		})
	}
}

func TestDescribeIsCachedPerAdapter(t *testing.T) {
	t.Parallel()
	p := newProvider(t, reply(http.StatusOK, "ok"))
	eng := p.engine("test/describe")
	b := setup(t, egress.Config{}, static, eng)
	a, other := &testAdapter{auth: core.AuthBearer}, &testAdapter{auth: core.AuthXAPIKey}
	for range 3 {
		b.mustAnswer(t, eng, a)
		b.mustAnswer(t, eng, other)
	}
	describes, _, _ := a.counts()
	require.Equal(t, 1, describes)
	describes, _, _ = other.counts()
	require.Equal(t, 1, describes)
	require.Equal(t, secret, p.requests()[1].Header.Get("X-Api-Key"), "each adapter keeps its own scheme")
}

func TestMetricsAndConcurrentCalls(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		if r.URL.Query().Get("fail") != "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	engines := []*core.Engine{p.engine("test/one"), p.engine("test/two")}
	b := setup(t, egress.Config{}, static, engines...)
	failing := &testAdapter{auth: core.AuthBearer, build: func(*core.SeatRequest) (*core.HTTPRequest, error) {
		return &core.HTTPRequest{Method: http.MethodPost, Path: "/v1/chat?fail=1"}, nil
	}}
	ok := &testAdapter{auth: core.AuthBearer}

	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			a := ok
			if i%4 == 0 {
				a = failing
			}
			_, err := b.call(context.Background(), engines[i%2], a)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	require.Equal(t, 10.0, b.metric(t, "conclave_egress_calls_total", map[string]string{"engine": "test/one", "outcome": "bad_request"}))
	require.Equal(t, 10.0, b.metric(t, "conclave_egress_calls_total", map[string]string{"engine": "test/one", "outcome": "ok"}))
	require.Equal(t, 20.0, b.metric(t, "conclave_egress_calls_total", map[string]string{"engine": "test/two", "outcome": "ok"}))
	require.Equal(t, 20.0, b.metric(t, "conclave_egress_call_duration_seconds", map[string]string{"engine": "test/two"}))
	require.Equal(t, 20.0, b.metric(t, "conclave_egress_attempts_total", map[string]string{"engine": "test/one"}))

	// Every label value is an engine id or an outcome: nothing from a
	// request, a response or a credential.
	families, err := b.reg.Gather()
	require.NoError(t, err)
	allowed := map[string]bool{"test/one": true, "test/two": true, "ok": true, "canceled": true, "error": true}
	for _, c := range core.ErrorClasses {
		allowed[string(c)] = true
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				require.True(t, allowed[l.GetValue()], "label %s=%q", l.GetName(), l.GetValue())
			}
		}
	}

	// A second Egress may share the registry.
	_, err = egress.New(egress.Config{Registerer: b.reg}, static, engines)
	require.NoError(t, err)
}

func TestCallNeedsACompleteCall(t *testing.T) {
	t.Parallel()
	b := setup(t, egress.Config{}, static)
	_, err := b.eg.Call(context.Background(), nil)
	require.Error(t, err)
	_, err = b.eg.Call(context.Background(), &core.EgressCall{Engine: &core.Engine{ID: "e"}})
	require.Error(t, err)
	_, err = egress.New(egress.Config{}, nil, nil)
	require.Error(t, err)
	for _, cfg := range []egress.Config{{MaxAttempts: -1}, {MaxAttempts: 11}, {MaxResponseBytes: -1}, {DefaultTimeout: -1}, {BaseBackoff: time.Second, MaxBackoff: time.Millisecond}} {
		_, err := egress.New(cfg, static, nil)
		require.Error(t, err, "%+v", cfg)
	}
}

func TestSleepHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, egress.SleepCtx(ctx, time.Hour), context.Canceled)
	require.NoError(t, egress.SleepCtx(context.Background(), time.Millisecond))
}
