package oauth_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api/oauth"
)

// docServer is a metadata document server on loopback TLS (httptest's
// certificate names example.com and its subdomains). The fetcher resolves
// "client.example.com" through an injected resolver — to 8.8.8.8 unless a
// test says otherwise — and its injected dialer records the address it
// was asked for and connects to the loopback server instead. It counts
// the requests the server answers.
type docServer struct {
	srv     *httptest.Server
	hits    atomic.Int64
	dialled []string
	fetcher *oauth.Fetcher
	resolve []netip.Addr
}

const host = "client.example.com"

func newDocServer(t *testing.T, handler http.HandlerFunc, cfg oauth.FetcherConfig) *docServer {
	t.Helper()
	d := &docServer{resolve: []netip.Addr{netip.MustParseAddr("8.8.8.8")}}
	d.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.hits.Add(1)
		handler(w, r)
	}))
	t.Cleanup(d.srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(d.srv.Certificate())
	cfg.RootCAs = pool
	cfg.LookupIP = func(_ context.Context, h string) ([]netip.Addr, error) {
		if h != host {
			return nil, fmt.Errorf("no such host %s", h)
		}
		return d.resolve, nil
	}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.dialled = append(d.dialled, addr)
		var dl net.Dialer
		return dl.DialContext(ctx, network, d.srv.Listener.Addr().String())
	}
	d.fetcher = oauth.NewFetcher(cfg)
	return d
}

// doc is a valid document for id.
func doc(id string) string {
	return `{"client_id":"` + id + `","client_name":"Example","redirect_uris":["https://client.example.com/callback"],"token_endpoint_auth_method":"none"}`
}

func TestFetcherAcceptsAndCachesADocument(t *testing.T) {
	id := "https://" + host + "/oauth/client.json"
	d := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=600")
		_, _ = w.Write([]byte(doc(id)))
	}, oauth.FetcherConfig{})
	c, err := d.fetcher.Client(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "Example", c.ClientName)
	require.False(t, c.Native)
	_, err = d.fetcher.Client(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, int64(1), d.hits.Load(), "the second was served from the cache (max-age=600)")
	require.Equal(t, []string{"8.8.8.8:443"}, d.dialled, "the checked address is the one dialled")
}

func TestFetcherRespectsNoStore(t *testing.T) {
	id := "https://" + host + "/c.json"
	d := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(doc(id)))
	}, oauth.FetcherConfig{})
	for range 2 {
		_, err := d.fetcher.Client(context.Background(), id)
		require.NoError(t, err)
	}
	require.Equal(t, int64(2), d.hits.Load())
}

// Hostile documents are refused, each with its reason, and nothing is
// cached from them.
func TestFetcherRefusesHostileDocuments(t *testing.T) {
	id := "https://" + host + "/c.json"
	for name, tc := range map[string]struct {
		handler http.HandlerFunc
		want    string
	}{
		"huge": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"client_id":"` + id + `","client_name":"` + strings.Repeat("x", 70<<10) + `"}`))
		}, "larger than 65536 bytes"},
		"slow": {func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
			}
		}, "could not be fetched within"},
		"redirecting": {func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		}, "redirect (302)"},
		"wrong client_id": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(doc("https://other.example.com/c.json")))
		}, "is not the URL it was fetched from"},
		"not JSON": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("<html>hello</html>"))
		}, "not a JSON object"},
		"a confidential client": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"client_id":"` + id + `","redirect_uris":["https://a.example.com/cb"],"token_endpoint_auth_method":"client_secret_post"}`))
		}, "only public clients"},
		"an http redirect URI": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"client_id":"` + id + `","redirect_uris":["http://evil.example.com/cb"]}`))
		}, "http is allowed only on a loopback host"},
		"an error status": {func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "gone", http.StatusNotFound)
		}, "answered 404"},
	} {
		t.Run(name, func(t *testing.T) {
			d := newDocServer(t, tc.handler, oauth.FetcherConfig{Timeout: 300 * time.Millisecond})
			_, err := d.fetcher.Client(context.Background(), id)
			require.ErrorIs(t, err, oauth.ErrClientDocument)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A host that resolves to any address that is not public is refused
// before anything is dialled; so is a client_id that is not an https URL
// with a path.
func TestFetcherNeverReachesAPrivateAddress(t *testing.T) {
	id := "https://" + host + "/c.json"
	for _, addrs := range [][]string{
		{"127.0.0.1"}, {"10.0.0.7"}, {"192.168.1.2"}, {"172.16.0.1"}, {"169.254.169.254"}, {"100.64.0.1"},
		{"0.0.0.0"}, {"::1"}, {"fd00::1"}, {"fe80::1"}, {"::ffff:127.0.0.1"}, {"64:ff9b::a00:1"},
		{"8.8.8.8", "10.0.0.1"}, // one private address among public ones
	} {
		d := newDocServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(doc(id))) }, oauth.FetcherConfig{})
		d.resolve = nil
		for _, a := range addrs {
			d.resolve = append(d.resolve, netip.MustParseAddr(a))
		}
		_, err := d.fetcher.Client(context.Background(), id)
		require.ErrorIs(t, err, oauth.ErrClientDocument, "%v", addrs)
		require.ErrorContains(t, err, "not a public address")
		require.Empty(t, d.dialled, "nothing was dialled for %v", addrs)
		require.Zero(t, d.hits.Load())
	}
	d := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {}, oauth.FetcherConfig{})
	for _, bad := range []string{
		"http://" + host + "/c.json", "https://" + host, "https://" + host + "/", "https://u@" + host + "/c.json",
		"https://" + host + "/c.json#x", "https://" + host + "/a/../c.json", "not a url", "https://127.0.0.1/c.json",
	} {
		_, err := d.fetcher.Client(context.Background(), bad)
		require.ErrorIs(t, err, oauth.ErrClientDocument, bad)
	}
	require.Empty(t, d.dialled)
}
