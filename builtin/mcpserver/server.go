package mcpserver

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
)

// Defaults of Config.
const (
	DefaultMaxTaskBytes = 64 << 10
	DefaultKeepRuns     = 1000
	// DefaultStopGrace is how long a cancelled call waits for its agent to
	// stop, so that the run's record says how it ended.
	DefaultStopGrace = 5 * time.Second
)

// Config configures a Server. Manager and Dir are required.
type Config struct {
	// Manager runs the agents. For children's questions to reach the
	// client, the manager's Config.AskUser must call the Server's AskUser.
	Manager *manager.Manager
	// Dir is the directory every agent works in. Clients cannot choose
	// another.
	Dir string
	// Types names the types served; empty serves every registered type.
	Types []string
	// Limit caps every run's budget: what a client asks for and what a
	// type sets by default are held to it field by field, and a field
	// neither sets takes the limit's.
	Limit agenttypes.Budget
	// Name and Version introduce the server to clients. Defaults "troupe"
	// and "devel".
	Name, Version string
	// MaxTaskBytes caps the task a client sends. Default
	// DefaultMaxTaskBytes.
	MaxTaskBytes int
	// KeepRuns is how many runs troupe://runs lists, newest first.
	// Default DefaultKeepRuns.
	KeepRuns int
	// StopGrace is how long a cancelled call waits for its agent to stop
	// before it returns. Default DefaultStopGrace.
	StopGrace time.Duration
	// Logger receives the server's logs. Default slog.Default().
	Logger *slog.Logger
}

// Server serves agent types as MCP tools. Make one with New and run its
// MCP server (MCP) on a transport, or serve Handler over HTTP.
type Server struct {
	cfg   Config
	mcp   *mcpsdk.Server
	types []string // served, in name order
	key   []byte   // signs the request state of calls waiting for input

	mu    sync.Mutex
	calls map[string]*call // the running calls, by run ID
	runs  []string         // the runs started, oldest first
	// spawning counts the calls between spawning their agent and being
	// tracked; changed is closed (and replaced) when one is tracked, so
	// that a question from an agent that ran ahead of its tracking waits.
	spawning int
	changed  chan struct{}
}

// New returns a server of cfg's types. A type of Config.Types that is not
// registered, or whose name is not a valid tool name, is an error.
func New(cfg Config) (*Server, error) {
	if cfg.Manager == nil {
		return nil, errors.New("mcpserver: Config.Manager is nil; pass the manager that runs the agents")
	}
	if cfg.Dir == "" {
		return nil, errors.New("mcpserver: Config.Dir is empty; pass the directory agents work in")
	}
	if err := cfg.Limit.Validate(); err != nil {
		return nil, fmt.Errorf("mcpserver: limit: %w", err)
	}
	cfg.setDefaults()
	s := &Server{cfg: cfg, calls: map[string]*call{}, key: make([]byte, 32), changed: make(chan struct{})}
	_, _ = rand.Read(s.key) // never fails (crypto/rand)
	s.mcp = mcpsdk.NewServer(&mcpsdk.Implementation{Name: cfg.Name, Version: cfg.Version}, &mcpsdk.ServerOptions{
		Logger:       cfg.Logger,
		Instructions: "Each tool runs one troupe agent of the type it is named after on a task, inside budgets, and returns its report.",
	})
	types, err := s.servedTypes()
	if err != nil {
		return nil, err
	}
	for _, t := range types {
		s.mcp.AddTool(toolOf(t, cfg.Limit), s.handler(t.Name))
		s.types = append(s.types, t.Name)
	}
	s.addResources()
	return s, nil
}

