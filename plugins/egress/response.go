package egress

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// errTooLarge means a response body passed MaxResponseBytes.
var errTooLarge = errors.New("response body too large")

// readBody reads at most max bytes of the body. It never reads more than
// max+1 bytes, so a provider streaming gigabytes costs at most the cap.
func readBody(res *http.Response, max int64) ([]byte, error) {
	if res.ContentLength > max {
		return nil, errTooLarge
	}
	var buf bytes.Buffer
	if res.ContentLength > 0 {
		// Room for the body and bytes.Buffer's MinRead, so that reading
		// the announced length ends without growing the buffer.
		buf.Grow(int(res.ContentLength) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(res.Body, max+1))
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, errTooLarge
	}
	return buf.Bytes(), nil
}

const redacted = "[redacted]"

// responseHeader flattens the provider's headers for the adapter: canonical
// names, repeated values joined with ", ", no auth or cookie headers, and
// every secret replaced.
func responseHeader(h http.Header, secrets []string) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		if authHeader(k) {
			continue
		}
		v := strings.Join(vs, ", ")
		for _, s := range secrets {
			v = strings.ReplaceAll(v, s, redacted)
		}
		out[http.CanonicalHeaderKey(k)] = v
	}
	return out
}

// scrub replaces every secret in body. It allocates only when one is found.
func scrub(body []byte, secrets []string) []byte {
	for _, s := range secrets {
		if bytes.Contains(body, []byte(s)) {
			body = bytes.ReplaceAll(body, []byte(s), []byte(redacted))
		}
	}
	return body
}

// retryAfter reads a provider's requested wait: Retry-After-Ms (OpenAI,
// Anthropic), else Retry-After in seconds or as an HTTP date. 0 means none.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, 1<<20)) * time.Second // the caller caps it further
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
