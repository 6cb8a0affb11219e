package goplugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/abi"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/goplugin/internal/testplugin"
	"github.com/conclavehq/conclave/plugins/manifest"
)

func TestAdapterRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, goplugin.Config{})
	a := b.loadAdapter(t, "roundtrip")
	native := testplugin.New()

	info, err := a.Describe(ctx)
	require.NoError(t, err)
	want, err := native.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, want, info)

	req, err := a.BuildRequest(ctx, seatRequest())
	require.NoError(t, err)
	wantReq, err := native.BuildRequest(ctx, seatRequest())
	require.NoError(t, err)
	require.Equal(t, wantReq, req)

	for _, res := range []*core.HTTPResponse{
		{Status: 200, Body: []byte(`{"text":"4","in":12,"out":1,"finish":"stop"}`)},
		{Status: 429, Header: map[string]string{"retry-after": "2"}, Body: []byte(`{"error":"slow down"}`)},
	} {
		ans, err := a.ParseResponse(ctx, res)
		require.NoError(t, err)
		wantAns, err := native.ParseResponse(ctx, res)
		require.NoError(t, err)
		require.Equal(t, wantAns, ans)
	}

	// An adapter's own failure comes back as the plugin's abi error.
	_, err = a.ParseResponse(ctx, &core.HTTPResponse{Status: 200, Body: []byte("not json")})
	var abiErr *abi.Error
	require.ErrorAs(t, err, &abiErr)
	require.Equal(t, abi.CodeFailed, abiErr.Code)
	require.Contains(t, abiErr.Message, "testplugin: decoding the response")
}

func TestProtocolRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, goplugin.Config{})
	p, err := b.host.LoadProtocol(ctx, entry(t, "testprotocol", "judge", manifest.KindProtocol))
	require.NoError(t, err)
	native := testplugin.Protocol{}

	info, err := p.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, &core.ProtocolInfo{Name: "testprotocol", Version: "1.0.0"}, info)

	task := &core.JudgeTask{Question: "Capital of France?", Seed: 7, Answers: []core.JudgeAnswer{{ID: "a", Text: "Paris"}, {ID: "b", Text: "Lyon"}}}
	plan, err := p.Plan(ctx, task)
	require.NoError(t, err)
	wantPlan, err := native.Plan(ctx, task)
	require.NoError(t, err)
	require.Equal(t, wantPlan, plan)

	verdicts := &core.JudgeVerdicts{Task: *task, Verdicts: []core.JudgeVerdict{
		{PromptID: "a", Judge: "j1", Text: "9"}, {PromptID: "b", Judge: "j1", Text: "3"}, {PromptID: "b", Judge: "j2", Text: "?"},
	}}
	scores, err := p.Score(ctx, verdicts)
	require.NoError(t, err)
	wantScores, err := native.Score(ctx, verdicts)
	require.NoError(t, err)
	require.Equal(t, wantScores, scores)
	require.Equal(t, "a", scores.Best)
	require.Equal(t, 1, scores.Unreadable)
}

func TestContextCrossesTheBoundary(t *testing.T) {
	t.Parallel()
	b := setup(t, goplugin.Config{})
	a := b.loadAdapter(t, "ctx")

	t.Run("deadline reaches the plugin", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		req, err := a.BuildRequest(ctx, &core.SeatRequest{Model: testplugin.ModelDeadline})
		require.NoError(t, err)
		left, err := strconv.Atoi(req.Header["deadline-ms"])
		require.NoError(t, err, "the plugin saw no deadline")
		require.Greater(t, left, 0)
		require.LessOrEqual(t, left, 3000)
	})

	t.Run("an expired deadline ends a blocked call", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := a.BuildRequest(ctx, &core.SeatRequest{Model: testplugin.ModelBlock})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotErrorIs(t, err, goplugin.ErrPluginCrashed)
		require.Less(t, time.Since(start), 2*time.Second)
		// The plugin's method was cancelled too: nothing stays blocked.
		require.Eventually(t, func() bool {
			_, blocked := probe(t.Context(), t, a)
			return blocked == 0
		}, 5*time.Second, 10*time.Millisecond)
	})

	t.Run("cancellation reaches the plugin", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := a.BuildRequest(ctx, &core.SeatRequest{Model: testplugin.ModelBlock})
			done <- err
		}()
		require.Eventually(t, func() bool {
			_, blocked := probe(t.Context(), t, a)
			return blocked == 1
		}, 5*time.Second, 5*time.Millisecond)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		require.Eventually(t, func() bool {
			_, blocked := probe(t.Context(), t, a)
			return blocked == 0
		}, 5*time.Second, 10*time.Millisecond)
	})

	t.Run("CallTimeout bounds a call without a deadline", func(t *testing.T) {
		// The timeout also bounds the plugin's describe call at load, which
		// a loaded machine can stretch past a few hundred milliseconds; 2 s
		// leaves it room and still ends a call that would block forever.
		b := setup(t, goplugin.Config{CallTimeout: 2 * time.Second})
		a := b.loadAdapter(t, "calltimeout")
		start := time.Now()
		_, err := a.BuildRequest(context.WithoutCancel(t.Context()), &core.SeatRequest{Model: testplugin.ModelBlock})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(start), 10*time.Second)
	})
}

func TestConcurrentCallsShareOneProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, goplugin.Config{})
	a := b.loadAdapter(t, "shared")
	want, err := testplugin.New().BuildRequest(ctx, seatRequest())
	require.NoError(t, err)

	const n = 32
	pids := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			// require must not be used off the test's goroutine.
			req, err := a.BuildRequest(ctx, seatRequest())
			if assert.NoError(t, err) {
				assert.Equal(t, want, req)
			}
			req, err = a.BuildRequest(ctx, &core.SeatRequest{Model: testplugin.ModelPID})
			if assert.NoError(t, err) {
				pids <- req.Header["pid"]
			}
		})
	}
	wg.Wait()
	close(pids)
	seen := map[string]bool{}
	for pid := range pids {
		seen[pid] = true
	}
	require.Len(t, seen, 1, "every call ran in the same process")
}

func TestCrashRestartsTheProcess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model  string
		logged string // what the plugin's death left in the host's log
	}{
		{model: testplugin.ModelCrash, logged: "exit status 3"},
		{model: testplugin.ModelPanic, logged: "panic: testplugin: panic requested"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			b := setup(t, goplugin.Config{})
			a := b.loadAdapter(t, "crashy")
			steady := b.loadAdapter(t, "steady") // same binary, its own process
			pid0, _ := probe(ctx, t, a)

			// Keep both plugins busy while one crashes.
			var (
				stop               = make(chan struct{})
				wg                 sync.WaitGroup
				mu                 sync.Mutex
				sharedErrs, others []error
				steadyCalls        int
			)
			for range 3 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						_, err := a.BuildRequest(ctx, seatRequest())
						_, err2 := steady.BuildRequest(ctx, seatRequest())
						mu.Lock()
						if err != nil {
							sharedErrs = append(sharedErrs, err)
						}
						if err2 != nil {
							others = append(others, err2)
						}
						steadyCalls++
						mu.Unlock()
					}
				})
			}

			_, err := a.BuildRequest(ctx, &core.SeatRequest{Model: tc.model})
			require.ErrorIs(t, err, goplugin.ErrPluginCrashed)

			// The next call starts a fresh process.
			req, err := a.BuildRequest(ctx, seatRequest())
			require.NoError(t, err)
			require.Equal(t, "/v1/chat", req.Path)
			pid1, _ := probe(ctx, t, a)
			require.NotEqual(t, pid0, pid1)

			close(stop)
			wg.Wait()
			require.Empty(t, others, "the other plugin kept serving")
			require.Positive(t, steadyCalls)
			for _, err := range sharedErrs {
				// Calls in flight on the dying process fail the same way.
				require.ErrorIs(t, err, goplugin.ErrPluginCrashed)
			}
			require.Contains(t, b.logs.String(), tc.logged)
		})
	}
}

// tamperedScript writes an executable that, if it ever ran, would create
// marker.
func tamperedScript(t *testing.T, path, marker string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755))
}

func TestTamperedBinaryIsRefused(t *testing.T) {
	t.Parallel()

	t.Run("at load", func(t *testing.T) {
		t.Parallel()
		b := setup(t, goplugin.Config{})
		dir := t.TempDir()
		marker := filepath.Join(dir, "ran")
		e := entry(t, "testadapter", "tampered", manifest.KindAdapter)
		e.Path = filepath.Join(dir, "tampered")
		tamperedScript(t, e.Path, marker)

		_, err := b.host.LoadAdapter(t.Context(), e)
		require.ErrorIs(t, err, manifest.ErrDigestMismatch)
		require.Contains(t, err.Error(), "pinned "+e.SHA256)
		require.NoFileExists(t, marker, "the tampered binary ran")
		require.Empty(t, goplugin.Processes(b.host))
	})

	t.Run("at restart", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		b := setup(t, goplugin.Config{})
		dir := t.TempDir()
		marker := filepath.Join(dir, "ran")
		e := entry(t, "testadapter", "swapped", manifest.KindAdapter)
		bin, err := os.ReadFile(e.Path)
		require.NoError(t, err)
		e.Path = filepath.Join(dir, "plugin")
		require.NoError(t, os.WriteFile(e.Path, bin, 0o755))
		a, err := b.host.LoadAdapter(ctx, e)
		require.NoError(t, err)

		// Swap the file under the running plugin, then make it restart.
		tamperedScript(t, e.Path+".new", marker)
		require.NoError(t, os.Rename(e.Path+".new", e.Path))
		_, err = a.BuildRequest(ctx, &core.SeatRequest{Model: testplugin.ModelCrash})
		require.ErrorIs(t, err, goplugin.ErrPluginCrashed)

		_, err = a.BuildRequest(ctx, seatRequest())
		require.ErrorIs(t, err, manifest.ErrDigestMismatch)
		require.Contains(t, err.Error(), "refusing to start plugin swapped")
		require.NoFileExists(t, marker, "the tampered binary ran")
	})
}

