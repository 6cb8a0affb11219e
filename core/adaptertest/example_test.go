package adaptertest_test

import (
	"fmt"

	"github.com/conclavehq/conclave/core/adaptertest"
)

// A carrier's test or a benchmark reads the fixtures directly.
func ExampleFixtures() {
	set, err := adaptertest.Fixtures("bedrock")
	if err != nil {
		panic(err)
	}
	c, _ := set.Request("plain")
	fmt.Println(c.Want.Method, c.Want.Path)
	fmt.Println(string(c.Want.Body))
	// Output:
	// POST /model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse
	// {"messages":[{"role":"user","content":[{"text":"What is the capital of Australia?"}]}]}
}

func ExampleNames() {
	fmt.Println(adaptertest.Names())
	// Output: [anthropic bedrock gemini ollama openai]
}
