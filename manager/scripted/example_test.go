package scripted_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/manager/scripted"
)

// Each conversation follows the script from its first step, chosen by how
// many assistant messages it already holds.
func ExampleNew() {
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "grep", Args: `{"pattern":"TODO"}`}}},
		scripted.Step{Text: "no TODOs left"},
	)
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "any TODOs?")}
	resp, _ := model.GenerateContent(context.Background(), msgs)
	call := resp.Choices[0].ToolCalls[0]
	fmt.Println(call.FunctionCall.Name, call.FunctionCall.Arguments)

	msgs = append(msgs,
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: call.ID, Name: "grep", Content: "no matches"}}},
	)
	resp, _ = model.GenerateContent(context.Background(), msgs)
	fmt.Println(resp.Choices[0].Content)
	// Output:
	// grep {"pattern":"TODO"}
	// no TODOs left
}
