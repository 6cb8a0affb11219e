package ollama_test

import (
	"testing"

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
	adaptertest.BenchmarkTranslate(b, "ollama", ollama.New())
}
