package h2c_test

// The protocol's edge cases, against a scripted HTTP/2 server: each test
// says, frame by frame, what the server answers, and checks what the
// transport makes of it and what it sends back.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/conclavehq/conclave/plugins/egress/h2c"
)

// scriptGuard bounds every wait on the transport or the server: a failure
// guard, never a synchronisation.
const scriptGuard = 10 * time.Second

// scriptServer is an HTTP/2 server on loopback whose answers a test
// scripts. Each connection has one goroutine: it reads the client's
// preface, sends the server's SETTINGS, acknowledges the client's, grants
// back at once the flow-control window each DATA frame takes (failing the
// test if the client sent beyond its windows), and hands each complete
// request to handle, on that goroutine.
type scriptServer struct {
	t        *testing.T
	url      string
	settings []http2.Setting
	handle   func(*scriptConn, *scriptRequest)

	accepted atomic.Int32 // connections accepted
	requests atomic.Int32 // requests handed to handle
	headers  atomic.Int32 // request HEADERS received
	dataIn   atomic.Int64 // request DATA bytes received
	ended    chan error   // each connection's end, as its reader saw it
	done     chan struct{}

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

// scriptConn is one connection of a scriptServer. Its fields are its
// goroutine's alone.
type scriptConn struct {
	srv  *scriptServer
	n    int // 1 for the first connection accepted
	nc   net.Conn
	fr   *http2.Framer
	henc *hpack.Encoder
	hbuf bytes.Buffer

	// What the client may still send, by stream and on the connection.
	windows       map[uint32]int32
	initialWindow int32
	connWindow    int32
	windowUpdates int // WINDOW_UPDATE frames sent
	maxData       int // the largest DATA payload received
}

// scriptRequest is a request as the server received it.
type scriptRequest struct {
	StreamID     uint32
	Method, Path string
	Header       http.Header
	Body         []byte
}

func startScriptServer(t *testing.T, settings []http2.Setting, handle func(*scriptConn, *scriptRequest)) *scriptServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &scriptServer{
		t: t, url: "http://" + ln.Addr().String(), settings: settings, handle: handle,
		ended: make(chan error, 16), done: make(chan struct{}),
	}
	s.wg.Add(1)
	go s.accept(ln)
	t.Cleanup(func() {
		close(s.done)
		_ = ln.Close()
		s.mu.Lock()
		for _, nc := range s.conns {
			_ = nc.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *scriptServer) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			_ = nc.Close()
			return
		default:
		}
		s.conns = append(s.conns, nc)
		s.wg.Add(1)
		s.mu.Unlock()
		c := &scriptConn{
			srv: s, n: int(s.accepted.Add(1)), nc: nc, fr: http2.NewFramer(nc, nc),
			windows: make(map[uint32]int32), initialWindow: 65535, connWindow: 65535,
		}
		c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		c.henc = hpack.NewEncoder(&c.hbuf)
		for _, st := range s.settings {
			if st.ID == http2.SettingInitialWindowSize {
				c.initialWindow = int32(st.Val)
			}
		}
		go func() {
			defer s.wg.Done()
			err := c.serve()
			select {
			case s.ended <- err:
			default:
			}
		}()
	}
}

// serve runs the connection until it ends, and returns why it did.
func (c *scriptConn) serve() error {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c.nc, preface); err != nil {
		return err
	}
	if string(preface) != http2.ClientPreface {
		c.srv.t.Errorf("script server: the client's preface is %q", preface)
		return errors.New("bad preface")
	}
	if err := c.fr.WriteSettings(c.srv.settings...); err != nil {
		return err
	}
	pending := make(map[uint32]*scriptRequest)
	dispatch := func(r *scriptRequest) {
		delete(pending, r.StreamID)
		c.srv.requests.Add(1)
		c.srv.handle(c, r)
	}
	for {
		f, err := c.read()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			c.srv.headers.Add(1)
			r := &scriptRequest{
				StreamID: f.StreamID, Method: f.PseudoValue("method"), Path: f.PseudoValue("path"),
				Header: make(http.Header),
			}
			for _, hf := range f.RegularFields() {
				r.Header.Add(hf.Name, hf.Value)
			}
			pending[r.StreamID] = r
			if f.StreamEnded() {
				dispatch(r)
			}
		case *http2.DataFrame:
			if r := pending[f.StreamID]; r != nil {
				r.Body = append(r.Body, f.Data()...)
				if f.StreamEnded() {
					dispatch(r)
				}
			}
		}
	}
}

