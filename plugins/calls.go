package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// pluginTool is a plugin's tool in the registry: each call goes to the
// plugin's process, started if it is not running.
type pluginTool struct {
	p    *proc
	spec agenttypes.ToolSpec
}

var _ agenttypes.Tool = (*pluginTool)(nil)

func (t *pluginTool) Spec() agenttypes.ToolSpec { return t.spec }

func (t *pluginTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	r, err := t.p.get(ctx)
	if err != nil {
		return "", err
	}
	env := agenttypes.EnvFrom(ctx)
	traced := r.traced(ctx)
	var start time.Time
	if traced {
		start = time.Now()
	}
	resp, err := r.callTool(ctx, &pluginv1.CallToolRequest{
		Name: t.spec.Name, Args: args, Agent: &pluginv1.Agent{Id: env.AgentID, Dir: env.Dir},
		DeadlineUnixMs: wire.Deadline(ctx),
	})
	if err != nil {
		return "", t.p.callFailed(ctx, r, err)
	}
	if traced {
		wire.RecordSpans(ctx, Scope, resp.GetTrace(), start, time.Now())
	}
	if err := fromWire(t.p.bin.Name, resp.GetError()); err != nil {
		return "", err
	}
	return resp.GetText(), nil
}

// Scope is the instrumentation scope of the host's telemetry: the
// tracer that records the spans a plugin made in a call, under the call's
// span, and the meter of RestartsMetric.
const Scope = "github.com/troupe-dev/troupe/plugins"

// traced reports whether a call with ctx carries its trace context to
// r's plugin and records the spans the plugin sends back: ctx has a
// sampled span context (under one that is not, the plugin records
// nothing) and the plugin takes it.
func (r *running) traced(ctx context.Context) bool {
	return r.traces && wire.Traced(ctx)
}

// callTool makes a tool call on the plugin's lane when it serves one,
// else over gRPC, as it does a call the lane could not send; the errors
// are gRPC's either way. The call's trace context goes with it to a
// plugin that takes it.
func (r *running) callTool(ctx context.Context, req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	if r.lane != nil {
		resp, err := r.lane.CallTool(ctx, req)
		if !errors.Is(err, wire.ErrLaneBusy) {
			return resp, err
		}
	}
	if r.traces {
		ctx = wire.OutgoingTrace(ctx)
	}
	return r.conn.Plugin.CallTool(ctx, req)
}

// pluginLoop is the agenttypes.Loop of a plugin type that brings its own
// loop: Run asks the plugin to run it and serves the loop's calls back
// from the agent's Session.
type pluginLoop struct {
	p   *proc
	typ string
}

// loopRun is one running loop, as the Host service finds it.
type loopRun struct {
	ctx context.Context
	s   agenttypes.Session
}

func (l *pluginLoop) Run(ctx context.Context, s agenttypes.Session, task string) (string, error) {
	r, err := l.p.get(ctx)
	if err != nil {
		return "", err
	}
	id := uuid.NewString()
	r.runs.Store(id, &loopRun{ctx: ctx, s: s})
	defer r.runs.Delete(id)
	env := agenttypes.EnvFrom(ctx)
	traced := r.traced(ctx)
	wctx, start := ctx, time.Time{}
	if traced {
		wctx, start = wire.OutgoingTrace(ctx), time.Now()
	}
	resp, err := r.conn.Plugin.RunLoop(wctx, &pluginv1.RunLoopRequest{
		Type: l.typ, Task: task, Agent: &pluginv1.Agent{Id: env.AgentID, Dir: env.Dir},
		HostBrokerId: r.serveHost(), RunId: id, DeadlineUnixMs: wire.Deadline(ctx),
		HostLane: r.lane != nil,
	})
	if err != nil {
		return "", l.p.callFailed(ctx, r, err)
	}
	if traced {
		wire.RecordSpans(ctx, Scope, resp.GetTrace(), start, time.Now())
	}
	if err := fromWire(l.p.bin.Name, resp.GetError()); err != nil {
		return "", err
	}
	return resp.GetOutput(), nil
}

// serveHost starts serving the Host service over the broker, once per
// process, and returns its broker ID.
func (r *running) serveHost() uint32 {
	r.hostOnce.Do(func() {
		b := r.conn.Broker
		r.hostID = b.NextId()
		go b.AcceptAndServe(r.hostID, func(opts []grpc.ServerOption) *grpc.Server {
			s := grpc.NewServer(wire.ServerOptions(opts)...)
			pluginv1.RegisterHostServer(s, &hostService{r: r})
			return s
		})
	})
	return r.hostID
}

// hostService answers a plugin's loops from their agents' Sessions.
type hostService struct {
	pluginv1.UnimplementedHostServer
	r *running
}

// run finds a run and returns a context that ends with the call or with
// the agent's run, whichever ends first.
func (h *hostService) run(ctx context.Context, id string) (*loopRun, context.Context, context.CancelFunc, *pluginv1.Error) {
	v, ok := h.r.runs.Load(id)
	if !ok {
		return nil, nil, nil, wire.ErrorToWire(fmt.Errorf("%w: no running loop %q", agenttypes.ErrUnknownType, id))
	}
	run := v.(*loopRun)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(run.ctx, cancel)
	return run, ctx, func() { stop(); cancel() }, nil
}

