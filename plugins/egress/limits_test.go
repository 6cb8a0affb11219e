package egress_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/egress/creds"
)

var static = creds.StaticCredentials{Key: secret}

func TestAllowList(t *testing.T) {
	t.Parallel()

	t.Run("a host outside AllowHosts gets nothing", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, reply(http.StatusOK, "fine"))
		eng := p.engine("test/a")
		b := setup(t, egress.Config{AllowHosts: []string{"api.example.com", "*.example.org"}}, static, eng)
		a := &testAdapter{auth: core.AuthBearer}
		ans := b.mustAnswer(t, eng, a)
		requireClass(t, ans, core.ErrorEgressRefused)
		require.Contains(t, ans.Error.Message, "allow-list")
		require.Empty(t, p.requests())
		require.Equal(t, 1.0, b.metric(t, "conclave_egress_calls_total", map[string]string{"engine": "test/a", "outcome": "egress_refused"}))
	})

	t.Run("by default only the engines' endpoints", func(t *testing.T) {
		t.Parallel()
		known := newProvider(t, reply(http.StatusOK, "fine"))
		other := newProvider(t, reply(http.StatusOK, "fine"))
		b := setup(t, egress.Config{}, static, known.engine("test/known"))
		a := &testAdapter{auth: core.AuthBearer}
		require.Nil(t, b.mustAnswer(t, known.engine("test/known"), a).Error)
		requireClass(t, b.mustAnswer(t, other.engine("test/other"), a), core.ErrorEgressRefused)
		require.Empty(t, other.requests(), "same host, another port: refused")
	})

	t.Run("a host entry without a port allows every port", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, reply(http.StatusOK, "fine"))
		b := setup(t, egress.Config{AllowHosts: []string{"127.0.0.1"}}, static)
		require.Nil(t, b.mustAnswer(t, p.engine("test/a"), &testAdapter{auth: core.AuthBearer}).Error)
	})

	t.Run("credentials never travel over plain http off this machine", func(t *testing.T) {
		t.Parallel()
		eng := &core.Engine{ID: "test/remote", Endpoint: "http://api.example.com/v1"}
		b := setup(t, egress.Config{AllowHosts: []string{"api.example.com"}}, static, eng)
		ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
		requireClass(t, ans, core.ErrorEgressRefused)
		require.Contains(t, ans.Error.Message, "plain http")
	})

	t.Run("bad endpoints", func(t *testing.T) {
		t.Parallel()
		_, err := egress.New(egress.Config{}, static, []*core.Engine{{ID: "sim/atlas", Endpoint: "sim"}})
		require.ErrorContains(t, err, "sim/atlas")
		b := setup(t, egress.Config{AllowHosts: []string{"x"}}, static)
		for _, ep := range []string{"ftp://x/", "https://user:pw@x/", "https://x/?q=1", "", "x"} {
			ans := b.mustAnswer(t, &core.Engine{ID: "e", Endpoint: ep}, &testAdapter{auth: core.AuthBearer})
			requireClass(t, ans, core.ErrorEgressRefused)
			require.NotContains(t, ans.Error.Message, "pw")
		}
	})

	t.Run("bad AllowHosts", func(t *testing.T) {
		t.Parallel()
		for _, h := range []string{"*", "", "a*.example.com", "https://api.example.com", "api.example.com:port", "user@host"} {
			_, err := egress.New(egress.Config{AllowHosts: []string{h}}, static, nil)
			require.ErrorContains(t, err, "AllowHosts", h)
		}
	})
}

func TestAllowHostRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule, host, port string
		want             bool
	}{
		{"api.openai.com", "api.openai.com", "443", true},
		{"api.openai.com", "api.openai.com", "8443", true},
		{"API.OpenAI.com.", "api.openai.com", "443", true},
		{"api.openai.com", "evil-api.openai.com", "443", false},
		{"api.openai.com", "api.openai.com.evil.com", "443", false},
		{"api.openai.com:443", "api.openai.com", "443", true},
		{"api.openai.com:443", "api.openai.com", "80", false},
		{"*.example.com", "api.example.com", "443", true},
		{"*.example.com", "a.b.example.com", "443", true},
		{"*.example.com", "example.com", "443", false},
		{"*.example.com", "badexample.com", "443", false},
		{"*.example.com:8443", "api.example.com", "443", false},
		{"127.0.0.1:8080", "127.0.0.1", "8080", true},
		{"[::1]:8080", "::1", "8080", true},
		{"[::1]", "::1", "9", true},
		{"::1", "::1", "9", true},
	} {
		got, err := egress.AllowsHost(tc.rule, tc.host, tc.port)
		require.NoError(t, err, tc.rule)
		require.Equal(t, tc.want, got, "%s allows %s:%s", tc.rule, tc.host, tc.port)
	}
}

func TestPathAndMethodChecks(t *testing.T) {
	t.Parallel()
	p := newProvider(t, reply(http.StatusOK, "fine"))
	eng := p.engine("test/paths")
	b := setup(t, egress.Config{}, static, eng)

	build := func(method, path string) *testAdapter {
		a := &testAdapter{auth: core.AuthBearer}
		a.build = func(*core.SeatRequest) (*core.HTTPRequest, error) {
			return &core.HTTPRequest{Method: method, Path: path, Header: map[string]string{"X-Custom": "kept"}}, nil
		}
		return a
	}
	for _, path := range []string{
		"v1/chat", "", "//evil.example/v1", "/http://evil.example/", "/v1//chat",
		"/../v1", "/v1/../../x", "/v1/./chat", "/v1/%2e%2e/x", "/v1/%2E%2e/x", "/v1/..%2f..%2fx", "/v1/%2f%2fevil",
		"/v1\\..\\x", "/v1/chat#frag", "/v1/chat\r\nX-Injected: 1", "/v1/ch at", "/v1/%zz", "/v1/\x00",
		"@evil.example/v1", "/v1/chat/..",
	} {
		ans := b.mustAnswer(t, eng, build(http.MethodPost, path))
		requireClass(t, ans, core.ErrorEgressRefused)
		require.NoError(t, egress.CheckPath("/v1/ok"))
		require.Error(t, egress.CheckPath(path), "%q", path)
	}
	for _, method := range []string{"", "DELETE", "CONNECT", "TRACE", "post", "GET /x HTTP/1.1\r\n"} {
		requireClass(t, b.mustAnswer(t, eng, build(method, "/v1/chat")), core.ErrorEgressRefused)
	}
	for _, h := range []map[string]string{{"X-Bad": "a\r\nX-Injected: 1"}, {"Bad Name": "x"}, {"": "x"}} {
		a := &testAdapter{auth: core.AuthBearer}
		a.build = func(*core.SeatRequest) (*core.HTTPRequest, error) {
			return &core.HTTPRequest{Method: http.MethodPost, Path: "/v1/chat", Header: h}, nil
		}
		requireClass(t, b.mustAnswer(t, eng, a), core.ErrorEgressRefused)
	}
	require.Empty(t, p.requests(), "nothing refused was sent")

	// Paths that merely look unusual are fine.
	for _, path := range []string{"/v1beta/models/gemini-2.5-pro:generateContent?alt=json", "/", "/model/a.b-v1%3A0/converse", "/v1/chat?next=//x&y=.."} {
		ans := b.mustAnswer(t, eng, build(http.MethodGet, path))
		require.Nil(t, ans.Error, "%q: %+v", path, ans.Error)
	}
	reqs := p.requests()
	require.Equal(t, "/api/v1beta/models/gemini-2.5-pro:generateContent", reqs[0].Path)
	require.Equal(t, "/api/", reqs[1].Path)
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	target := newProvider(t, reply(http.StatusOK, "stolen"))
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
		http.Redirect(w, r, target.URL+"/collect", http.StatusTemporaryRedirect)
	})
	eng := p.engine("test/redirect")
	// A caller's client with an overall timeout is used as a client, not
	// only for its transport (Egress.do): it must not follow either.
	for name, client := range map[string]*http.Client{"default client": nil, "caller's client": {}, "caller's client with a timeout": {Timeout: time.Minute}} {
		b := setup(t, egress.Config{AllowHosts: []string{"127.0.0.1"}, HTTPClient: client}, static, eng)
		a := &testAdapter{auth: core.AuthBearer}
		ans := b.mustAnswer(t, eng, a)
		requireClass(t, ans, core.ErrorMalformed)
		require.Equal(t, http.StatusTemporaryRedirect, a.lastResponse().Status, name)
		require.Empty(t, target.requests(), "%s followed the redirect", name)
		if client != nil {
			client.CloseIdleConnections()
		}
	}
}

