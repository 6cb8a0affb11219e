package markdown

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// hostile is a model answer that tries every trick the renderer must defeat,
// mixed with ordinary Markdown that must still render.
const hostile = "## Findings\n\n" +
	"Some *emphasis*, `inline code` and a [safe link](https://example.com/a?b=1).\n\n" +
	"- first\n- second\n\n" +
	"| Model | Score |\n| :-- | --: |\n| a | 1 |\n\n" +
	"Inline <script>alert(1)</script> in a paragraph.\n\n" +
	"<script>alert(1)</script>\n\n" +
	"An image tag: <img src=x onerror=alert(1)>\n\n" +
	"[click](javascript:alert(1)) " +
	"[mixed](JaVaScRiPt:alert(1)) " +
	"[spaced](  javascript:alert(1)) " +
	"[encoded](&#106;avascript:alert(1)) " +
	"[data](data:text/html;base64,PHNjcmlwdD4=)\n\n" +
	"![pixel](https://evil.example/p.png)\n\n" +
	"<javascript:alert(1)>\n\n" +
	"```html\n<script>alert(2)</script>\n```\n"

// parse renders src and parses the result as an HTML fragment inside <body>.
func parse(t *testing.T, src string) []*html.Node {
	t.Helper()
	out := string(Render(src))
	body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := html.ParseFragment(strings.NewReader(out), body)
	if err != nil {
		t.Fatalf("parse output: %v", err)
	}
	return nodes
}

// walk calls f for every node in the forest, depth first.
func walk(nodes []*html.Node, f func(*html.Node)) {
	for _, n := range nodes {
		var visit func(*html.Node)
		visit = func(n *html.Node) {
			f(n)
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				visit(c)
			}
		}
		visit(n)
	}
}

// text returns all the text in the forest, as a reader would see it.
func text(nodes []*html.Node) string {
	var b strings.Builder
	walk(nodes, func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
	})
	return b.String()
}

// elements returns every element with the given tag name.
func elements(nodes []*html.Node, tag string) []*html.Node {
	var out []*html.Node
	walk(nodes, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
	})
	return out
}

// attr returns the value of the named attribute and whether it is present.
func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func TestRenderEmitsNoActiveContent(t *testing.T) {
	nodes := parse(t, hostile)
	for _, tag := range []string{"script", "img", "iframe", "object", "embed", "style"} {
		if got := elements(nodes, tag); len(got) > 0 {
			t.Errorf("output has %d <%s> element(s)", len(got), tag)
		}
	}
	walk(nodes, func(n *html.Node) {
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				t.Errorf("<%s> has event handler attribute %s=%q", n.Data, a.Key, a.Val)
			}
			if a.Key == "style" {
				t.Errorf("<%s> has a style attribute, which the pages' CSP refuses", n.Data)
			}
		}
	})
}

func TestRenderAllowsOnlySafeURLSchemes(t *testing.T) {
	nodes := parse(t, hostile)
	walk(nodes, func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key != "href" && a.Key != "src" {
				continue
			}
			if !hasSafeScheme(a.Val) {
				t.Errorf("<%s %s=%q> uses a forbidden scheme", n.Data, a.Key, a.Val)
			}
		}
	})
}

// hasSafeScheme is the test's own, independent check of a URL: it must be
// http, https or mailto, or have no scheme at all.
func hasSafeScheme(u string) bool {
	u = strings.ToLower(strings.TrimSpace(u))
	for _, ok := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(u, ok) {
			return true
		}
	}
	colon := strings.Index(u, ":")
	return colon < 0 || strings.ContainsAny(u[:colon], "/?#")
}

func TestRenderShowsRawHTMLAsText(t *testing.T) {
	got := text(parse(t, hostile))
	for _, want := range []string{
		"Inline <script>alert(1)</script> in a paragraph.",
		"<script>alert(1)</script>",
		"<img src=x onerror=alert(1)>",
		"<script>alert(2)</script>", // inside the fenced code block
	} {
		if !strings.Contains(got, want) {
			t.Errorf("visible text lacks %q\ntext: %s", want, got)
		}
	}
}

func TestRenderTurnsUnsafeLinksIntoTheirLabels(t *testing.T) {
	nodes := parse(t, hostile)
	got := text(nodes)
	for _, label := range []string{"click", "mixed", "spaced", "encoded", "data", "javascript:alert(1)"} {
		if !strings.Contains(got, label) {
			t.Errorf("label %q is missing from the text", label)
		}
	}
	for _, a := range elements(nodes, "a") {
		href, _ := attr(a, "href")
		if strings.Contains(strings.ToLower(href), "script") || strings.HasPrefix(href, "data:") {
			t.Errorf("unsafe link kept: href=%q", href)
		}
	}
}

