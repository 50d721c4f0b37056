package offline

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

// TestWordsAroundTheTaskAreNotSearched: when the manager names the task
// as its caller gave it, the words a Prompt hook (or inherited context)
// wrote around it in the last human message change no search term.
func TestWordsAroundTheTaskAreNotSearched(t *testing.T) {
	task := "where is the discount applied?"
	hooked := "Follow the house style: mention refunds, retries and payment gateways.\n\n" + task +
		"\n\nThe charge module is payment/charge.go."
	search := func(ctx context.Context, human string) []llms.ToolCall {
		t.Helper()
		msgs := []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, "You explore a repository."),
			llms.TextParts(llms.ChatMessageTypeHuman, human),
		}
		resp, err := New().GenerateContent(ctx, msgs, llms.WithTools(allTools))
		require.NoError(t, err)
		return resp.Choices[0].ToolCalls
	}
	plain := search(context.Background(), task)
	require.NotEmpty(t, plain)
	told := modelcap.WithCall(context.Background(), modelcap.CallInfo{Task: task, Turns: modelcap.Unlimited, ToolCalls: modelcap.Unlimited})
	assert.Equal(t, plain, search(told, hooked), "the task the manager names is searched, not the words around it")
	assert.NotEqual(t, plain, search(context.Background(), hooked), "without the manager's word the whole message is the task")
}
