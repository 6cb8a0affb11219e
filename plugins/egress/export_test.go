package egress

import (
	"github.com/conclavehq/conclave/core"

	"context"
	"time"
)

// SetSleep replaces the back-off wait, so tests can see the waits asked for.
func SetSleep(e *Egress, f func(ctx context.Context, d time.Duration) error) { e.sleep = f }

// Backoff exposes the back-off for retry n.
func Backoff(e *Egress, n int, retryAfter time.Duration) time.Duration {
	return e.backoff(n, retryAfter)
}

// AllowsHost reports whether the allow-list entry rule admits host:port.
func AllowsHost(rule, host, port string) (bool, error) {
	r, err := parseHostRule(rule)
	if err != nil {
		return false, err
	}
	return r.allows(host, port), nil
}

// CheckPath exposes the path check.
var CheckPath = checkPath

// SleepCtx is the real back-off wait.
var SleepCtx = sleepCtx

// Resolve joins an adapter's path to an endpoint the way Call does.
func Resolve(endpointURL, path string) (string, error) {
	ep, err := parseEndpoint(endpointURL)
	if err != nil {
		return "", err
	}
	u, err := resolve(ep, &core.HTTPRequest{Method: "POST", Path: path})
	if err != nil {
		return "", err
	}
	return u.String(), nil
}
