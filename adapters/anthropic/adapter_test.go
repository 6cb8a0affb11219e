package anthropic_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/anthropic"
	"github.com/conclavehq/conclave/core/adaptertest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, "anthropic", anthropic.New())
}

func FuzzParseResponse(f *testing.F) {
	adaptertest.FuzzParseResponse(f, "anthropic", anthropic.New())
}

// BenchmarkTranslate is one seat call's translation: BuildRequest of the
// 2kb fixture and ParseResponse of the success fixture.
func BenchmarkTranslate(b *testing.B) {
	set, err := adaptertest.Fixtures("anthropic")
	require.NoError(b, err)
	req, ok := set.Request("2kb")
	require.True(b, ok)
	res, ok := set.Response("success")
	require.True(b, ok)
	a := anthropic.New()
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
	a := anthropic.New()
	_, err := a.BuildRequest(t.Context(), nil)
	require.Error(t, err)
	_, err = a.ParseResponse(t.Context(), nil)
	require.Error(t, err)
}
