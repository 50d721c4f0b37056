package manager

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/agenttypes"
)

// ModelResolver turns a model name ("provider:model", an alias) into a
// model. Resolve is called once per name; the manager reuses the result.
type ModelResolver interface {
	Resolve(ctx context.Context, name string) (llms.Model, error)
}

// ModelResolverFunc adapts a function to ModelResolver.
type ModelResolverFunc func(ctx context.Context, name string) (llms.Model, error)

// Resolve calls f.
func (f ModelResolverFunc) Resolve(ctx context.Context, name string) (llms.Model, error) {
	return f(ctx, name)
}

// DefaultMaxToolResult is Config.MaxToolResult's default: 256 KiB, as
// much as the builtin tools return.
const DefaultMaxToolResult = 256 << 10

// Config configures a Manager. Only Registry and Models are required.
type Config struct {
	// Registry holds the types and tools agents can use.
	Registry *agenttypes.Registry
	// Models resolves model names.
	Models ModelResolver
	// DefaultModel is used when neither the spawn request, the type nor
	// the parent names a model.
	DefaultModel string
	// MaxConcurrent is how many agents run at once; more wait as pending.
	// Default 8. An agent that waits for other agents from a tool call
	// (Wait, WaitAll or SpawnParallel with the tool's context), such as a
	// parent waiting on its children, lends its slot while it waits and
	// takes one back, before any pending agent starts, when the wait ends;
	// so nested work never deadlocks on slots.
	MaxConcurrent int
	// MaxQueue is how many agents may wait as pending before Spawn fails
	// with ErrQueueFull. Default 10,000.
	MaxQueue int
	// KeepEnded is how many ended agents the manager remembers for Get,
	// List and Wait; the oldest are forgotten beyond it. Default 10,000.
	KeepEnded int
	// KeepConversations is how many ended agents keep their conversation,
	// so that a new agent can resume it (SpawnRequest.Resume); the oldest
	// are dropped beyond it. Default 256.
	KeepConversations int
	// MaxDepth is how deep delegation may go: a top-level agent has depth
	// 0, its children depth 1. Default 1, so children cannot delegate.
	MaxDepth int
	// MaxChildren is how many children one agent may spawn over its run.
	// Default 16.
	MaxChildren int
	// MaxTreeAgents is how many agents of one tree (a top-level agent and
	// its descendants) may be alive at once. Default 32.
	MaxTreeAgents int
	// MaxBackgroundGroups is how many background groups one agent may have
	// running at once. Default 4.
	MaxBackgroundGroups int
	// ApproveDelegation, when set, is asked before a delegate request
	// spawns anything; an error refuses the request, and its text is what
	// the parent model reads.
	ApproveDelegation func(ctx context.Context, req Approval) error
	// OnQuestion answers children's questions (ask_parent) first; an
	// answer with no text passes the question on to the parent's model.
	// A SpawnRequest's own OnQuestion goes before it.
	OnQuestion QuestionHandler
	// AskUser is asked when a parent's model passes a child's question on
	// to the user. When nil, the child is told nobody answered.
	AskUser func(ctx context.Context, q QuestionInfo) (string, error)
	// QuestionTimeout bounds how long ask_parent waits for an answer.
	// Default 2 minutes.
	QuestionTimeout time.Duration
	// ToolConcurrency bounds how many tool calls of one turn run at once.
	// Default 4.
	ToolConcurrency int
	// DefaultBudget fills budget fields neither the request nor the type
	// sets. A field still zero after that is unlimited.
	DefaultBudget agenttypes.Budget
	// Stream asks models for their text as it is generated and publishes
	// it as EventModelDelta events. Models that do not stream ignore it.
	Stream bool
	// SubscriptionBuffer is how many events a subscription holds for a
	// reader that has fallen behind; past it, events are dropped and the
	// reader is told how many (EventDropped). Default 4,096.
	SubscriptionBuffer int
	// Workspaces makes the workspaces of agents whose types change files
	// (write, edit, run, merge). Without it such types cannot be
	// spawned: an agent never writes outside a workspace of its own.
	Workspaces agenttypes.Workspaces
	// MCP, when set, describes the MCP servers agent types name: before
	// an agent is prepared (a top-level one or a delegated child), the
	// tools of each server its type names are described, once per
	// manager, and registered in Registry, so its type's mcp__SERVER__*
	// entries cover them. A server that cannot be described fails the
	// spawn (ErrMCPServer), naming the server and its file. When nil, an
	// entry covers only the tools already registered.
	MCP agenttypes.MCPToolSource
	// TranscriptDir, when set, receives one JSON-lines transcript per agent.
	TranscriptDir string
	// Logger receives the manager's logs. Default slog.Default().
	Logger *slog.Logger
	// MinOutputTokens is the fewest output tokens worth a model call; a
	// call that cannot get them ends the run with ReasonBudgetTokens.
	// Default 64.
	MinOutputTokens int
	// MaxToolResult is how many bytes of one tool call's result the model
	// is given; a longer result is cut, and the model told so. A tool's
	// error is cut to maxToolError. Default DefaultMaxToolResult.
	MaxToolResult int
	// TracerProvider, when set, gets a span per agent (invoke_agent),
	// per model call (chat) and per tool call (execute_tool), named and
	// described as the OpenTelemetry GenAI conventions say. A delegated
	// child's span is a child of the delegate call's, and a top-level
	// agent's of the span in Spawn's context, so a tree is one trace.
	// The context a tool is called with carries its call's span. Nil: no
	// spans, at no cost.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, gets the GenAI conventions' token usage
	// and operation duration histograms, the agents by state, the
	// agents' ends by reason and the queue's length. Nil: no metrics.
	MeterProvider metric.MeterProvider
	// RecordContent puts prompts, completions, tasks, outputs and tool
	// arguments and results on spans, each cut to 16 KiB. Off by default:
	// they can hold secrets. Usage and metadata are always recorded.
	RecordContent bool
	// Backend, when set, runs every top-level agent and its subtree
	// elsewhere (see Backend): the manager keeps their handles, queue and
	// events here. Models may then be nil, since the backend's workers
	// resolve the models; types that change files are refused.
	Backend Backend
	// now is replaced in tests.
	now func() time.Time
}

