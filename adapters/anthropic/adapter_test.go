package anthropic_test

import (
	"testing"

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
	adaptertest.BenchmarkTranslate(b, "anthropic", anthropic.New())
}
