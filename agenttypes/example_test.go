package agenttypes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/troupe-dev/troupe/agenttypes"
)

// A registry refuses a second type under a name it already has.
func ExampleRegistry_RegisterType() {
	reg := agenttypes.NewRegistry()
	reviewer := agenttypes.Type{Name: "reviewer", Description: "reviews diffs", Tools: []string{"git"}}
	fmt.Println(reg.RegisterType(reviewer))
	err := reg.RegisterType(reviewer)
	fmt.Println(errors.Is(err, agenttypes.ErrDuplicate))
	_, err = reg.Type("writer")
	fmt.Println(errors.Is(err, agenttypes.ErrUnknownType))
	// Output:
	// <nil>
	// true
	// true
}

// A tool reads the calling agent's environment from its context.
func ExampleEnvFrom() {
	where := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "where", Description: "says where the agent works"},
		Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
			return agenttypes.EnvFrom(ctx).Dir, nil
		},
	}
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: "/srv/repo"})
	out, _ := where.Call(ctx, nil)
	fmt.Println(out)
	// Output: /srv/repo
}

// A troupe definition in YAML becomes a Type.
func ExampleParseDefinition() {
	yaml := []byte(`name: todo-finder
description: Finds TODO comments.
tools: [read, grep, glob]
budget: {max_turns: 10, max_time: 2m}
examples: ["where are the TODOs?"]
`)
	typ, diags := agenttypes.ParseDefinition(".troupe/agents/todo-finder.yaml", yaml, agenttypes.LoadOptions{})
	fmt.Println(len(diags), typ.Name, typ.Tools, typ.Budget.MaxTurns, typ.Budget.MaxTime, typ.Source)
	// Output: 0 todo-finder [read grep glob] 10 2m0s .troupe/agents/todo-finder.yaml
}

