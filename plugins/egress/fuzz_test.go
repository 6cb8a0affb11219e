package egress_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/conclavehq/conclave/plugins/egress"
)

// FuzzResolve checks that no adapter path, however odd, leads a request
// off the engine's host or out from under its base path.
func FuzzResolve(f *testing.F) {
	for _, p := range []string{
		"/v1/chat", "//evil.example/x", "/a/../b", "/a/%2e%2e/b", "/model/x%3A0/converse?a=b",
		"/@evil.example", "/\\evil", "/a?b=//c", "/%2f%2fevil", "/a/.%2e/b", "/ok#x", "/a%00b",
	} {
		f.Add(p)
	}
	const base = "https://api.example.com/api"
	f.Fuzz(func(t *testing.T, path string) {
		got, err := egress.Resolve(base, path)
		if err != nil {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("%q resolved to an unparsable %q", path, got)
		}
		if u.Scheme != "https" || u.Host != "api.example.com" || u.User != nil {
			t.Fatalf("%q left the endpoint: %q", path, got)
		}
		if !strings.HasPrefix(u.Path, "/api/") {
			t.Fatalf("%q left the base path: %q", path, got)
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q kept a dot segment: %q", path, got)
			}
		}
		if strings.Contains(u.Path, "//") {
			t.Fatalf("%q kept an empty segment: %q", path, got)
		}
	})
}
