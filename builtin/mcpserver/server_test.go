package mcpserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/mcpserver"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

var quiet = slog.New(slog.DiscardHandler)

// fixture is a served manager and a client connected to it in memory.
type fixture struct {
	mgr    *manager.Manager
	srv    *mcpserver.Server
	client *mcpsdk.ClientSession
}

type options struct {
	cfg     mcpserver.Config
	client  mcpsdk.ClientOptions
	version string // the protocol version the client asks for; "" for the latest
}

// serve serves the types "worker" and "lead" (which delegates to workers)
// of a manager whose every model is model, and connects a client.
func serve(t *testing.T, model llms.Model, o options) *fixture {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "worker", Description: "Works.", Tools: []string{"note", "ask_parent"}}))
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "lead", Description: "Leads.", Tools: []string{"note", "delegate"}}))
	var srv *mcpserver.Server
	mgr, err := manager.New(manager.Config{
		Registry:     reg,
		DefaultModel: "scripted",
		Models:       manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		Logger:       quiet,
		AskUser:      func(ctx context.Context, q manager.QuestionInfo) (string, error) { return srv.AskUser(ctx, q) },
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mgr.Close(context.Background())) })
	cfg := o.cfg
	cfg.Manager, cfg.Dir, cfg.Logger = mgr, t.TempDir(), quiet
	if cfg.Types == nil {
		cfg.Types = []string{"worker", "lead"}
	}
	srv, err = mcpserver.New(cfg)
	require.NoError(t, err)

	ct, st := mcpsdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-client", Version: "1"}, &o.client)
	cs, err := client.Connect(ctx, ct, &mcpsdk.ClientSessionOptions{ProtocolVersion: o.version})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return &fixture{mgr: mgr, srv: srv, client: cs}
}

func (f *fixture) call(t *testing.T, tool string, args any) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := f.client.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(res *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured decodes a result's structured content: the run's result.
func structured(t *testing.T, res *mcpsdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func (f *fixture) resource(t *testing.T, uri string) (string, error) {
	t.Helper()
	res, err := f.client.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	require.Len(t, res.Contents, 1)
	return res.Contents[0].Text, nil
}

func TestToolsAreTheServedTypesTakingATaskAndNoDirectory(t *testing.T) {
	f := serve(t, scripted.New(), options{cfg: mcpserver.Config{Limit: agenttypes.Budget{MaxTurns: 7}}})
	res, err := f.client.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		schema, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		var s struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
			Additional bool                       `json:"additionalProperties"`
		}
		require.NoError(t, json.Unmarshal(schema, &s))
		assert.Equal(t, []string{"task"}, s.Required, tool.Name)
		assert.Contains(t, s.Properties, "model")
		assert.Contains(t, s.Properties, "max_turns")
		assert.Contains(t, string(s.Properties["max_turns"]), "at most 7", "the server's cap is told")
		assert.NotContains(t, s.Properties, "dir", "a client never chooses the directory")
		assert.False(t, s.Additional)
	}
	assert.Equal(t, []string{"lead", "worker"}, names, "only the types asked for are served")
	assert.True(t, res.Tools[1].Annotations.ReadOnlyHint, "a type that changes no files says so")
}

func TestServingAnUnknownTypeIsRefused(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	mgr, err := manager.New(manager.Config{Registry: reg, Models: manager.ModelResolverFunc(
		func(context.Context, string) (llms.Model, error) { return scripted.New(), nil })})
	require.NoError(t, err)
	defer mgr.Close(context.Background())
	_, err = mcpserver.New(mcpserver.Config{Manager: mgr, Dir: t.TempDir(), Types: []string{"exlpore"}})
	require.ErrorIs(t, err, agenttypes.ErrUnknownType)
	assert.Contains(t, err.Error(), `did you mean "explore"`)
}

func TestACallRunsTheAgentAndReturnsItsReportDataAndRunID(t *testing.T) {
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "note", Args: `{"text":"seen"}`}}, InputTokens: 10, OutputTokens: 5},
		scripted.Step{Text: "the report", InputTokens: 20, OutputTokens: 7},
	)
	f := serve(t, model, options{})
	res := f.call(t, "worker", map[string]any{"task": "do the thing"})
	require.False(t, res.IsError, text(res))
	assert.Contains(t, text(res), "the report")
	got := structured(t, res)
	id, _ := got["id"].(string)
	require.NotEmpty(t, id)
	assert.Contains(t, text(res), "run "+id, "the text names the run too")
	assert.Equal(t, "completed", got["state"])
	assert.Equal(t, "the report", got["output"])
	assert.EqualValues(t, 1, got["tool_calls"])
	assert.Equal(t, map[string]any{"input_tokens": 30.0, "output_tokens": 12.0}, got["usage"])
	assert.Equal(t, "do the thing", scripted.Text(model.Requests()[0].Messages[1]), "the task is what the agent is given")

	list, err := f.resource(t, "troupe://runs")
	require.NoError(t, err)
	assert.Contains(t, list, `"id": "`+id+`"`)
	rec, err := f.resource(t, "troupe://runs/"+id)
	require.NoError(t, err)
	assert.Contains(t, rec, `"output": "the report"`, "the record holds the report")
	assert.Contains(t, rec, `"state": "completed"`)
}

