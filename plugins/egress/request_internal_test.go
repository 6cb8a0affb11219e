package egress

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// newRequest takes the resolved URL as it is, drops an empty port from the
// host as http.NewRequest does, and gives the body a length and a way to
// read it again, so that the transport can resend it.
func TestNewRequest(t *testing.T) {
	t.Parallel()
	u, err := url.Parse("http://127.0.0.1:/v1/models/m%3Ax:generate?alt=json")
	require.NoError(t, err)
	h := http.Header{"Content-Type": {"application/json"}}
	req, err := newRequest(context.Background(), http.MethodPost, u, h, []byte(`{"a":1}`))
	require.NoError(t, err)
	require.Same(t, u, req.URL)
	require.Equal(t, "127.0.0.1", req.Host)
	require.Equal(t, "/v1/models/m%3Ax:generate", req.URL.EscapedPath())
	require.Equal(t, "alt=json", req.URL.RawQuery)
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.EqualValues(t, 7, req.ContentLength)
	again, err := req.GetBody()
	require.NoError(t, err)
	b, err := io.ReadAll(again)
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(b))

	get, err := newRequest(context.Background(), http.MethodGet, u, h, nil)
	require.NoError(t, err)
	require.Nil(t, get.Body, "no body is no body, not an empty one")
	require.Zero(t, get.ContentLength)

	_, err = newRequest(context.Background(), "BAD METHOD", u, h, nil)
	require.Error(t, err)
}