// read reads the next frame, acknowledging SETTINGS and granting back what
// DATA took, as a server that reads as it goes does.
func (c *scriptConn) read() (http2.Frame, error) {
	f, err := c.fr.ReadFrame()
	if err != nil {
		return nil, err
	}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			err = c.fr.WriteSettingsAck()
		}
	case *http2.DataFrame:
		n := int32(f.Length)
		c.maxData = max(c.maxData, len(f.Data()))
		c.srv.dataIn.Add(int64(len(f.Data())))
		w, ok := c.windows[f.StreamID]
		if !ok {
			w = c.initialWindow
		}
		if n > w || n > c.connWindow {
			c.srv.t.Errorf("script server: the client sent %d bytes of DATA on stream %d beyond its windows (stream %d, connection %d)",
				n, f.StreamID, w, c.connWindow)
		}
		c.windows[f.StreamID] = w - n
		c.connWindow -= n
		if n > 0 {
			err = c.fr.WriteWindowUpdate(0, uint32(n))
			c.connWindow += n
			c.windowUpdates++
			if err == nil && !f.StreamEnded() {
				err = c.fr.WriteWindowUpdate(f.StreamID, uint32(n))
				c.windows[f.StreamID] += n
				c.windowUpdates++
			}
		}
	}
	return f, err
}

// await reads frames until one that match accepts. A script that awaits
// keeps to one request at a time: another's frames are not collected.
func (c *scriptConn) await(match func(http2.Frame) bool) (http2.Frame, error) {
	for {
		f, err := c.read()
		if err != nil {
			return nil, err
		}
		if match(f) {
			return f, nil
		}
	}
}

// awaitReset reads frames until the RST_STREAM of stream id, and returns
// it; nil, with the test failed, if the connection ends first.
func (c *scriptConn) awaitReset(id uint32) *http2.RSTStreamFrame {
	f, err := c.await(rstOn(id))
	if err != nil {
		c.srv.t.Errorf("script server: waiting for RST_STREAM: %v", err)
		return nil
	}
	return f.(*http2.RSTStreamFrame)
}

// rstOn matches the RST_STREAM of stream id.
func rstOn(id uint32) func(http2.Frame) bool {
	return func(f http2.Frame) bool {
		rst, ok := f.(*http2.RSTStreamFrame)
		return ok && rst.StreamID == id
	}
}

// headers writes one HEADERS frame of the name, value pairs in kv.
func (c *scriptConn) headers(id uint32, end bool, kv ...string) {
	c.hbuf.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		_ = c.henc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	c.check(c.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID: id, BlockFragment: c.hbuf.Bytes(), EndStream: end, EndHeaders: true,
	}))
}

func (c *scriptConn) data(id uint32, end bool, s string) {
	c.check(c.fr.WriteData(id, end, []byte(s)))
}

// respond writes a whole answer: its headers and its body.
func (c *scriptConn) respond(id uint32, status, body string) {
	c.headers(id, false, ":status", status, "content-length", strconv.Itoa(len(body)))
	c.data(id, true, body)
}

func (c *scriptConn) check(err error) {
	if err != nil {
		c.srv.t.Errorf("script server, connection %d: %v", c.n, err)
	}
}

func scriptTransport(t *testing.T) *h2c.Transport {
	tr := &h2c.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func newScriptRequest(t *testing.T, ctx context.Context, method, url string, body []byte) *http.Request {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body) // so that GetBody is set
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	require.NoError(t, err)
	return req
}

type scriptResult struct {
	res *http.Response
	err error
}

// scriptRoundTrip is tr.RoundTrip(req), failing the test if it does not
// return within scriptGuard.
func scriptRoundTrip(t *testing.T, tr *h2c.Transport, req *http.Request) (*http.Response, error) {
	t.Helper()
	r := within(t, "RoundTrip", func() scriptResult {
		res, err := tr.RoundTrip(req)
		return scriptResult{res, err}
	})
	return r.res, r.err
}

// scriptReadAll is io.ReadAll(r), failing the test if it does not return
// within scriptGuard.
func scriptReadAll(t *testing.T, r io.Reader) ([]byte, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	got := within(t, "reading the body", func() result {
		b, err := io.ReadAll(r)
		return result{b, err}
	})
	return got.b, got.err
}

