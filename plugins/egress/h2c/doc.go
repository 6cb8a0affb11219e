// Package h2c is an http.RoundTripper that sends http:// requests as
// unencrypted HTTP/2 with prior knowledge (RFC 9113, section 3.3), in which
// a stream waiting for its answer holds no goroutine of its own.
//
// Each connection has one goroutine, its reader. A request's headers and
// body are written by the goroutine that calls RoundTrip, which then waits
// for the answer; the reader hands it over when it arrives. net/http's
// HTTP/2 client starts a goroutine per request that lives until the answer
// has been read, so a process holding tens of thousands of provider calls
// open pays for a second goroutine, and its stack, on every one.
//
// It speaks only what a client of an API needs: no server push (refused in
// its SETTINGS), no priorities, no TLS, no proxies. Connections to one
// address are shared up to the peer's limit on concurrent streams; past it
// another is dialled. A request the server never processed (refused, or
// above a GOAWAY's last stream) is sent again on another connection when
// its body can be read again.
//
// # Why not net/http?
//
// Nothing in net/http lets a caller wait for an HTTP/2 answer without a
// second goroutine. See the project's docs/rationale.md.
package h2c