func (h *hostService) Generate(ctx context.Context, req *pluginv1.GenerateRequest) (*pluginv1.GenerateResponse, error) {
	run, ctx, done, werr := h.run(ctx, req.GetRunId())
	if werr != nil {
		return &pluginv1.GenerateResponse{Error: werr}, nil
	}
	defer done()
	msgs := make([]agenttypes.Message, len(req.GetMessages()))
	for i, m := range req.GetMessages() {
		msgs[i] = agenttypes.Message{Role: m.GetRole(), Text: m.GetText(), ToolCalls: callsOf(m.GetToolCalls()), ToolCallID: m.GetToolCallId(), Name: m.GetName()}
	}
	var tools []string
	if !req.GetAllTools() {
		tools = append([]string{}, req.GetTools()...)
	}
	resp, err := run.s.Generate(ctx, agenttypes.GenerateRequest{Messages: msgs, Tools: tools, MaxTokens: int(req.GetMaxTokens())})
	if err != nil {
		return &pluginv1.GenerateResponse{Error: wire.ErrorToWire(err)}, nil
	}
	out := &pluginv1.GenerateResponse{Text: resp.Text, Usage: &pluginv1.Usage{
		InputTokens: int64(resp.Usage.InputTokens), OutputTokens: int64(resp.Usage.OutputTokens), CostUsd: resp.Usage.CostUSD,
	}}
	for _, c := range resp.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, &pluginv1.ToolCall{Id: c.ID, Name: c.Name, Args: c.Args})
	}
	return out, nil
}

func callsOf(cs []*pluginv1.ToolCall) []agenttypes.ToolCall {
	var out []agenttypes.ToolCall
	for _, c := range cs {
		out = append(out, agenttypes.ToolCall{ID: c.GetId(), Name: c.GetName(), Args: json.RawMessage(c.GetArgs())})
	}
	return out
}

func (h *hostService) CallTool(ctx context.Context, req *pluginv1.HostCallToolRequest) (*pluginv1.CallToolResponse, error) {
	run, ctx, done, werr := h.run(ctx, req.GetRunId())
	if werr != nil {
		return &pluginv1.CallToolResponse{Error: werr}, nil
	}
	defer done()
	c := req.GetCall()
	text, err := run.s.CallTool(ctx, agenttypes.ToolCall{ID: c.GetId(), Name: c.GetName(), Args: json.RawMessage(c.GetArgs())})
	if err != nil {
		return &pluginv1.CallToolResponse{Error: wire.ErrorToWire(err)}, nil
	}
	return &pluginv1.CallToolResponse{Text: text}, nil
}

func (h *hostService) Tools(ctx context.Context, req *pluginv1.ToolsRequest) (*pluginv1.ToolsResponse, error) {
	run, _, done, werr := h.run(ctx, req.GetRunId())
	if werr != nil {
		return &pluginv1.ToolsResponse{Error: werr}, nil
	}
	defer done()
	out := &pluginv1.ToolsResponse{}
	for _, s := range run.s.Tools() {
		out.Tools = append(out.Tools, &pluginv1.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Parameters, ReadOnly: s.ReadOnly})
	}
	return out, nil
}

func (h *hostService) Note(ctx context.Context, req *pluginv1.NoteRequest) (*pluginv1.Ack, error) {
	run, _, done, werr := h.run(ctx, req.GetRunId())
	if werr != nil {
		return &pluginv1.Ack{Error: werr}, nil
	}
	defer done()
	run.s.Note(req.GetText())
	return &pluginv1.Ack{}, nil
}

// Progress is implemented by Sessions that can report a loop's progress
// as an event of the agent; a plugin's Session.Event uses it, and falls
// back to a note in the plugin's log when the Session cannot.
type Progress interface {
	Progress(text string)
}

func (h *hostService) Event(ctx context.Context, req *pluginv1.EventRequest) (*pluginv1.Ack, error) {
	run, _, done, werr := h.run(ctx, req.GetRunId())
	if werr != nil {
		return &pluginv1.Ack{Error: werr}, nil
	}
	defer done()
	if p, ok := run.s.(Progress); ok {
		p.Progress(req.GetText())
	} else {
		h.r.p.h.cfg.Logger.Info("plugin event", "plugin", h.r.p.bin.Name, "agent", agenttypes.EnvFrom(run.ctx).AgentID, "text", clip(req.GetText()))
	}
	return &pluginv1.Ack{}, nil
}

func (h *hostService) AskParent(ctx context.Context, req *pluginv1.AskParentRequest) (*pluginv1.AskParentResponse, error) {
	run, ctx, done, werr := h.run(ctx, req.GetRunId())
	if werr != nil {
		return &pluginv1.AskParentResponse{Error: werr}, nil
	}
	defer done()
	tree := run.s.Tree()
	if tree == nil {
		return &pluginv1.AskParentResponse{Error: wire.ErrorToWire(agenttypes.ErrNoParent)}, nil
	}
	a, err := tree.AskParent(ctx, agenttypes.Question{Text: req.GetQuestion(), Suggestions: req.GetSuggestions()})
	if err != nil {
		return &pluginv1.AskParentResponse{Error: wire.ErrorToWire(err)}, nil
	}
	return &pluginv1.AskParentResponse{Text: a.Text, By: a.By}, nil
}