// within runs f on a goroutine of its own and returns what it returns,
// failing the test if it has not within scriptGuard.
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return receive(t, ch, what)
}

// receive takes a value from ch, failing the test if none comes within
// scriptGuard.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(scriptGuard):
		t.Fatalf("%s: nothing within %v", what, scriptGuard)
		var zero T
		return zero
	}
}

// scriptBody reads a whole answer's body and closes it.
func scriptBody(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := scriptReadAll(t, res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	return string(b)
}

// A stream the server refuses (REFUSED_STREAM) is sent again, body and
// all, and the caller gets the second answer. The connection stays.
func TestProtocolRefusedStreamIsSentAgain(t *testing.T) {
	t.Parallel()
	bodies := make(chan string, 8)
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		bodies <- string(r.Body)
		if c.srv.requests.Load() == 1 {
			c.check(c.fr.WriteRSTStream(r.StreamID, http2.ErrCodeRefusedStream))
			return
		}
		c.respond(r.StreamID, "200", "second answer")
	})
	tr := scriptTransport(t)
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodPost, srv.url+"/v1/chat", []byte("the prompt")))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "second answer", scriptBody(t, res))
	require.Equal(t, int32(2), srv.requests.Load())
	require.Equal(t, "the prompt", <-bodies)
	require.Equal(t, "the prompt", <-bodies)
	require.Equal(t, int32(1), srv.accepted.Load(), "a refused stream leaves its connection usable")
}

// A GOAWAY whose last stream is below a request's stream: the streams up to
// it are answered on the old connection, the later one is sent again on a
// new connection.
func TestProtocolGoAwaySendsLaterStreamsAgain(t *testing.T) {
	t.Parallel()
	type seen struct {
		conn   int
		stream uint32
		body   string
	}
	seenCh := make(chan seen, 8)
	firstArrived := make(chan struct{})
	var held uint32 // the first connection's first stream; that connection's goroutine's alone
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		seenCh <- seen{c.n, r.StreamID, string(r.Body)}
		if c.n != 1 {
			c.respond(r.StreamID, "200", "second answer")
			return
		}
		if held == 0 {
			held = r.StreamID // answered once the second request is in
			close(firstArrived)
			return
		}
		c.check(c.fr.WriteGoAway(held, http2.ErrCodeNo, nil))
		c.respond(held, "200", "first answer")
	})
	tr := scriptTransport(t)
	first := make(chan scriptResult, 1)
	req1 := newScriptRequest(t, context.Background(), http.MethodPost, srv.url+"/", []byte("first prompt"))
	go func() {
		res, err := tr.RoundTrip(req1)
		first <- scriptResult{res, err}
	}()
	receive(t, firstArrived, "the first request")

	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodPost, srv.url+"/", []byte("second prompt")))
	require.NoError(t, err)
	require.Equal(t, "second answer", scriptBody(t, res))

	r := receive(t, first, "the first answer")
	require.NoError(t, r.err)
	require.Equal(t, "first answer", scriptBody(t, r.res))

	require.Equal(t, int32(2), srv.accepted.Load())
	require.Equal(t, []seen{
		{1, 1, "first prompt"},
		{1, 3, "second prompt"},  // above the GOAWAY's last stream
		{2, 1, "second prompt"}}, // so sent again, on a new connection
		[]seen{<-seenCh, <-seenCh, <-seenCh})
}

// A reset other than REFUSED_STREAM, before any answer, is the caller's
// error: the request may have been processed, so it is not sent again.
func TestProtocolInternalErrorResetIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		if c.srv.requests.Load() == 1 {
			c.check(c.fr.WriteRSTStream(r.StreamID, http2.ErrCodeInternal))
			return
		}
		c.respond(r.StreamID, "200", "sent again") // what a retry would get
	})
	tr := scriptTransport(t)
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodPost, srv.url+"/", []byte("the prompt")))
	require.Error(t, err)
	require.Nil(t, res)
	require.ErrorContains(t, err, "INTERNAL_ERROR")
	require.Equal(t, int32(1), srv.requests.Load())
}

