package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/conclavehq/conclave/adapters/sim"
)

// A simulated provider answers in a real provider's wire format, here
// OpenAI chat completions.
func ExampleStart() {
	srv, err := sim.Start(context.Background(), sim.Config{TimeScale: 0.01})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	body := `{"model":"atlas","messages":[{"role":"user","content":"What is 17 * 23?"}]}`
	req, err := http.NewRequest(http.MethodPost, srv.Endpoint("openai")+"/chat/completions", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer any-key")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()

	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		panic(err)
	}
	answer := out.Choices[0].Message.Content
	fmt.Println(strings.SplitN(answer, "\n", 2)[0])
	fmt.Println(out.Usage.PromptTokens == sim.TokenCount("What is 17 * 23?"), out.Usage.CompletionTokens == sim.TokenCount(answer))
	// Output:
	// 17 * 23 = 391.
	// true true
}
