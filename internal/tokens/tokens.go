// Package tokens counts the tokens of chat messages as tiktoken's
// cl100k_base byte-pair encoding splits them, with the vocabulary embedded in
// the binary: nothing is downloaded at run time.
//
// It lives under internal/ rather than core/ because the vocabulary module
// (github.com/pkoukk/tiktoken-go-loader) embeds about 6.7 MB of vocabularies,
// which is not a small library. Core code that needs a count takes it as a
// plain func, and wiring passes Over.
//
// The count is the same for every engine: it measures a prompt against the
// key's input limit and projects cost, which an approximation across provider
// families serves; providers report their own exact counts for billing.
//
// Counting reads caller input before any rate limit, so its cost is bounded
// whatever the input (see Over): the package pre-tokenizes and merges itself,
// in linear time, rather than through tiktoken-go, whose merging is quadratic
// in the length of a pre-token and which pre-tokenizes the whole text before
// it counts any of it. tiktoken-go remains the reference the tests hold this
// package to.
package tokens

import (
	"context"
	"math"
	"unicode/utf8"

	"github.com/conclavehq/conclave/core"
)

// Encoding is the tokenizer's encoding.
const Encoding = "cl100k_base"

// MaxTokenBytes is the length in bytes of the longest token of the
// vocabulary (128 spaces), so a text of n bytes has at least n/MaxTokenBytes
// tokens, rounded up.
const MaxTokenBytes = 128

// Per-message overhead, as OpenAI documents it for its chat models on
// cl100k_base: every message is framed by 3 tokens plus its role's tokens
// (one token for each of system, user and assistant), and every reply is
// primed with 3 more.
const (
	MessageOverhead = 3
	ReplyPriming    = 3
)

// Text counts the tokens of s. Special-token markers such as
// "<|endoftext|>" in s count as ordinary text. It is exact (the count of
// tiktoken's cl100k_base) when no pre-token of s is longer than 256 bytes;
// see Over for longer ones. It is safe for concurrent use; the first call
// loads the vocabulary (a few hundred milliseconds; see Load).
func Text(s string) int {
	c := newCounter(context.Background(), noLimit)
	c.text(s)
	return c.n
}

// noLimit is the limit of a count that never stops early.
const noLimit = math.MaxInt

// Count counts the tokens of a chat request: each message's content and
// role (as Text) plus MessageOverhead, and ReplyPriming once. An empty
// request counts 0. It is safe for concurrent use. It counts to the end:
// requests from callers go through Over, which stops at the limit.
func Count(messages []core.Message) int {
	c := newCounter(context.Background(), noLimit)
	c.messages(messages)
	return c.n
}

// Load loads the vocabulary now rather than on the first count, so that a
// server pays the cost at start instead of on its first request.
func Load() { vocabulary() }

// Over reports whether a chat request has more tokens than limit, as Count
// counts them, at a cost bounded by the limit whatever the text (about a
// millisecond at most for the default limit of 8,000 and a body of 1 MiB):
//
//   - a request whose Bound is within the limit is within, and one whose
//     Least is over it is over: nothing is counted, and n is 0 or Least;
//   - otherwise Over counts, and stops as soon as the count passes the
//     limit: n is then the tokens counted so far (past the limit, not the
//     request's total); within the limit, n is the count.
//
// The count is tiktoken's exact one for ordinary text. Where it is not,
// it errs upward:
//
//   - a pre-token longer than 256 bytes (only a long run of letters, of
//     whitespace or of punctuation makes one) is cut there, the text
//     pre-tokenized again from the cut, and each cut counts one token
//     more than its pieces do. Byte-pair merging is not additive (257 dots
//     are 6 tokens, 256 dots and one are 4 and 1), hence the extra token;
//     the tests check that runs of every kind so counted are never fewer
//     than tiktoken's. A piece cut from a run of one character is merged
//     once and remembered.
//   - merging beyond a token per 2.5 bytes made is paid from a budget of a
//     byte per token of the limit; past it (no ordinary text gets there
//     within its limit), a piece that would need merging counts a token
//     per byte, more than any count.
//
// When ctx ends, Over stops and returns ctx.Err(). It is safe for
// concurrent use.
func Over(ctx context.Context, messages []core.Message, limit int) (n int, over bool, err error) {
	n, over, _, err = count(ctx, messages, limit)
	return n, over, err
}

// count is Over, and the counter it counted with: nil when the bytes
// settled it.
func count(ctx context.Context, messages []core.Message, limit int) (int, bool, *counter, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, nil, err
	}
	// Bound reads every byte when the text is not ASCII; it matters only
	// for a request of no more bytes than the limit.
	if framed(messages, func(s string) int { return len(s) }) <= limit && Bound(messages) <= limit {
		return 0, false, nil, nil
	}
	if n := Least(messages); n > limit {
		return n, true, nil, nil
	}
	c := newCounter(ctx, limit)
	c.messages(messages)
	if c.err != nil {
		return 0, false, c, c.err
	}
	return c.n, c.n > limit, c, nil
}

// messages adds the tokens of a chat request, framing first.
func (c *counter) messages(messages []core.Message) {
	if len(messages) == 0 {
		return
	}
	c.n += ReplyPriming + MessageOverhead*len(messages)
	for _, m := range messages {
		c.text(m.Role)
		c.text(m.Content)
		if c.done() {
			return
		}
	}
}

// Bound is an upper bound of Count(messages), found without tokenizing:
// every token of the encoding stands for at least one byte, so a text has
// no more tokens than bytes (an invalid byte of UTF-8 counts 3: it is read
// as U+FFFD).
func Bound(messages []core.Message) int {
	return framed(messages, func(s string) int {
		n := len(s)
		if !utf8.ValidString(s) {
			n = len(string([]rune(s)))
		}
		return n
	})
}

// Least is a lower bound of Count(messages), found without tokenizing: no
// token stands for more than MaxTokenBytes bytes, so a text of n bytes has
// at least n/MaxTokenBytes tokens, rounded up. The bound holds for every
// count of cl100k_base, Count's and tiktoken's exact one alike.
func Least(messages []core.Message) int {
	return framed(messages, func(s string) int { return (len(s) + MaxTokenBytes - 1) / MaxTokenBytes })
}

// framed is size of each message's role and content plus the chat framing:
// MessageOverhead per message and ReplyPriming once; 0 for no messages.
func framed(messages []core.Message, size func(string) int) int {
	if len(messages) == 0 {
		return 0
	}
	n := ReplyPriming
	for _, m := range messages {
		n += MessageOverhead + size(m.Role) + size(m.Content)
	}
	return n
}
