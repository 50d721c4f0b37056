package agenttypes

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Output formats a type may ask of its final answer.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// Type is the definition of an agent type. Once registered it is never
// changed: the Registry keeps its own copy, and the values it hands out
// must be treated as read-only.
type Type struct {
	// Name is how the type is spawned: letters, digits, '.', '_' or '-'.
	Name string `json:"name"`
	// Description says what the type is for, in one or two sentences.
	Description string `json:"description"`
	// Prompt is the system prompt, a text/template executed with PromptData.
	Prompt string `json:"prompt"`
	// Tools lists the tools an agent of this type may call. A call to any
	// other tool is refused and reported to the model.
	Tools []string `json:"tools"`
	// DisallowedTools are MCP tools refused although an mcp__SERVER__*
	// of Tools covers them (disallowed_tools: [mcp__fs__write_file]).
	// Other tools a definition disallows are taken out of Tools.
	DisallowedTools []string `json:"disallowed_tools,omitempty"`
	// Model is "provider:model", a short alias, or "" / "inherit" for the
	// parent's model or the manager's default.
	Model string `json:"model,omitempty"`
	// Budget is the default budget; a spawn may override any field.
	Budget Budget `json:"budget"`
	// InheritContext is true when the agent is given its parent's
	// conversation before its task.
	InheritContext bool `json:"inherit_context,omitempty"`
	// Output says what form the final answer takes.
	Output Output `json:"output"`
	// NeedsLanguageModel is true for types that need a model that can
	// reason; such types refuse the offline retrieval model.
	NeedsLanguageModel bool `json:"needs_language_model,omitempty"`
	// Loop, when set, runs agents of this type in place of the manager's
	// own model ↔ tool loop (a plugin's type, say).
	Loop Loop `json:"-"`
	// ParseOutput, when set, turns the final answer into structured data
	// for Result.Data. An error fails the run with reason "bad_output".
	ParseOutput func(output string) (any, error) `json:"-"`
	// Hooks are the type's compiled scripts (a definition's script:,
	// script_file: and script_tools:), or nil.
	Hooks *Hooks `json:"-"`
	// Scripts is the source of the hooks, as the definition gave it.
	Scripts *Scripts `json:"scripts,omitempty"`
	// Workspace is WorkspaceWorktree or WorkspaceNone; "" means a
	// worktree when the type lists a changing tool, none otherwise.
	Workspace string `json:"workspace,omitempty"`
	// Run is what the run tool may start for agents of the type.
	Run RunPolicy `json:"run,omitzero"`
	// Setup are commands that prepare a new workspace (fetching
	// dependencies, say), allowed by Run like any command.
	Setup []string `json:"setup,omitempty"`
	// MCPServers are the MCP servers whose tools agents of the type may
	// call (as mcp__SERVER__TOOL, when Tools allows them), resolved from
	// the names and entries its definition gives.
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
	// Examples are tasks the type is meant for; a smoke test can run them.
	Examples []string `json:"examples,omitempty"`
	// Extends names the type this one was built from, when its definition
	// said extends:.
	Extends string `json:"extends,omitempty"`
	// Source says where the definition came from: "builtin", a file path,
	// or "plugin:NAME".
	Source string `json:"source"`
	// Shadows lists the sources of the definitions of the same name that
	// this one hides, nearest first: a project file shadows a user file,
	// which shadows a builtin type.
	Shadows []string `json:"shadows,omitempty"`
}

