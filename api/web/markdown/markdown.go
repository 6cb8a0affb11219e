// Package markdown renders untrusted Markdown, such as a model's answer, into
// HTML that is safe to place in a server-rendered page.
//
// Raw HTML in the input is never passed through: it is escaped and shown as
// text, so a reader sees exactly what the model wrote. Links keep only http,
// https, mailto and relative destinations, always carry
// rel="nofollow noopener noreferrer", and images are shown as links rather
// than loaded.
package markdown

import (
	"bytes"
	"html/template"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// MaxInput is the largest number of bytes of Markdown that Render formats.
// Anything beyond it is shown as escaped plain text after a short note, which
// bounds the parser's work on very long or hostile input.
const MaxInput = 256 << 10

// Rel is the rel attribute value put on every link that Render emits.
const Rel = "nofollow noopener noreferrer"

// truncatedNote introduces the unformatted remainder of an over-long input.
const truncatedNote = `<p class="md-truncated">The rest of this answer is too long to format and is shown as plain text.</p>` + "\n"

// md is shared by all calls; goldmark parsers and renderers are safe for
// concurrent use. The extensions are those of extension.GFM, except that
// table cell alignment is written as an align attribute: goldmark's default
// for HTML5 is a style attribute, which the pages' Content-Security-Policy
// (style-src 'self') refuses.
var md = goldmark.New(
	goldmark.WithExtensions(
		extension.Linkify,
		extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
		extension.Strikethrough,
		extension.TaskList,
	),
	goldmark.WithRendererOptions(
		renderer.WithNodeRenderers(util.Prioritized(safeRenderer{}, 100)),
	),
)

// Render turns untrusted Markdown into HTML safe to put in a page: no raw
// HTML passes (it is escaped, shown as text), no script, no event handler,
// no javascript:/vbscript:/data: link; links get rel="nofollow noopener noreferrer".
//
// Input longer than MaxInput bytes is formatted up to that point, and the
// remainder is shown as escaped plain text after a note saying so.
func Render(src string) template.HTML {
	head, rest := split(src)
	var buf bytes.Buffer
	if err := md.Convert([]byte(head), &buf); err != nil {
		// Converting into a bytes.Buffer does not fail in practice; fall
		// back to plain text rather than showing a half-rendered answer.
		return template.HTML(plainText(src))
	}
	if rest != "" {
		buf.WriteString(truncatedNote)
		buf.WriteString(plainText(rest))
	}
	return template.HTML(buf.String())
}

// split cuts src into the part to format and the part to show as plain text.
// The cut falls on a line break within the last 4 KiB before MaxInput where
// there is one, and otherwise on a UTF-8 character boundary.
func split(src string) (head, rest string) {
	if len(src) <= MaxInput {
		return src, ""
	}
	cut := MaxInput
	for cut > 0 && !utf8.RuneStart(src[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(src[:cut], '\n'); nl >= 0 && cut-nl <= 4<<10 {
		cut = nl + 1
	}
	return src[:cut], src[cut:]
}

// plainText renders s as escaped, preformatted text.
func plainText(s string) string {
	return `<pre class="md-plain">` + template.HTMLEscapeString(s) + "</pre>\n"
}

// allowedSchemes are the only URL schemes a rendered link may use.
var allowedSchemes = map[string]bool{"http": true, "https": true, "mailto": true}

// SafeURL reports whether dest may be used as a link target: an http, https
// or mailto URL, or a relative or fragment-only reference. Anything that
// looks like it has another scheme (javascript:, vbscript:, data:, file:, …)
// is refused, including forms disguised with leading spaces, control
// characters, tabs or line breaks, or mixed case.
func SafeURL(dest string) bool {
	clean := strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1 // browsers ignore these anywhere in a URL
		}
		return r
	}, dest)
	clean = strings.TrimLeft(clean, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	end := strings.IndexAny(clean, ":/?#")
	if end < 0 || clean[end] != ':' {
		return true // no scheme: a relative or fragment reference
	}
	return allowedSchemes[strings.ToLower(clean[:end])]
}
