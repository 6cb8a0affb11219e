package markdown

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// safeRenderer overrides goldmark's HTML renderer for the node kinds that can
// carry markup or URLs from the input: raw HTML, HTML blocks, links, images
// and autolinks. Every other kind is left to goldmark's default renderer.
type safeRenderer struct{}

// RegisterFuncs implements renderer.NodeRenderer.
func (safeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindLink, renderLink)
	reg.Register(ast.KindImage, renderImage)
	reg.Register(ast.KindAutoLink, renderAutoLink)
}

// renderRawHTML writes inline HTML escaped, so it shows as literal text.
func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	segs := node.(*ast.RawHTML).Segments
	for i := range segs.Len() {
		seg := segs.At(i)
		_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
	}
	return ast.WalkSkipChildren, nil
}

// renderHTMLBlock writes a block of HTML escaped inside a <pre>, so it shows
// as literal source text with its line breaks kept.
func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if !entering {
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString(`<pre class="md-html">`)
	lines := n.Lines()
	for i := range lines.Len() {
		line := lines.At(i)
		_, _ = w.Write(util.EscapeHTML(line.Value(source)))
	}
	if n.HasClosure() {
		_, _ = w.Write(util.EscapeHTML(n.ClosureLine.Value(source)))
	}
	_, _ = w.WriteString("</pre>\n")
	return ast.WalkSkipChildren, nil
}

// renderLink writes an <a> for a safe destination. For an unsafe one it
// writes nothing itself, so only the link's label appears, as plain text.
func renderLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	href, ok := safeHref(n.Destination)
	if !ok {
		return ast.WalkContinue, nil
	}
	if entering {
		openAnchor(w, href, n.Title, "")
	} else {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

// renderImage shows an image as a link to it, labelled with its alt text,
// so no remote image is ever loaded. An unsafe destination, or an image that
// is already inside a link, leaves only the alt text.
func renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Image)
	href, ok := safeHref(n.Destination)
	if !ok || insideLink(n) {
		return ast.WalkContinue, nil
	}
	if entering {
		openAnchor(w, href, n.Title, "md-image")
	} else {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

// renderAutoLink writes an autolink (<https://…>, or a bare URL or e-mail
// address found by GFM) as a link when its destination is safe, and as plain
// text otherwise.
func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	url := n.URL(source)
	label := util.EscapeHTML(n.Label(source))
	if n.AutoLinkType == ast.AutoLinkEmail && !hasPrefixFold(url, "mailto:") {
		url = append([]byte("mailto:"), url...)
	}
	href, ok := safeHref(url)
	if !ok {
		_, _ = w.Write(label)
		return ast.WalkContinue, nil
	}
	openAnchor(w, href, nil, "")
	_, _ = w.Write(label)
	_, _ = w.WriteString("</a>")
	return ast.WalkContinue, nil
}

// safeHref turns a link destination from the source into the URL a browser
// would follow (character references resolved, unsafe bytes percent-encoded)
// and reports whether both the source form and that final form are safe.
// Checking the final form matters: "&#106;avascript:" becomes "javascript:".
func safeHref(dest []byte) ([]byte, bool) {
	href := util.URLEscape(dest, true)
	return href, SafeURL(string(dest)) && SafeURL(string(href))
}

// openAnchor writes the opening <a> tag with the given href (already
// URL-escaped; it is HTML-escaped here), an optional title and class, and
// the rel attribute.
func openAnchor(w util.BufWriter, href, title []byte, class string) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML(href))
	_, _ = w.WriteString(`"`)
	if len(title) > 0 {
		_, _ = w.WriteString(` title="`)
		html.DefaultWriter.Write(w, title)
		_, _ = w.WriteString(`"`)
	}
	if class != "" {
		_, _ = w.WriteString(` class="` + class + `"`)
	}
	_, _ = w.WriteString(` rel="` + Rel + `">`)
}

// insideLink reports whether n has a link among its ancestors.
func insideLink(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Kind() == ast.KindLink {
			return true
		}
	}
	return false
}

// hasPrefixFold reports whether b starts with prefix, ignoring ASCII case.
func hasPrefixFold(b []byte, prefix string) bool {
	if len(b) < len(prefix) {
		return false
	}
	for i := range len(prefix) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}
