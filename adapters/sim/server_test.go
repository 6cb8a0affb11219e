package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/logtest"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func TestDisconnectStopsTheWait(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	for _, directive := range []string{"delay=30s", "error=timeout"} {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			res, err := b.client.Do(b.request(t, ctx, ask{format: "openai", model: "gemini-pro", user: "Wait [[sim: " + directive + "]]"}))
			if err == nil {
				res.Body.Close()
			}
			done <- err
		}()
		waitFor(t, "the call is in flight", func() bool { return b.srv.Stats().InFlight == 1 })
		start := time.Now()
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		waitFor(t, "the server stops waiting", func() bool { return b.srv.Stats().InFlight == 0 })
		require.Less(t, time.Since(start), 2*time.Second)
	}
	st := b.srv.Stats()
	require.Equal(t, 1, st.Count("gemini-pro", OutcomeCanceled))
	require.Equal(t, 1, st.Count("gemini-pro", OutcomeTimeout))
}

// TestManyHangingCalls holds 2,000 calls open at once over unencrypted
// HTTP/2 (a few connections, as a load generator would) and checks they
// cost little and all end when their clients give up.
// TestManyHangingCalls is not parallel: it measures the process's memory,
// which sibling tests' allocations would inflate.
//
// 2,000 calls here keep it quick and robust on a loaded CI machine (two
// HTTP/2 connections' worth at the server's 1,000 streams each);
// BenchmarkChatInFlight (cmd/conclave) holds 30,000 at once in a separate
// `conclave sim` process.
func TestManyHangingCalls(t *testing.T) {
	n := 2_000
	if testing.Short() || raceEnabled {
		n = 1_000
	}
	b := setup(t, Config{})
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: protocols}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"swift","messages":[{"role":"user","content":"hang %d [[sim: error=timeout]]"}]}`, i)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.srv.Endpoint("openai")+"/chat/completions", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			req.Header.Set("Authorization", "Bearer k")
			res, err := client.Do(req)
			if err == nil {
				res.Body.Close()
				errs <- fmt.Errorf("a hanging call answered %d", res.StatusCode)
			}
		})
	}
	waitFor(t, fmt.Sprintf("%d calls are in flight", n), func() bool {
		select {
		case err := <-errs: // a call that failed can never be in flight
			t.Fatalf("a hanging call failed before all were in flight (%d were): %v", b.srv.Stats().InFlight, err)
		default:
		}
		return b.srv.Stats().InFlight == n
	})

	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	perCall := float64(during.HeapInuse+during.StackInuse-before.HeapInuse-before.StackInuse) / float64(n)
	t.Logf("%d hanging calls: %.1f KiB each (client and server together), %d goroutines", n, perCall/1024, runtime.NumGoroutine())
	require.Less(t, perCall, 128*1024.0, "a hanging call is cheap")

	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	waitFor(t, "every hanging call ended", func() bool { return b.srv.Stats().InFlight == 0 })
	require.Equal(t, n, b.srv.Stats().Count("swift", OutcomeTimeout))
}

func TestCloseEndsHangingCallsAndIsSafeTwice(t *testing.T) {
	t.Parallel()
	srv, err := Start(t.Context(), Config{})
	require.NoError(t, err)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := `{"model":"opus","max_tokens":9,"messages":[{"role":"user","content":"[[sim: error=timeout]]"}]}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.Endpoint("anthropic")+"/v1/messages", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-Api-Key", "k")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	done := make(chan error, 1)
	go func() {
		res, err := client.Do(req)
		if err == nil {
			res.Body.Close()
			err = fmt.Errorf("unexpected answer %d", res.StatusCode)
		}
		done <- err
	}()
	waitFor(t, "the hanging call is in flight", func() bool { return srv.Stats().InFlight == 1 })
	require.NoError(t, srv.Close())
	err = <-done
	require.Error(t, err)
	require.NotContains(t, err.Error(), "unexpected answer", "the hanging call ends without an answer")
	require.Zero(t, srv.Stats().InFlight)
	require.NoError(t, srv.Close())
}

