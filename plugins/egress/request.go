package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// endpoint is an engine's parsed base URL.
type endpoint struct {
	raw  string // without trailing slashes
	url  *url.URL
	host string // lower case, without brackets or trailing dot
	port string // explicit or the scheme's default
}

func parseEndpoint(s string) (*endpoint, error) {
	raw := strings.TrimRight(strings.TrimSpace(s), "/")
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, errors.New("endpoint is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("endpoint is not an http or https URL")
	case u.Host == "" || u.Opaque != "":
		return nil, errors.New("endpoint has no host")
	case u.User != nil:
		return nil, errors.New("endpoint carries user information")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, errors.New("endpoint carries a query or fragment")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return &endpoint{raw: raw, url: u, host: normHost(u.Hostname()), port: port}, nil
}

func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// loopback reports whether the endpoint is this machine.
func (ep *endpoint) loopback() bool {
	if ep.host == "localhost" || strings.HasSuffix(ep.host, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(ep.host)
	return err == nil && a.IsLoopback()
}

// hostRule is one allow-list entry.
type hostRule struct {
	host     string // for a wildcard, the suffix with its leading dot: ".example.com"
	port     string // "" = any port
	wildcard bool
}

func parseHostRule(s string) (hostRule, error) {
	in := strings.TrimSpace(s)
	if in == "" || strings.Contains(in, "/") || strings.Contains(in, "@") {
		return hostRule{}, fmt.Errorf("%q is not a host or host:port", s)
	}
	host, port := in, ""
	if strings.HasPrefix(in, "[") || strings.Count(in, ":") == 1 {
		h, p, err := net.SplitHostPort(in)
		if err != nil {
			if !strings.HasPrefix(in, "[") || !strings.HasSuffix(in, "]") {
				return hostRule{}, fmt.Errorf("%q is not a host or host:port", s)
			}
			h = in // "[::1]" without a port
		} else if p == "" || strings.Trim(p, "0123456789") != "" {
			return hostRule{}, fmt.Errorf("%q has a bad port", s)
		}
		host, port = h, p
	}
	host = normHost(host)
	r := hostRule{host: host, port: port}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		if rest == "" || strings.Contains(rest, "*") {
			return hostRule{}, fmt.Errorf("%q is not a usable wildcard", s)
		}
		r.host, r.wildcard = "."+rest, true
	} else if host == "" || strings.Contains(host, "*") {
		return hostRule{}, fmt.Errorf("%q: only a leading \"*.\" wildcard is allowed", s)
	}
	return r, nil
}

func (r hostRule) allows(host, port string) bool {
	if r.port != "" && r.port != port {
		return false
	}
	if r.wildcard {
		return strings.HasSuffix(host, r.host) && len(host) > len(r.host)
	}
	return host == r.host
}

type allowList []hostRule

func (l allowList) allows(host, port string) bool {
	for _, r := range l {
		if r.allows(host, port) {
			return true
		}
	}
	return false
}

// allowedMethods are the methods a provider request may use.
var allowedMethods = map[string]bool{http.MethodGet: true, http.MethodPost: true}

// resolve checks what an adapter built and joins it to the endpoint. The
// error, if any, says why the request was refused; it quotes nothing the
// adapter wrote.
func resolve(ep *endpoint, req *core.HTTPRequest) (*url.URL, error) {
	if !allowedMethods[req.Method] {
		return nil, errors.New("request method is not GET or POST")
	}
	if err := checkPath(req.Path); err != nil {
		return nil, err
	}
	u, err := url.Parse(ep.raw + req.Path)
	if err != nil {
		return nil, errors.New("request path does not form a URL")
	}
	// Belt and braces: whatever checkPath missed must still land under the
	// endpoint.
	if u.Scheme != ep.url.Scheme || u.Host != ep.url.Host || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, ep.url.Path+"/") {
		return nil, errors.New("request path leaves the engine endpoint")
	}
	return u, nil
}

// newRequest forms the provider request from what resolve and
// requestHeader checked. It takes the URL as it is rather than printing it
// and parsing it again, as http.NewRequest would.
func newRequest(ctx context.Context, method string, u *url.URL, header http.Header, body []byte) (*http.Request, error) {
	var r io.Reader
	if len(body) > 0 {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "", r)
	if err != nil {
		return nil, err
	}
	u.Host = strings.TrimSuffix(u.Host, ":") // as NewRequest would: an empty port is none
	req.URL, req.Host, req.Header = u, u.Host, header
	return req, nil
}

// checkPath refuses a path that could leave the endpoint: no leading "/",
// "//" (a scheme or host), "." or ".." segments (raw or percent-encoded),
// backslashes, fragments, spaces and control characters.
func checkPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return errors.New("request path does not start with \"/\"")
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f || c == '\\' || c == '#' {
			return errors.New("request path has a character paths may not carry")
		}
	}
	path, _, _ := strings.Cut(p, "?")
	decoded, err := url.PathUnescape(path)
	if err != nil {
		return errors.New("request path has a bad percent-encoding")
	}
	for _, s := range []string{path, decoded} {
		if strings.Contains(s, "//") || strings.Contains(s, "\\") {
			return errors.New("request path contains \"//\" or a backslash")
		}
		for seg := range strings.SplitSeq(s, "/") {
			if seg == "." || seg == ".." {
				return errors.New("request path has a \".\" or \"..\" segment")
			}
		}
	}
	return nil
}

// authHeader reports whether a header can carry a credential or session:
// these are stripped from what an adapter builds and from what it is handed.
func authHeader(name string) bool {
	return oneOfFold(name, authHeaders) || len(name) >= 6 && strings.EqualFold(name[:6], "x-amz-")
}

var authHeaders = []string{"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key",
	"cookie", "set-cookie", "proxy-authenticate", "www-authenticate"}

// transportHeader reports whether a header belongs to the transport, which
// sets it itself; an adapter's value would at best be ignored.
func transportHeader(name string) bool { return oneOfFold(name, transportHeaders) }

var transportHeaders = []string{"host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
	"te", "trailer", "upgrade", "expect", "accept-encoding"}

// oneOfFold reports whether name is one of names (lower case) regardless
// of case. It allocates nothing: every request's and answer's header
// names pass through it.
func oneOfFold(name string, names []string) bool {
	for _, n := range names {
		if len(n) == len(name) && strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// requestHeader turns an adapter's headers into the request's, without auth
// or transport headers.
func requestHeader(in map[string]string) (http.Header, error) {
	h := make(http.Header, len(in)+2)
	for k, v := range in {
		if !validHeaderName(k) || !validHeaderValue(v) {
			return nil, errors.New("request has a malformed header")
		}
		if authHeader(k) || transportHeader(k) {
			continue
		}
		h.Set(k, v)
	}
	return h, nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
