package reply_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/core"
)

func TestClassifyStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]core.ErrorClass{
		429: core.ErrorRateLimited, 408: core.ErrorTimeout, 504: core.ErrorTimeout, 401: core.ErrorAuthRefused,
		403: core.ErrorAuthRefused, 413: core.ErrorContextTooLong, 500: core.ErrorOverloaded, 529: core.ErrorOverloaded,
		400: core.ErrorBadRequest, 404: core.ErrorBadRequest, 200: core.ErrorMalformed, 302: core.ErrorMalformed,
	} {
		require.Equal(t, want, reply.ClassifyStatus(status), "status %d", status)
	}
}

func TestShortenKeepsOneValidLine(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a b c", reply.Shorten("  a\n b\t c "))
	long := reply.Shorten(strings.Repeat("é", 300))
	require.True(t, utf8.ValidString(long))
	require.LessOrEqual(t, len(long), reply.MaxMessage+len("…"))
	require.True(t, strings.HasSuffix(long, "…"))
	require.Equal(t, "\uFFFD", reply.Shorten("\xff"))
}

func TestJSONProblemNeverQuotesTheBody(t *testing.T) {
	t.Parallel()
	var v struct{ N int }
	require.Equal(t, "invalid JSON", reply.JSONProblem(json.Unmarshal([]byte(`{secret`), &v)))
	require.Equal(t, "unexpected type at N", reply.JSONProblem(json.Unmarshal([]byte(`{"N":"secret"}`), &v)))
	require.Equal(t, core.ErrorMalformed, reply.Malformed(200, "x").Error.Class)
}
