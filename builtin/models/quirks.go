package models

import (
	"encoding/json"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// anthropicMessages reshapes a conversation for langchaingo's Anthropic
// client, which sends only the first part of a system, AI or tool message
// and fails on tool-call arguments that are not a JSON object:
//
//   - an AI message becomes one message per part (its text, then each tool
//     call), empty text dropped;
//   - a tool message with several results becomes one message per result;
//   - a system message's text parts are joined into one;
//   - tool-call arguments that are not a JSON object (a model's malformed
//     JSON, already answered with an error by the tool) are sent as {}.
//
// The resulting runs of same-role messages are merged back into single
// turns on the wire by the Anthropic transport, so the API sees one
// assistant turn with all its tool_use blocks followed by one user turn
// with all the tool_result blocks.
func anthropicMessages(msgs []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs)+4)
	for _, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			if len(m.Parts) <= 1 {
				out = append(out, m)
				continue
			}
			var texts []string
			for _, p := range m.Parts {
				if t, ok := p.(llms.TextContent); ok && t.Text != "" {
					texts = append(texts, t.Text)
				}
			}
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, strings.Join(texts, "\n\n")))
		case llms.ChatMessageTypeAI:
			for _, p := range m.Parts {
				switch p := p.(type) {
				case llms.TextContent:
					if strings.TrimSpace(p.Text) == "" {
						continue
					}
					out = append(out, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
				case llms.ToolCall:
					if p.FunctionCall == nil {
						continue
					}
					fc := *p.FunctionCall
					fc.Arguments = objectArgs(fc.Arguments)
					p.FunctionCall = &fc
					out = append(out, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
				default:
					out = append(out, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
				}
			}
		case llms.ChatMessageTypeTool:
			for _, p := range m.Parts {
				out = append(out, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p}})
			}
		default:
			out = append(out, m)
		}
	}
	return out
}

// objectArgs returns args when it is a JSON object, else "{}".
func objectArgs(args string) string {
	var v map[string]any
	if json.Unmarshal([]byte(args), &v) != nil || v == nil {
		return "{}"
	}
	return args
}

// joinChoices joins the choices langchaingo's Anthropic client makes of
// one answer, one per content block, into one: the text blocks in order,
// all tool calls, and the usage of the first (every block repeats the
// same usage, so it is not added up).
func joinChoices(choices []*llms.ContentChoice) *llms.ContentChoice {
	var first *llms.ContentChoice
	for _, c := range choices {
		if c != nil {
			first = c
			break
		}
	}
	if first == nil {
		return &llms.ContentChoice{}
	}
	if len(choices) == 1 {
		return first
	}
	out := &llms.ContentChoice{StopReason: first.StopReason, GenerationInfo: map[string]any{}}
	var text strings.Builder
	for _, c := range choices {
		if c == nil {
			continue
		}
		text.WriteString(c.Content)
		out.ToolCalls = append(out.ToolCalls, c.ToolCalls...)
		if out.ReasoningContent == "" {
			out.ReasoningContent = c.ReasoningContent
		}
		for k, v := range c.GenerationInfo {
			if _, ok := out.GenerationInfo[k]; !ok {
				out.GenerationInfo[k] = v
			}
		}
	}
	out.Content = text.String()
	if len(out.ToolCalls) > 0 {
		out.FuncCall = out.ToolCalls[0].FunctionCall
	}
	return out
}
