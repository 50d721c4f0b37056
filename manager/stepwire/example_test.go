package stepwire_test

import (
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/manager/stepwire"
)

// A conversation crosses a process boundary in its wire form, and reads
// back as it was, tool calls included.
func ExampleMessages() {
	conv := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "where is Spawn?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "grep", Arguments: `{"pattern":"func .*Spawn"}`}},
		}},
	}
	b, _ := json.Marshal(stepwire.Messages(conv))
	var back []stepwire.Message
	_ = json.Unmarshal(b, &back)
	call := stepwire.LLM(back)[1].Parts[0].(llms.ToolCall)
	fmt.Println(call.FunctionCall.Name, call.FunctionCall.Arguments)
	// Output: grep {"pattern":"func .*Spawn"}
}