func TestRenderShowsImagesAsLinks(t *testing.T) {
	nodes := parse(t, "![pixel](https://evil.example/p.png)")
	if imgs := elements(nodes, "img"); len(imgs) != 0 {
		t.Fatalf("an <img> was emitted")
	}
	links := elements(nodes, "a")
	if len(links) != 1 {
		t.Fatalf("want 1 link, got %d", len(links))
	}
	if href, _ := attr(links[0], "href"); href != "https://evil.example/p.png" {
		t.Errorf("href = %q", href)
	}
	if got := text(links); got != "pixel" {
		t.Errorf("link label = %q, want the alt text", got)
	}
}

func TestRenderKeepsOrdinaryMarkdown(t *testing.T) {
	nodes := parse(t, hostile)
	for _, tag := range []string{"h2", "ul", "li", "em", "code", "table", "th", "td", "pre"} {
		if len(elements(nodes, tag)) == 0 {
			t.Errorf("no <%s> in the output", tag)
		}
	}
	var found bool
	for _, a := range elements(nodes, "a") {
		href, _ := attr(a, "href")
		if href != "https://example.com/a?b=1" {
			continue
		}
		found = true
		if rel, _ := attr(a, "rel"); rel != "nofollow noopener noreferrer" {
			t.Errorf("safe link rel = %q", rel)
		}
	}
	if !found {
		t.Error("the https link was not rendered as a link")
	}
}

func TestRenderPutsRelOnEveryLink(t *testing.T) {
	nodes := parse(t, hostile+"\nSee www.example.org or <mailto:a@example.org>.\n")
	links := elements(nodes, "a")
	if len(links) < 3 {
		t.Fatalf("want at least 3 links, got %d", len(links))
	}
	for _, a := range links {
		if rel, _ := attr(a, "rel"); rel != Rel {
			href, _ := attr(a, "href")
			t.Errorf("link %q has rel=%q", href, rel)
		}
	}
}

func TestSafeURL(t *testing.T) {
	cases := map[string]bool{
		"https://example.com":        true,
		"HTTP://example.com":         true,
		"mailto:a@example.com":       true,
		"/relative/path":             true,
		"relative/path:with-colon":   true,
		"#fragment":                  true,
		"?q=1":                       true,
		"":                           true,
		"javascript:alert(1)":        false,
		"JaVaScRiPt:alert(1)":        false,
		"  javascript:alert(1)":      false,
		"\x01javascript:alert(1)":    false,
		"java\tscript:alert(1)":      false,
		"java\nscript:alert(1)":      false,
		"vbscript:msgbox(1)":         false,
		"data:text/html;base64,PHM=": false,
		"file:///etc/passwd":         false,
	}
	for in, want := range cases {
		if got := SafeURL(in); got != want {
			t.Errorf("SafeURL(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestRenderCapsLongInput(t *testing.T) {
	line := "word *emph* <b>bold</b>\n"
	src := strings.Repeat(line, MaxInput/len(line)+100)
	nodes := parse(t, src)
	notes := 0
	walk(nodes, func(n *html.Node) {
		if c, _ := attr(n, "class"); c == "md-truncated" {
			notes++
		}
	})
	if notes != 1 {
		t.Fatalf("want one truncation note, got %d", notes)
	}
	plain := 0
	for _, pre := range elements(nodes, "pre") {
		if c, _ := attr(pre, "class"); c == "md-plain" {
			plain++
			if got := text([]*html.Node{pre}); !strings.HasPrefix(got, line) {
				t.Errorf("plain remainder does not start on a line: %q", got[:min(len(got), 40)])
			}
		}
	}
	if plain != 1 {
		t.Fatalf("want one plain-text remainder, got %d", plain)
	}
	if got, want := len(text(nodes)), len(strings.ReplaceAll(src, "*", "")); got < want-MaxInput/len(line)*len("<b></b>")-1 {
		t.Errorf("text shrank to %d bytes; content was lost", got)
	}
}

func TestRenderLeavesShortInputWhole(t *testing.T) {
	out := string(Render("hello"))
	if out != "<p>hello</p>\n" {
		t.Errorf("Render(hello) = %q", out)
	}
}
