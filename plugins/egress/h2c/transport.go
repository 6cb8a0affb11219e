package h2c

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
)

// The windows this client grants its peers: what a stream may send before
// its reader has taken any of it, and what a connection may, across its
// streams. A stream's window bounds what one answer can buffer here; the
// connection's is as large as net/http's, so that it never slows a stream.
const (
	streamWindow = 1 << 20
	connWindow   = 1 << 30
	// maxStreamID is the highest stream identifier (RFC 9113, 5.1.1).
	maxStreamID = 1<<31 - 1
	// unprocessedTries bounds how often one request is sent again after
	// connections refused it unprocessed.
	unprocessedTries = 5
)

// Transport is an http.RoundTripper for http:// URLs over unencrypted
// HTTP/2 with prior knowledge. Its zero value is ready to use; it is safe
// for concurrent use.
type Transport struct {
	// DialContext opens a connection; nil uses a net.Dialer with a 10 s
	// timeout and 30 s keep-alives.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxResponseHeaderBytes bounds an answer's header list, as this
	// client's SETTINGS_MAX_HEADER_LIST_SIZE announces; 0 means 1 MiB.
	MaxResponseHeaderBytes uint32
	// IdleTimeout closes a connection that has carried no stream for this
	// long; 0 means 90 s.
	IdleTimeout time.Duration

	mu    sync.Mutex
	pools map[string]*pool // by host:port
}

// pool is the connections to one address.
type pool struct {
	conns []*conn
	dial  *dialing // the dial under way, nil if none
}

// dialing is a dial others wait for rather than dialling too.
type dialing struct {
	done chan struct{}
	c    *conn
	err  error
}

// RoundTrip sends req on a connection to its host and returns the answer
// once its headers have arrived; the body is read from the connection as
// the caller reads it. It implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("h2c: request has no URL")
	}
	if req.URL.Scheme != "http" {
		closeBody(req)
		return nil, fmt.Errorf("h2c: unsupported scheme %q", req.URL.Scheme)
	}
	hdr, err := newHeaderList(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	ctx := req.Context()
	for try := 1; ; try++ {
		c, err := t.conn(ctx, addr)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		res, err := c.roundTrip(ctx, req, hdr)
		if err == nil {
			return res, nil
		}
		var u unprocessedError
		if !errors.As(err, &u) || try == unprocessedTries {
			return nil, err
		}
		// The server took none of it: send it again, with its body anew.
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, fmt.Errorf("h2c: rewinding the body to send it again: %w", gerr)
			}
			again := *req
			again.Body = body
			req = &again
		}
	}
}

// CloseIdleConnections closes the connections that carry no stream.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	var idle []*conn
	for _, p := range t.pools {
		for _, c := range p.conns {
			if c.idle() {
				idle = append(idle, c)
			}
		}
	}
	t.mu.Unlock()
	for _, c := range idle {
		c.closeIfIdle()
	}
}

