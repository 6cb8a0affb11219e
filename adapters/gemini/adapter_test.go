package gemini_test

import (
	"testing"

	"github.com/conclavehq/conclave/adapters/gemini"
	"github.com/conclavehq/conclave/core/adaptertest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, "gemini", gemini.New())
}

func FuzzParseResponse(f *testing.F) {
	adaptertest.FuzzParseResponse(f, "gemini", gemini.New())
}

// BenchmarkTranslate is one seat call's translation: BuildRequest of the
// 2kb fixture and ParseResponse of the success fixture.
func BenchmarkTranslate(b *testing.B) {
	adaptertest.BenchmarkTranslate(b, "gemini", gemini.New())
}
