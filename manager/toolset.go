package manager

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

// typeSetup is what the manager derives from a type once and reuses for
// every agent of it: its tool sets and its compiled prompt.
type typeSetup struct {
	typ    *agenttypes.Type
	tools  *toolset // the type's own tools
	prompt *agenttypes.Prompt
	// narrowed holds the tool sets of agents given fewer tools than the
	// type's (narrowed by the request, limited by a parent, or at the
	// depth limit), by their names joined.
	narrowed sync.Map
	// conversation is how many messages the conversation of the type's
	// last agent to complete held: the next starts with room for as
	// many, rather than growing to it (most agents of a type talk about
	// as long).
	conversation atomic.Int32
}

// conversationRoom is the room a new conversation of the type starts
// with: what the last one held, within bounds.
func (s *typeSetup) conversationRoom() int {
	return min(max(int(s.conversation.Load()), 8), 64)
}

// toolset is the tools one agent may call.
type toolset struct {
	byName map[string]agenttypes.Tool
	specs  []llms.Tool
	names  string   // for refusals: "read, grep, glob"
	order  []string // the tools' names, MCP entries expanded
	// specsJSON is the tool definitions as the model receives them, for
	// token estimates; specTokens caches their count per model name.
	specsJSON  string
	specTokens sync.Map // model name → int
	// offer is the call option that offers specs, made once: nil when
	// there are none.
	offer llms.CallOption
}

// setup returns the type's setup, building it on first use. Setups are
// kept by type name, and a type reloaded under the same name replaces the
// old one's entry, so a long-lived host that reloads its registry keeps
// one setup per name rather than one per reload.
func (m *Manager) setup(typ *agenttypes.Type) (*typeSetup, error) {
	if v, ok := m.setups.Load(typ.Name); ok {
		if s := v.(*typeSetup); s.typ == typ {
			return s, nil
		}
	}
	tools, err := m.buildToolset(typ, typ.Tools)
	if err != nil {
		return nil, err
	}
	prompt, err := agenttypes.CompilePrompt(typ.Name, typ.Prompt)
	if err != nil {
		return nil, fmt.Errorf("type %q: %w", typ.Name, err)
	}
	s := &typeSetup{typ: typ, tools: tools, prompt: prompt}
	m.setups.Store(typ.Name, s)
	return s, nil
}

// toolsetOf returns the tool set of the named tools, built once.
func (s *typeSetup) toolsetOf(m *Manager, names []string) (*toolset, error) {
	key := strings.Join(names, ",")
	if v, ok := s.narrowed.Load(key); ok {
		return v.(*toolset), nil
	}
	ts, err := m.buildToolset(s.typ, names)
	if err != nil {
		return nil, err
	}
	v, _ := s.narrowed.LoadOrStore(key, ts)
	return v.(*toolset), nil
}

func (m *Manager) buildToolset(typ *agenttypes.Type, names []string) (*toolset, error) {
	names = m.expandTools(typ, names)
	ts := &toolset{byName: make(map[string]agenttypes.Tool, len(names))}
	for _, name := range names {
		tool, scripted := typ.Hooks.Tool(name)
		var err error
		if !scripted {
			tool, err = m.cfg.Registry.Tool(name)
		}
		if err != nil {
			return nil, fmt.Errorf("type %q allows tool %q, which is not registered: %w", typ.Name, name, err)
		}
		spec := tool.Spec()
		params := any(spec.Parameters)
		if len(spec.Parameters) == 0 {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		ts.byName[name] = tool
		ts.specs = append(ts.specs, llms.Tool{
			Type:     "function",
			Function: &llms.FunctionDefinition{Name: name, Description: spec.Description, Parameters: params},
		})
	}
	ts.names = strings.Join(names, ", ")
	ts.order = names
	if len(ts.specs) > 0 {
		b, err := json.Marshal(ts.specs)
		if err != nil {
			return nil, fmt.Errorf("type %q: tool definitions do not encode as JSON: %w", typ.Name, err)
		}
		ts.specsJSON = string(b)
		ts.offer = llms.WithTools(ts.specs)
	}
	return ts, nil
}

// expandTools replaces the MCP entries of names (mcp__SERVER__TOOL, and
// patterns such as mcp__SERVER__*) with the registered MCP tools they
// cover that typ allows, in name order; other names stay as they are.
// An MCP tool is registered once its server has been described: with
// Config.MCP, before the type's setup is built (describeMCP); without
// it, by the caller, and until then an entry covers nothing and the
// agent runs without those tools, as the log says.
func (m *Manager) expandTools(typ *agenttypes.Type, names []string) []string {
	if !slices.ContainsFunc(names, isMCPEntry) {
		return names
	}
	var registered []string
	for _, t := range m.cfg.Registry.Tools() {
		if n := t.Spec().Name; isMCPEntry(n) {
			registered = append(registered, n)
		}
	}
	slices.Sort(registered)
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !isMCPEntry(n) {
			out = append(out, n)
			continue
		}
		found := false
		for _, r := range registered {
			if agenttypes.MatchTool(n, r) && typ.Allows(r) {
				found = true
				if !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
		if !found {
			m.cfg.Logger.Warn("an agent type names MCP tools that no registered server offers; its agents run without them", "type", typ.Name, "tools", n)
		}
	}
	return out
}

func isMCPEntry(name string) bool { return strings.HasPrefix(name, agenttypes.MCPToolPrefix) }

// tokens is how many tokens the tool definitions take in a call to the
// named model.
func (ts *toolset) tokens(modelName string, model llms.Model) int {
	if ts.specsJSON == "" {
		return 0
	}
	if v, ok := ts.specTokens.Load(modelName); ok {
		return v.(int)
	}
	var n int
	if c, ok := model.(modelcap.ToolTokenCounter); ok {
		n = c.CountToolTokens(ts.specs)
	} else {
		n = countTokens(model, ts.specsJSON)
	}
	ts.specTokens.Store(modelName, n)
	return n
}

// countTokens counts text's tokens as the model's provider does, when the
// model can (modelcap.TokenCounter), or four characters a token.
func countTokens(model llms.Model, text string) int {
	if c, ok := model.(modelcap.TokenCounter); ok {
		return c.CountTokens(text)
	}
	return estimateTokens(len(text))
}
