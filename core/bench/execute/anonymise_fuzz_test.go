package execute

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The anonymiser keeps code and other spans aside behind placeholders made
// of two private-use characters; an answer that holds those characters
// itself, shaped like a placeholder or not, comes back exactly as written
// and never costs the process.
func TestAnonymiseKeepsPlaceholderCharacters(t *testing.T) {
	t.Parallel()
	a := NewAnonymiser(testCatalog(t))
	for _, tc := range []struct{ name, in, want string }{
		{"a placeholder past the end", "Use \uE0005\uE001 here.", "Use \uE0005\uE001 here."},
		{"a placeholder naming kept code", "Call `f` then \uE0000\uE001.", "Call `f` then \uE0000\uE001."},
		{"a huge index", "x \uE00099999999999999999999\uE001 y", "x \uE00099999999999999999999\uE001 y"},
		{"lone opening character", "a \uE000 b", "a \uE000 b"},
		{"lone closing character", "a \uE001 b", "a \uE001 b"},
		{"reversed", "\uE0011\uE000", "\uE0011\uE000"},
		{"inside inline code", "Run `x\uE0000\uE001y` now.", "Run `x\uE0000\uE001y` now."},
		{"inside a fenced block", "Code:\n\n```\n\uE0003\uE001\n```", "Code:\n\n```\n\uE0003\uE001\n```"},
		{"beside a name", "\uE0001\uE001 GPT-4o says \uE000", "\uE0001\uE001 the assistant says \uE000"},
		{"a heading of them is a heading", "\uE0000\uE001\n===", "# \uE0000\uE001"},
	} {
		got, _ := a.Anonymise(tc.in)
		require.Equal(t, tc.want, got, tc.name)
	}
}

// FuzzAnonymise feeds the anonymiser what a model may answer. It never
// panics, never leaves a placeholder of its own in what a judge reads, and
// an inline code span comes back exactly as written, whatever it holds.
func FuzzAnonymise(f *testing.F) {
	for _, s := range []string{
		"", "plain answer", "\uE0005\uE001", "\uE000", "\uE001", "\uE000\uE001", "\uE0000\uE001`c`",
		"`a` \uE0000\uE001 `b` \uE0001\uE001", "```\n\uE0002\uE001\n```\n\uE0000\uE001",
		"I'm Claude, made by Anthropic. \uE0007\uE001", "Title\n=====\n\uE0000\uE001\n---",
		"__bold__ \uE000__x__\uE001", "— GPT-4o \uE0001\uE001", "\uE00099999999999999999999\uE001",
		"\r\n\uE000\r\n\uE001", "\xff\uE0000\uE001\xfe",
	} {
		f.Add(s)
	}
	a := NewAnonymiser(nil)
	f.Fuzz(func(t *testing.T, s string) {
		out, n := a.Anonymise(s)
		require.GreaterOrEqual(t, n, 0)
		require.LessOrEqual(t, strings.Count(out, "\uE000"), strings.Count(s, "\uE000"), "a placeholder leaked: %q → %q", s, out)
		require.LessOrEqual(t, strings.Count(out, "\uE001"), strings.Count(s, "\uE001"), "a placeholder leaked: %q → %q", s, out)
		if utf8.ValidString(s) && s != "" && !strings.ContainsAny(s, "`\n\r") {
			code := "`" + s + "`"
			got, _ := a.Anonymise(code)
			require.Equal(t, code, got, "inline code is kept as written")
		}
	})
}
