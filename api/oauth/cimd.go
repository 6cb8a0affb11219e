package oauth

// The fetcher of Client ID Metadata Documents: a client whose client_id is
// an https URL is described by the JSON document at that URL.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core/expiring"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
	"github.com/conclavehq/conclave/core/publicnet"
)

// ErrClientDocument is a client_id whose metadata document cannot be used:
// the authorization server answers invalid_client, with the reason.
var ErrClientDocument = errors.New("client metadata document refused")

// FetcherConfig configures a Fetcher. Zero fields take their defaults.
type FetcherConfig struct {
	// MaxBytes caps a document. Defaults to 64 KiB (a 5 KiB cap broke
	// claude.ai's).
	MaxBytes int64
	// Timeout bounds one fetch, connection included. Defaults to 5s.
	Timeout time.Duration
	// DefaultCache is how long a document is kept when its answer says
	// nothing; MinCache and MaxCache bound what max-age asks. Default 5m,
	// 1m and 24h.
	DefaultCache, MinCache, MaxCache time.Duration
	// LookupIP resolves a host name. Defaults to the system resolver.
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to an address already checked to be public. Defaults
	// to a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs verifies documents' servers; nil is the system's pool.
	RootCAs *x509.CertPool
	// Now defaults to time.Now.
	Now func() time.Time
}

// Fetcher fetches and caches Client ID Metadata Documents, and never
// connects to an address that is not public: each host is resolved by the
// fetcher itself, every address checked, and only then one dialled, so a
// name cannot be rebound to a private address between the check and the
// connection. Redirects are not followed. Safe for concurrent use.
type Fetcher struct {
	cfg    FetcherConfig
	client *http.Client

	cache *expiring.Map[string, *coreoauth.Client]
}

// maxCached bounds the cache of documents.
const maxCached = 10_000

// NewFetcher returns a Fetcher.
func NewFetcher(cfg FetcherConfig) *Fetcher {
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 64 << 10
	}
	set(&cfg.Timeout, 5*time.Second)
	set(&cfg.DefaultCache, 5*time.Minute)
	set(&cfg.MinCache, time.Minute)
	set(&cfg.MaxCache, 24*time.Hour)
	if cfg.LookupIP == nil {
		cfg.LookupIP = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if cfg.Dial == nil {
		d := &net.Dialer{}
		cfg.Dial = d.DialContext
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f := &Fetcher{cfg: cfg, cache: expiring.New[string, *coreoauth.Client](maxCached)}
	tr := &http.Transport{
		DialContext:           f.dialPublic,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		Proxy:                 nil, // a proxy would resolve names the check never saw
	}
	if cfg.RootCAs != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	}
	f.client = &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f
}

// dialPublic dials through the shared address guard (core/publicnet),
// its refusals reported as ErrClientDocument.
func (f *Fetcher) dialPublic(ctx context.Context, network, addr string) (net.Conn, error) {
	d := publicnet.Dialer{LookupIP: f.cfg.LookupIP, Dial: f.cfg.Dial}
	c, err := d.DialContext(ctx, network, addr)
	if errors.Is(err, publicnet.ErrNotPublic) {
		return nil, fmt.Errorf("%w: %w", ErrClientDocument, err)
	}
	return c, err
}

// CheckClientID refuses a client_id that cannot name a metadata document:
// it must be an https URL with a host and a path, without a user, a
// fragment or dot segments.
func CheckClientID(id string) error {
	u, err := url.Parse(id)
	switch {
	case err != nil || len(id) > 2000:
		return fmt.Errorf("%w: the client_id is not a URL", ErrClientDocument)
	case u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%w: the client_id must be an https URL", ErrClientDocument)
	case u.User != nil || u.Fragment != "" || strings.Contains(id, "#"):
		return fmt.Errorf("%w: the client_id may carry neither a user nor a fragment", ErrClientDocument)
	case u.Path == "" || u.Path == "/":
		return fmt.Errorf("%w: the client_id must have a path", ErrClientDocument)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%w: the client_id may not hold dot segments", ErrClientDocument)
		}
	}
	return nil
}

// Client returns the client that clientID's metadata document describes,
// from the cache while its answer allows, fetching it otherwise. A
// document is refused when it cannot be fetched within the timeout from a
// public address without a redirect, is larger than the cap, is not JSON,
// names another client_id, or does not pass coreoauth.CheckMetadata.
func (f *Fetcher) Client(ctx context.Context, clientID string) (*coreoauth.Client, error) {
	if err := CheckClientID(clientID); err != nil {
		return nil, err
	}
	now := f.cfg.Now()
	if c, ok := f.cache.Get(clientID, now); ok {
		return c, nil
	}
	c, keep, err := f.fetch(ctx, clientID)
	if err != nil {
		return nil, err
	}
	if keep > 0 {
		f.cache.Put(clientID, c, now.Add(keep), now)
	}
	return c, nil
}

// fetch fetches and checks one document, and says how long it may be
// kept.
func (f *Fetcher) fetch(ctx context.Context, clientID string) (*coreoauth.Client, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrClientDocument, err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := f.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrClientDocument) {
			var ue *url.Error
			if errors.As(err, &ue) {
				return nil, 0, ue.Err
			}
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("%w: it could not be fetched within %s", ErrClientDocument, f.cfg.Timeout)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return nil, 0, fmt.Errorf("%w: it answered a redirect (%d), which is not followed", ErrClientDocument, res.StatusCode)
	case res.StatusCode != http.StatusOK:
		return nil, 0, fmt.Errorf("%w: it answered %d", ErrClientDocument, res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, f.cfg.MaxBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: it could not be read within %s", ErrClientDocument, f.cfg.Timeout)
	}
	if int64(len(body)) > f.cfg.MaxBytes {
		return nil, 0, fmt.Errorf("%w: it is larger than %d bytes", ErrClientDocument, f.cfg.MaxBytes)
	}
	var m coreoauth.ClientMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, 0, fmt.Errorf("%w: it is not a JSON object of client metadata", ErrClientDocument)
	}
	if m.ClientID != clientID {
		return nil, 0, fmt.Errorf("%w: its client_id %q is not the URL it was fetched from", ErrClientDocument, m.ClientID)
	}
	c, err := coreoauth.CheckMetadata(&m)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrClientDocument, err)
	}
	return c, f.keepFor(res.Header.Get("Cache-Control")), nil
}

// keepFor is how long a document may be cached by its Cache-Control
// header: none for no-store, no-cache or max-age=0, else its max-age within the
// configured bounds, else the default.
func (f *Fetcher) keepFor(cc string) time.Duration {
	keep := f.cfg.DefaultCache
	for _, part := range strings.Split(cc, ",") {
		part = strings.ToLower(strings.TrimSpace(part))
		switch {
		case part == "no-store" || part == "no-cache":
			return 0
		case strings.HasPrefix(part, "max-age="):
			n, err := strconv.Atoi(strings.TrimPrefix(part, "max-age="))
			if err == nil && n == 0 {
				return 0
			}
			if err == nil && n > 0 {
				keep = time.Duration(n) * time.Second
			}
		}
	}
	return min(max(keep, f.cfg.MinCache), f.cfg.MaxCache)
}
