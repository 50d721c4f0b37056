package modelcap_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

// pricedModel is a model with a price: $1 a million input tokens, $4 a
// million output tokens.
type pricedModel struct{ llms.Model }

func (pricedModel) Cost(in, out int) (float64, bool) {
	return (float64(in) + 4*float64(out)) / 1e6, true
}

func (pricedModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return &llms.ContentResponse{}, nil
}

// A model that implements Pricer and knows its price can keep a cost
// budget; the manager finds the capability with Price.
func ExamplePrice() {
	var m llms.Model = pricedModel{}
	if p, ok := modelcap.Price(m); ok {
		usd, _ := p.Cost(1000, 500)
		fmt.Printf("$%.4f\n", usd)
	}
	// Output: $0.0030
}

// A provider's counts arrive in GenerationInfo as whatever number type its
// client used; GenerationInt reads any of them under the first key found.
func ExampleGenerationInt() {
	info := map[string]any{"InputTokens": float64(1200), "OutputTokens": int32(80)}
	in, _ := modelcap.GenerationInt(info, "PromptTokens", "InputTokens")
	out, _ := modelcap.GenerationInt(info, "CompletionTokens", "OutputTokens")
	fmt.Println(in, out)
	// Output: 1200 80
}

// The manager tells a model what an agent's budgets leave on the call's
// context; a model that plans (the offline retrieval model) reads it with
// CallFrom.
func ExampleCallFrom() {
	ctx := modelcap.WithCall(context.Background(), modelcap.CallInfo{
		Task: "where is the discount applied?", Turns: 2, ToolCalls: modelcap.Unlimited,
	})
	if c, ok := modelcap.CallFrom(ctx); ok && c.Turns != modelcap.Unlimited && c.Turns < 3 {
		fmt.Printf("%q: no turn to read files; answer from the searches\n", c.Task)
	}
	// Output: "where is the discount applied?": no turn to read files; answer from the searches
}
