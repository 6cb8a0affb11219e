package h2c

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// conn is one HTTP/2 connection. Its reader goroutine takes frames from the
// peer; the goroutines of the requests on it write their own frames.
type conn struct {
	t    *Transport
	addr string
	nc   net.Conn
	fr   *http2.Framer // read by the reader alone; written under wmu

	// wmu orders writes: frames, the header encoder and the choice of
	// stream identifiers (which must rise in the order HEADERS are sent).
	// It is taken before mu, never while holding it.
	wmu    sync.Mutex
	bw     *bufio.Writer
	henc   *hpack.Encoder
	hbuf   bytes.Buffer
	nextID uint32

	settled chan struct{} // closed when the peer's first SETTINGS arrived
	gone    chan struct{} // closed when the connection ended

	mu      sync.Mutex
	streams map[uint32]*stream
	waiting map[uint32]*stream // streams waiting for send window
	active  int                // streams open or reserved
	// The peer's settings, and the windows it granted and this client did.
	maxStreams    uint32
	initialWindow int32
	maxFrame      uint32
	sendWindow    int32
	recvWindow    int32
	unacked       int32 // bytes taken from the connection not yet granted again
	goingAway     bool
	closed        bool
	err           error
	idleTimer     *time.Timer
}

// dial opens a connection to addr, sends the preface and this client's
// settings, and returns once the peer's settings have arrived: until then
// its limit on concurrent streams is unknown.
func (t *Transport) dial(ctx context.Context, addr string) (*conn, error) {
	nc, err := t.dialer()(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &conn{
		t: t, addr: addr, nc: nc, bw: bufio.NewWriterSize(nc, 16<<10), nextID: 1,
		settled: make(chan struct{}), gone: make(chan struct{}),
		streams: make(map[uint32]*stream), waiting: make(map[uint32]*stream), maxStreams: 100, initialWindow: 65535,
		maxFrame: 16 << 10, sendWindow: 65535, recvWindow: connWindow,
	}
	c.fr = http2.NewFramer(c.bw, bufio.NewReaderSize(nc, 16<<10))
	c.fr.SetMaxReadFrameSize(16 << 10) // the default this client does not raise
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = t.maxHeaderBytes()
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.wmu.Lock()
	_, err = c.bw.WriteString(http2.ClientPreface)
	if err == nil {
		err = c.fr.WriteSettings(
			http2.Setting{ID: http2.SettingEnablePush, Val: 0},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamWindow},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: t.maxHeaderBytes()},
		)
	}
	if err == nil {
		err = c.fr.WriteWindowUpdate(0, connWindow-65535)
	}
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("h2c: opening a connection to %s: %w", addr, err)
	}
	go c.readLoop()
	select {
	case <-c.settled:
		return c, nil
	case <-c.gone:
		return nil, c.failure()
	case <-ctx.Done():
		c.close(ctx.Err())
		return nil, ctx.Err()
	}
}

// reserve takes a stream slot on c if it has one. The caller holds t.mu.
func (c *conn) reserve() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.goingAway || uint32(c.active) >= c.maxStreams {
		return false
	}
	c.active++
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	return true
}

// unreserveLocked frees a stream slot, reserved or in use, and starts the
// idle countdown when it was the last. mu is held.
func (c *conn) unreserveLocked() {
	c.active--
	if c.active == 0 {
		c.goIdleLocked()
	}
}

// goIdleLocked starts the idle countdown, or closes a connection that is
// going away and has nothing left on it. mu is held.
func (c *conn) goIdleLocked() {
	if c.closed {
		return
	}
	if c.goingAway {
		go c.close(errors.New("h2c: connection went away"))
		return
	}
	if c.idleTimer == nil {
		c.idleTimer = time.AfterFunc(c.t.idleTimeout(), c.closeIfIdle)
	} else {
		c.idleTimer.Reset(c.t.idleTimeout())
	}
}

func (c *conn) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active == 0 && !c.closed
}

