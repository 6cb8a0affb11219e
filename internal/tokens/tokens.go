// Package tokens counts the tokens of chat messages with a real byte-pair
// encoding tokenizer (tiktoken's cl100k_base) whose vocabulary is embedded in
// the binary: nothing is downloaded at run time.
//
// It lives under internal/ rather than core/ because the vocabulary module
// (github.com/pkoukk/tiktoken-go-loader) embeds about 6.7 MB of vocabularies,
// which is not a small library. Core code that needs a count takes it as a
// plain func([]core.Message) int, and wiring passes Count.
//
// The count is the same for every engine: it measures a prompt against the
// key's input limit and projects cost, which an approximation across provider
// families serves; providers report their own exact counts for billing.
package tokens

import (
	"context"
	"fmt"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/conclavehq/conclave/core"
)

// Encoding is the tokenizer's encoding.
const Encoding = tiktoken.MODEL_CL100K_BASE

// Per-message overhead, as OpenAI documents it for its chat models on
// cl100k_base: every message is framed by 3 tokens plus its role's tokens
// (one token for each of system, user and assistant), and every reply is
// primed with 3 more.
const (
	MessageOverhead = 3
	ReplyPriming    = 3
)

var encoder = sync.OnceValue(func() *tiktoken.Tiktoken {
	// SetBpeLoader is process-global; the offline loader is the only one
	// this binary may use, so setting it here is safe.
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(Encoding)
	if err != nil {
		// The vocabulary is embedded: failing to read it is a broken
		// build, not a condition to handle.
		panic(fmt.Sprintf("tokens: loading the embedded %s vocabulary: %v", Encoding, err))
	}
	return enc
})

// Text counts the tokens of s. Special-token markers such as
// "<|endoftext|>" in s count as ordinary text. It is safe for concurrent
// use; the first call loads the vocabulary
// (a few hundred milliseconds; see Load).
func Text(s string) int {
	if s == "" {
		return 0
	}
	return len(encoder().EncodeOrdinary(s))
}

// Count counts the tokens of a chat request: each message's content and
// role plus MessageOverhead, and ReplyPriming once. An empty request counts
// 0. It is safe for concurrent use.
func Count(messages []core.Message) int { return framed(messages, Text) }

// Load loads the vocabulary now rather than on the first count, so that a
// server pays the cost at start instead of on its first request.
func Load() { encoder() }

// Over reports whether a chat request's tokens (Count) exceed limit, and
// when they do, how many there are. Most requests are settled without
// tokenizing: a request whose Bound is within the limit is within it by
// Count too; only a larger one is counted. A ctx that has ended returns
// its error.
func Over(ctx context.Context, messages []core.Message, limit int) (n int, over bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	if Bound(messages) <= limit {
		return 0, false, nil
	}
	n = Count(messages)
	return n, n > limit, nil
}

// Bound is an upper bound of Count(messages), found without tokenizing:
// every token of the encoding stands for at least one byte, so a text has
// no more tokens than bytes.
func Bound(messages []core.Message) int {
	return framed(messages, func(s string) int { return len(s) })
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
