package offline_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/builtin/offline"
)

func ExampleExtractTerms() {
	fmt.Println(offline.ExtractTerms("Where is parseConfig called when the \"config file\" is missing?"))
	// Output: [config file parseConfig miss config parse]
}

func ExampleParseFindings() {
	answer := `The budget is checked before every model call.

1. ` + "`manager/loop.go:86`" + ` — the tokens left are computed here (relevance 0.9)
2. **manager/loop.go:106**: the budget is checked again after the call
`
	for _, f := range offline.ParseFindings(answer) {
		fmt.Printf("%s:%d %.2f %s\n", f.Path, f.Line, f.Relevance, f.Snippet)
	}
	// Output:
	// manager/loop.go:86 0.90 the tokens left are computed here
	// manager/loop.go:106 0.50 the budget is checked again after the call
}

// A task that lists questions, with the delegate tool offered, is handed
// to one explore child per question.
func ExampleModel_delegate() {
	delegate := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "delegate"}}
	grep := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "grep"}}
	task := "1. Where is the discount applied?\n2. How are charges retried?"
	resp, err := offline.New().GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, task)},
		llms.WithTools([]llms.Tool{grep, delegate}))
	if err != nil {
		panic(err)
	}
	call := resp.Choices[0].ToolCalls[0].FunctionCall
	fmt.Println(call.Name)
	fmt.Println(call.Arguments)
	// Output:
	// delegate
	// {"tasks":[{"label":"discount-applied","type":"explore","prompt":"Where is the discount applied?"},{"label":"charges-retried","type":"explore","prompt":"How are charges retried?"}],"concurrency":2,"mode":"parallel","return":"json"}
}