// closeIfIdle closes c if it carries no stream; a stream reserved at the
// same time finds it closed and goes elsewhere.
func (c *conn) closeIfIdle() {
	c.mu.Lock()
	idle := c.active == 0 && !c.closed
	if idle {
		c.closed = true
		c.err = errors.New("h2c: idle connection closed")
	}
	c.mu.Unlock()
	if idle {
		_ = c.nc.Close()
	}
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// close ends the connection; its reader then fails every stream with err.
func (c *conn) close(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.closed = true
	c.mu.Unlock()
	_ = c.nc.Close()
}

func (c *conn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// roundTrip sends req as a new stream on c, on which the caller holds a
// reserved slot, and waits for the answer's headers.
func (c *conn) roundTrip(ctx context.Context, req *http.Request, hdr *headerList) (*http.Response, error) {
	s, err := c.open(hdr)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	if hdr.body {
		err = c.writeBody(ctx, s, req.Body, hdr.contentLength)
		closeBody(req)
		if err != nil {
			c.abandon(s, err)
			return nil, err
		}
	}
	for {
		c.mu.Lock()
		res, err := s.res, s.err
		c.mu.Unlock()
		switch {
		case res != nil:
			res.Request = req
			res.Body = &body{s: s, ctx: ctx}
			return res, nil
		case err != nil:
			c.abandon(s, err)
			return nil, err
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			c.abandon(s, ctx.Err())
			return nil, ctx.Err()
		}
	}
}

// open starts a stream: it takes the next identifier and writes the
// request's HEADERS (and CONTINUATIONs), ending the stream when the
// request has no body.
func (c *conn) open(hdr *headerList) (*stream, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if c.closed || c.goingAway || c.nextID > maxStreamID {
		c.goingAway = true
		err := c.err
		if err == nil {
			err = errors.New("h2c: connection takes no new streams")
		}
		c.unreserveLocked()
		c.mu.Unlock()
		return nil, unprocessedError{err}
	}
	s := &stream{c: c, id: c.nextID, sendWindow: c.initialWindow, recvWindow: streamWindow, wake: make(chan struct{}, 1), sentEnd: !hdr.body}
	c.nextID += 2
	c.streams[s.id] = s
	maxFrame := int(c.maxFrame)
	c.mu.Unlock()

	c.hbuf.Reset()
	c.field(":authority", hdr.authority)
	c.field(":method", hdr.method)
	c.field(":path", hdr.path)
	c.field(":scheme", "http")
	for _, f := range hdr.fields {
		c.field(f[0], f[1])
	}
	block := c.hbuf.Bytes()
	var err error
	for first := true; first || len(block) > 0; first = false {
		frag := block[:min(len(block), maxFrame)]
		block = block[len(frag):]
		if first {
			err = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: frag, EndStream: !hdr.body, EndHeaders: len(block) == 0})
		} else {
			err = c.fr.WriteContinuation(s.id, len(block) == 0, frag)
		}
		if err != nil {
			break
		}
	}
	if err == nil && !hdr.body {
		err = c.bw.Flush()
	}
	if err != nil {
		c.writeFailed(err)
		c.mu.Lock()
		c.releaseLocked(s)
		c.mu.Unlock()
		return nil, err
	}
	return s, nil
}

func (c *conn) field(name, value string) {
	_ = c.henc.WriteField(hpack.HeaderField{Name: name, Value: value}) // writes to a bytes.Buffer
}

// bodyBufs holds the buffers request bodies are copied through, one
// frame's worth each.
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// writeBody sends r as s's DATA frames, each as large as the windows and
// the peer's frame size allow, and ends the stream: at the end of r, or
// once length bytes (when known, -1 if not) have gone.
func (c *conn) writeBody(ctx context.Context, s *stream, r io.Reader, length int64) error {
	bp := bodyBufs.Get().(*[]byte)
	defer bodyBufs.Put(bp)
	buf := *bp
	var sent int64
	for {
		n, rerr := r.Read(buf)
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("h2c: reading the request body: %w", rerr)
		}
		sent += int64(n)
		switch {
		case length >= 0 && sent > length:
			return fmt.Errorf("h2c: the request body is longer than its ContentLength, %d", length)
		case length >= 0 && rerr == io.EOF && sent < length:
			return fmt.Errorf("h2c: the request body is shorter than its ContentLength, %d", length)
		}
		end := rerr == io.EOF || sent == length
		if n == 0 && !end {
			continue
		}
		if err := c.writeData(ctx, s, buf[:n], end); err != nil {
			return err
		}
		if end {
			return nil
		}
	}
}