func (c *Config) setDefaults() {
	if c.Name == "" {
		c.Name = "troupe"
	}
	if c.Version == "" {
		c.Version = "devel"
	}
	if c.MaxTaskBytes <= 0 {
		c.MaxTaskBytes = DefaultMaxTaskBytes
	}
	if c.KeepRuns <= 0 {
		c.KeepRuns = DefaultKeepRuns
	}
	if c.StopGrace <= 0 {
		c.StopGrace = DefaultStopGrace
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// servedTypes are the types to serve, in name order.
func (s *Server) servedTypes() ([]*agenttypes.Type, error) {
	reg := s.cfg.Manager.Registry()
	if len(s.cfg.Types) == 0 {
		types := reg.Types()
		slices.SortFunc(types, func(a, b *agenttypes.Type) int { return strings.Compare(a.Name, b.Name) })
		return types, nil
	}
	var out []*agenttypes.Type
	for _, name := range s.cfg.Types {
		t, err := reg.Type(name)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: serving %q: %w", name, err)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *agenttypes.Type) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// MCP returns the MCP server, to run on any transport (Run, Connect).
func (s *Server) MCP() *mcpsdk.Server { return s.mcp }

// Types returns the names of the types served, in name order.
func (s *Server) Types() []string { return slices.Clone(s.types) }

// Handler serves the server over streamable HTTP. Requests from other
// origins, and requests to a loopback address under another host name
// (DNS rebinding), are refused.
func (s *Server) Handler() http.Handler {
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s.mcp },
		&mcpsdk.StreamableHTTPOptions{Logger: s.cfg.Logger})
	return http.NewCrossOriginProtection().Handler(h)
}

// toolOf is the tool that runs agents of t: its name, its description,
// and an input of a task with optional budget fields and model.
func toolOf(t *agenttypes.Type, limit agenttypes.Budget) *mcpsdk.Tool {
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = "Runs a " + t.Name + " agent."
	}
	desc += " Give it a task in plain words; it works on the server's project inside its budgets and returns its report."
	readOnly := !slices.ContainsFunc(t.Tools, func(n string) bool { return slices.Contains(agenttypes.ChangingTools, n) })
	open := true
	return &mcpsdk.Tool{
		Name:        t.Name,
		Title:       t.Name + " agent",
		Description: desc,
		InputSchema: inputSchema(t.Budget.Within(limit), limit),
		Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: readOnly, OpenWorldHint: &open},
	}
}

// inputSchema is the JSON schema of a tool's input; each budget field
// says what it is by default (dflt) and what it may be at most (max).
func inputSchema(dflt, max agenttypes.Budget) json.RawMessage {
	say := func(what string, d, m any, dSet, mSet bool) string {
		switch {
		case dSet && mSet:
			return fmt.Sprintf("%s; default %v, at most %v.", what, d, m)
		case mSet:
			return fmt.Sprintf("%s; at most %v.", what, m)
		case dSet:
			return fmt.Sprintf("%s; default %v.", what, d)
		}
		return what + "."
	}
	props := map[string]any{
		"task":  map[string]any{"type": "string", "minLength": 1, "description": "What the agent is asked to do, in plain words."},
		"model": map[string]any{"type": "string", "description": "The model, as provider:model or an alias such as sonnet, or offline; by default the type's."},
		"max_tokens": map[string]any{"type": "integer", "minimum": 1, "description": say("Token budget: input plus output over all model calls",
			dflt.MaxTokens, max.MaxTokens, dflt.MaxTokens > 0, max.MaxTokens > 0)},
		"max_time": map[string]any{"type": "string", "description": say("Wall-time budget as a duration such as 90s or 5m",
			dflt.MaxTime, max.MaxTime, dflt.MaxTime > 0, max.MaxTime > 0)},
		"max_tool_calls": map[string]any{"type": "integer", "minimum": 1, "description": say("Tool-call budget",
			dflt.MaxToolCalls, max.MaxToolCalls, dflt.MaxToolCalls > 0, max.MaxToolCalls > 0)},
		"max_turns": map[string]any{"type": "integer", "minimum": 1, "description": say("Turn (model call) budget",
			dflt.MaxTurns, max.MaxTurns, dflt.MaxTurns > 0, max.MaxTurns > 0)},
		"max_cost": map[string]any{"type": "number", "exclusiveMinimum": 0, "description": say("Cost budget in US dollars over the agent and its subagents",
			dflt.MaxCostUSD, max.MaxCostUSD, dflt.MaxCostUSD > 0, max.MaxCostUSD > 0)},
	}
	schema := map[string]any{"type": "object", "additionalProperties": false, "required": []string{"task"}, "properties": props}
	b, _ := json.Marshal(schema) // plain maps always encode
	return b
}