// A connection the server closes in the middle of a body: the body's read
// fails with an error that says the connection was closed, not with a
// clean end.
func TestProtocolConnectionClosedMidBody(t *testing.T) {
	t.Parallel()
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		c.headers(r.StreamID, false, ":status", "200", "content-length", "1000")
		c.data(r.StreamID, false, "the first part")
		c.check(c.nc.(*net.TCPConn).CloseWrite()) // FIN: the server is done
	})
	tr := scriptTransport(t)
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
	require.NoError(t, err)
	b, err := scriptReadAll(t, res.Body)
	require.Equal(t, "the first part", string(b))
	require.Error(t, err, "a body cut short must not read as complete")
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET),
		"the error must say the provider closed the connection: %v", err)
	require.NoError(t, res.Body.Close())
}

// Send-side flow control: with a window of 1,000 bytes, a body of 50,000
// goes in frames no larger than the window, each after the server granted
// it room, and arrives intact.
func TestProtocolSendFlowControl(t *testing.T) {
	t.Parallel()
	const size = 50_000
	upload := make([]byte, size)
	for i := range upload {
		upload[i] = byte(i * 7 % 251)
	}
	type stats struct {
		body             []byte
		maxData, updates int
	}
	got := make(chan stats, 1)
	srv := startScriptServer(t, []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 1000}},
		func(c *scriptConn, r *scriptRequest) {
			got <- stats{r.Body, c.maxData, c.windowUpdates}
			c.respond(r.StreamID, "200", strconv.Itoa(len(r.Body)))
		})
	tr := scriptTransport(t)
	defer func() {
		if t.Failed() {
			t.Logf("the server had received %d request HEADERS and %d of %d bytes of DATA",
				srv.headers.Load(), srv.dataIn.Load(), size)
		}
	}()
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodPost, srv.url+"/upload", upload))
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(size), scriptBody(t, res))
	s := receive(t, got, "the upload")
	require.Len(t, s.body, size)
	require.True(t, bytes.Equal(upload, s.body), "the upload arrived altered")
	require.LessOrEqual(t, s.maxData, 1000, "no DATA frame beyond the stream's window")
	require.GreaterOrEqual(t, s.updates, size/1000-1, "the client went on only as the server granted room")
}

// SETTINGS_MAX_CONCURRENT_STREAMS = 1 and three requests at once whose
// answers the server holds until all three are in: the transport dials a
// connection for each, one stream on each, and all three are answered.
func TestProtocolMaxConcurrentStreamsDialsMore(t *testing.T) {
	t.Parallel()
	const n = 3
	var arrived atomic.Int32
	all := make(chan struct{})
	conns := make(chan int, n+1)
	srv := startScriptServer(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 1}},
		func(c *scriptConn, r *scriptRequest) {
			conns <- c.n
			if arrived.Add(1) == n {
				close(all)
			}
			select {
			case <-all:
			case <-c.srv.done:
				return
			}
			c.respond(r.StreamID, "200", r.Path)
		})
	tr := scriptTransport(t)
	results := make(chan string, n)
	for i := range n {
		req := newScriptRequest(t, context.Background(), http.MethodPost, srv.url+"/"+strconv.Itoa(i), []byte("q"))
		go func() {
			res, err := tr.RoundTrip(req)
			if err != nil {
				results <- "error: " + err.Error()
				return
			}
			b, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if err != nil {
				results <- "error: " + err.Error()
				return
			}
			results <- string(b)
		}()
	}
	var got []string
	for range n {
		got = append(got, receive(t, results, "an answer"))
	}
	slices.Sort(got)
	require.Equal(t, []string{"/0", "/1", "/2"}, got)
	require.Equal(t, int32(n), srv.accepted.Load())
	seen := []int{<-conns, <-conns, <-conns}
	slices.Sort(seen)
	require.Equal(t, []int{1, 2, 3}, seen, "one stream on each connection")
}

// Trailers: HEADERS, DATA, then HEADERS that end the stream. The body reads
// whole, and the trailer is in res.Trailer once it has.
func TestProtocolTrailers(t *testing.T) {
	t.Parallel()
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		c.headers(r.StreamID, false, ":status", "200", "trailer", "X-Checksum")
		c.data(r.StreamID, false, "streamed ")
		c.data(r.StreamID, false, "answer")
		c.headers(r.StreamID, true, "x-checksum", "sha256:abc")
	})
	tr := scriptTransport(t)
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
	require.NoError(t, err)
	require.Equal(t, "streamed answer", scriptBody(t, res))
	require.Equal(t, "sha256:abc", res.Trailer.Get("X-Checksum"))
}

