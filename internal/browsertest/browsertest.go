// Package browsertest runs tests in a real browser: Debian's headless
// Chromium, driven through the DevTools protocol by chromedp. One browser
// serves a whole test binary; each test gets its own browser context (its
// own cookies) and tab.
//
// Without Chromium a test is skipped on a developer's machine and fails
// under CI=true, where the browser tests must run.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// ChromiumPath is where Debian's chromium package puts the browser.
const ChromiumPath = "/usr/lib/chromium/chromium"

var (
	once   sync.Once
	root   context.Context
	cancel context.CancelFunc
	err    error
)

// Close stops the browser, if one was started; call it from TestMain after
// the tests ran.
func Close() {
	if cancel != nil {
		cancel()
	}
}

// New returns a fresh browser context (cookies of its own) on the test
// binary's one browser, its tab open, with a 90 s timeout.
func New(t testing.TB) context.Context {
	t.Helper()
	path := ChromiumPath
	if _, serr := os.Stat(path); serr != nil {
		if p, lerr := exec.LookPath("chromium"); lerr == nil {
			path = p
		} else {
			if os.Getenv("CI") == "true" {
				t.Fatalf("Chromium is missing (%s): CI runs the browser tests; install Debian's chromium package (make browser)", ChromiumPath)
			}
			t.Skipf("Chromium is missing (%s): install Debian's chromium package (make browser) to run the browser tests", ChromiumPath)
		}
	}
	once.Do(func() {
		dir, derr := os.MkdirTemp("", "conclave-chromium-")
		if derr != nil {
			err = derr
			return
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.UserDataDir(dir),
			chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.Flag("hide-scrollbars", true))
		ctx, cancelCtx := chromedp.NewContext(alloc)
		root = ctx
		cancel = func() { cancelCtx(); cancelAlloc(); _ = os.RemoveAll(dir) }
		err = chromedp.Do(ctx) // start the browser
	})
	require.NoError(t, err, "starting Chromium")
	ctx, cancelTab := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelTab)
	tctx, tcancel := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(tcancel)
	require.NoError(t, chromedp.Do(ctx)) // open the tab before the timeout applies
	return tctx
}
