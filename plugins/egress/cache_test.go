package egress

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// An endpoint is parsed once and then served from the cache; a bad one is
// refused every time and never cached.
func TestEndpointCache(t *testing.T) {
	t.Parallel()
	c := newEndpointCache()
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
	_, cached := c.m.Get("ftp://example.com", time.Now())
	require.False(t, cached, "a refusal is not cached")
}

type noCredentials struct{}

func (noCredentials) Credential(context.Context, *core.CredentialRequest) (*core.Credential, error) {
	return nil, nil
}

// New parses the engines' endpoints for the allow-list; their calls then
// find them parsed.
func TestNewParsesEachEndpointOnce(t *testing.T) {
	t.Parallel()
	eng := &core.Engine{ID: "e", Endpoint: "http://127.0.0.1:9/v1"}
	e, err := New(Config{}, noCredentials{}, []*core.Engine{eng})
	require.NoError(t, err)
	ep, ok := e.eps.m.Get(eng.Endpoint, time.Now())
	require.True(t, ok, "the engine's endpoint is in the cache before its first call")
	again, err := e.eps.parse(eng.Endpoint)
	require.NoError(t, err)
	require.Same(t, ep, again)
}