// Interim answers (100, 103) before the final one: RoundTrip returns the
// final one, with its own headers alone.
func TestProtocolInterimAnswers(t *testing.T) {
	t.Parallel()
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		c.headers(r.StreamID, false, ":status", "100")
		c.headers(r.StreamID, false, ":status", "103", "link", "</style.css>; rel=preload")
		c.headers(r.StreamID, false, ":status", "200", "x-final", "yes")
		c.data(r.StreamID, true, "final answer")
	})
	tr := scriptTransport(t)
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "yes", res.Header.Get("X-Final"))
	require.Empty(t, res.Header.Values("Link"), "an interim answer's headers are not the final one's")
	require.Equal(t, "final answer", scriptBody(t, res))
}

// Padded DATA frames: the body is the data alone, whatever the padding,
// none included.
func TestProtocolPaddedData(t *testing.T) {
	t.Parallel()
	var want strings.Builder
	type frame struct {
		data string
		pad  []byte
	}
	frames := []frame{
		{"hello, ", make([]byte, 10)},
		{"padded ", []byte{}}, // the padding flag with no padding
		{"", make([]byte, 255)},
		{"world", nil}, // no padding flag at all
	}
	for i := range 64 {
		frames = append(frames, frame{strings.Repeat(strconv.Itoa(i%10), 4000), make([]byte, 255)})
	}
	for _, f := range frames {
		want.WriteString(f.data)
	}
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		c.headers(r.StreamID, false, ":status", "200")
		for _, f := range frames {
			c.check(c.fr.WriteDataPadded(r.StreamID, false, []byte(f.data), f.pad))
		}
		c.check(c.fr.WriteDataPadded(r.StreamID, true, []byte("!"), make([]byte, 100)))
	})
	want.WriteString("!")
	tr := scriptTransport(t)
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
	require.NoError(t, err)
	got := scriptBody(t, res)
	require.Len(t, got, want.Len())
	require.True(t, got == want.String(), "the body differs from the DATA sent")
}

// The server's PING is answered with a PING ACK that carries its data.
func TestProtocolPingIsAnswered(t *testing.T) {
	t.Parallel()
	ping := [8]byte{'c', 'o', 'n', 'c', 'l', 'a', 'v', 'e'}
	acks := make(chan [8]byte, 1)
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		c.check(c.fr.WritePing(false, ping))
		f, err := c.await(func(f http2.Frame) bool {
			p, ok := f.(*http2.PingFrame)
			return ok && p.IsAck()
		})
		if err != nil {
			c.srv.t.Errorf("script server: waiting for the PING ACK: %v", err)
			return
		}
		acks <- f.(*http2.PingFrame).Data
		c.respond(r.StreamID, "200", "pong")
	})
	tr := scriptTransport(t)
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
	require.NoError(t, err)
	require.Equal(t, "pong", scriptBody(t, res))
	require.Equal(t, ping, receive(t, acks, "the PING ACK"))
}

// A malformed :status fails the request, and the stream is reset with
// PROTOCOL_ERROR (RFC 9113, 8.1.1).
func TestProtocolMalformedStatus(t *testing.T) {
	t.Parallel()
	resets := make(chan http2.ErrCode, 1)
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		c.headers(r.StreamID, false, ":status", "abc")
		if rst := c.awaitReset(r.StreamID); rst != nil {
			resets <- rst.ErrCode
		}
	})
	tr := scriptTransport(t)
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
	require.Error(t, err)
	require.Nil(t, res)
	require.ErrorContains(t, err, "status")
	require.Equal(t, http2.ErrCodeProtocol, receive(t, resets, "the RST_STREAM"))
}

