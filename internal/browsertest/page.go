package browsertest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Accessibility checks with axe-core (Deque's rules engine), vendored in
// axe/: see axe/VERSION for its version and checksums. axe-core is a test
// tool only: the product never serves it.

//go:embed axe/axe.min.js
var axeSource string

// Violation is one rule axe-core found broken, with the elements that
// break it.
type Violation struct {
	ID      string `json:"id"`
	Impact  string `json:"impact"`
	Help    string `json:"help"`
	HelpURL string `json:"helpUrl"`
	Nodes   []struct {
		// Target is the element's selector: a list of strings, nested
		// further for shadow DOM and frames.
		Target         []json.RawMessage `json:"target"`
		FailureSummary string            `json:"failureSummary"`
	} `json:"nodes"`
}

// Severe reports whether the violation is rated serious or critical.
func (v Violation) Severe() bool { return v.Impact == "serious" || v.Impact == "critical" }

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s — %s", v.ID, v.Impact, v.Help, v.HelpURL)
	for _, n := range v.Nodes {
		sel := make([]string, 0, len(n.Target))
		for _, t := range n.Target {
			sel = append(sel, strings.Trim(string(t), `"`))
		}
		fmt.Fprintf(&b, "\n    %s", strings.Join(sel, " >> "))
		if n.FailureSummary != "" {
			fmt.Fprintf(&b, "\n      %s", strings.ReplaceAll(n.FailureSummary, "\n", "\n      "))
		}
	}
	return b.String()
}

// AxeRun injects axe-core into the page open in ctx (once per document)
// and returns every violation it finds. The script goes in through the
// DevTools protocol's Runtime.evaluate, which the page's
// Content-Security-Policy (script-src 'self') does not govern.
func AxeRun(ctx context.Context) ([]Violation, error) {
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.axe === "object"`))
	if err != nil {
		return nil, fmt.Errorf("looking for axe-core: %w", err)
	}
	if !loaded {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](axeSource)); err != nil {
			return nil, fmt.Errorf("injecting axe-core: %w", err)
		}
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]Violation](
		`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations)`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("running axe-core: %w", err)
	}
	return out, nil
}

// Axe runs axe-core on the page open in ctx and fails the test on any
// violation rated serious or critical, listing each rule, its help text
// and the offending elements' selectors. Milder ones are logged.
func Axe(t testing.TB, ctx context.Context, page string) {
	t.Helper()
	vs, err := AxeRun(ctx)
	require.NoError(t, err, "axe-core on %s", page)
	var severe, mild []string
	for _, v := range vs {
		if v.Severe() {
			severe = append(severe, v.String())
		} else {
			mild = append(mild, v.String())
		}
	}
	if len(mild) > 0 {
		t.Logf("axe-core on %s: minor or moderate:\n  %s", page, strings.Join(mild, "\n  "))
	}
	if len(severe) > 0 {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Errorf("axe-core on %s (%s): %d serious or critical violation(s):\n  %s", page, loc, len(severe), strings.Join(severe, "\n  "))
	}
}

// ScreenshotDir is test-artifacts/screenshots at the repository's root
// (git-ignored).
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "the repository root (go.mod) was not found")
		dir = parent
	}
	out := filepath.Join(dir, "test-artifacts", "screenshots")
	require.NoError(t, os.MkdirAll(out, 0o755))
	return out
}

// Shoot writes the page as a person sees it, in the light and the dark
// colour scheme, at a phone's and a desktop's width:
// <name>-light-phone.png, <name>-light-desktop.png, <name>-dark-phone.png
// and <name>-dark-desktop.png. At the desktop width it runs axe-core in
// each scheme too (contrast differs between them).
func Shoot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	dir := ScreenshotDir(t)
	defer func() {
		// Back to the system's scheme (no emulation) and the desktop.
		_, _ = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: ""}, {Name: "prefers-reduced-motion", Value: ""}}})
		_ = chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900))
	}()
	for _, scheme := range []string{"light", "dark"} {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			// Reduced motion too: no transition caught half-way.
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}, {Name: "prefers-reduced-motion", Value: "reduce"}}})
		require.NoError(t, err)
		for _, size := range []struct {
			suffix        string
			width, height int64
		}{{"phone", 375, 812}, {"desktop", 1440, 900}} {
			require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(size.width, size.height),
				chromedp.WaitVisible(chromedp.CSS("main"))))
			// Just after the viewport changes the page may not be laid out
			// yet ("0 width"): try again shortly.
			var png []byte
			var err error
			for try := 0; try < 20; try++ {
				if png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name+"-"+scheme+"-"+size.suffix+".png"), png, 0o644))
		}
		Axe(t, ctx, name+" ("+scheme+")")
	}
}

// Text is the visible text of the page's main element. A page that is
// replaced while it is read (a navigation the last action started: the
// node read is gone, CDP error -32000) is read again, for 5 s at most.
func Text(t testing.TB, ctx context.Context) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		if err == nil || !strings.Contains(err.Error(), "(-32000)") || time.Now().After(deadline) {
			require.NoError(t, err)
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitText waits until the page's main element shows want (20 s at most),
// and returns its text.
func WaitText(t testing.TB, ctx context.Context, want string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		if err == nil && strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			t.Fatalf("the page at %s never showed %q; it shows: %s (err %v)", loc, want, s, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Click clicks the first element matching the CSS selector sel, once it is
// visible. Just after a navigation, Chrome may renumber the page's nodes
// between the element being found and being clicked, and answers "Could
// not find node with given id": nothing was clicked, so the click is tried
// again, for up to 10 s. Any other error fails the test.
func Click(t testing.TB, ctx context.Context, sel string) {
	t.Helper()
	untilFound(t, ctx, "clicking "+sel, func() chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) })
}

// Fill types value into the field matching the CSS selector sel, tried
// again as Click is: Chrome refuses a renumbered node before any key is
// sent, so a retry never types twice.
func Fill(t testing.TB, ctx context.Context, sel, value string) {
	t.Helper()
	untilFound(t, ctx, "typing into "+sel, func() chromedp.Action[chromedp.Void] { return chromedp.SendKeys(chromedp.CSS(sel), value) })
}

// untilFound runs the action action builds in ctx, a new one each try,
// again for up to 10 s while Chrome answers that a node it found is gone
// (staleNode); any other error fails t with what, the action's
// description.
func untilFound(t testing.TB, ctx context.Context, what string, action func() chromedp.Action[chromedp.Void]) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := chromedp.Do(ctx, action())
		if err == nil {
			return
		}
		if !staleNode(err) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// staleNode reports whether err is Chrome's refusal of a node id that the
// page no longer has.
func staleNode(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not find node with given id") ||
		strings.Contains(msg, "No node with given id found") ||
		strings.Contains(msg, "Node with given id does not belong to the document")
}