func (c *Config) setDefaults() {
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 8
	}
	if c.MaxQueue <= 0 {
		c.MaxQueue = 10_000
	}
	if c.KeepEnded <= 0 {
		c.KeepEnded = 10_000
	}
	if c.KeepConversations <= 0 {
		c.KeepConversations = 256
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = 1
	}
	if c.MaxChildren <= 0 {
		c.MaxChildren = 16
	}
	if c.MaxTreeAgents <= 0 {
		c.MaxTreeAgents = 32
	}
	if c.MaxBackgroundGroups <= 0 {
		c.MaxBackgroundGroups = 4
	}
	if c.QuestionTimeout <= 0 {
		c.QuestionTimeout = 2 * time.Minute
	}
	if c.ToolConcurrency <= 0 {
		c.ToolConcurrency = 4
	}
	if c.SubscriptionBuffer <= 0 {
		c.SubscriptionBuffer = 4096
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Logger = slog.New(safeHandler{c.Logger.Handler()})
	if c.MaxToolResult <= 0 {
		c.MaxToolResult = DefaultMaxToolResult
	}
	if c.MinOutputTokens <= 0 {
		c.MinOutputTokens = 64
	}
	if c.now == nil {
		c.now = time.Now
	}
}

// safeHandler keeps a logger's handler from taking an agent down: a panic
// in it is recovered and the record dropped. The manager logs from agent
// goroutines and while ending agents, where a panic would leave waiters
// hanging.
type safeHandler struct{ h slog.Handler }

func (s safeHandler) Enabled(ctx context.Context, l slog.Level) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return s.h.Enabled(ctx, l)
}

func (s safeHandler) Handle(ctx context.Context, r slog.Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("log handler panicked: %v", p)
		}
	}()
	return s.h.Handle(ctx, r)
}

// WithAttrs and WithGroup run the handler's code too: a panic there
// keeps the handler as it was, without the attributes or the group.
func (s safeHandler) WithAttrs(attrs []slog.Attr) (h slog.Handler) {
	defer func() {
		if recover() != nil {
			h = s
		}
	}()
	return safeHandler{s.h.WithAttrs(attrs)}
}

func (s safeHandler) WithGroup(name string) (h slog.Handler) {
	defer func() {
		if recover() != nil {
			h = s
		}
	}()
	return safeHandler{s.h.WithGroup(name)}
}

// Approval is a delegate request waiting for Config.ApproveDelegation.
type Approval struct {
	// Parent is the agent that asks.
	Parent Info
	// Summary is the request in one line, such as
	// "Spawn 3 subagents: [security] scan for vulnerab…; [correctness] …".
	Summary string
	// Tasks are the tasks as the parent gave them.
	Tasks []agenttypes.ChildTask
	// Background is true for a request that returns at once.
	Background bool
}

// QuestionInfo is a child's question on its way to an answer.
type QuestionInfo struct {
	// From is the child that asks; Parent the agent it asks.
	From, Parent Info
	Question     agenttypes.Question
}

// QuestionHandler answers a child's question. An Answer with no Text
// passes the question on; an error is told to the child.
type QuestionHandler func(ctx context.Context, q QuestionInfo) (agenttypes.Answer, error)
