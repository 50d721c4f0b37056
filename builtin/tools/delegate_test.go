package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

func TestDelegationSpecs(t *testing.T) {
	want := map[string]struct {
		props    []string
		readOnly bool
	}{
		"delegate":   {[]string{"tasks", "concurrency", "mode", "return"}, false},
		"collect":    {[]string{"group", "wait", "cancel", "return"}, true},
		"ask_parent": {[]string{"question", "suggestions"}, true},
	}
	all := tools.Delegation()
	require.Len(t, all, len(want))
	for _, tool := range all {
		spec := tool.Spec()
		t.Run(spec.Name, func(t *testing.T) {
			w, ok := want[spec.Name]
			require.True(t, ok, "unexpected tool %s", spec.Name)
			assert.Equal(t, w.readOnly, spec.ReadOnly)
			assert.ElementsMatch(t, w.props, checkSpec(t, tool))
		})
	}
}

// The schema of a task lists exactly the fields delegate accepts: a field
// the schema offers but the tool refuses (or the reverse) would make the
// model fail on the first try.
func TestDelegateTaskSchemaMatchesArgs(t *testing.T) {
	var schema struct {
		Properties struct {
			Tasks struct {
				MaxItems int `json:"maxItems"`
				Items    struct {
					Properties           map[string]json.RawMessage `json:"properties"`
					Required             []string                   `json:"required"`
					AdditionalProperties *bool                      `json:"additionalProperties"`
				} `json:"items"`
			} `json:"tasks"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(tools.Delegate().Spec().Parameters, &schema))
	tasks := schema.Properties.Tasks
	assert.Equal(t, agenttypes.MaxDelegateTasks, tasks.MaxItems)
	assert.ElementsMatch(t, []string{"label", "prompt"}, tasks.Items.Required)
	require.NotNil(t, tasks.Items.AdditionalProperties)
	assert.False(t, *tasks.Items.AdditionalProperties)
	fields := []string{"label", "type", "prompt", "context", "tools", "model", "max_output_tokens",
		"max_tokens", "max_time", "max_tool_calls", "max_turns", "max_cost_usd", "resume"}
	var props []string
	for p := range tasks.Items.Properties {
		props = append(props, p)
	}
	assert.ElementsMatch(t, fields, props)
	// Every field of the schema is accepted by the tool.
	all := map[string]any{"label": "l", "type": "plan", "prompt": "p", "context": []string{}, "tools": []string{"read"},
		"model": "m", "max_output_tokens": 100, "max_tokens": 1, "max_time": "1s", "max_tool_calls": 1,
		"max_turns": 1, "max_cost_usd": 0.5, "resume": "a-0"}
	require.Len(t, all, len(fields))
	args, err := json.Marshal(map[string]any{"tasks": []any{all}})
	require.NoError(t, err)
	tree := &fakeTree{}
	_, err = callTree(context.Background(), tools.Delegate(), tree, t.TempDir(), string(args))
	require.NoError(t, err)
}

func TestDelegateBuildsRequest(t *testing.T) {
	tests := []struct {
		name string
		args string
		want agenttypes.DelegateRequest
	}{
		{
			name: "defaults: type explore, concurrency 2, parallel",
			args: `{"tasks":[{"label":"auth","prompt":"find the login code"},{"label":"db","prompt":"find the queries"}]}`,
			want: agenttypes.DelegateRequest{Concurrency: 2, Tasks: []agenttypes.ChildTask{
				{Label: "auth", Type: "explore", Prompt: "find the login code"},
				{Label: "db", Type: "explore", Prompt: "find the queries"},
			}},
		},
		{
			name: "every field",
			args: `{"concurrency":3,"mode":"background","return":"json","tasks":[{"label":"plan it","type":"plan","prompt":"plan the change",
				"tools":["read","grep"],"model":"openai:gpt-4o","max_output_tokens":2000,"max_tokens":50000,"max_time":"90s",
				"max_tool_calls":20,"max_turns":8,"max_cost_usd":0.25}]}`,
			want: agenttypes.DelegateRequest{Concurrency: 3, Background: true, Tasks: []agenttypes.ChildTask{{
				Label: "plan it", Type: "plan", Prompt: "plan the change", Tools: []string{"read", "grep"},
				Model: "openai:gpt-4o", MaxOutputTokens: 2000,
				Budget: agenttypes.Budget{MaxTokens: 50000, MaxTime: 90 * time.Second, MaxToolCalls: 20, MaxTurns: 8, MaxCostUSD: 0.25},
			}}},
		},
		{
			name: "compound duration, limits at their edges",
			args: `{"concurrency":4,"mode":"parallel","return":"markdown","tasks":[{"label":"abcdefghijklmnopqrstuvwxyz012345","prompt":"p","max_time":"1m30s","max_output_tokens":100},
				{"label":"é","prompt":"q","max_output_tokens":16384,"max_time":"250ms"}]}`,
			want: agenttypes.DelegateRequest{Concurrency: 4, Tasks: []agenttypes.ChildTask{
				{Label: "abcdefghijklmnopqrstuvwxyz012345", Type: "explore", Prompt: "p", MaxOutputTokens: 100, Budget: agenttypes.Budget{MaxTime: 90 * time.Second}},
				{Label: "é", Type: "explore", Prompt: "q", MaxOutputTokens: 16384, Budget: agenttypes.Budget{MaxTime: 250 * time.Millisecond}},
			}},
		},
		{
			name: "resume keeps the resumed agent's type unless one is given",
			args: `{"tasks":[{"label":"again","prompt":"go on","resume":"a-9"},{"label":"typed","type":"review","prompt":"go on","resume":"a-8"}]}`,
			want: agenttypes.DelegateRequest{Concurrency: 2, Tasks: []agenttypes.ChildTask{
				{Label: "again", Prompt: "go on", Resume: "a-9"},
				{Label: "typed", Type: "review", Prompt: "go on", Resume: "a-8"},
			}},
		},
		{
			name: "null optional fields are left unset",
			args: `{"concurrency":null,"tasks":[{"label":"x","prompt":"p","max_time":null,"max_turns":null,"context":null,"tools":null}]}`,
			want: agenttypes.DelegateRequest{Concurrency: 2, Tasks: []agenttypes.ChildTask{{Label: "x", Type: "explore", Prompt: "p"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := &fakeTree{}
			_, err := callTree(context.Background(), tools.Delegate(), tree, t.TempDir(), tt.args)
			require.NoError(t, err)
			require.Len(t, tree.delegated, 1)
			assert.Equal(t, tt.want, tree.delegated[0])
		})
	}
}

func TestDelegateRejectsBadArgs(t *testing.T) {
	task := func(extra string) string {
		return `{"tasks":[{"label":"a","prompt":"p"` + extra + `}]}`
	}
	many := func(n int, each string) string {
		var tasks []string
		for i := range n {
			tasks = append(tasks, fmt.Sprintf(each, i))
		}
		return strings.Join(tasks, ",")
	}
	elevenFiles := `"` + strings.Repeat(`a.go","`, 10) + `a.go"`
	tests := []struct {
		name, args, want string
	}{
		{"no tasks", `{"tasks":[]}`, `missing "tasks": give 1 to 8 tasks`},
		{"tasks left out", `{}`, `missing "tasks"`},
		{"9 tasks", `{"tasks":[` + many(9, `{"label":"t%d","prompt":"p"}`) + `]}`, "9 tasks is too many: give at most 8 per call"},
		{"empty prompt", `{"tasks":[{"label":"a","prompt":""}]}`, `tasks[0] ("a"): prompt is empty`},
		{"blank prompt", `{"tasks":[{"label":"a","prompt":"p"},{"label":"b","prompt":" \n\t"}]}`, `tasks[1] ("b"): prompt is empty`},
		{"prompt left out", `{"tasks":[{"label":"a"}]}`, `prompt is empty`},
		{"label too long", `{"tasks":[{"label":"abcdefghijklmnopqrstuvwxyz0123456","prompt":"p"}]}`, "is 33 characters; use at most 32"},
		{"no label", `{"tasks":[{"prompt":"p"}]}`, `tasks[0]: missing "label"`},
		{"label on two lines", `{"tasks":[{"label":"a\nb","prompt":"p"}]}`, "holds a control character"},
		{"same label twice", `{"tasks":[{"label":"a","prompt":"p"},{"label":"a","prompt":"q"}]}`, `tasks[1] ("a"): label "a" is also the label of tasks[0]`},
		{"concurrency 5", `{"concurrency":5,"tasks":[{"label":"a","prompt":"p"}]}`, "concurrency is 5; give 1 to 4 (default 2)"},
		{"concurrency 0", `{"concurrency":0,"tasks":[{"label":"a","prompt":"p"}]}`, "concurrency is 0; give 1 to 4"},
		{"bad mode", `{"mode":"async","tasks":[{"label":"a","prompt":"p"}]}`, `mode is "async"; use "parallel"`},
		{"bad return", `{"return":"yaml","tasks":[{"label":"a","prompt":"p"}]}`, `return is "yaml"; use "markdown" (the default) or "json"`},
		{"max_output_tokens 50", task(`,"max_output_tokens":50`), "max_output_tokens is 50; give 100 to 16384"},
		{"max_output_tokens too high", task(`,"max_output_tokens":16385`), "max_output_tokens is 16385; give 100 to 16384"},
		{"11 context files", task(`,"context":[` + elevenFiles + `]`), "context lists 11 files; give at most 10"},
		{"max_time without unit", task(`,"max_time":"90"`), `max_time "90" is not a duration; give one with its unit`},
		{"max_time as a number", task(`,"max_time":90`), `max_time is 90; give a duration string with its unit, such as "90s"`},
		{"max_time negative", task(`,"max_time":"-1s"`), `max_time is "-1s"; give a positive duration`},
		{"max_tokens 0", task(`,"max_tokens":0`), "max_tokens is 0; give a positive number"},
		{"max_turns negative", task(`,"max_turns":-2`), "max_turns is -2; give a positive number"},
		{"max_tool_calls 0", task(`,"max_tool_calls":0`), "max_tool_calls is 0; give a positive number"},
		{"max_cost_usd 0", task(`,"max_cost_usd":0`), "max_cost_usd is 0; give an amount above 0"},
		{"max_turns as a string", task(`,"max_turns":"5"`), `tasks[0]: argument "max_turns" must be an integer, not a JSON string`},
		{"max_cost_usd as a string", task(`,"max_cost_usd":"1"`), `argument "max_cost_usd" must be a number, not a JSON string`},
		{"unknown task field", task(`,"timeout":"5m"`), `tasks[0]: unknown argument "timeout"; valid arguments are label, type, prompt, context, tools, model, max_output_tokens, max_tokens, max_time, max_tool_calls, max_turns, max_cost_usd, resume`},
		{"unknown top field", `{"tasks":[{"label":"a","prompt":"p"}],"parallel":true}`, `unknown argument "parallel"; valid arguments are tasks, concurrency, mode, return`},
		{"task not an object", `{"tasks":["find the login code"]}`, "tasks[0] must be an object with fields label, type, prompt"},
		{"tasks not an array", `{"tasks":"find it"}`, `argument "tasks" must be an array of objects, not a JSON string`},
		{"empty tool name", task(`,"tools":["read",""]`), "tools holds an empty name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := &fakeTree{}
			out, err := callTree(context.Background(), tools.Delegate(), tree, t.TempDir(), tt.args)
			require.Error(t, err, "got output %q", out)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), "delegate: "), "argument errors name the tool: %s", err)
			assert.Empty(t, tree.delegated, "nothing is spawned for bad arguments")
		})
	}
}

func TestDelegateWithoutManager(t *testing.T) {
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: t.TempDir()})
	for _, tool := range tools.Delegation() {
		_, err := tool.Call(ctx, json.RawMessage(`{}`))
		require.Error(t, err)
		assert.Equal(t, tool.Spec().Name+" works only inside an agent run by a manager", err.Error())
	}
	_, err := tools.Delegate().Call(context.Background(), json.RawMessage(`{"tasks":[{"label":"a","prompt":"p"}]}`))
	assert.EqualError(t, err, "delegate works only inside an agent run by a manager", "no Env at all")
}

func TestDelegateTreeErrors(t *testing.T) {
	refused := fmt.Errorf("%w: agent a-0 is at depth 1, the deepest delegation goes; do the work yourself", agenttypes.ErrDelegation)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"limit", refused, "cannot spawn subagents: delegation refused: agent a-0 is at depth 1, the deepest delegation goes; do the work yourself"},
		{"no model", errors.New("no API key for provider openai: set OPENAI_API_KEY"), "cannot spawn subagents: no API key for provider openai: set OPENAI_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := &fakeTree{delegateErr: tt.err}
			_, err := callTree(context.Background(), tools.Delegate(), tree, t.TempDir(), `{"tasks":[{"label":"a","prompt":"p"}]}`)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.ErrorIs(t, err, tt.err, "the tree's error stays reachable with errors.Is")
		})
	}
}

func TestTreeToolsCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tree := &fakeTree{}
	for _, tool := range tools.Delegation() {
		_, err := callTree(ctx, tool, tree, t.TempDir(), `{"tasks":[{"label":"a","prompt":"p"}],"group":"g","question":"q"}`)
		require.ErrorIs(t, err, context.Canceled, tool.Spec().Name)
	}
	assert.Empty(t, tree.delegated)
	assert.Empty(t, tree.collected)
	assert.Empty(t, tree.asked)

	// A tree call ended by the agent's own context is passed on as is, not
	// as a refusal.
	ctx, cancel = context.WithCancel(context.Background())
	tree = &fakeTree{delegateErr: context.Canceled}
	cancel()
	_, err := tools.Delegate().Call(agenttypes.WithEnv(ctx, &agenttypes.Env{Tree: tree}), nil)
	require.ErrorIs(t, err, context.Canceled)
}

// writeFiles writes files (slash paths → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
}

// paddedLines returns n lines "line N: " padded to width bytes each.
func paddedLines(n, width int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		l := fmt.Sprintf("line %d: ", i)
		b.WriteString(l + strings.Repeat("x", width-len(l)-1) + "\n")
	}
	return b.String()
}

func TestDelegateContextFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cart/cart.go":   "package cart\n\nfunc Total() int { return 0 }",
		"empty.txt":      "",
		"big.txt":        paddedLines(1000, 40), // 40,000 bytes
		"one-line.txt":   strings.Repeat("é", 10_000),
		"docs/notes.md":  "# Notes\n",
		"long-lines.txt": "short first line\n" + strings.Repeat("y", 20_000) + "\n",
	})
	tree := &fakeTree{}
	_, err := callTree(context.Background(), tools.Delegate(), tree, dir,
		`{"tasks":[{"label":"a","prompt":"find Total","context":["cart/cart.go","./empty.txt","big.txt","one-line.txt","cart/../cart/cart.go","long-lines.txt"]},
			{"label":"b","prompt":"no context"},
			{"label":"c","prompt":"absolute","context":[`+fmt.Sprintf("%q", filepath.Join(dir, "docs", "notes.md"))+`]}]}`)
	require.NoError(t, err)
	require.Len(t, tree.delegated, 1)
	tasks := tree.delegated[0].Tasks

	p := tasks[0].Prompt
	assert.True(t, strings.HasPrefix(p, "Context files, read for you from the repository:\n\n<file path=\"cart/cart.go\">\npackage cart\n\nfunc Total() int { return 0 }\n</file>\n\n"), p[:200])
	assert.True(t, strings.HasSuffix(p, "</file>\n\nYour task:\n\nfind Total"))
	assert.Equal(t, 1, strings.Count(p, `<file path="cart/cart.go">`), "a file named twice is put in once")
	assert.True(t, strings.Contains(p, "<file path=\"empty.txt\">\n(empty file)\n</file>"), "an empty file says so")

	// big.txt is cut at a line end within 16 KiB, and says where the rest starts.
	big := between(t, p, `<file path="big.txt">`+"\n", "</file>")
	shown, marker, ok := strings.Cut(big, "[... cut here: ")
	require.True(t, ok, "cut marker in %q", big[max(0, len(big)-200):])
	assert.LessOrEqual(t, len(shown), 16<<10)
	assert.True(t, paddedLines(409, 40) == shown, "whole lines, as many as fit in 16 KiB: got %d bytes", len(shown))
	assert.Equal(t, "16 KiB of 39.1 KiB shown; read the file from line 410 (offset=410) for the rest]\n", marker)

	// A file of one long line is cut inside the line, at a rune boundary.
	one := between(t, p, `<file path="one-line.txt">`+"\n", "</file>")
	shown, marker, ok = strings.Cut(one, "\n[... cut here: ")
	require.True(t, ok)
	assert.True(t, strings.Repeat("é", 8192) == shown, "8192 runes of two bytes, got %d bytes", len(shown))
	assert.Equal(t, "16 KiB of 19.5 KiB shown; the rest is in the file]\n", marker)

	// A long line after a short one is cut inside, not dropped whole.
	long := between(t, p, `<file path="long-lines.txt">`+"\n", "</file>")
	shown, marker, ok = strings.Cut(long, "\n[... cut here: ")
	require.True(t, ok)
	assert.True(t, "short first line\n"+strings.Repeat("y", 16<<10-17) == shown, "16 KiB shown, got %d bytes", len(shown))
	assert.Equal(t, "16 KiB of 19.5 KiB shown; read the file from line 2 (offset=2) for the rest]\n", marker)

	assert.Equal(t, "no context", tasks[1].Prompt, "a task without context keeps its prompt as it is")
	assert.Equal(t, "Context files, read for you from the repository:\n\n<file path=\"docs/notes.md\">\n# Notes\n</file>\n\nYour task:\n\nabsolute", tasks[2].Prompt,
		"an absolute path inside the root is read, and shown relative to it")
}

func TestDelegateContextTotalCap(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	var paths []string
	for i := range 6 {
		name := fmt.Sprintf("f%d.txt", i)
		files[name] = paddedLines(500, 50) // 25,000 bytes: each is cut at 16 KiB
		paths = append(paths, `"`+name+`"`)
	}
	writeFiles(t, dir, files)
	tree := &fakeTree{}
	_, err := callTree(context.Background(), tools.Delegate(), tree, dir,
		`{"tasks":[{"label":"a","prompt":"p","context":[`+strings.Join(paths, ",")+`]}]}`)
	require.NoError(t, err)
	p := tree.delegated[0].Tasks[0].Prompt
	assert.Less(t, len(p), 64<<10+2048, "the context stays within 64 KiB and its markers")
	assert.Equal(t, 4, strings.Count(p, "[... cut here: "), "four files reach 64 KiB")
	assert.True(t, strings.Contains(p, "<file path=\"f4.txt\">\n[not included: the context files of this task reached 64 KiB in all; read f4.txt yourself]\n</file>"), "f4 left out with a note")
	assert.True(t, strings.Contains(p, "<file path=\"f5.txt\">\n[not included:"), "f5 left out with a note")
}

func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, after, ok := strings.Cut(s, start)
	require.True(t, ok, "%q not found", start)
	inner, _, ok := strings.Cut(after, end)
	require.True(t, ok, "%q not found after %q", end, start)
	return inner
}

func TestDelegateContextRefused(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "repo")
	writeFiles(t, parent, map[string]string{"secret.txt": "s3cret", "repo/ok.txt": "fine", "repo/bin.dat": "a\x00b", "repo/sub/x.txt": "x"})
	require.NoError(t, os.Symlink(filepath.Join(parent, "secret.txt"), filepath.Join(dir, "link.txt")))
	tests := []struct {
		path, want string
	}{
		{"../secret.txt", "path is outside the root"},
		{filepath.Join(parent, "secret.txt"), "path is outside the root"},
		{"link.txt", "outside"},
		{"missing.txt", "missing.txt"},
		{"sub", "not a regular file"},
		{"bin.dat", "context file bin.dat is a binary file"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			tree := &fakeTree{}
			args, err := json.Marshal(map[string]any{"tasks": []any{
				map[string]any{"label": "ok", "prompt": "p", "context": []string{"ok.txt"}},
				map[string]any{"label": "bad", "prompt": "p", "context": []string{"ok.txt", tt.path}},
			}})
			require.NoError(t, err)
			_, err = callTree(context.Background(), tools.Delegate(), tree, dir, string(args))
			require.Error(t, err)
			assert.Contains(t, err.Error(), `delegate: tasks[1] ("bad"): `)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "s3cret")
			assert.Empty(t, tree.delegated, "nothing is spawned when a context file is refused")
		})
	}
	t.Run("no directory", func(t *testing.T) {
		tree := &fakeTree{}
		_, err := callTree(context.Background(), tools.Delegate(), tree, "", `{"tasks":[{"label":"a","prompt":"p","context":["ok.txt"]}]}`)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "context files need the agent's directory")
	})
}

// sampleResults are four children as a manager reports them, one of each
// status that ends a run.
func sampleResults() []agenttypes.ChildResult {
	return []agenttypes.ChildResult{
		{
			Label: "security", ID: "ag-7f3a1", Type: "explore", Model: "openai:gpt-4o-mini", Status: agenttypes.ChildOK, Reason: "done",
			Usage: agenttypes.Usage{InputTokens: 45_210, OutputTokens: 2_130, CostUSD: 0.0123}, ToolCalls: 12, Turns: 6, Duration: 41_270 * time.Millisecond,
			Report: "Sessions are checked in one place; API tokens bypass it.\n\n## Findings\n\n1. `auth/session.go:42` — `if !s.Valid() { return ErrExpired }` (relevance 0.9)\n2. `api/token.go:17` — tokens are compared with `==` (relevance 0.7)\n",
		},
		{
			Label: "correctness", ID: "ag-7f3a2", Type: "explore", Model: "openai:gpt-4o-mini", Status: agenttypes.ChildPartial, Reason: "budget_tool_calls",
			Usage: agenttypes.Usage{InputTokens: 23_000, OutputTokens: 890}, ToolCalls: 20, Turns: 9, Duration: 92_400 * time.Millisecond,
			Report: "I checked cart/ and had not started on payment/.\n\nNotes:\n- cart/cart.go:120 ignores the error of Apply\n- payment/ still to check",
		},
		{
			Label: "refactor", ID: "ag-7f3a3", Type: "general", Model: "openai:gpt-4o", Status: agenttypes.ChildFailed, Reason: "error",
			Duration: 3 * time.Millisecond, Error: "model call failed: 429 Too Many Requests: retry later",
		},
		{
			Label: "docs", ID: "ag-7f3a4", Type: "explore", Model: "openai:gpt-4o-mini", Status: agenttypes.ChildCancelled, Reason: "cancelled",
			Usage: agenttypes.Usage{InputTokens: 1_200}, Turns: 1, Duration: 800 * time.Millisecond,
		},
	}
}

func delegateSample(t *testing.T, ret string) string {
	t.Helper()
	results := sampleResults()
	tree := &fakeTree{delegateResp: &agenttypes.DelegateResponse{Group: "g-1", Results: results}}
	var tasks []string
	for _, r := range results {
		tasks = append(tasks, fmt.Sprintf(`{"label":%q,"prompt":"p"}`, r.Label))
	}
	out, err := callTree(context.Background(), tools.Delegate(), tree, t.TempDir(),
		`{"return":"`+ret+`","tasks":[`+strings.Join(tasks, ",")+`]}`)
	require.NoError(t, err)
	return out
}

func TestDelegateMarkdown(t *testing.T) {
	out := delegateSample(t, "markdown")
	golden(t, "delegate.md.golden", out)
	assert.True(t, strings.HasPrefix(out, "# Subagents complete: 1/4 (1 partial, 1 failed, 1 cancelled)\n"))
	// Sections in input order.
	var order []string
	for _, line := range strings.Split(out, "\n") {
		if label, ok := strings.CutPrefix(line, "## ["); ok {
			order = append(order, label[:strings.IndexByte(label, ']')])
		}
	}
	assert.Equal(t, []string{"security", "correctness", "refactor", "docs"}, order)
}

func TestDelegateJSON(t *testing.T) {
	out := delegateSample(t, "json")
	golden(t, "delegate.json.golden", out)
	var got struct {
		Completed, Partial, Failed, Cancelled, Total int
		Results                                      []struct {
			Label, Status, Report string
			DurationMS            int64 `json:"duration_ms"`
			Usage                 agenttypes.Usage
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, [5]int{1, 1, 1, 1, 4}, [5]int{got.Completed, got.Partial, got.Failed, got.Cancelled, got.Total})
	require.Len(t, got.Results, 4)
	assert.Equal(t, "correctness", got.Results[1].Label)
	assert.Equal(t, "partial", got.Results[1].Status)
	assert.Contains(t, got.Results[1].Report, "Notes:\n- cart/cart.go:120", "a partial child's notes reach the parent")
	assert.Equal(t, int64(92_400), got.Results[1].DurationMS)
	assert.Equal(t, 45_210, got.Results[0].Usage.InputTokens)
}

func TestDelegateCutsLongReports(t *testing.T) {
	long := strings.Repeat("finding line of a long report\n", 80<<10/30) // 80 KiB
	tree := &fakeTree{delegateResp: &agenttypes.DelegateResponse{Results: []agenttypes.ChildResult{
		{Label: "long", ID: "ag-1", Status: agenttypes.ChildOK, Report: long},
		{Label: "short", ID: "ag-2", Status: agenttypes.ChildOK, Report: "short report"},
	}}}
	args := `{"tasks":[{"label":"long","prompt":"p"},{"label":"short","prompt":"p"}]}`
	out, err := callTree(context.Background(), tools.Delegate(), tree, t.TempDir(), args)
	require.NoError(t, err)
	assert.Contains(t, out, "\n\n[report cut at 24 KiB of 80 KiB. The full report is the result of agent ag-1: `troupe runs show ag-1` on the command line, Manager.Wait(ctx, \"ag-1\") from Go. To get more of it here, delegate with resume: \"ag-1\" and ask for the part you need.]\n")
	assert.Less(t, len(out), 25<<10+1024)
	assert.Contains(t, out, "\nshort report", "a short report is kept whole")
	assert.Equal(t, 1, strings.Count(out, "[report cut at"))
	section := between(t, out, "Agent ID: ag-1\n\n", "\n\n[report cut")
	assert.True(t, strings.HasPrefix(long, section+"\n"), "the report is cut at a line end")

	var js struct {
		Results []struct {
			Report    string `json:"report"`
			ReportCut bool   `json:"report_cut"`
		} `json:"results"`
	}
	out, err = callTree(context.Background(), tools.Delegate(), tree, t.TempDir(), args[:1]+`"return":"json",`+args[1:])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &js))
	assert.True(t, js.Results[0].ReportCut)
	assert.Contains(t, js.Results[0].Report, "[report cut at 24 KiB of 80 KiB.")
	assert.False(t, js.Results[1].ReportCut)
	assert.Equal(t, "short report", js.Results[1].Report)
}

func TestDelegateBoundsTheWholeResult(t *testing.T) {
	var results []agenttypes.ChildResult
	var tasks []string
	for i := range 8 {
		label := fmt.Sprintf("t%d", i)
		report := strings.Repeat("ü", (i+1)*2<<10) // 4 to 32 KiB, in two-byte runes
		results = append(results, agenttypes.ChildResult{Label: label, ID: "ag-" + label, Status: agenttypes.ChildOK, Report: report})
		tasks = append(tasks, fmt.Sprintf(`{"label":%q,"prompt":"p"}`, label))
	}
	tree := &fakeTree{delegateResp: &agenttypes.DelegateResponse{Results: results}}
	out, err := callTree(context.Background(), tools.Delegate(), tree, t.TempDir(), `{"tasks":[`+strings.Join(tasks, ",")+`]}`)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), 96<<10, "eight long reports still fit in about 96 KiB")
	assert.Contains(t, out, "\n"+strings.Repeat("ü", 2<<10)+"\n", "the shortest report is whole")
	assert.NotContains(t, out, "of 4 KiB.")
	assert.Contains(t, out, "of 32 KiB.", "the longest is cut, and says so")
	assert.Equal(t, 5, strings.Count(out, "[report cut at"), "the five longest share what the three shortest left")
	assert.True(t, strings.ToValidUTF8(out, "?") == out, "cuts fall between runes")
}

func TestDelegateBackground(t *testing.T) {
	args := `{"mode":"background","tasks":[{"label":"auth","prompt":"p"},{"label":"db","prompt":"q"}]}`
	tree := &fakeTree{}
	out, err := callTree(context.Background(), tools.Delegate(), tree, t.TempDir(), args)
	require.NoError(t, err)
	assert.True(t, tree.delegated[0].Background)
	assert.Equal(t, "Started group g-1 with 2 subagents:\n- [auth] a-1\n- [db] a-2\nCall collect with group \"g-1\" to get their results (wait up to 600 seconds for them), or with cancel: true to stop them.", out)

	out, err = callTree(context.Background(), tools.Delegate(), tree, t.TempDir(), args[:1]+`"return":"json",`+args[1:])
	require.NoError(t, err)
	assert.JSONEq(t, `{"group":"g-1","tasks":[{"label":"auth","id":"a-1"},{"label":"db","id":"a-2"}]}`, out)
}
