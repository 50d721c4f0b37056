package serve

import (
	"encoding/json"
	"time"

	"github.com/troupe-dev/troupe/sdk"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// The sdk's types in the wire's form and back: the plugin side's half of
// the conversions (the host converts its own types).

func typeToWire(t sdk.Type) *pluginv1.Type {
	return &pluginv1.Type{
		Name: t.Name, Description: t.Description, Prompt: t.Prompt, Tools: t.Tools, Model: t.Model,
		Budget: &pluginv1.Budget{
			MaxTokens: int64(t.Budget.MaxTokens), MaxTimeMs: t.Budget.MaxTime.Milliseconds(),
			MaxToolCalls: int64(t.Budget.MaxToolCalls), MaxTurns: int64(t.Budget.MaxTurns), MaxCostUsd: t.Budget.MaxCostUSD,
		},
		OutputJsonSchema: t.OutputJSONSchema, NeedsLanguageModel: t.NeedsLanguageModel, Examples: t.Examples,
		HasLoop:   t.Loop != nil,
		Workspace: t.Workspace,
		Run:       &pluginv1.RunPolicy{Allow: t.Run.Allow, TimeoutMs: awayMillis(t.Run.Timeout), Network: t.Run.Network},
		Setup:     t.Setup,
	}
}

// awayMillis is d in whole milliseconds, rounded away from zero, so that
// a timeout under a millisecond does not become 0, the host's default: a
// positive one stays positive, a negative one negative, for the host to
// refuse.
func awayMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	switch {
	case d%time.Millisecond == 0:
	case d > 0:
		ms++
	default:
		ms--
	}
	return ms
}

func specToWire(s sdk.ToolSpec) *pluginv1.ToolSpec {
	return &pluginv1.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Parameters, ReadOnly: s.ReadOnly}
}

func specFromWire(s *pluginv1.ToolSpec) sdk.ToolSpec {
	return sdk.ToolSpec{Name: s.GetName(), Description: s.GetDescription(), Parameters: json.RawMessage(s.GetParameters()), ReadOnly: s.GetReadOnly()}
}

func callToWire(c sdk.ToolCall) *pluginv1.ToolCall {
	return &pluginv1.ToolCall{Id: c.ID, Name: c.Name, Args: c.Args}
}

func callsFromWire(cs []*pluginv1.ToolCall) []sdk.ToolCall {
	if len(cs) == 0 {
		return nil
	}
	out := make([]sdk.ToolCall, len(cs))
	for i, c := range cs {
		out[i] = sdk.ToolCall{ID: c.GetId(), Name: c.GetName(), Args: json.RawMessage(c.GetArgs())}
	}
	return out
}

func messagesToWire(ms []sdk.Message) []*pluginv1.Message {
	out := make([]*pluginv1.Message, len(ms))
	for i, m := range ms {
		calls := make([]*pluginv1.ToolCall, len(m.ToolCalls))
		for j, c := range m.ToolCalls {
			calls[j] = callToWire(c)
		}
		out[i] = &pluginv1.Message{Role: m.Role, Text: m.Text, ToolCalls: calls, ToolCallId: m.ToolCallID, Name: m.Name}
	}
	return out
}