// Output describes the final answer of a type.
type Output struct {
	// Format is OutputText (the default) or OutputJSON.
	Format string `json:"format,omitempty"`
	// Schema is a JSON schema the answer must satisfy when Format is
	// OutputJSON.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// PromptData is what a Type's Prompt template sees.
type PromptData struct {
	// Type is the type's name.
	Type string
	// Dir is the directory the agent works in.
	Dir string
	// Tools are the names of the tools the agent may call.
	Tools []string
}

// Validate reports what makes t unusable, saying how to fix it.
func (t *Type) Validate() error {
	if !typeName.MatchString(t.Name) {
		return fmt.Errorf("%w: type name %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (no spaces or '/')", ErrInvalid, t.Name)
	}
	if t.Description == "" {
		return fmt.Errorf("%w: type %q has no description; say in a sentence what it is for", ErrInvalid, t.Name)
	}
	if err := t.Budget.Validate(); err != nil {
		return fmt.Errorf("type %q: %w", t.Name, err)
	}
	if _, err := CompilePrompt(t.Name, t.Prompt); err != nil {
		return fmt.Errorf("%w: type %q: %w", ErrInvalid, t.Name, err)
	}
	switch t.Output.Format {
	case "", OutputText, OutputJSON:
	default:
		return fmt.Errorf("%w: type %q has output format %q; use %q or %q", ErrInvalid, t.Name, t.Output.Format, OutputText, OutputJSON)
	}
	if err := t.validateWorkspace(); err != nil {
		return fmt.Errorf("type %q: %w", t.Name, err)
	}
	seen := map[string]bool{}
	for _, s := range t.MCPServers {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("type %q: %w", t.Name, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("%w: type %q names MCP server %q twice; keep one", ErrInvalid, t.Name, s.Name)
		}
		seen[s.Name] = true
	}
	if err := t.validateMCPTools(); err != nil {
		return err
	}
	if t.Output.Format == OutputJSON && len(t.Output.Schema) > 0 {
		if !json.Valid(t.Output.Schema) {
			return fmt.Errorf("%w: type %q has an output schema that is not valid JSON", ErrInvalid, t.Name)
		}
		if err := checkSchema(t.Output.Schema); err != nil {
			return fmt.Errorf("%w: type %q has an output schema that does not compile: %v", ErrInvalid, t.Name, err)
		}
	}
	return nil
}

// Allows reports whether an agent of this type may call the named tool:
// an entry of Tools covers it (MatchTool: the name itself, or an MCP
// server's mcp__SERVER__*) and no entry of DisallowedTools does.
func (t *Type) Allows(tool string) bool {
	covers := func(p string) bool { return MatchTool(p, tool) }
	return slices.ContainsFunc(t.Tools, covers) && !slices.ContainsFunc(t.DisallowedTools, covers)
}

// clone returns a deep copy, so that the caller's later changes to slices
// cannot reach a registered type.
func (t Type) clone() *Type {
	t.Tools = slices.Clone(t.Tools)
	t.DisallowedTools = slices.Clone(t.DisallowedTools)
	t.Output.Schema = slices.Clone(t.Output.Schema)
	t.Examples = slices.Clone(t.Examples)
	t.Shadows = slices.Clone(t.Shadows)
	t.Run.Allow = slices.Clone(t.Run.Allow)
	t.Setup = slices.Clone(t.Setup)
	t.MCPServers = slices.Clone(t.MCPServers)
	for i := range t.MCPServers {
		t.MCPServers[i] = t.MCPServers[i].clone()
	}
	return &t
}

// validateMCPTools refuses MCP tool names that are not well formed, and
// tools of servers the type does not name.
func (t *Type) validateMCPTools() error {
	for _, name := range slices.Concat(t.Tools, t.DisallowedTools) {
		if !strings.HasPrefix(name, MCPToolPrefix) {
			continue
		}
		server, _, ok := SplitMCPTool(name)
		switch {
		case !ok:
			return fmt.Errorf("%w: type %q: tool %q is not an MCP tool name; write mcp__SERVER__TOOL, or mcp__SERVER__* for every tool of a server", ErrInvalid, t.Name, name)
		case !slices.ContainsFunc(t.MCPServers, func(s MCPServer) bool { return s.Name == server }) && slices.Contains(t.Tools, name):
			return fmt.Errorf("%w: type %q lists tool %q of MCP server %q, which is not one of its MCP servers; name the server in mcp_servers", ErrInvalid, t.Name, name, server)
		}
	}
	return nil
}