// writeData writes data on s, waiting for window as it needs, with
// END_STREAM on the last frame when end is set. Each frame is flushed: a
// body that comes slowly goes as it comes.
func (c *conn) writeData(ctx context.Context, s *stream, data []byte, end bool) error {
	for first := true; first || len(data) > 0; first = false {
		n, err := c.awaitWindow(ctx, s, len(data))
		if err != nil {
			return err
		}
		if n < 0 { // the server answered in full and stopped the upload
			return nil
		}
		last := end && n == len(data)
		c.wmu.Lock()
		err = c.fr.WriteData(s.id, last, data[:n])
		if err == nil {
			err = c.bw.Flush()
		}
		c.wmu.Unlock()
		if err != nil {
			c.writeFailed(err)
			return err
		}
		data = data[n:]
		if last {
			c.mu.Lock()
			s.sentEnd = true
			c.mu.Unlock()
		}
	}
	return nil
}

// awaitWindow takes up to want bytes of send window for s (0 when want is
// 0), waiting until some is granted. It returns -1 when the server has
// answered in full and asked for no more of the upload.
func (c *conn) awaitWindow(ctx context.Context, s *stream, want int) (int, error) {
	defer func() {
		c.mu.Lock()
		delete(c.waiting, s.id)
		c.mu.Unlock()
	}()
	for {
		c.mu.Lock()
		switch {
		case s.err != nil:
			err := s.err
			c.mu.Unlock()
			return 0, err
		case s.uploadDone:
			c.mu.Unlock()
			return -1, nil
		case want == 0:
			c.mu.Unlock()
			return 0, nil
		}
		n := min(int32(want), c.sendWindow, s.sendWindow, int32(c.maxFrame))
		if n > 0 {
			c.sendWindow -= n
			s.sendWindow -= n
			c.mu.Unlock()
			return int(n), nil
		}
		c.waiting[s.id] = s
		c.mu.Unlock()
		// What is buffered (the HEADERS at least) must reach the server
		// before it can grant more.
		c.wmu.Lock()
		err := c.bw.Flush()
		c.wmu.Unlock()
		if err != nil {
			c.writeFailed(err)
			return 0, err
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// writeFailed ends a connection whose writing failed; the reader then fails
// its streams.
func (c *conn) writeFailed(err error) { c.close(fmt.Errorf("h2c: writing to the connection: %w", err)) }

// abandon ends a stream the caller no longer waits on: the server is told
// (RST_STREAM) unless it ended the stream itself, and the slot is freed.
func (c *conn) abandon(s *stream, why error) {
	c.mu.Lock()
	reset := !s.peerReset && !c.closed && !(s.ended && s.sentEnd)
	if s.err == nil {
		s.err = why
	}
	c.releaseLocked(s)
	c.mu.Unlock()
	if reset {
		c.reset(s.id, http2.ErrCodeCancel)
	}
}

func (c *conn) reset(id uint32, code http2.ErrCode) {
	c.wmu.Lock()
	err := c.fr.WriteRSTStream(id, code)
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		c.writeFailed(err)
	}
}

// releaseLocked forgets s and frees its slot, once. mu is held.
func (c *conn) releaseLocked(s *stream) {
	if s.released {
		return
	}
	s.released = true
	delete(c.streams, s.id)
	c.unacked += int32(len(s.buf)) // what it will never read goes back to the connection
	s.buf = nil
	c.unreserveLocked()
}

// grant sends the WINDOW_UPDATEs that what the callers read has earned.
func (c *conn) grant(streamID uint32, streamInc, connInc int32) {
	c.wmu.Lock()
	var err error
	if streamInc > 0 {
		err = c.fr.WriteWindowUpdate(streamID, uint32(streamInc))
	}
	if err == nil && connInc > 0 {
		err = c.fr.WriteWindowUpdate(0, uint32(connInc))
	}
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		c.writeFailed(err)
	}
}

// connGrantLocked returns the connection-level grant now due, and counts it
// as granted. mu is held.
func (c *conn) connGrantLocked() int32 {
	if c.unacked < connWindow/4 {
		return 0
	}
	inc := c.unacked
	c.unacked = 0
	c.recvWindow += inc
	return inc
}

// readLoop reads the peer's frames until the connection ends, then fails
// every stream left on it.
func (c *conn) readLoop() {
	var err error
	for {
		f, rerr := c.fr.ReadFrame()
		if rerr != nil {
			var se http2.StreamError
			if errors.As(rerr, &se) {
				c.streamFailed(se.StreamID, se.Code, fmt.Errorf("h2c: %w", se))
				continue
			}
			err = rerr
			break
		}
		if err = c.handle(f); err != nil {
			break
		}
	}
	c.end(err)
}

// end fails every stream that has not had its whole answer, and removes
// the connection from its pool.
func (c *conn) end(err error) {
	_ = c.nc.Close()
	c.mu.Lock()
	if c.err != nil {
		err = c.err
	} else {
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			err = fmt.Errorf("h2c: protocol error from the server: %w", err)
		} else {
			err = fmt.Errorf("h2c: connection lost: %w", err)
		}
		c.err = err
	}
	c.closed = true
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	for _, s := range c.streams {
		if !s.ended && s.err == nil {
			s.err = err
		}
		s.poke()
	}
	c.mu.Unlock()
	close(c.gone)
	c.t.forget(c)
}

