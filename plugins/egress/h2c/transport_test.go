package h2c_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/plugins/egress/h2c"
)

// newServer starts a net/http server on loopback that speaks unencrypted
// HTTP/2 alone, with at most maxStreams streams a connection (0: net/http's
// default), and counts the connections it accepts.
func newServer(t testing.TB, maxStreams int, h http.Handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: maxStreams}
	conns := new(atomic.Int32)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, conns
}

func newTransport(t *testing.T) *h2c.Transport {
	tr := &h2c.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func post(t *testing.T, ctx context.Context, url string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	return req
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// A request and its answer cross intact: method, path and query, headers
// (connection-specific ones dropped), a body, the status and the answer's
// headers and body.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo-Proto", r.Proto)
		w.Header().Set("X-Echo-Method", r.Method+" "+r.URL.RequestURI())
		w.Header().Set("X-Echo-Token", r.Header.Get("X-Token"))
		w.Header().Set("X-Echo-Length", fmt.Sprint(r.ContentLength))
		w.Header().Set("X-Echo-Connection", r.Header.Get("Connection")+r.Header.Get("Keep-Alive"))
		w.Header().Set("X-Echo-Host", r.Host)
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write(bytes.ToUpper(b))
	}))
	tr := newTransport(t)
	req := post(t, context.Background(), srv.URL+"/v1/chat?stream=false", []byte("hello, panel"))
	req.Header.Set("X-Token", "abc")
	req.Header.Set("Connection", "keep-alive")
	req.Header.Set("Keep-Alive", "timeout=5")
	res, err := tr.RoundTrip(req)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusTeapot, res.StatusCode)
	require.Equal(t, "418 I'm a teapot", res.Status)
	require.Equal(t, "HTTP/2.0", res.Proto)
	require.Equal(t, "HELLO, PANEL", string(b))
	require.Equal(t, "HTTP/2.0", res.Header.Get("X-Echo-Proto"))
	require.Equal(t, "POST /v1/chat?stream=false", res.Header.Get("X-Echo-Method"))
	require.Equal(t, "abc", res.Header.Get("X-Echo-Token"))
	require.Equal(t, "12", res.Header.Get("X-Echo-Length"))
	require.Empty(t, res.Header.Get("X-Echo-Connection"))
	require.Equal(t, strings.TrimPrefix(srv.URL, "http://"), res.Header.Get("X-Echo-Host"))
	require.Same(t, req, res.Request)

	// A GET has no body and no content-length.
	get, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	require.NoError(t, err)
	res, err = tr.RoundTrip(get)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
	require.Equal(t, "GET /", res.Header.Get("X-Echo-Method"))
	require.Equal(t, "0", res.Header.Get("X-Echo-Length"))
}

// Bodies larger than every initial window go both ways: the upload waits
// for the server's WINDOW_UPDATEs, and the download is granted more as it
// is read.
func TestLargeBodies(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("X-Sum", sum(b))
		out := bytes.Repeat(b[:1000], 5000) // 5,000,000 bytes: over the 1 MiB stream window
		_, _ = w.Write(out)
	}))
	up := make([]byte, 3<<20) // over net/http's server windows
	for i := range up {
		up[i] = byte(i % 251)
	}
	tr := newTransport(t)
	res, err := tr.RoundTrip(post(t, context.Background(), srv.URL+"/", up))
	require.NoError(t, err)
	down, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, sum(up), res.Header.Get("X-Sum"))
	require.Equal(t, bytes.Repeat(up[:1000], 5000), down)
}

// Many requests at once share connections up to the server's limit on
// streams, and a connection is dialled for each further batch; each
// answer reaches its own caller.
func TestConcurrentStreamsShareConnections(t *testing.T) {
	t.Parallel()
	const n, limit = 60, 25
	release := make(chan struct{})
	var arrived atomic.Int32
	srv, conns := newServer(t, limit, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if arrived.Add(1) == n {
			close(release)
		}
		<-release
		_, _ = w.Write(b)
	}))
	tr := newTransport(t)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			want := fmt.Sprintf("request %d", i)
			res, err := tr.RoundTrip(post(t, context.Background(), srv.URL+"/", []byte(want)))
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Body.Close()
			got, err := io.ReadAll(res.Body)
			if err == nil && string(got) != want {
				err = fmt.Errorf("got %q, want %q", got, want)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "request %d", i)
	}
	require.Equal(t, int32(3), conns.Load(), "60 streams at 25 a connection")

	// Idle now, they carry the next requests without a new dial.
	for range 5 {
		res, err := tr.RoundTrip(post(t, context.Background(), srv.URL+"/", []byte("again")))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		require.NoError(t, res.Body.Close())
	}
	require.Equal(t, int32(3), conns.Load())
}