// conn returns a connection to addr with a stream slot reserved for the
// caller, dialling one when none has room. One dial at a time per address:
// callers that find one under way wait for it.
func (t *Transport) conn(ctx context.Context, addr string) (*conn, error) {
	for {
		t.mu.Lock()
		if t.pools == nil {
			t.pools = make(map[string]*pool)
		}
		p := t.pools[addr]
		if p == nil {
			p = &pool{}
			t.pools[addr] = p
		}
		for _, c := range p.conns {
			if c.reserve() {
				t.mu.Unlock()
				return c, nil
			}
		}
		if d := p.dial; d != nil {
			t.mu.Unlock()
			select {
			case <-d.done:
				// The dialler's own request may have ended: only a failure
				// of the dial itself is everyone's.
				if d.err != nil && !isContextErr(d.err) {
					return nil, d.err
				}
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		d := &dialing{done: make(chan struct{})}
		p.dial = d
		t.mu.Unlock()
		d.c, d.err = t.dial(ctx, addr)
		t.mu.Lock()
		p.dial = nil
		if d.err == nil && !d.c.isClosed() { // one that died at once is not kept
			p.conns = append(p.conns, d.c)
		}
		close(d.done)
		// The dialler takes the first slot of what it dialled, so that a
		// server allowing no stream at all is an error, not a dial per turn.
		mine := d.err == nil && d.c.reserve()
		t.mu.Unlock()
		switch {
		case d.err != nil:
			return nil, d.err
		case mine:
			return d.c, nil
		case d.c.isClosed():
			return nil, d.c.failure()
		default:
			return nil, fmt.Errorf("h2c: %s takes no streams (its SETTINGS_MAX_CONCURRENT_STREAMS is 0)", addr)
		}
	}
}

// forget removes c from its address's pool.
func (t *Transport) forget(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pools[c.addr]
	if p == nil {
		return
	}
	for i, pc := range p.conns {
		if pc == c {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			break
		}
	}
	if len(p.conns) == 0 && p.dial == nil {
		delete(t.pools, c.addr)
	}
}

func (t *Transport) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if t.DialContext != nil {
		return t.DialContext
	}
	return (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
}

func (t *Transport) maxHeaderBytes() uint32 {
	if t.MaxResponseHeaderBytes == 0 {
		return 1 << 20
	}
	return t.MaxResponseHeaderBytes
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleTimeout <= 0 {
		return 90 * time.Second
	}
	return t.IdleTimeout
}

// headerList is a request's header fields as they go on the wire, checked
// and lower-cased once however often the request is sent.
type headerList struct {
	authority, method, path string
	fields                  [][2]string
	contentLength           int64 // -1: unknown
	body                    bool
}

// connectionHeaders are HTTP/1.1's connection-specific fields, which
// HTTP/2 forbids (RFC 9113, 8.2.2); "te" may only say "trailers".
var connectionHeaders = map[string]bool{
	"connection": true, "proxy-connection": true, "keep-alive": true,
	"transfer-encoding": true, "upgrade": true, "host": true, "content-length": true,
}

func newHeaderList(req *http.Request) (*headerList, error) {
	h := &headerList{
		authority: req.Host, method: req.Method, path: req.URL.RequestURI(),
		body: req.Body != nil && req.Body != http.NoBody, contentLength: -1,
	}
	if h.authority == "" {
		h.authority = req.URL.Host
	}
	if h.method == "" {
		h.method = http.MethodGet
	}
	if !httpguts.ValidHostHeader(h.authority) {
		return nil, fmt.Errorf("h2c: invalid host %q", h.authority)
	}
	if !httpguts.ValidHeaderFieldName(h.method) { // a method is a token, as a field name is
		return nil, fmt.Errorf("h2c: invalid method %q", h.method)
	}
	switch {
	case !h.body:
		h.contentLength = 0
	case req.ContentLength > 0:
		h.contentLength = req.ContentLength
	}
	h.fields = make([][2]string, 0, len(req.Header)+2)
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("h2c: invalid header field name %q", k)
		}
		lk := strings.ToLower(k) // ASCII, as ValidHeaderFieldName made sure; unchanged names are not copied
		if connectionHeaders[lk] {
			continue
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("h2c: invalid value for header field %q", k)
			}
			if lk == "te" && v != "trailers" {
				continue
			}
			h.fields = append(h.fields, [2]string{lk, v})
		}
	}
	if req.Header.Get("User-Agent") == "" { // as net/http's client says
		h.fields = append(h.fields, [2]string{"user-agent", "Go-http-client/2.0"})
	}
	if h.contentLength > 0 {
		h.fields = append(h.fields, [2]string{"content-length", strconv.FormatInt(h.contentLength, 10)})
	}
	return h, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// unprocessedError is a request the server did not process: it refused the
// stream, or announced it would not (GOAWAY) before taking it, or the
// connection stopped taking streams before it was sent. It is safe to send
// again.
type unprocessedError struct{ err error }

func (e unprocessedError) Error() string { return e.err.Error() }
func (e unprocessedError) Unwrap() error { return e.err }

// streamError is the server's reset of one stream.
type streamError struct{ code http2.ErrCode }

func (e streamError) Error() string { return "h2c: stream reset by the server: " + e.code.String() }

var _ http.RoundTripper = (*Transport)(nil)
