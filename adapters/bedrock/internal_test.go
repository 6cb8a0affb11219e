package bedrock

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func TestEscapeSegment(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"amazon.nova-pro-v1:0":                                           "amazon.nova-pro-v1%3A0",
		"us.meta.llama3-2-90b-instruct-v1:0":                             "us.meta.llama3-2-90b-instruct-v1%3A0",
		"arn:aws:bedrock:eu-west-1:1:application-inference-profile/ab c": "arn%3Aaws%3Abedrock%3Aeu-west-1%3A1%3Aapplication-inference-profile%2Fab%20c",
		"a~b_c.d-e": "a~b_c.d-e",
		"é":         "%C3%A9",
	} {
		require.Equal(t, want, escapeSegment(in), in)
	}
}

func TestExceptionFromAnyHeaderCase(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"x-amzn-errortype", "X-Amzn-Errortype", "X-AMZN-ERRORTYPE"} {
		ans := failure(400, map[string]string{key: "ModelTimeoutException:http://internal.amazon.com/coral/com.amazon.bedrock/"}, nil)
		require.Equal(t, core.ErrorTimeout, ans.Error.Class, key)
		require.Equal(t, "ModelTimeoutException", ans.Error.Message)
	}
}