// A request whose context ends while it waits is reset: the caller gets the
// context's error and the server's handler sees its request end.
func TestCancelResetsTheStream(t *testing.T) {
	t.Parallel()
	started, ended := make(chan struct{}), make(chan error, 1)
	srv, _ := newServer(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		ended <- r.Context().Err()
	}))
	tr := newTransport(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := tr.RoundTrip(post(t, ctx, srv.URL+"/", []byte("x")))
	require.ErrorIs(t, err, context.Canceled)
	select {
	case err := <-ended:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler never saw the stream reset")
	}

	// A deadline ends a read of the body the same way.
	slow := make(chan struct{})
	t.Cleanup(func() { close(slow) })
	srv2, _ := newServer(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select {
		case <-slow:
		case <-r.Context().Done():
		}
	}))
	dctx, dcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer dcancel()
	res, err := tr.RoundTrip(post(t, dctx, srv2.URL+"/", []byte("x")))
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, "partial", string(b))
	require.NoError(t, res.Body.Close())
}

// Closing a body before its end resets the stream, and the connection goes
// on carrying other requests.
func TestEarlyCloseKeepsTheConnection(t *testing.T) {
	t.Parallel()
	srv, conns := newServer(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/endless" {
			chunk := bytes.Repeat([]byte("z"), 4096)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
			return
		}
		_, _ = io.WriteString(w, "short")
	}))
	tr := newTransport(t)
	res, err := tr.RoundTrip(post(t, context.Background(), srv.URL+"/endless", nil))
	require.NoError(t, err)
	buf := make([]byte, 10_000)
	_, err = io.ReadFull(res.Body, buf)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	for range 3 {
		res, err := tr.RoundTrip(post(t, context.Background(), srv.URL+"/", nil))
		require.NoError(t, err)
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.Equal(t, "short", string(b))
	}
	require.Equal(t, int32(1), conns.Load())
}

// Refusals before anything is sent: a scheme other than http, a header
// HTTP forbids, a server that is not there. Each closes the body.
func TestRefusals(t *testing.T) {
	t.Parallel()
	tr := newTransport(t)
	for _, tc := range []struct {
		name, url string
		header    [2]string
		want      string
	}{
		{"https", "https://example.test/", [2]string{}, "unsupported scheme"},
		{"header name", "http://127.0.0.1:1/", [2]string{"Bad Name", "x"}, "invalid header field name"},
		{"header value", "http://127.0.0.1:1/", [2]string{"X-Ok", "a\nb"}, "invalid value"},
		{"nobody listening", "http://127.0.0.1:1/", [2]string{}, "connection refused"},
		{"method", "http://127.0.0.1:1/", [2]string{}, "invalid method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &closeCounter{Reader: strings.NewReader("x")}
			req, err := http.NewRequest(http.MethodPost, tc.url, body)
			require.NoError(t, err)
			if tc.name == "method" {
				req.Method = "BAD METHOD"
			}
			if tc.header[0] != "" {
				req.Header[tc.header[0]] = []string{tc.header[1]}
			}
			_, err = tr.RoundTrip(req)
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, int32(1), body.closed.Load())
		})
	}
}

