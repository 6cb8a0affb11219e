package goplugin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/openai"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/adaptertest"
	"github.com/conclavehq/conclave/plugins/goplugin"
	"github.com/conclavehq/conclave/plugins/manifest"
)

// BenchmarkTranslate is one seat call's translation — BuildRequest of the
// openai 2kb fixture and ParseResponse of its success fixture — natively
// and through a go-plugin process. "goplugin-parallel" runs calls from
// every core at once against the one shared process.
func BenchmarkTranslate(b *testing.B) {
	set, err := adaptertest.Fixtures("openai")
	require.NoError(b, err)
	req, ok := set.Request("2kb")
	require.True(b, ok)
	res, ok := set.Response("success")
	require.True(b, ok)

	b.Run("native", func(b *testing.B) {
		adaptertest.BenchmarkTranslate(b, "openai", openai.New())
	})

	loaded := func(b *testing.B) core.Adapter {
		bundle := setup(b, goplugin.Config{})
		a, err := bundle.host.LoadAdapter(b.Context(), entry(b, "openai", "openai-goplugin", manifest.KindAdapter))
		require.NoError(b, err)
		return a
	}
	b.Run("goplugin", func(b *testing.B) {
		adaptertest.BenchmarkTranslate(b, "openai", loaded(b))
	})
	b.Run("goplugin-parallel", func(b *testing.B) {
		a := loaded(b)
		ctx := b.Context()
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := a.BuildRequest(ctx, req.Request); err != nil {
					b.Error(err)
					return
				}
				if _, err := a.ParseResponse(ctx, res.Response); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkStart is starting a plugin process: digest check, exec,
// handshake, the first describe, then Close.
func BenchmarkStart(b *testing.B) {
	e := entry(b, "openai", "openai-goplugin", manifest.KindAdapter)
	ctx := b.Context()
	for b.Loop() {
		h := goplugin.New(goplugin.Config{})
		if _, err := h.LoadAdapter(ctx, e); err != nil {
			b.Fatal(err)
		}
		if err := h.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
