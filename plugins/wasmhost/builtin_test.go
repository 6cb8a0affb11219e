package wasmhost_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/openai"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/adaptertest"
	"github.com/conclavehq/conclave/core/protocoltest"
	"github.com/conclavehq/conclave/plugins/wasmhost"
)

// TestBuiltins runs the conformance suites on the built-in adapters and
// judging protocols loaded through the WebAssembly carrier: the same golden
// fixtures the native ones pass.
func TestBuiltins(t *testing.T) {
	t.Parallel()
	h := newHost(t, wasmhost.Config{})
	adapters := []string{"openai", "anthropic", "gemini", "bedrock"}
	protocols := []string{"direct", "pairwise", "plurality"}
	if raceEnabled {
		// Every adapter and protocol crosses the same carrier code; under
		// the race detector compiling each module takes half a minute, so
		// one adapter and one protocol stand for the rest.
		adapters, protocols = adapters[:1], protocols[:1]
	}
	for _, name := range adapters {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, err := h.LoadAdapter(t.Context(), entry(t, name, "adapter"))
			require.NoError(t, err)
			adaptertest.Run(t, name, a)
		})
	}
	for _, name := range protocols {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := h.LoadProtocol(t.Context(), entry(t, name, "protocol"))
			require.NoError(t, err)
			protocoltest.Run(t, name, p)
		})
	}
}

// BenchmarkTranslate is one seat call's translation — BuildRequest of the
// openai 2kb fixture and ParseResponse of its success fixture — natively and
// through the WebAssembly carrier. The wasm runs report the warm instance's
// linear memory, the pool size and how long creating the instance took.
func BenchmarkTranslate(b *testing.B) {
	set, err := adaptertest.Fixtures("openai")
	require.NoError(b, err)
	req, ok := set.Request("2kb")
	require.True(b, ok)
	res, ok := set.Response("success")
	require.True(b, ok)
	translate := func(ctx context.Context, a core.Adapter) error {
		if _, err := a.BuildRequest(ctx, req.Request); err != nil {
			return err
		}
		_, err := a.ParseResponse(ctx, res.Response)
		return err
	}

	b.Run("native", func(b *testing.B) {
		adaptertest.BenchmarkTranslate(b, "openai", openai.New())
	})

	wasm := func(b *testing.B, cfg wasmhost.Config) (*wasmhost.Host, core.Adapter) {
		h := newHost(b, cfg)
		a, err := h.LoadAdapter(b.Context(), entry(b, "openai", "adapter"))
		require.NoError(b, err)
		require.NoError(b, translate(b.Context(), a)) // warm the instance
		return h, a
	}
	report := func(b *testing.B, h *wasmhost.Host) {
		s := statsOf(b, h, "openai")
		b.ReportMetric(float64(s.MemoryBytes), "bytes/instance")
		b.ReportMetric(float64(s.PoolSize), "instances")
		b.ReportMetric(float64(s.InstantiateTime.Microseconds())/1000, "ms/instantiate")
	}

	b.Run("wasm", func(b *testing.B) {
		h, a := wasm(b, wasmhost.Config{PoolSize: 1})
		adaptertest.BenchmarkTranslate(b, "openai", a)
		report(b, h)
	})

	b.Run("wasm-parallel", func(b *testing.B) {
		h, a := wasm(b, wasmhost.Config{})
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := translate(b.Context(), a); err != nil {
					b.Error(err)
					return
				}
			}
		})
		report(b, h)
	})
}