// TestEnvironmentIsNotInherited cannot run in parallel: it sets an
// environment variable.
func TestEnvironmentIsNotInherited(t *testing.T) {
	t.Setenv("CONCLAVE_TEST_SECRET", "hunter2")
	b := setup(t, goplugin.Config{})
	a := b.loadAdapter(t, "env")

	req, err := a.BuildRequest(t.Context(), &core.SeatRequest{Model: testplugin.ModelEnv})
	require.NoError(t, err)
	var env []string
	require.NoError(t, json.Unmarshal(req.Body, &env))
	allowed := []string{
		goplugin.MagicCookieKey, "PLUGIN_MIN_PORT", "PLUGIN_MAX_PORT", "PLUGIN_PROTOCOL_VERSIONS", // go-plugin's handshake
		"TMPDIR", // the process's private directory
	}
	require.NotEmpty(t, env)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		require.NotEqual(t, "CONCLAVE_TEST_SECRET", name)
		require.NotContains(t, kv, "hunter2")
		require.Contains(t, allowed, name, "the plugin sees %s", kv)
	}
}

func TestPluginOutputGoesToTheLogger(t *testing.T) {
	t.Parallel()
	b := setup(t, goplugin.Config{})
	a := b.loadAdapter(t, "chatty")
	_, err := a.BuildRequest(t.Context(), &core.SeatRequest{Model: testplugin.ModelPrint})
	require.NoError(t, err)
	// go-plugin streams the plugin's stdout and stderr back asynchronously.
	require.Eventually(t, func() bool {
		logs := b.logs.String()
		return strings.Contains(logs, `msg="to stdout" entry=chatty stream=stdout`) &&
			strings.Contains(logs, `msg="to stderr" entry=chatty stream=stderr`)
	}, 5*time.Second, 10*time.Millisecond)
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, goplugin.Config{StartTimeout: 5 * time.Second})

	t.Run("wrong carrier", func(t *testing.T) {
		e := entry(t, "testadapter", "wasmish", manifest.KindAdapter)
		e.Carrier = manifest.CarrierWasm
		_, err := b.host.LoadAdapter(ctx, e)
		require.ErrorContains(t, err, `carrier is "wasm"`)
	})
	t.Run("manifest kind differs", func(t *testing.T) {
		_, err := b.host.LoadProtocol(ctx, entry(t, "testadapter", "kind", manifest.KindAdapter))
		require.ErrorContains(t, err, `the manifest lists it as kind "adapter", not "protocol"`)
	})
	t.Run("binary serves another kind", func(t *testing.T) {
		_, err := b.host.LoadProtocol(ctx, entry(t, "testadapter", "liar", manifest.KindProtocol))
		require.ErrorContains(t, err, "does not serve the conclave.plugin.v1.Protocol service")
		require.Empty(t, goplugin.Processes(b.host), "a failed load leaves no process")
	})
	t.Run("missing file", func(t *testing.T) {
		e := entry(t, "testadapter", "missing", manifest.KindAdapter)
		e.Path = filepath.Join(t.TempDir(), "nothing")
		_, err := b.host.LoadAdapter(ctx, e)
		require.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("not a plugin", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "notaplugin")
		require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\necho hello\nexit 1\n"), 0o755))
		sum, err := manifest.Digest(path)
		require.NoError(t, err)
		e := &manifest.Entry{Name: "notaplugin", Kind: manifest.KindAdapter, Carrier: manifest.CarrierGoPlugin, Path: path, SHA256: sum}
		_, err = b.host.LoadAdapter(ctx, e)
		require.ErrorContains(t, err, "starting plugin notaplugin")
	})
	t.Run("same name, another file", func(t *testing.T) {
		b.loadAdapter(t, "taken")
		e := entry(t, "testprotocol", "taken", manifest.KindAdapter)
		_, err := b.host.LoadAdapter(ctx, e)
		require.ErrorContains(t, err, "already loaded from")
	})
}

func TestLoadingTwiceSharesTheProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, goplugin.Config{})
	a1 := b.loadAdapter(t, "twice")
	a2 := b.loadAdapter(t, "twice")
	pid1, _ := probe(ctx, t, a1)
	pid2, _ := probe(ctx, t, a2)
	require.Equal(t, pid1, pid2)
	require.Len(t, goplugin.Processes(b.host), 1)
}

func TestLargeMessages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, goplugin.Config{})
	a := b.loadAdapter(t, "large")
	// A response as large as the egress layer's default cap (8 MiB), far
	// above gRPC's default 4 MiB message cap once base64 in the JSON input.
	text := strings.Repeat("a", 8<<20-64)
	ans, err := a.ParseResponse(ctx, &core.HTTPResponse{Status: 200, Body: []byte(`{"text":"` + text + `","finish":"stop"}`)})
	require.NoError(t, err)
	require.Equal(t, text, ans.Text)
}
