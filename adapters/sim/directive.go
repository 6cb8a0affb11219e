package sim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core"
)

// errorTimeoutResponse is the failure that directive error=timeout_response
// asks for: the provider answers at once that the model timed out (504;
// 408 ModelTimeoutException on Bedrock), where error=timeout hangs.
const errorTimeoutResponse core.ErrorClass = "timeout_response"

// directiveClasses are the values error= accepts.
var directiveClasses = []core.ErrorClass{
	core.ErrorRateLimited, core.ErrorOverloaded, core.ErrorTimeout, errorTimeoutResponse,
	core.ErrorContextTooLong, core.ErrorAuthRefused, core.ErrorBadRequest, core.ErrorMalformed,
}

// directiveRe finds [[sim: …]] and [[sim@model: …]].
var directiveRe = regexp.MustCompile(`(?s)\[\[sim(?:@([^:\]\s]+))?:(.*?)\]\]`)

// directives is what the test directives in a prompt ask of one call.
type directives struct {
	// failure is the error class to fail with ("" for none);
	// core.ErrorMalformed means a 200 with a broken body.
	failure core.ErrorClass
	// count limits failure to the first count attempts; 0 means every
	// attempt. scope keys the attempt counter (the target model or "").
	count int
	scope string

	delay     time.Duration
	hasDelay  bool
	answer    string
	hasAnswer bool
	tokensOut int
	finish    string // "", core.FinishLength or core.FinishFiltered
	bucket    string // the question's bucket for the quality draw; "" reads it
	propose   string // how a mode proposal is answered (proposeModes); "" well
}

// parseDirectives reads every directive in text that applies to model:
// untargeted ones in order, then those targeted at model in order, each
// overriding what came before.
func parseDirectives(text, model string) (directives, error) {
	var d directives
	matches := directiveRe.FindAllStringSubmatch(text, -1)
	for _, pass := range []bool{false, true} {
		for _, m := range matches {
			target := normalizeModel(m[1])
			if (target != "") != pass || (pass && target != model) {
				continue
			}
			if err := d.apply(strings.TrimSpace(m[2]), target); err != nil {
				return directives{}, fmt.Errorf("sim directive %q: %w", m[0], err)
			}
		}
	}
	return d, nil
}

// stripDirectives removes every directive from text.
func stripDirectives(text string) string {
	if !strings.Contains(text, "[[sim") {
		return text
	}
	return strings.TrimSpace(directiveRe.ReplaceAllString(text, ""))
}

// apply reads one directive body ("error=rate_limited count=2") over d.
func (d *directives) apply(body, target string) error {
	var failure core.ErrorClass
	count := -1
	for body != "" {
		var field string
		field, body = nextField(body)
		key, value, hasValue := strings.Cut(field, "=")
		switch key {
		case "malformed":
			if hasValue && value != "true" {
				return fmt.Errorf("malformed takes no value")
			}
			failure = core.ErrorMalformed
		case "error":
			c := core.ErrorClass(value)
			if !contains(directiveClasses, c) {
				return fmt.Errorf("unknown error class %q", value)
			}
			failure = c
		case "count":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 {
				return fmt.Errorf("count %q: want a positive integer", value)
			}
			count = n
		case "delay":
			v, err := time.ParseDuration(value)
			if err != nil || v < 0 {
				return fmt.Errorf("delay %q: want a duration such as 1500ms", value)
			}
			d.delay, d.hasDelay = v, true
		case "answer":
			if !hasValue {
				return fmt.Errorf("answer needs a value")
			}
			var err error
			d.answer, body, err = answerValue(value, body)
			if err != nil {
				return err
			}
			d.hasAnswer = true
		case "tokens_out":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 {
				return fmt.Errorf("tokens_out %q: want a positive integer", value)
			}
			d.tokensOut = n
		case "bucket":
			if !contains(buckets, value) {
				return fmt.Errorf("bucket %q: want light, medium or hard", value)
			}
			d.bucket = value
		case "propose":
			if !contains(proposeModes, value) {
				return fmt.Errorf("propose %q: want one of %s", value, strings.Join(proposeModes, ", "))
			}
			d.propose = value
		case "finish":
			switch value {
			case core.FinishLength, core.FinishFiltered:
				d.finish = value
			default:
				return fmt.Errorf("finish %q: want length or content_filter", value)
			}
		default:
			return fmt.Errorf("unknown key %q", key)
		}
	}
	if count > 0 && failure == "" {
		return fmt.Errorf("count needs error= or malformed in the same directive")
	}
	if failure != "" {
		d.failure, d.count, d.scope = failure, max(count, 0), target
	}
	return nil
}

// nextField splits the first whitespace-separated field off s. A field
// "answer=…" is special-cased by the caller.
func nextField(s string) (field, rest string) {
	s = strings.TrimLeft(s, " \t\r\n")
	if strings.HasPrefix(s, `answer="`) {
		return s[:len("answer=")], s[len("answer="):]
	}
	if strings.HasPrefix(s, "answer=") {
		// The unquoted answer runs to the end of the directive.
		return "answer=" + strings.TrimSpace(s[len("answer="):]), ""
	}
	i := strings.IndexAny(s, " \t\r\n")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// answerValue returns the answer text: the unquoted rest of the directive,
// or a Go-quoted string at the start of rest.
func answerValue(value, rest string) (answer, remaining string, err error) {
	if value != "" {
		return value, rest, nil
	}
	if !strings.HasPrefix(rest, `"`) {
		return "", "", fmt.Errorf("answer needs a value")
	}
	prefix, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", "", fmt.Errorf("answer: unterminated quote")
	}
	answer, err = strconv.Unquote(prefix)
	if err != nil {
		return "", "", fmt.Errorf("answer: %w", err)
	}
	return answer, rest[len(prefix):], nil
}
