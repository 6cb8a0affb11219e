package ollama_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/example/ollama"
	"github.com/conclavehq/conclave/core/adaptertest"
)

// TestConformance runs the golden fixtures of
// core/adaptertest/testdata/ollama against the adapter compiled in.
// go test -run Conformance -update rewrites their want parts from it.
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, "ollama", ollama.New())
}

func FuzzParseResponse(f *testing.F) {
	adaptertest.FuzzParseResponse(f, "ollama", ollama.New())
}

// BenchmarkTranslate is one seat call's translation: BuildRequest of the
// 2kb fixture and ParseResponse of the success fixture.
func BenchmarkTranslate(b *testing.B) {
	set, err := adaptertest.Fixtures("ollama")
	require.NoError(b, err)
	req, ok := set.Request("2kb")
	require.True(b, ok)
	res, ok := set.Response("success")
	require.True(b, ok)
	a := ollama.New()
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.BuildRequest(ctx, req.Request); err != nil {
			b.Fatal(err)
		}
		if _, err := a.ParseResponse(ctx, res.Response); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNilInput(t *testing.T) {
	t.Parallel()
	a := ollama.New()
	_, err := a.BuildRequest(t.Context(), nil)
	require.Error(t, err)
	_, err = a.ParseResponse(t.Context(), nil)
	require.Error(t, err)
}