func TestAClientsBudgetIsHeldToTheServersLimit(t *testing.T) {
	loop := scripted.Step{Calls: []scripted.Call{{Name: "note", Args: `{"text":"again"}`}}}
	f := serve(t, scripted.New(loop, loop, loop, loop, loop), options{cfg: mcpserver.Config{Limit: agenttypes.Budget{MaxTurns: 2}}})
	res := f.call(t, "worker", map[string]any{"task": "loop", "max_turns": 50})
	assert.True(t, res.IsError)
	got := structured(t, res)
	assert.Equal(t, "budget_turns", got["reason"], text(res))
	assert.EqualValues(t, 2, got["turns"], "the server's cap, not the client's 50")
}

func TestBadInputIsRefusedSayingWhatTheToolTakesAndStartsNothing(t *testing.T) {
	f := serve(t, scripted.New(scripted.Step{Text: "ran"}), options{})
	tests := []struct {
		name string
		args any
		want string
	}{
		{"a directory", map[string]any{"task": "t", "dir": "/etc"}, "agents work in the server's directory"},
		{"no task", map[string]any{}, "task is empty"},
		{"a negative budget", map[string]any{"task": "t", "max_tokens": -5}, "max_tokens is -5"},
		{"a bad duration", map[string]any{"task": "t", "max_time": "soon"}, "such as 90s"},
		{"a task too long", map[string]any{"task": strings.Repeat("x", mcpserver.DefaultMaxTaskBytes+1)}, "shorten it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, "worker", tt.args)
			assert.True(t, res.IsError)
			assert.Contains(t, text(res), tt.want)
		})
	}
	assert.Empty(t, f.mgr.List(manager.Filter{}), "no agent was spawned")
}

// progressRecorder collects a client's progress notifications.
type progressRecorder struct {
	mu   sync.Mutex
	msgs []string
	seen chan string
}

func newProgressRecorder() *progressRecorder { return &progressRecorder{seen: make(chan string, 1000)} }

func (p *progressRecorder) handle(_ context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.msgs = append(p.msgs, req.Params.Message)
	p.mu.Unlock()
	p.seen <- req.Params.Message
}

func (p *progressRecorder) all() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.msgs, "\n")
}

// leadScript delegates one task to a worker, then reports what came back.
// The worker notes and answers.
func leadScript() *scripted.Model {
	step := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		task := scripted.Text(msgs[1])
		results := scripted.ToolResults(msgs)
		switch {
		case strings.Contains(task, "CHILD") && len(results) == 0:
			return scripted.Step{Calls: []scripted.Call{{Name: "note", Args: `{"text":"child at work"}`}}}
		case strings.Contains(task, "CHILD"):
			return scripted.Step{Text: "child finished"}
		case len(results) == 0:
			return scripted.Step{Calls: []scripted.Call{{Name: "delegate", Args: `{"tasks":[{"label":"w1","type":"worker","prompt":"CHILD: look"}]}`}}}
		default:
			return scripted.Step{Text: "lead finished: " + results[len(results)-1].Content}
		}
	}}
	return scripted.New(step, step, step)
}

func TestProgressNotificationsCarryTheTreesTurnsToolCallsAndSubagents(t *testing.T) {
	rec := newProgressRecorder()
	f := serve(t, leadScript(), options{client: mcpsdk.ClientOptions{ProgressNotificationHandler: rec.handle}})
	params := &mcpsdk.CallToolParams{Name: "lead", Arguments: map[string]any{"task": "lead the work"}}
	params.SetProgressToken("tok-1")
	res, err := f.client.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	assert.Contains(t, text(res), "child finished", "the child's report reached the lead")
	// Notifications may trail the result: wait for the child's end.
	deadline := time.After(30 * time.Second)
	for !strings.Contains(rec.all(), "[w1] worker completed") {
		select {
		case <-rec.seen:
		case <-deadline:
			t.Fatalf("no notification of the child's end; got:\n%s", rec.all())
		}
	}
	all := rec.all()
	for _, want := range []string{"lead: turn 1", "lead: delegate", "[w1] worker subagent started: CHILD: look", "[w1] worker: note", "[w1] worker completed (done)"} {
		assert.Contains(t, all, want)
	}
}

func TestACallWithoutAProgressTokenGetsNoNotifications(t *testing.T) {
	rec := newProgressRecorder()
	f := serve(t, scripted.New(scripted.Step{Text: "done"}), options{client: mcpsdk.ClientOptions{ProgressNotificationHandler: rec.handle}})
	res := f.call(t, "worker", map[string]any{"task": "t"})
	require.False(t, res.IsError)
	assert.Empty(t, rec.all())
}