type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// The point of the package: a stream waiting for its answer holds no
// goroutine but its caller's. net/http's client, measured beside it, holds
// one more per stream.
func TestWaitingStreamsHoldNoGoroutine(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	const n = 200
	var arrived atomic.Int32
	all, release := make(chan struct{}), make(chan struct{})
	srv, _ := newServer(t, 1000, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == n {
			close(all)
		}
		<-release
		_, _ = io.WriteString(w, "ok")
	}))
	count := func(rt http.RoundTripper) int {
		arrived.Store(0)
		all, release = make(chan struct{}), make(chan struct{})
		before := runtime.NumGoroutine()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				res, err := rt.RoundTrip(post(t, context.Background(), srv.URL+"/", []byte("q")))
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
				}
			})
		}
		<-all
		// n callers and n server handlers wait; what the client adds on top
		// of them is the figure.
		extra := runtime.NumGoroutine() - before - 2*n
		close(release)
		wg.Wait()
		return extra
	}
	lean := newTransport(t)
	std := &http.Transport{Protocols: new(http.Protocols)}
	std.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(std.CloseIdleConnections)
	leanExtra, stdExtra := count(lean), count(std)
	t.Logf("goroutines beyond the callers and handlers, %d streams: h2c %d, net/http %d", n, leanExtra, stdExtra)
	require.Less(t, leanExtra, 10, "h2c: a goroutine per connection, none per stream")
	// The comparison shows the count would see a goroutine per stream.
	// net/http's client holds one for most of its streams: 101–213 extra
	// goroutines for 200 streams over many runs, as its writes interleave.
	require.Greater(t, stdExtra, leanExtra+n/4, "net/http's client as the comparison")
}

// An idle connection is closed after IdleTimeout, and its reader ends.
func TestIdleConnectionsClose(t *testing.T) {
	t.Parallel()
	closed := make(chan struct{}, 2)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			select {
			case closed <- struct{}{}:
			default:
			}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	tr := &h2c.Transport{IdleTimeout: 50 * time.Millisecond}
	res, err := tr.RoundTrip(post(t, context.Background(), srv.URL+"/", nil))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle connection was not closed")
	}
	// The next request dials again.
	res, err = tr.RoundTrip(post(t, context.Background(), srv.URL+"/", nil))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
	tr.CloseIdleConnections()
}

// A body that comes slowly goes as it comes: its first part reaches the
// server before the rest is written.
func TestSlowBodyGoesAsItComes(t *testing.T) {
	t.Parallel()
	firstPart := make(chan struct{})
	srv, _ := newServer(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, buf); err != nil || string(buf) != "hello" {
			http.Error(w, "first part", http.StatusBadRequest)
			return
		}
		close(firstPart)
		rest, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append(buf, rest...))
	}))
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte("hello"))
		select {
		case <-firstPart:
			_, _ = pw.Write([]byte(", world"))
			_ = pw.Close()
		case <-time.After(10 * time.Second):
			_ = pw.CloseWithError(fmt.Errorf("the first part never reached the server"))
		}
	}()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/", pr)
	require.NoError(t, err)
	res, err := newTransport(t).RoundTrip(req)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, "hello, world", string(b))
}

// Many requests at once, each ending its own way — read to the end,
// closed half-read, cancelled while waiting or while reading, refused by
// the server's stream limit into new connections — leave every
// connection idle and closable: no slot is lost, no reader outlives its
// connection.
func TestEveryEndFreesItsStream(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	srv, _ := newServer(t, 40, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/slow":
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		case "/stall":
			_, _ = w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		_, _ = w.Write(bytes.Repeat([]byte("a"), 20_000))
	}))
	base := runtime.NumGoroutine()
	tr := &h2c.Transport{}
	var wg sync.WaitGroup
	var answered atomic.Int32
	for i := range 300 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			path := "/"
			switch i % 5 {
			case 1:
				path = "/slow"
				time.AfterFunc(5*time.Millisecond, cancel) // cancelled while waiting
			case 3:
				path = "/stall"
			}
			res, err := tr.RoundTrip(post(t, ctx, srv.URL+path, []byte("question")))
			if err != nil {
				return
			}
			defer res.Body.Close()
			switch i % 5 {
			case 2: // closed half-read
				_, _ = io.ReadFull(res.Body, make([]byte, 100))
			case 3: // cancelled while reading
				_, _ = io.ReadFull(res.Body, make([]byte, 7))
				cancel()
				_, _ = io.ReadAll(res.Body)
			case 0, 4:
				if b, err := io.ReadAll(res.Body); err == nil && len(b) == 20_000 {
					answered.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(120), answered.Load(), "the 120 requests read to the end got their whole answer")
	tr.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), base, "every connection was idle, closed, and its reader gone")
}
