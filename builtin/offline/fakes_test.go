package offline

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
)

// fixture is a small repository: Spawn is defined in manager/spawn.go and
// used or mentioned in many other places.
var fixture = map[string]string{
	"manager/spawn.go": `package manager

import "context"

// Agent is one run of an agent type.
type Agent struct {
	ID string
}

// Spawn starts an agent of the given type on a task.
func (m *Manager) Spawn(ctx context.Context, typ, task string) (*Agent, error) {
	if typ == "" {
		return nil, ErrUnknownType
	}
	return m.start(ctx, typ, task)
}
`,
	"manager/manager.go": `package manager

import "context"

// Manager runs agents.
type Manager struct {
	budget Budget
}

func (m *Manager) start(ctx context.Context, typ, task string) (*Agent, error) {
	return &Agent{ID: typ}, nil
}

// SpawnAll calls Spawn for each task.
func (m *Manager) SpawnAll(ctx context.Context, typ string, tasks []string) error {
	for _, t := range tasks {
		if _, err := m.Spawn(ctx, typ, t); err != nil {
			return err
		}
	}
	return nil
}
`,
	"manager/spawn_test.go": `package manager

func TestSpawn(t *testing.T) {
	m := &Manager{}
	_, err := m.Spawn(ctx, "explore", "a")
	_, err = m.Spawn(ctx, "explore", "b")
	_, err = m.Spawn(ctx, "", "c")
	_, err = m.Spawn(ctx, "plan", "d")
}
`,
	"manager/errors.go": "package manager\n\nimport \"errors\"\n\n" +
		"// ErrUnknownType is returned for a type that is not registered.\n" +
		"var ErrUnknownType = errors.New(\"unknown agent type\")\n",
	"agenttypes/budget.go": `package agenttypes

// Budget limits one agent.
type Budget struct {
	MaxTokens int
}

func parseBudget(s string) (Budget, error) {
	return Budget{}, nil
}
`,
	"agenttypes/loader.go": `package agenttypes

func load(b []byte) (Budget, error) {
	budget, err := parseBudget(string(b))
	return budget, err
}
`,
	"cmd/troupe/run.go": `package main

func run(ctx context.Context) error {
	agent, err := mgr.Spawn(ctx, typ, task) // spawn the agent
	_ = agent
	return err
}
`,
	"docs/spawning.md": "# Spawning agents\n\nCall `Spawn` to start an agent; Spawn returns at once.\n" +
		"Spawn checks the type, then Spawn queues the agent.\n",
	"vendor/example.com/pool/spawn.go": "package pool\n\n// Spawn starts a worker.\nfunc Spawn() {}\n",
	"README.md":                        "# troupe\n\nTyped, budgeted subagents.\n",
}

func writeFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range fixture {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return root
}

// fakeTools implements grep, glob and read over a directory, printing what
// troupe's builtin tools print.
type fakeTools struct{ root string }

func (f fakeTools) call(c llms.ToolCall) string {
	var args struct {
		Pattern    string `json:"pattern"`
		IgnoreCase bool   `json:"ignore_case"`
		MaxResults int    `json:"max_results"`
		Path       string `json:"path"`
		Offset     int    `json:"offset"`
		Limit      int    `json:"limit"`
	}
	if err := json.Unmarshal([]byte(c.FunctionCall.Arguments), &args); err != nil {
		return "error: " + err.Error()
	}
	switch c.FunctionCall.Name {
	case toolGrep:
		return f.grep(args.Pattern, args.IgnoreCase, args.MaxResults)
	case toolGlob:
		return f.glob(args.Pattern)
	case toolRead:
		return f.read(args.Path, args.Offset, args.Limit)
	}
	return "error: unknown tool " + c.FunctionCall.Name
}

func (f fakeTools) grep(pattern string, ignoreCase bool, maxResults int) string {
	if ignoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "error: " + err.Error()
	}
	type match struct {
		path string
		line int
		text string
	}
	var matches []match
	_ = filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(f.root, p)
		file, err := os.Open(p)
		if err != nil {
			return err
		}
		defer file.Close()
		s := bufio.NewScanner(file)
		for n := 1; s.Scan(); n++ {
			if re.MatchString(s.Text()) {
				matches = append(matches, match{filepath.ToSlash(rel), n, s.Text()})
			}
		}
		return nil
	})
	if len(matches) == 0 {
		return "no matches"
	}
	slices.SortFunc(matches, func(a, b match) int {
		return cmp.Or(strings.Compare(a.path, b.path), a.line-b.line)
	})
	var b strings.Builder
	for i, m := range matches {
		if maxResults > 0 && i == maxResults {
			fmt.Fprintf(&b, "... %d more matches not shown\n", len(matches)-i)
			break
		}
		fmt.Fprintf(&b, "%s:%d:%s\n", m.path, m.line, m.text)
	}
	return b.String()
}

func (f fakeTools) glob(pattern string) string {
	paths, err := doublestar.Glob(os.DirFS(f.root), pattern, doublestar.WithFilesOnly())
	if err != nil {
		return "error: " + err.Error()
	}
	if len(paths) == 0 {
		return "no matches"
	}
	slices.Sort(paths)
	return strings.Join(paths, "\n") + "\n"
}

func (f fakeTools) read(p string, offset, limit int) string {
	data, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(p)))
	if err != nil {
		return "error: " + err.Error()
	}
	offset = max(offset, 1)
	if limit <= 0 {
		limit = 2000
	}
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if n := i + 1; n >= offset && n < offset+limit {
			fmt.Fprintf(&b, "%6d\t%s\n", n, l)
		}
	}
	return b.String()
}

// specs are tool definitions as the manager offers them.
func specs(names ...string) []llms.Tool {
	tools := make([]llms.Tool, len(names))
	for i, n := range names {
		tools[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name:        n,
			Description: "the " + n + " tool",
			Parameters:  map[string]any{"type": "object"},
		}}
	}
	return tools
}

var allTools = specs(toolRead, toolGrep, toolGlob, "ls")

// conversation drives the model like the manager does, until it answers
// or maxTurns calls were made.
type run struct {
	msgs    []llms.MessageContent
	choices []*llms.ContentChoice
}

func (r *run) final() *llms.ContentChoice { return r.choices[len(r.choices)-1] }

func converse(t *testing.T, m llms.Model, root, task string, tools []llms.Tool) *run {
	t.Helper()
	return converseUsing(t, m, task, tools, fakeTools{root: root}.call)
}

// converseUsing is converse with call answering the tool calls.
func converseUsing(t *testing.T, m llms.Model, task string, tools []llms.Tool, call func(llms.ToolCall) string) *run {
	t.Helper()
	r := &run{msgs: []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You explore a repository and report findings with file:line references."),
		llms.TextParts(llms.ChatMessageTypeHuman, task),
	}}
	for turn := 0; turn < 6; turn++ {
		resp, err := m.GenerateContent(context.Background(), r.msgs, llms.WithTools(tools), llms.WithMaxTokens(100_000))
		require.NoError(t, err)
		require.Len(t, resp.Choices, 1)
		c := resp.Choices[0]
		r.choices = append(r.choices, c)
		if len(c.ToolCalls) == 0 {
			return r
		}
		ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		if c.Content != "" {
			ai.Parts = append(ai.Parts, llms.TextPart(c.Content))
		}
		for _, call := range c.ToolCalls {
			ai.Parts = append(ai.Parts, call)
		}
		r.msgs = append(r.msgs, ai)
		for _, tc := range c.ToolCalls {
			r.msgs = append(r.msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: call(tc)},
			}})
		}
	}
	t.Fatalf("no final answer after 6 turns")
	return nil
}