func TestLogsNeverHoldPrompts(t *testing.T) {
	t.Parallel()
	var buf logtest.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := setup(t, Config{TimeScale: 0.01, Logger: logger})
	awsSecret := b.awsCredentials(t).SecretAccessKey
	const secret = "PURPLE-ELEPHANT-7731"
	for _, f := range formats {
		b.do(t, ask{format: f, model: "atlas", system: "sys " + secret, user: "What is 2 + 2? " + secret})
		b.do(t, ask{format: f, model: "atlas", user: secret + " [[sim: error=overloaded]]"})
		b.do(t, ask{format: f, model: "atlas", user: secret + " [[sim: error=on_fire]]"})
	}
	require.NoError(t, b.srv.Close())
	logs := buf.String()
	require.Contains(t, logs, "simulated call", "debug logs were written")
	require.NotContains(t, logs, secret)
	require.NotContains(t, logs, awsSecret)
}

func TestConfig(t *testing.T) {
	t.Parallel()
	d := Config{}.WithDefaults()
	require.Equal(t, "127.0.0.1:0", d.Addr)
	require.Equal(t, ProfileQuick, d.Profile)
	require.Equal(t, 1.0, d.TimeScale)
	require.Equal(t, int64(1), d.Seed)
	require.NotNil(t, d.Logger)
	require.NoError(t, d.validate())

	for field, cfg := range map[string]Config{
		"Profile":   {Profile: "slow"},
		"TimeScale": {TimeScale: -1},
		"Latency":   {Engines: map[string]EngineProfile{"atlas": {Latency: Latency{Median: time.Second, Sigma: -1}}}},
		"ErrorRates": {Engines: map[string]EngineProfile{"atlas": {ErrorRates: map[core.ErrorClass]float64{
			core.ErrorRateLimited: 0.7, core.ErrorOverloaded: 0.7}}}},
		"Style":      {Engines: map[string]EngineProfile{"atlas": {Style: "baroque"}}},
		"Dissent":    {Engines: map[string]EngineProfile{"atlas": {Dissent: 2}}},
		"TailMedian": {Engines: map[string]EngineProfile{"atlas": {Latency: Latency{Median: time.Second, TailWeight: 0.1}}}},
	} {
		_, err := Start(t.Context(), cfg)
		require.ErrorContains(t, err, field)
	}

	_, err := Start(t.Context(), Config{Addr: "256.0.0.1:1"})
	require.Error(t, err)

	p := DefaultEngineProfile(ProfileSeed, "sim/opus").merge(EngineProfile{Style: "terse", Dissent: -1})
	require.Equal(t, seedLatency, p.Latency)
	require.Equal(t, "terse", p.Style)
	require.Zero(t, p.Dissent)
	require.Equal(t, 180, p.OutputTokensMin)
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	require.True(t, strings.HasPrefix(b.srv.URL(), "http://127.0.0.1:"))
	require.Equal(t, b.srv.URL()+"/openai/v1", b.srv.Endpoint("openai"))
	require.Equal(t, b.srv.URL()+"/anthropic", b.srv.Endpoint("anthropic"))
	require.Equal(t, b.srv.URL()+"/gemini", b.srv.Endpoint("gemini"))
	require.Equal(t, b.srv.URL()+"/bedrock", b.srv.Endpoint("bedrock"))
	require.Equal(t, b.srv.URL()+"/sts", b.srv.Endpoint("sts"))
	require.Empty(t, b.srv.Endpoint("cohere"))
	res, err := b.client.Get(b.srv.URL() + "/healthz")
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
}

func TestListenAndServe(t *testing.T) {
	t.Parallel()
	// Reserve a free port, then hand it to ListenAndServe.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ListenAndServe(ctx, Config{Addr: addr, Profile: ProfileSeed, TimeScale: 0.01}) }()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	waitFor(t, "the server answers", func() bool {
		res, err := (&http.Client{Transport: tr}).Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	cancel()
	require.NoError(t, <-done)
}

var _ io.Writer = (*logtest.Buffer)(nil)