// handle acts on one frame. An error ends the connection.
func (c *conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return c.onHeaders(f)
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f)
	case *http2.RSTStreamFrame:
		c.mu.Lock()
		if s := c.streams[f.StreamID]; s != nil {
			s.peerReset = true
			switch {
			case f.ErrCode == http2.ErrCodeNo && s.ended:
				s.uploadDone = true // a complete answer; no more of the upload, please
			case f.ErrCode == http2.ErrCodeRefusedStream && s.res == nil:
				s.err = unprocessedError{streamError{f.ErrCode}}
			case s.err == nil:
				s.err = streamError{f.ErrCode}
			}
			s.poke()
		}
		c.mu.Unlock()
	case *http2.GoAwayFrame:
		c.mu.Lock()
		c.goingAway = true
		for id, s := range c.streams {
			if id > f.LastStreamID && s.err == nil {
				s.peerReset = true
				s.err = unprocessedError{fmt.Errorf("h2c: the server is going away (%s) and did not take the request", f.ErrCode)}
				s.poke()
			}
		}
		if c.active == 0 {
			c.goIdleLocked()
		}
		c.mu.Unlock()
	case *http2.PingFrame:
		if !f.IsAck() {
			c.wmu.Lock()
			err := c.fr.WritePing(true, f.Data)
			if err == nil {
				err = c.bw.Flush()
			}
			c.wmu.Unlock()
			return err
		}
	case *http2.PushPromiseFrame:
		return http2.ConnectionError(http2.ErrCodeProtocol) // push was refused in the settings
	}
	return nil
}

func (c *conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	var tableSize uint32
	var tableSizeSet, first bool
	select {
	case <-c.settled:
	default:
		first = true
	}
	c.mu.Lock()
	if first {
		// A peer that names no limit has none; net/http's client then
		// keeps to 1,000 streams a connection, and so does this one.
		c.maxStreams = 1000
	}
	err := f.ForeachSetting(func(st http2.Setting) error {
		if err := st.Valid(); err != nil {
			return err
		}
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			c.maxStreams = st.Val
		case http2.SettingMaxFrameSize:
			c.maxFrame = st.Val
		case http2.SettingHeaderTableSize:
			tableSize, tableSizeSet = st.Val, true
		case http2.SettingInitialWindowSize:
			delta := int32(st.Val) - c.initialWindow
			for _, s := range c.streams {
				if int64(s.sendWindow)+int64(delta) > maxStreamID {
					return http2.ConnectionError(http2.ErrCodeFlowControl)
				}
				s.sendWindow += delta
			}
			if delta > 0 {
				c.pokeWaiting()
			}
			c.initialWindow = int32(st.Val)
		}
		return nil
	})
	c.mu.Unlock()
	if err != nil {
		return err
	}
	c.wmu.Lock()
	if tableSizeSet {
		c.henc.SetMaxDynamicTableSizeLimit(tableSize)
	}
	err = c.fr.WriteSettingsAck()
	if err == nil {
		err = c.bw.Flush()
	}
	c.wmu.Unlock()
	if first {
		close(c.settled)
	}
	return err
}

