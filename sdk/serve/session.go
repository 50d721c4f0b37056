package serve

import (
	"context"

	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// session is the sdk.Session of one RunLoop: every call goes back to the
// host's Host service with the run's ID.
type session struct {
	c   pluginv1.HostClient
	run string
}

var _ sdk.Session = (*session)(nil)

// wireErr returns the error of a Host call: transport failures first,
// then the host's own answer.
func wireErr(ctx context.Context, err error, e *pluginv1.Error) error {
	if err != nil {
		return wire.TransportError(ctx, err)
	}
	if e != nil {
		return wire.ErrorFromWire(e, "")
	}
	return nil
}

func (s *session) Generate(ctx context.Context, req sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	resp, err := s.c.Generate(ctx, &pluginv1.GenerateRequest{
		RunId: s.run, Messages: messagesToWire(req.Messages),
		Tools: req.Tools, AllTools: req.Tools == nil, MaxTokens: int64(req.MaxTokens),
	})
	if err := wireErr(ctx, err, resp.GetError()); err != nil {
		return nil, err
	}
	u := resp.GetUsage()
	return &sdk.GenerateResponse{
		Text: resp.GetText(), ToolCalls: callsFromWire(resp.GetToolCalls()),
		Usage: sdk.Usage{InputTokens: int(u.GetInputTokens()), OutputTokens: int(u.GetOutputTokens()), CostUSD: u.GetCostUsd()},
	}, nil
}

func (s *session) CallTool(ctx context.Context, call sdk.ToolCall) (*sdk.CallResponse, error) {
	resp, err := s.c.CallTool(ctx, &pluginv1.HostCallToolRequest{RunId: s.run, Call: callToWire(call)})
	if err := wireErr(ctx, err, resp.GetError()); err != nil {
		return nil, err
	}
	return &sdk.CallResponse{Text: resp.GetText()}, nil
}

func (s *session) Tools(ctx context.Context) ([]sdk.ToolSpec, error) {
	resp, err := s.c.Tools(ctx, &pluginv1.ToolsRequest{RunId: s.run})
	if err := wireErr(ctx, err, resp.GetError()); err != nil {
		return nil, err
	}
	out := make([]sdk.ToolSpec, len(resp.GetTools()))
	for i, t := range resp.GetTools() {
		out[i] = specFromWire(t)
	}
	return out, nil
}

func (s *session) Note(ctx context.Context, text string) error {
	resp, err := s.c.Note(ctx, &pluginv1.NoteRequest{RunId: s.run, Text: text})
	return wireErr(ctx, err, resp.GetError())
}

func (s *session) AskParent(ctx context.Context, q sdk.Question) (*sdk.Answer, error) {
	resp, err := s.c.AskParent(ctx, &pluginv1.AskParentRequest{RunId: s.run, Question: q.Text, Suggestions: q.Suggestions})
	if err := wireErr(ctx, err, resp.GetError()); err != nil {
		return nil, err
	}
	return &sdk.Answer{Text: resp.GetText(), By: resp.GetBy()}, nil
}

func (s *session) Event(ctx context.Context, text string) error {
	resp, err := s.c.Event(ctx, &pluginv1.EventRequest{RunId: s.run, Text: text})
	return wireErr(ctx, err, resp.GetError())
}
