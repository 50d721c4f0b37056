package manager

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
)

// TestMessagesJSONIsWholeAndBounded: however long the conversation or
// its parts, gen_ai.input.messages is whole JSON within the limit, with
// the newest messages, in order; and a conversation of hundreds of long
// tool results is encoded a message at a time, not once per message
// dropped.
func TestMessagesJSONIsWholeAndBounded(t *testing.T) {
	long := strings.Repeat("<tag>\"quoted\"\x01 ", 700) // escaping makes it grow
	var msgs []llms.MessageContent
	msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, "the system prompt"))
	for i := range 300 {
		msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool,
			Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c" + string(rune('a'+i%26)), Content: long}}})
	}
	msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, "the newest question"))

	for _, limit := range []int{maxContentBytes, 4 << 10, 300, 40} {
		out := messagesJSON(msgs, limit)
		assert.LessOrEqual(t, len(out), limit, "limit %d", limit)
		var got []message
		require.NoError(t, json.Unmarshal([]byte(out), &got), "limit %d: %s", limit, out)
		if limit >= 300 {
			require.NotEmpty(t, got)
			last := got[len(got)-1]
			assert.Equal(t, "user", last.Role)
			assert.Equal(t, "the newest question", last.Parts[0].Content)
		}
	}

	// One message with a part far over the limit is cut to fit, whole.
	huge := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, strings.Repeat("&", 100_000))}
	out := messagesJSON(huge, maxContentBytes)
	assert.LessOrEqual(t, len(out), maxContentBytes)
	var got []message
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got, 1)
	assert.Contains(t, got[0].Parts[0].Content, "[cut:")

	// Encoding work is linear in what is kept: a few encodings of each
	// message looked at, not one of the whole list per message dropped
	// (which encoded over 400 MB here).
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	messagesJSON(msgs, maxContentBytes)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "bytes allocated to encode 302 messages")

	ch := &llms.ContentChoice{Content: strings.Repeat("\"<>", 20_000), ToolCalls: []llms.ToolCall{
		{ID: "1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "grep", Arguments: long}}}}
	for _, limit := range []int{maxContentBytes, 200} {
		out := choiceJSON(ch, limit)
		assert.LessOrEqual(t, len(out), limit)
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	}
}