func (c *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	inc := int64(f.Increment)
	if f.StreamID == 0 {
		if int64(c.sendWindow)+inc > maxStreamID {
			return http2.ConnectionError(http2.ErrCodeFlowControl)
		}
		c.sendWindow += int32(inc)
		c.pokeWaiting()
		return nil
	}
	s := c.streams[f.StreamID]
	if s == nil {
		return nil
	}
	if int64(s.sendWindow)+inc > maxStreamID {
		s.err = streamError{http2.ErrCodeFlowControl}
		s.poke()
		go c.reset(s.id, http2.ErrCodeFlowControl)
		return nil
	}
	s.sendWindow += int32(inc)
	if c.waiting[s.id] != nil {
		s.poke()
	}
	return nil
}

// pokeWaiting wakes the streams waiting for send window. mu is held.
func (c *conn) pokeWaiting() {
	for _, s := range c.waiting {
		s.poke()
	}
}

func (c *conn) onHeaders(f *http2.MetaHeadersFrame) error {
	c.mu.Lock()
	s := c.streams[f.StreamID]
	c.mu.Unlock()
	if s == nil {
		return nil // a stream this client has given up on
	}
	if f.Truncated {
		c.streamFailed(s.id, http2.ErrCodeCancel, errors.New("h2c: the answer's header list is larger than allowed"))
		return nil
	}
	if err := c.takeHeaders(s, f); err != nil {
		c.streamFailed(s.id, http2.ErrCodeProtocol, err)
	}
	return nil
}

// takeHeaders records an answer's headers, or its trailers, on s. An error
// is a malformed answer, for which the stream is reset.
func (c *conn) takeHeaders(s *stream, f *http2.MetaHeadersFrame) error {
	regular := f.RegularFields()
	header := make(http.Header, len(regular))
	for _, hf := range regular {
		k := http.CanonicalHeaderKey(hf.Name)
		header[k] = append(header[k], hf.Value)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.res != nil { // trailers
		if !f.StreamEnded() {
			return errors.New("h2c: trailers that do not end the stream")
		}
		s.res.Trailer = header
		s.ended = true
		s.poke()
		return nil
	}
	status := f.PseudoValue("status")
	code, err := strconv.Atoi(status)
	if err != nil || len(status) != 3 || code < 100 {
		return fmt.Errorf("h2c: malformed status %q", status)
	}
	if code < 200 { // an interim answer (100 Continue, 103 Early Hints): the real one follows
		if f.StreamEnded() {
			return errors.New("h2c: an interim answer ended the stream")
		}
		return nil
	}
	res := &http.Response{
		Status: status + " " + http.StatusText(code), StatusCode: code,
		Proto: "HTTP/2.0", ProtoMajor: 2, Header: header, ContentLength: -1,
	}
	if cl := header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			res.ContentLength = n
		}
	}
	if f.StreamEnded() {
		s.ended = true
		if res.ContentLength < 0 {
			res.ContentLength = 0
		}
	}
	s.res = res
	s.poke()
	return nil
}