// streamer is a provider that streams size bytes (never declaring a length
// unless declare is set) and counts what it managed to write.
func streamer(t *testing.T, size int64, declare bool) (*provider, *atomic.Int64, chan struct{}) {
	var written atomic.Int64
	done := make(chan struct{})
	chunk := []byte(strings.Repeat("x", 64<<10))
	p := newProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		defer close(done)
		if declare {
			w.Header().Set("Content-Length", fmt.Sprint(size))
		}
		w.WriteHeader(http.StatusOK)
		for written.Load() < size {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	return p, &written, done
}

func TestResponseOverTheCapIsRefusedUnread(t *testing.T) {
	t.Parallel()
	const huge = 100 << 20
	for _, declare := range []bool{false, true} {
		t.Run(fmt.Sprintf("declared length %t", declare), func(t *testing.T) {
			t.Parallel()
			p, written, done := streamer(t, huge, declare)
			eng := p.engine("test/big")
			b := setup(t, egress.Config{MaxResponseBytes: 1 << 20}, static, eng)
			a := &testAdapter{auth: core.AuthBearer}

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ans, err := b.call(ctx, eng, a)
			require.NoError(t, err, "finished long before reading 100 MB would have")
			requireClass(t, ans, core.ErrorEgressRefused)
			require.Equal(t, http.StatusOK, ans.Error.Status)
			_, _, parses := a.counts()
			require.Zero(t, parses)

			<-done // the provider gives up once egress hangs up
			require.Less(t, written.Load(), int64(huge/2), "egress hung up instead of draining")
		})
	}

	t.Run("exactly the cap is fine", func(t *testing.T) {
		t.Parallel()
		body := strings.Repeat("y", 4096)
		p := newProvider(t, reply(http.StatusOK, body))
		eng := p.engine("test/exact")
		b := setup(t, egress.Config{MaxResponseBytes: 4096}, static, eng)
		ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
		require.Nil(t, ans.Error)
		require.Equal(t, body, ans.Text)
	})
}

// TestResponseCapBoundsMemory is not parallel: it measures the process's
// allocations, which parallel tests would inflate.
func TestResponseCapBoundsMemory(t *testing.T) {
	const huge = 100 << 20
	p, _, done := streamer(t, huge, false)
	eng := p.engine("test/big")
	b := setup(t, egress.Config{MaxResponseBytes: 1 << 20}, static, eng)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
	runtime.ReadMemStats(&after)
	<-done
	requireClass(t, ans, core.ErrorEgressRefused)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(16<<20), "a 1 MiB cap cost %d bytes of allocation", allocated)
	t.Logf("allocated %d KiB for a refused 100 MiB response", allocated>>10)
}

func TestBodyDrainedBelowTheCapReadsWholeBody(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ int) {
		for range 10 {
			_, _ = io.WriteString(w, strings.Repeat("z", 1000))
			w.(http.Flusher).Flush()
		}
	})
	eng := p.engine("test/chunked")
	b := setup(t, egress.Config{}, static, eng)
	ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
	require.Nil(t, ans.Error)
	require.Len(t, ans.Text, 10000)
}