// troupe's own files are read strictly: every problem is reported at once,
// with its place and what to write instead.
func ExampleParseDefinition_strict() {
	yaml := []byte(`name: reviewer
descripton: Reviews diffs.
tools: [read, grpe]
budget:
  max_time: 5 minutes
`)
	_, diags := agenttypes.ParseDefinition(".troupe/agents/reviewer.yaml", yaml, agenttypes.LoadOptions{})
	err := diags.Err()
	var defErr *agenttypes.DefinitionError
	fmt.Println(errors.As(err, &defErr), errors.Is(err, agenttypes.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true true
	// .troupe/agents/reviewer.yaml:1:1: no description: add description: saying in a sentence what the type is for (a parent model reads it to choose a type)
	// .troupe/agents/reviewer.yaml:2:1: unknown field "descripton"; did you mean "description"?
	// .troupe/agents/reviewer.yaml:3:15: unknown tool "grpe"; did you mean "grep"? (the tools there are: git, glob, grep, ls, note, read, symbols)
	// .troupe/agents/reviewer.yaml:5:13: max_time "5 minutes" is not a duration; write it like 90s, 5m or 1h30m
}

// Claude Code's agent files load as they are; what troupe cannot honour is
// a warning.
func ExampleParseDefinition_claude() {
	md := []byte(`---
name: code-reviewer
description: Expert code reviewer. Use proactively after writing code.
tools: Read, Grep, Glob, Bash
model: sonnet
---
You are a senior code reviewer.
`)
	typ, diags := agenttypes.ParseDefinition(".claude/agents/code-reviewer.md", md, agenttypes.LoadOptions{})
	fmt.Println(typ.Name, typ.Tools, typ.Model)
	fmt.Println(typ.Prompt)
	fmt.Println(diags)
	// Output:
	// code-reviewer [read grep glob] anthropic:claude-sonnet-4-5
	// You are a senior code reviewer.
	// .claude/agents/code-reviewer.md:4:26: warning: tool "Bash" is troupe's run tool, which is not available here; the agent runs without it
}

// Claude Code's Bash is troupe's run, which starts only the commands a
// list allows: the file's own run: key, or the project's config. Write
// and Edit are write and edit; a type with them works in a workspace of
// its own.
func ExampleParseDefinition_bash() {
	reg := agenttypes.NewRegistry() // builtin.Register(reg) in a real program
	for _, name := range []string{"read", "write", "edit", "run"} {
		_ = reg.RegisterTool(&agenttypes.ToolFunc{ToolSpec: agenttypes.ToolSpec{Name: name, Description: "The " + name + " tool."}})
	}
	md := []byte(`---
name: test-fixer
description: Fixes failing tests.
tools: Read, Write, Edit, MultiEdit, Bash
run:
  allow: ["go test", "go vet"]
  timeout: 5m
---
Make the tests pass.
`)
	typ, diags := agenttypes.ParseDefinition(".claude/agents/test-fixer.md", md, agenttypes.LoadOptions{Registry: reg})
	fmt.Println(typ.Tools, typ.Run.Allow, typ.Run.Timeout, typ.NeedsWorkspace(), len(diags))
	// Output:
	// [read write edit run] [go test go vet] 5m0s true 0
}

// Register the builtin set first, then Reload: definition files are
// discovered in the project and user directories, may extend registered
// types, and hide registered types of the same name.
func ExampleRegistry_Reload() {
	root, _ := os.MkdirTemp("", "troupe-example")
	defer os.RemoveAll(root)
	agents := filepath.Join(root, "repo", ".troupe", "agents")
	_ = os.MkdirAll(agents, 0o755)
	_ = os.WriteFile(filepath.Join(agents, "quick.yaml"), []byte("name: quick\ndescription: A quick general agent.\nextends: general\nbudget: {max_turns: 5}\n"), 0o644)

	reg := agenttypes.NewRegistry()
	_ = reg.RegisterType(agenttypes.Type{Name: "general", Description: "Does a general task.", Tools: []string{"read"}, Source: "builtin"}) // builtin.Register(reg) in a real program
	diags := reg.Reload(agenttypes.Sources{ProjectDir: filepath.Join(root, "repo")})
	fmt.Println(diags.HasErrors())
	for _, t := range reg.Types() {
		fmt.Println(t.Name, t.Extends, t.Tools, t.Budget.MaxTurns, filepath.Base(t.Source))
	}
	// Output:
	// false
	// general  [read] 0 builtin
	// quick general [read] 5 quick.yaml
}

// The manager checks a JSON answer against the type's output schema.
func ExampleOutput_Validate() {
	out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(`{"type":"object","required":["answer"]}`)}
	ctx := context.Background() // the agent's context: checking stops when it ends
	fmt.Println(out.Validate(ctx, map[string]any{"answer": "42"}))
	err := out.Validate(ctx, map[string]any{"guess": "42"})
	fmt.Println(errors.Is(err, agenttypes.ErrBadOutput))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// answer does not match the output schema: at /: missing property 'answer'
}

// A type's prompt is a bounded template: fields, if, with and ranges over
// fields render; anything that could expand without bound is refused.
func ExampleCompilePrompt() {
	p, err := agenttypes.CompilePrompt("review", "Review {{.Dir}} with {{range $i, $t := .Tools}}{{if $i}} and {{end}}{{$t}}{{end}}.")
	if err != nil {
		panic(err)
	}
	text, _ := p.Render(context.Background(), agenttypes.PromptData{Dir: "/repo", Tools: []string{"read", "git"}})
	fmt.Println(text)

	_, err = agenttypes.CompilePrompt("bomb", "{{range 100000000}}again {{end}}")
	fmt.Println(err)
	// Output:
	// Review /repo with read and git.
	// bad prompt template: line 1: range only over a field such as .Tools, not over a number or a function's result
}

// A type's tools may allow every tool of an MCP server with a pattern,
// and its disallowed tools take some back.
func ExampleType_Allows() {
	t := agenttypes.Type{
		Name: "reader", Tools: []string{"read", "mcp__fs__*"},
		DisallowedTools: []string{"mcp__fs__write_file"},
		MCPServers:      []agenttypes.MCPServer{{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."}}},
	}
	fmt.Println(t.Allows("mcp__fs__read_file"), t.Allows("mcp__fs__write_file"), t.Allows("mcp__web__fetch"))
	fmt.Println(t.MCPServers[0].Runs())
	// Output:
	// true false false
	// runs: npx -y @modelcontextprotocol/server-filesystem .
}

// A budget's duration is written with its unit; a bare number is refused
// with the unit to add, in the words of the field or flag that held it.
func ExampleParseDuration() {
	for _, s := range []string{"90s", "5", "1e3", "soon"} {
		d, err := agenttypes.ParseDuration("--max-time", s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(d)
	}
	// Output:
	// 1m30s
	// --max-time 5 has no unit; write 5s for seconds or 5m for minutes
	// --max-time 1e3 has no unit; write 1000s for seconds or 1000m for minutes
	// --max-time "soon" is not a duration; write it like 90s, 5m or 1h30m
}