func (c *conn) onData(f *http2.DataFrame) error {
	data := f.Data()
	n := int32(f.Length) // padding included: flow control counts it
	c.mu.Lock()
	if n > c.recvWindow {
		c.mu.Unlock()
		return http2.ConnectionError(http2.ErrCodeFlowControl)
	}
	c.recvWindow -= n
	s := c.streams[f.StreamID]
	if s == nil || s.err != nil || s.bodyClosed {
		c.unacked += n // nobody will read it
		inc := c.connGrantLocked()
		c.mu.Unlock()
		if inc > 0 {
			c.grant(0, 0, inc)
		}
		return nil
	}
	if n > s.recvWindow {
		c.unacked += n
		c.mu.Unlock()
		c.streamFailed(s.id, http2.ErrCodeFlowControl, errors.New("h2c: the server sent more than its window"))
		return nil
	}
	s.recvWindow -= n
	s.buf = append(s.buf, data...)
	pad := n - int32(len(data))
	s.unacked += pad
	c.unacked += pad
	if f.StreamEnded() {
		s.ended = true
	}
	s.poke()
	c.mu.Unlock()
	return nil
}

// streamFailed fails one stream with err and resets it with code.
func (c *conn) streamFailed(id uint32, code http2.ErrCode, err error) {
	c.mu.Lock()
	s := c.streams[id]
	if s != nil {
		if s.err == nil {
			s.err = err
		}
		s.peerReset = true // told here
		s.poke()
	}
	c.mu.Unlock()
	if s != nil {
		go c.reset(id, code) // the reader does not wait on a write that may block
	}
}

// stream is one request and its answer. Its fields are guarded by its
// connection's mu.
type stream struct {
	c    *conn
	id   uint32
	wake chan struct{} // poked when anything the caller may wait on changed

	sendWindow, recvWindow int32
	unacked                int32 // read by the caller, not yet granted again
	sentEnd                bool  // this client ended its side
	uploadDone             bool  // the server answered in full and wants no more upload
	res                    *http.Response
	buf                    []byte // DATA received, not yet read
	ended                  bool   // the server ended its side
	peerReset              bool   // the stream needs no RST_STREAM from this client
	bodyClosed             bool
	released               bool
	err                    error
}

// poke wakes the stream's caller if it waits.
func (s *stream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// body is an answer's body, read from its stream's buffer as DATA arrives.
type body struct {
	s *stream
	// ctx is the request's: a body outlives RoundTrip, and a read still
	// ends when the request does, as with net/http.
	ctx context.Context
}

func (b *body) Read(p []byte) (int, error) {
	s, c := b.s, b.s.c
	for {
		c.mu.Lock()
		switch {
		case s.bodyClosed:
			c.mu.Unlock()
			return 0, errors.New("h2c: read on a closed body")
		case len(s.buf) > 0:
			n := copy(p, s.buf)
			s.buf = s.buf[n:]
			if len(s.buf) == 0 {
				s.buf = nil
			}
			var streamInc int32
			s.unacked += int32(n)
			c.unacked += int32(n)
			if !s.ended && s.unacked >= streamWindow/4 {
				streamInc, s.unacked = s.unacked, 0
				s.recvWindow += streamInc
			}
			connInc := c.connGrantLocked()
			if s.ended && len(s.buf) == 0 && s.sentEnd {
				c.releaseLocked(s)
			}
			c.mu.Unlock()
			if streamInc > 0 || connInc > 0 {
				c.grant(s.id, streamInc, connInc)
			}
			return n, nil
		case s.ended:
			if s.sentEnd {
				c.releaseLocked(s)
			}
			c.mu.Unlock()
			return 0, io.EOF
		case s.err != nil:
			err := s.err
			c.mu.Unlock()
			return 0, err
		}
		c.mu.Unlock()
		select {
		case <-s.wake:
		case <-b.ctx.Done():
			c.abandon(s, b.ctx.Err())
			return 0, b.ctx.Err()
		}
	}
}

// Close stops reading: a stream the server is still sending on is reset.
func (b *body) Close() error {
	s, c := b.s, b.s.c
	c.mu.Lock()
	if s.bodyClosed {
		c.mu.Unlock()
		return nil
	}
	s.bodyClosed = true
	if s.ended && s.sentEnd { // both sides ended: nothing to tell the server
		c.releaseLocked(s)
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	c.abandon(s, errors.New("h2c: body closed"))
	return nil
}
