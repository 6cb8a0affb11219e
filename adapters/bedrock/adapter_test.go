package bedrock_test

import (
	"testing"

	"github.com/conclavehq/conclave/adapters/bedrock"
	"github.com/conclavehq/conclave/core/adaptertest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, "bedrock", bedrock.New())
}

func FuzzParseResponse(f *testing.F) {
	adaptertest.FuzzParseResponse(f, "bedrock", bedrock.New())
}

// BenchmarkTranslate is one seat call's translation: BuildRequest of the
// 2kb fixture and ParseResponse of the success fixture.
func BenchmarkTranslate(b *testing.B) {
	adaptertest.BenchmarkTranslate(b, "bedrock", bedrock.New())
}
