package egress

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/conclavehq/conclave/plugins/egress/h2c"
)

// Config configures Egress.
type Config struct {
	// AllowHosts lists the hosts requests may go to: "host" (any port),
	// "host:port", "[::1]:8080", or "*.example.com" (any subdomain, not
	// example.com itself). Defaults to empty, which allows exactly the host
	// and port of each engine endpoint given to New.
	AllowHosts []string
	// DefaultTimeout bounds one attempt (sending, waiting and reading the
	// answer) for engines whose Timeout is 0. Defaults to 120s.
	DefaultTimeout time.Duration
	// MaxResponseBytes caps a provider's response body; a larger one is
	// refused (egress_refused) without being read past the cap. Defaults to
	// 8 MiB.
	MaxResponseBytes int64
	// MaxAttempts is how many times a call whose failures are retryable
	// (rate_limited, overloaded, timeout) may be sent, the first try
	// included. Defaults to 3.
	MaxAttempts int
	// BaseBackoff is the back-off ceiling before the first retry; it doubles
	// with each retry, up to MaxBackoff, and the wait is drawn uniformly
	// below it (full jitter). Defaults to 250ms.
	BaseBackoff time.Duration
	// MaxBackoff caps every back-off, including a provider's Retry-After.
	// Defaults to 5s.
	MaxBackoff time.Duration
	// AllowPlainHTTP lets a credential go over plain http to a host that is
	// not loopback. Defaults to false: credentials travel over https, or over
	// http to localhost and loopback addresses only (the simulated provider).
	AllowPlainHTTP bool
	// Logger gets one debug line per attempt (engine id, attempt, status,
	// class, duration) and never a credential, header value or body.
	// Defaults to a logger that discards.
	Logger *slog.Logger
	// Registerer receives the egress metrics. Defaults to nil: no metrics.
	Registerer prometheus.Registerer
	// H2C sends requests to http:// endpoints as unencrypted HTTP/2 (prior
	// knowledge): every call to such an endpoint is a stream on a few shared
	// connections rather than a connection of its own, sent by package
	// h2c's transport, in which a call waiting for its answer holds no
	// goroutine but its caller's. The endpoint must
	// speak it (the simulated provider does); such requests never go
	// through an HTTP proxy. https endpoints are unaffected: they negotiate
	// HTTP/2 through TLS as always. It shapes the default HTTPClient only.
	// Defaults to false: HTTP/1.1 over plain http.
	H2C bool
	// HTTPClient sends provider requests. Egress uses a copy whose redirect
	// policy and cookie jar are replaced: it never follows a redirect and
	// never keeps a cookie. Defaults to a client with dial, TLS-handshake and
	// header-size limits.
	HTTPClient *http.Client
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = 120 * time.Second
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = 8 << 20
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 3
	}
	if c.BaseBackoff == 0 {
		c.BaseBackoff = 250 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = defaultHTTPClient(c.H2C)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.DefaultTimeout < 0:
		return errors.New("egress: DefaultTimeout cannot be negative")
	case c.MaxResponseBytes < 0:
		return errors.New("egress: MaxResponseBytes cannot be negative")
	case c.MaxAttempts < 1 || c.MaxAttempts > 10:
		return errors.New("egress: MaxAttempts must be between 1 and 10")
	case c.BaseBackoff < 0:
		return errors.New("egress: BaseBackoff cannot be negative")
	case c.MaxBackoff < c.BaseBackoff:
		return errors.New("egress: MaxBackoff cannot be less than BaseBackoff")
	}
	for _, h := range c.AllowHosts {
		if _, err := parseHostRule(h); err != nil {
			return fmt.Errorf("egress: AllowHosts: %w", err)
		}
	}
	return nil
}

// defaultHTTPClient has no overall timeout (each attempt carries its own
// deadline), but bounds the steps a slow or hostile peer could stretch.
// With h2c, http:// requests go over unencrypted HTTP/2 instead of
// HTTP/1.1, through package h2c's transport: a call waiting on its answer
// holds no goroutine but its caller's, where net/http's HTTP/2 client holds
// a second one per request. An HTTP proxy cannot carry prior-knowledge
// HTTP/2, so these requests go direct.
func defaultHTTPClient(h2 bool) *http.Client {
	base := defaultTransport()
	if !h2 {
		return &http.Client{Transport: base}
	}
	plain := &h2c.Transport{
		DialContext:            base.DialContext,
		MaxResponseHeaderBytes: uint32(base.MaxResponseHeaderBytes),
		IdleTimeout:            base.IdleConnTimeout,
	}
	return &http.Client{Transport: schemeSplit{https: base, http: plain}}
}

// schemeSplit sends http:// requests through one transport and the rest
// through another.
type schemeSplit struct {
	https *http.Transport
	http  *h2c.Transport
}

func (s schemeSplit) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "http" {
		return s.http.RoundTrip(r)
	}
	return s.https.RoundTrip(r)
}

// CloseIdleConnections closes both transports' idle connections.
func (s schemeSplit) CloseIdleConnections() {
	s.https.CloseIdleConnections()
	s.http.CloseIdleConnections()
}

func defaultTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    32,
		IdleConnTimeout:        90 * time.Second,
		ForceAttemptHTTP2:      true,
	}
}
