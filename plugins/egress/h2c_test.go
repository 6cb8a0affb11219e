package egress_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/egress"
)

// With H2C, calls to an http:// endpoint are unencrypted HTTP/2 streams;
// without it they are HTTP/1.1.
func TestH2CSpeaksHTTP2ToPlainHTTPEndpoints(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		protos []string
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		_, _ = io.WriteString(w, "fine")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	eng := &core.Engine{ID: "plain/model", Endpoint: srv.URL + "/api/", Model: "test-model"}

	for _, tc := range []struct {
		h2c   bool
		proto string
	}{{false, "HTTP/1.1"}, {true, "HTTP/2.0"}} {
		mu.Lock()
		protos = nil
		mu.Unlock()
		b := setup(t, egress.Config{H2C: tc.h2c}, static, eng)
		var wg sync.WaitGroup
		answers := make([]*core.SeatAnswer, 8)
		errs := make([]error, 8)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i], errs[i] = b.call(context.Background(), eng, &testAdapter{auth: core.AuthBearer})
			}()
		}
		wg.Wait()
		for i, ans := range answers {
			require.NoError(t, errs[i])
			require.Nil(t, ans.Error)
			require.Equal(t, "fine", ans.Text)
		}
		b.eg.CloseIdleConnections()
		mu.Lock()
		require.Len(t, protos, 8)
		for _, p := range protos {
			require.Equal(t, tc.proto, p, "h2c %v", tc.h2c)
		}
		mu.Unlock()
	}
}

// newH2CProvider is newProvider speaking unencrypted HTTP/2 alone.
func newH2CProvider(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte, n int)) *provider {
	t.Helper()
	p := &provider{}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.reqs = append(p.reqs, seen{Method: r.Method, Path: r.URL.Path, Host: r.Host, Header: r.Header.Clone(), Body: body})
		n := len(p.reqs)
		p.mu.Unlock()
		handle(w, r, body, n)
	}))
	p.Config.Protocols = new(http.Protocols)
	p.Config.Protocols.SetUnencryptedHTTP2(true)
	p.Start()
	t.Cleanup(p.Close)
	return p
}

// Over h2c, failures are classified as over HTTP/1.1: a hanging provider
// and one that stalls mid-body time out, an answer over the cap is refused
// unread, a stream the provider resets is retried as an overload, and the
// credential travels and is scrubbed as always.
func TestH2CFailuresAreClassified(t *testing.T) {
	t.Parallel()
	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		p := newH2CProvider(t, func(_ http.ResponseWriter, r *http.Request, _ []byte, _ int) { <-r.Context().Done() })
		eng := p.engine("test/hang")
		eng.Timeout = 100 * time.Millisecond
		b := setup(t, egress.Config{H2C: true, MaxAttempts: 2}, static, eng)
		requireClass(t, b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer}), core.ErrorTimeout)
		require.Len(t, p.requests(), 2)
	})
	t.Run("stall mid-body", func(t *testing.T) {
		t.Parallel()
		p := newH2CProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			_, _ = w.Write([]byte(`{"partial":`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		eng := p.engine("test/stall")
		eng.Timeout = 100 * time.Millisecond
		b := setup(t, egress.Config{H2C: true, MaxAttempts: 1}, static, eng)
		requireClass(t, b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer}), core.ErrorTimeout)
	})
	t.Run("over the cap", func(t *testing.T) {
		t.Parallel()
		p := newH2CProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			chunk := strings.Repeat("z", 64<<10)
			for range 64 { // 4 MiB against a 1 MiB cap
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		})
		eng := p.engine("test/big")
		b := setup(t, egress.Config{H2C: true, MaxResponseBytes: 1 << 20}, static, eng)
		a := &testAdapter{auth: core.AuthBearer}
		requireClass(t, b.mustAnswer(t, eng, a), core.ErrorEgressRefused)
		_, _, parses := a.counts()
		require.Zero(t, parses)
	})
	t.Run("reset stream", func(t *testing.T) {
		t.Parallel()
		p := newH2CProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte, n int) {
			if n == 1 {
				panic(http.ErrAbortHandler) // net/http resets the stream
			}
			_, _ = io.WriteString(w, "fine")
		})
		eng := p.engine("test/reset")
		b := setup(t, egress.Config{H2C: true, MaxAttempts: 2}, static, eng)
		ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
		require.Nil(t, ans.Error)
		require.Equal(t, "fine", ans.Text)
		require.Len(t, p.requests(), 2, "the reset attempt was retried")
	})
	t.Run("credential", func(t *testing.T) {
		t.Parallel()
		p := newH2CProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte, _ int) {
			_, _ = io.WriteString(w, "echo "+r.Header.Get("Authorization"))
		})
		eng := p.engine("test/cred")
		b := setup(t, egress.Config{H2C: true}, static, eng)
		ans := b.mustAnswer(t, eng, &testAdapter{auth: core.AuthBearer})
		require.Nil(t, ans.Error)
		require.Equal(t, "echo Bearer [redacted]", ans.Text, "the key travelled and is scrubbed from the answer")
		require.Equal(t, "Bearer "+secret, p.requests()[0].Header.Get("Authorization"))
	})
}