// An answer's header list larger than MaxResponseHeaderBytes fails the
// request, whether one value is too large or the fields together are.
func TestProtocolResponseHeadersTooLarge(t *testing.T) {
	t.Parallel()
	t.Run("one value of 4 KiB", func(t *testing.T) {
		t.Parallel()
		srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
			c.headers(r.StreamID, true, ":status", "200", "x-large", strings.Repeat("v", 4096))
		})
		tr := &h2c.Transport{MaxResponseHeaderBytes: 1024}
		t.Cleanup(tr.CloseIdleConnections)
		res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
		require.Error(t, err)
		require.Nil(t, res)
	})
	t.Run("many fields", func(t *testing.T) {
		t.Parallel()
		resets := make(chan uint32, 1)
		srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
			if c.srv.requests.Load() > 1 {
				c.respond(r.StreamID, "200", "small")
				return
			}
			kv := []string{":status", "200"}
			for i := range 20 { // 20 fields of some 140 bytes each against 1,024
				kv = append(kv, "x-filler-"+strconv.Itoa(i), strings.Repeat("w", 100))
			}
			c.headers(r.StreamID, true, kv...)
			if rst := c.awaitReset(r.StreamID); rst != nil {
				resets <- rst.StreamID
			}
		})
		tr := &h2c.Transport{MaxResponseHeaderBytes: 1024}
		t.Cleanup(tr.CloseIdleConnections)
		res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
		require.Error(t, err)
		require.Nil(t, res)
		require.Equal(t, uint32(1), receive(t, resets, "the RST_STREAM"))
		// The stream failed, not the connection.
		res, err = scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
		require.NoError(t, err)
		require.Equal(t, "small", scriptBody(t, res))
		require.Equal(t, int32(1), srv.accepted.Load())
	})
}

// A context cancelled while the answer is awaited: RoundTrip returns
// context.Canceled at once and the server gets RST_STREAM CANCEL.
func TestProtocolCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	arrived := make(chan uint32, 1)
	resets := make(chan http2.ErrCode, 1)
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		arrived <- r.StreamID
		if rst := c.awaitReset(r.StreamID); rst != nil {
			resets <- rst.ErrCode
		}
	})
	tr := scriptTransport(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := newScriptRequest(t, ctx, http.MethodPost, srv.url+"/", []byte("the prompt"))
	done := make(chan scriptResult, 1)
	go func() {
		res, err := tr.RoundTrip(req)
		done <- scriptResult{res, err}
	}()
	require.Equal(t, uint32(1), receive(t, arrived, "the request"))
	cancel()
	r := receive(t, done, "RoundTrip's return after the cancel")
	require.ErrorIs(t, r.err, context.Canceled)
	require.Nil(t, r.res)
	require.Equal(t, http2.ErrCodeCancel, receive(t, resets, "the RST_STREAM"))
}

// CloseIdleConnections closes a connection with no stream on it: the
// server reads its end.
func TestProtocolCloseIdleConnections(t *testing.T) {
	t.Parallel()
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		c.respond(r.StreamID, "200", "ok")
	})
	tr := scriptTransport(t)
	res, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
	require.NoError(t, err)
	require.Equal(t, "ok", scriptBody(t, res))
	select {
	case err := <-srv.ended:
		t.Fatalf("the connection ended before CloseIdleConnections: %v", err)
	default:
	}
	tr.CloseIdleConnections()
	require.ErrorIs(t, receive(t, srv.ended, "the connection's end"), io.EOF)
}

// A server that allows no stream at all is an error for the request, not a
// new connection dialled for it again and again.
func TestProtocolNoStreamsAllowed(t *testing.T) {
	t.Parallel()
	srv := startScriptServer(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 0}},
		func(c *scriptConn, r *scriptRequest) { c.respond(r.StreamID, "200", "never") })
	tr := scriptTransport(t)
	_, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodGet, srv.url+"/", nil))
	require.ErrorContains(t, err, "takes no streams")
	require.Equal(t, int32(1), srv.accepted.Load())
	require.Zero(t, srv.requests.Load())
}

// A request refused every time is sent at most five times in all, then
// the refusal is the caller's error.
func TestProtocolRefusedEveryTimeGivesUp(t *testing.T) {
	t.Parallel()
	srv := startScriptServer(t, nil, func(c *scriptConn, r *scriptRequest) {
		c.check(c.fr.WriteRSTStream(r.StreamID, http2.ErrCodeRefusedStream))
	})
	tr := scriptTransport(t)
	_, err := scriptRoundTrip(t, tr, newScriptRequest(t, context.Background(), http.MethodPost, srv.url+"/", []byte("the prompt")))
	require.ErrorContains(t, err, "REFUSED_STREAM")
	require.Equal(t, int32(5), srv.requests.Load())
}
