package wasmhost_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/manifest"
	"github.com/conclavehq/conclave/plugins/wasmhost"
)

func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	h := newHost(t, wasmhost.Config{PoolSize: 1})
	ctx := context.Background()

	t.Run("a module whose digest does not match the manifest", func(t *testing.T) {
		e := entry(t, "hostile", "adapter")
		e.SHA256 = strings.Repeat("0", 64)
		_, err := h.LoadAdapter(ctx, e)
		require.ErrorIs(t, err, manifest.ErrDigestMismatch)
	})
	t.Run("a module changed after it was pinned", func(t *testing.T) {
		e := entry(t, "hostile", "adapter")
		b, err := os.ReadFile(e.Path)
		require.NoError(t, err)
		b[len(b)-1] ^= 0xff
		e.Path = filepath.Join(t.TempDir(), "tampered.wasm")
		require.NoError(t, os.WriteFile(e.Path, b, 0o600))
		_, err = h.LoadAdapter(ctx, e)
		require.ErrorIs(t, err, manifest.ErrDigestMismatch)
	})
	t.Run("an adapter module loaded as a protocol", func(t *testing.T) {
		e := entry(t, "hostile", "protocol")
		e.Name = "hostile-as-protocol"
		_, err := h.LoadProtocol(ctx, e)
		// plugins/wasmguest exports every method, so the handshake's kind
		// check is what refuses it.
		require.ErrorIs(t, err, wasmhost.ErrKind)
	})
	t.Run("a manifest entry of the other kind", func(t *testing.T) {
		_, err := h.LoadProtocol(ctx, entry(t, "hostile", "adapter"))
		require.ErrorIs(t, err, wasmhost.ErrKind)
	})
	t.Run("a go-plugin entry", func(t *testing.T) {
		e := entry(t, "hostile", "adapter")
		e.Carrier = manifest.CarrierGoPlugin
		_, err := h.LoadAdapter(ctx, e)
		require.ErrorContains(t, err, "carrier")
	})
	t.Run("a file that is not WebAssembly", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "not.wasm")
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho hi\n"), 0o600))
		sum, err := manifest.Digest(p)
		require.NoError(t, err)
		_, err = h.LoadAdapter(ctx, &manifest.Entry{Name: "not", Kind: "adapter", Carrier: "wasm", Path: p, SHA256: sum})
		require.ErrorContains(t, err, "compiling")
	})
	require.Empty(t, h.Stats(), "nothing refused is loaded")
}

func TestLoadTwiceSharesThePool(t *testing.T) {
	t.Parallel()
	h := newHost(t, wasmhost.Config{PoolSize: 1})
	ctx := context.Background()
	e := entry(t, "hostile", "adapter")
	a1, err := h.LoadAdapter(ctx, e)
	require.NoError(t, err)
	a2, err := h.LoadAdapter(ctx, e)
	require.NoError(t, err)
	echo(t, a1)
	echo(t, a2)
	require.Len(t, h.Stats(), 1)
	require.Equal(t, uint64(2), statsOf(t, h, "hostile").Calls)

	other := *e
	other.SHA256 = strings.Repeat("1", 64)
	_, err = h.LoadAdapter(ctx, &other)
	require.ErrorContains(t, err, "already loaded")
}

func TestPool(t *testing.T) {
	t.Parallel()
	const size = 2
	h := newHost(t, wasmhost.Config{PoolSize: size, CallTimeout: 3 * time.Second})
	ctx := context.Background()
	a, err := h.LoadAdapter(ctx, entry(t, "hostile", "adapter"))
	require.NoError(t, err)

	s := statsOf(t, h, "hostile")
	require.Equal(t, 1, s.Instances, "the handshake's instance stays warm; the rest are created on demand")
	require.Equal(t, size, s.PoolSize)
	require.Positive(t, s.InstantiateTime)
	require.Greater(t, s.MemoryBytes, uint64(1<<20))

	t.Run("concurrent calls share at most PoolSize instances", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8*5)
		for range 8 {
			wg.Go(func() {
				for range 5 {
					_, err := a.BuildRequest(ctx, &core.SeatRequest{Model: "echo"})
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		s := statsOf(t, h, "hostile")
		require.LessOrEqual(t, s.Instances, size)
		require.LessOrEqual(t, s.Created, uint64(size))
		require.Zero(t, s.Discarded)
	})

	t.Run("a caller that already gave up discards nothing", func(t *testing.T) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		_, err := a.BuildRequest(done, &core.SeatRequest{Model: "echo"})
		requireCarrierErr(t, err, wasmhost.ErrCanceled)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, statsOf(t, h, "hostile").Discarded)
	})
}

