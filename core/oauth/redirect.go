// Package oauth is the domain of connected apps' OAuth: which redirect URIs
// a client may register and which a request may use, and what a client's
// metadata (a Client ID Metadata Document or a dynamic registration) must
// say. It does no I/O: api/oauth fetches documents and serves the
// endpoints. ../shared/design/OAUTH.md maps the rules to the MCP
// authorization specification and the real clients.
package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// RedirectKind is what kind of redirect URI a client registered.
type RedirectKind int

// Redirect kinds (RFC 8252 for the native ones).
const (
	// RedirectWeb is an https URI.
	RedirectWeb RedirectKind = iota + 1
	// RedirectLoopback is http on a loopback host (localhost, 127.0.0.1,
	// [::1]); its port is not compared (RFC 8252 §7.3).
	RedirectLoopback
	// RedirectPrivateScheme is a private-use URI scheme of a native app
	// ("cursor://…", "com.example.app:/cb"; RFC 8252 §7.1).
	RedirectPrivateScheme
)

// ErrRedirectURI is a redirect URI a client may not register or use.
var ErrRedirectURI = errors.New("redirect URI not allowed")

// maxRedirectLen bounds a redirect URI.
const maxRedirectLen = 2000

// CheckRedirectURI says what kind of redirect URI s is, or why it may not
// be registered: it must be absolute, without a fragment, and https, http
// on a loopback host, or a private-use scheme (one with a dot, or one of
// a known app's, never a scheme a browser runs: javascript, data, file,
// blob, about, vbscript, ws, wss, ftp).
func CheckRedirectURI(s string) (RedirectKind, error) {
	if s == "" || len(s) > maxRedirectLen {
		return 0, fmt.Errorf("%w: empty or longer than %d characters", ErrRedirectURI, maxRedirectLen)
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() {
		return 0, fmt.Errorf("%w: %q is not an absolute URI", ErrRedirectURI, s)
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return 0, fmt.Errorf("%w: %q has a fragment", ErrRedirectURI, s)
	}
	if u.User != nil {
		return 0, fmt.Errorf("%w: %q carries a user name", ErrRedirectURI, s)
	}
	switch scheme := strings.ToLower(u.Scheme); scheme {
	case "https":
		if u.Hostname() == "" {
			return 0, fmt.Errorf("%w: %q names no host", ErrRedirectURI, s)
		}
		return RedirectWeb, nil
	case "http":
		if !IsLoopbackHost(u.Hostname()) {
			return 0, fmt.Errorf("%w: http is allowed only on a loopback host (localhost, 127.0.0.1, [::1]), not %q", ErrRedirectURI, u.Hostname())
		}
		return RedirectLoopback, nil
	case "javascript", "data", "file", "blob", "about", "vbscript", "ws", "wss", "ftp", "mailto", "tel":
		return 0, fmt.Errorf("%w: the %s scheme", ErrRedirectURI, scheme)
	default:
		if !validScheme(scheme) {
			return 0, fmt.Errorf("%w: %q is not a URI scheme", ErrRedirectURI, u.Scheme)
		}
		return RedirectPrivateScheme, nil
	}
}

// validScheme is RFC 3986's scheme syntax.
func validScheme(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// IsLoopbackHost reports whether host (without brackets or port) is a
// loopback name or address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// MatchRedirect reports whether got is one of the registered redirect
// URIs: byte for byte, except that a loopback URI matches on any port and
// across the loopback hosts (localhost, 127.0.0.1, [::1]) — a native app
// binds a free port when it runs (RFC 8252 §7.3) and names its host as it
// likes.
func MatchRedirect(registered []string, got string) bool {
	for _, r := range registered {
		if r == got {
			return true
		}
	}
	kind, err := CheckRedirectURI(got)
	if err != nil || kind != RedirectLoopback {
		return false
	}
	g, _ := url.Parse(got)
	for _, r := range registered {
		if k, err := CheckRedirectURI(r); err != nil || k != RedirectLoopback {
			continue
		}
		ru, _ := url.Parse(r)
		if pathOf(ru) == pathOf(g) && ru.RawQuery == g.RawQuery {
			return true
		}
	}
	return false
}

// pathOf is u's path, "/" for none.
func pathOf(u *url.URL) string {
	if p := u.EscapedPath(); p != "" {
		return p
	}
	return "/"
}
