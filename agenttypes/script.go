package agenttypes

import (
	"context"
	"encoding/json"
	"errors"
)

// ErrScript is wrapped by the errors of a type's script that failed rather
// than answered: it panicked, ran past its time, overflowed its stack, ran
// out of memory, or its host process died. The manager ends the agent with
// reason "script_error". An error a hook returns on purpose (a Result hook
// that rejects an answer, a BeforeTool veto) does not wrap it.
var ErrScript = errors.New("script failed")

// MaxScriptSize caps the Go source of one script, inline or in a
// script_file.
const MaxScriptSize = 256 << 10

// Script is Go source a definition carries, interpreted at run time (see
// builtin/script). Positions in it map back onto the file it came from.
type Script struct {
	// Source is the Go source: package hooks.
	Source string `json:"source"`
	// File is where the source was written: the definition file for an
	// inline script:, or the file script_file: names.
	File string `json:"file"`
	// Line is the line of File that holds the first line of Source.
	Line int `json:"line"`
	// Col is added to the columns of Source to give columns of File (the
	// indentation of a YAML block); 0 for a file of its own.
	Col int `json:"col,omitempty"`
}

// Pos maps a line and column of s.Source onto a Diagnostic's place in
// s.File.
func (s *Script) Pos(line, col int) (int, int) {
	if line <= 0 {
		return max(s.Line, 1), 1
	}
	return s.Line + line - 1, col + s.Col
}

// ScriptTool is a tool a definition declares under script_tools: its
// description for the model and the script whose Run function is its
// body.
type ScriptTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Script      Script          `json:"script"`
}

// Scripts is everything scripted in one definition.
type Scripts struct {
	// Hooks holds the Prompt, Result and BeforeTool functions, when the
	// definition has a script: or script_file:.
	Hooks *Script `json:"hooks,omitempty"`
	// Tools are the definition's script_tools.
	Tools []ScriptTool `json:"tools,omitempty"`
}

// ScriptTask is what a Prompt hook learns of the task.
type ScriptTask struct {
	Prompt string
	Type   string
	Root   string
}

// Hooks are a type's compiled scripts. Each func may be nil. Every call
// honours its context; an error wrapping ErrScript means the script failed
// rather than answered.
type Hooks struct {
	// Prompt returns the task text the model receives.
	Prompt func(ctx context.Context, task ScriptTask) (string, error)
	// Result turns the final answer into the run's data. Its own error
	// goes back to the model once for another answer.
	Result func(ctx context.Context, output string) (any, error)
	// BeforeTool may veto a tool call; the error's text is what the model
	// is told.
	BeforeTool func(ctx context.Context, name string, args json.RawMessage) error
	// Tools are the type's script tools. An agent of the type may always
	// call them.
	Tools []Tool
}

// Tool returns the script tool of that name.
func (h *Hooks) Tool(name string) (Tool, bool) {
	if h == nil {
		return nil, false
	}
	for _, t := range h.Tools {
		if t.Spec().Name == name {
			return t, true
		}
	}
	return nil, false
}

// ScriptCompiler checks and compiles a definition's scripts once, when the
// definition is loaded. Problems are reported as diagnostics placed in the
// script's file, like any other problem of a definition.
type ScriptCompiler interface {
	Compile(ctx context.Context, typeName string, s *Scripts) (*Hooks, Diagnostics)
}

// ScriptChecker is a ScriptCompiler that can also check scripts without
// running any of their code: the loader uses it for definitions it may
// not compile, since compiling runs a script's top-level declarations.
type ScriptChecker interface {
	Check(typeName string, s *Scripts) Diagnostics
}