func TestPoolWaitRespectsContext(t *testing.T) {
	t.Parallel()
	h := newHost(t, wasmhost.Config{PoolSize: 1, CallTimeout: 2 * time.Second})
	ctx := context.Background()
	a, err := h.LoadAdapter(ctx, entry(t, "hostile", "adapter"))
	require.NoError(t, err)

	// Occupy the only instance with a loop the call timeout will end.
	looped := make(chan error, 1)
	go func() {
		_, err := a.BuildRequest(ctx, &core.SeatRequest{Model: "loop"})
		looped <- err
	}()
	require.Eventually(t, func() bool { return statsOf(t, h, "hostile").Calls == 1 }, 2*time.Second, time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = a.BuildRequest(short, &core.SeatRequest{Model: "echo"})
	ce := requireCarrierErr(t, err, wasmhost.ErrTimeout)
	require.Empty(t, ce.Stderr)
	requireCarrierErr(t, <-looped, wasmhost.ErrTimeout)
	require.Equal(t, uint64(1), statsOf(t, h, "hostile").Discarded, "a caller that gave up waiting discards nothing")
	echo(t, a)
}

func TestClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t, wasmhost.Config{PoolSize: 1, CallTimeout: time.Minute})
	a, err := h.LoadAdapter(ctx, entry(t, "hostile", "adapter"))
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := a.BuildRequest(ctx, &core.SeatRequest{Model: "loop"})
		done <- err
	}()
	require.Eventually(t, func() bool { return statsOf(t, h, "hostile").Calls == 1 }, 2*time.Second, 5*time.Millisecond)
	require.NoError(t, h.Close(ctx))
	select {
	case err := <-done:
		requireCarrierErr(t, err, wasmhost.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("closing the host did not interrupt a running call")
	}
	require.NoError(t, h.Close(ctx), "Close is safe twice")

	_, err = a.BuildRequest(ctx, &core.SeatRequest{Model: "echo"})
	requireCarrierErr(t, err, wasmhost.ErrClosed)
	_, err = h.LoadAdapter(ctx, rawEntry(t, "raw", rawAdapter()))
	require.ErrorIs(t, err, wasmhost.ErrClosed)
}

func TestCompilationCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	e := rawEntry(t, "raw", rawAdapter())
	for range 2 {
		h, err := wasmhost.New(ctx, wasmhost.Config{PoolSize: 1, CacheDir: dir})
		require.NoError(t, err)
		a, err := h.LoadAdapter(ctx, e)
		require.NoError(t, err)
		_, err = a.Describe(ctx)
		require.NoError(t, err)
		require.NoError(t, h.Close(ctx))
	}
	var files int
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return err
	}))
	require.Positive(t, files, "the compiled module is cached on disk")
}

func TestConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		cfg   wasmhost.Config
		field string
	}{
		{wasmhost.Config{PoolSize: -1}, "PoolSize"},
		{wasmhost.Config{MemoryLimitPages: 65537}, "MemoryLimitPages"},
		{wasmhost.Config{CallTimeout: -time.Second}, "CallTimeout"},
		{wasmhost.Config{MaxOutputBytes: -1}, "MaxOutputBytes"},
	} {
		_, err := wasmhost.New(ctx, c.cfg)
		require.ErrorContains(t, err, "Config."+c.field)
	}
	d := wasmhost.Config{}.WithDefaults()
	require.Positive(t, d.PoolSize)
	require.Equal(t, uint32(wasmhost.DefaultMemoryLimitPages), d.MemoryLimitPages)
	require.Equal(t, wasmhost.DefaultCallTimeout, d.CallTimeout)
	require.Equal(t, wasmhost.DefaultMaxOutputBytes, d.MaxOutputBytes)
	require.NotNil(t, d.Logger)
}

// TestGuestLogging checks that conclave.log and stdout/stderr reach the
// logger, capped.
func TestGuestLogging(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	h := newHost(t, wasmhost.Config{PoolSize: 1, Logger: slog.New(rec)})
	ctx := context.Background()
	a, err := h.LoadAdapter(ctx, entry(t, "hostile", "adapter"))
	require.NoError(t, err)
	_, err = a.BuildRequest(ctx, &core.SeatRequest{Model: "log"})
	require.NoError(t, err)

	info := rec.find(slog.LevelInfo, "wasm plugin log")
	require.Len(t, info, 32, "messages per call are capped")
	require.Equal(t, "message 0", info[0]["message"])
	require.Equal(t, "hostile", info[0]["plugin"])
	require.Len(t, rec.find(slog.LevelInfo, "wasm plugin log: further messages in this call dropped"), 1)
	var lines []string
	for _, r := range rec.find(slog.LevelDebug, "wasm plugin output") {
		lines = append(lines, r["stream"]+": "+r["line"])
	}
	require.Contains(t, lines, "stdout: to stdout")
	require.Contains(t, lines, "stderr: to stderr")
}

// recorder is a slog.Handler that keeps every record's message and
// attributes.
type recorder struct {
	mu      sync.Mutex
	records []record
}

type record struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.records = append(r.records, record{rec.Level, rec.Message, attrs})
	r.mu.Unlock()
	return nil
}

func (r *recorder) find(level slog.Level, msg string) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, rec := range r.records {
		if rec.level == level && rec.msg == msg {
			out = append(out, rec.attrs)
		}
	}
	return out
}

// BenchmarkCallOverhead is the carrier's own cost per call — alloc, copy
// in, call, bounds-checked copy out, two frees, and the deadline watch —
// measured on a hand-assembled module whose methods do nothing.
func BenchmarkCallOverhead(b *testing.B) {
	h := newHost(b, wasmhost.Config{PoolSize: 1})
	e := rawEntryTB(b, "raw", rawAdapter())
	a, err := h.LoadAdapter(b.Context(), e)
	require.NoError(b, err)
	res := &core.HTTPResponse{Status: 200, Body: make([]byte, 2048)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.ParseResponse(b.Context(), res); err != nil {
			b.Fatal(err)
		}
	}
}
