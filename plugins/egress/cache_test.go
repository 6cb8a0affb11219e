package egress

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// An endpoint is parsed once and then served from the cache; a bad one is
// refused every time and never cached.
func TestEndpointCache(t *testing.T) {
	t.Parallel()
	var c endpointCache
	a, err := c.parse("http://127.0.0.1:8080/v1/")
	require.NoError(t, err)
	b, err := c.parse("http://127.0.0.1:8080/v1/")
	require.NoError(t, err)
	require.Same(t, a, b, "the second call is served from the cache")
	require.Equal(t, "http://127.0.0.1:8080/v1", a.raw)
	for range 2 {
		_, err = c.parse("ftp://example.com")
		require.Error(t, err)
	}
	_, cached := c.get("ftp://example.com")
	require.False(t, cached, "a refusal is not cached")
}

// A cache that reaches maxCached entries starts again, so a caller making
// a new key per call cannot grow it without bound.
func TestCacheForgetsWhenFull(t *testing.T) {
	t.Parallel()
	var c cache[string, int]
	for i := range maxCached {
		c.put(strconv.Itoa(i), i)
	}
	v, ok := c.get("0")
	require.True(t, ok)
	require.Equal(t, 0, v)
	c.put("one more", 1)
	_, ok = c.get("0")
	require.False(t, ok, "the full cache was emptied before the new entry went in")
	v, ok = c.get("one more")
	require.True(t, ok)
	require.Equal(t, 1, v)
	require.Len(t, c.m, 1)
}
