package offline

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
)

func toolNames(calls []llms.ToolCall) []string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.FunctionCall.Name
	}
	return names
}

func TestConversation(t *testing.T) {
	root := writeFixture(t)
	tests := []struct {
		name     string
		task     string
		wantPath string
		wantLine string // text of the first finding's line
	}{
		{"method definition", "Where is Spawn handled?", "manager/spawn.go",
			"func (m *Manager) Spawn(ctx context.Context, typ, task string) (*Agent, error) {"},
		{"camelCase function", "how does parseBudget work?", "agenttypes/budget.go",
			"func parseBudget(s string) (Budget, error) {"},
		{"quoted error message", `where does the error "unknown agent type" come from?`, "manager/errors.go",
			`var ErrUnknownType = errors.New("unknown agent type")`},
		{"identifier in backticks", "what returns `ErrUnknownType`?", "manager/errors.go",
			`var ErrUnknownType = errors.New("unknown agent type")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := converse(t, New(), root, tt.task, allTools)
			require.Len(t, r.choices, 3, "search, read, answer")

			search := r.choices[0]
			assert.Equal(t, "tool_calls", search.StopReason)
			names := toolNames(search.ToolCalls)
			assert.Equal(t, toolGlob, names[0])
			assert.NotContains(t, names[1:], toolGlob)
			for i, c := range search.ToolCalls {
				assert.Equal(t, "call_1_"+itoa(i), c.ID)
				assert.Equal(t, "function", c.Type)
			}
			require.NotNil(t, search.FuncCall)
			assert.Equal(t, *search.ToolCalls[0].FunctionCall, *search.FuncCall)

			read := r.choices[1]
			assert.Equal(t, "tool_calls", read.StopReason)
			require.NotEmpty(t, read.ToolCalls)
			assert.LessOrEqual(t, len(read.ToolCalls), maxReadFiles)
			for _, c := range read.ToolCalls {
				assert.Equal(t, toolRead, c.FunctionCall.Name)
			}
			var first struct {
				Path   string `json:"path"`
				Offset int    `json:"offset"`
				Limit  int    `json:"limit"`
			}
			require.NoError(t, json.Unmarshal([]byte(read.ToolCalls[0].FunctionCall.Arguments), &first))
			assert.Equal(t, tt.wantPath, first.Path, "the best file is read first")
			assert.Positive(t, first.Limit)

			final := r.final()
			assert.Equal(t, "stop", final.StopReason)
			assert.Empty(t, final.ToolCalls)
			assert.True(t, strings.HasPrefix(final.Content, Disclaimer+"\n"), final.Content)
			assert.Contains(t, final.Content, "\n## Findings\n")

			findings := ParseFindings(final.Content)
			require.NotEmpty(t, findings, final.Content)
			assert.Equal(t, tt.wantPath, findings[0].Path, final.Content)
			assert.Equal(t, signature(tt.wantLine), findings[0].Symbol, "the finding is the definition")
			assert.Equal(t, fixtureLine(t, tt.wantPath, findings[0].Line), tt.wantLine)
			assert.GreaterOrEqual(t, findings[0].EndLine, findings[0].Line)
			assert.NotEmpty(t, findings[0].Snippet)
			assert.InDelta(t, 1.0, findings[0].Relevance, 1e-9)
			for i := 1; i < len(findings); i++ {
				assert.LessOrEqual(t, findings[i].Relevance, findings[i-1].Relevance)
				assert.Greater(t, findings[i].Relevance, 0.0)
			}
			assert.LessOrEqual(t, len(findings), maxFindings)
		})
	}
}

func TestConversationRanksDefinitionAboveVendorAndTests(t *testing.T) {
	root := writeFixture(t)
	final := converse(t, New(), root, "Where is Spawn handled?", allTools).final()
	findings := ParseFindings(final.Content)
	pos := func(path string) int {
		for i, f := range findings {
			if f.Path == path {
				return i
			}
		}
		return len(findings)
	}
	assert.Less(t, pos("manager/spawn.go"), pos("vendor/example.com/pool/spawn.go"))
	assert.Less(t, pos("manager/spawn.go"), pos("manager/spawn_test.go"))
	assert.Less(t, pos("manager/spawn.go"), pos("docs/spawning.md"))
}

func itoa(i int) string { return strconv.Itoa(i) }

func fixtureLine(t *testing.T, path string, line int) string {
	t.Helper()
	lines := strings.Split(fixture[path], "\n")
	require.Less(t, line-1, len(lines))
	return strings.TrimSpace(lines[line-1])
}

func TestOwnOutputRoundTrip(t *testing.T) {
	root := writeFixture(t)
	task := "Where is Spawn handled?"
	final := converse(t, New(), root, task, allTools).final()
	findings := ParseFindings(final.Content)
	require.NotEmpty(t, findings)

	// Rendering the parsed findings again gives the same answer.
	a := answer{searched: grepTerms(extractTerms(task))}
	for _, f := range findings {
		a.findings = append(a.findings, scored{Finding: f})
	}
	assert.Equal(t, final.Content, a.render(len(findings), false))
}

func TestDeterministic(t *testing.T) {
	root := writeFixture(t)
	task := "How is the token budget enforced when Spawn starts an agent?"
	first := converse(t, New(), root, task, allTools)
	second := converse(t, New(), root, task, allTools)
	assert.Equal(t, first.msgs, second.msgs)
	assert.Equal(t, first.choices, second.choices)
}

func TestConcurrentUse(t *testing.T) {
	root := writeFixture(t)
	m := New()
	tasks := []string{"Where is Spawn handled?", "how does parseBudget work?", "what returns `ErrUnknownType`?"}
	want := make([]string, len(tasks))
	for i, task := range tasks {
		want[i] = converse(t, m, root, task, allTools).final().Content
	}
	var wg sync.WaitGroup
	got := make([]string, 4*len(tasks))
	for i := range got {
		wg.Go(func() {
			got[i] = converse(t, m, root, tasks[i%len(tasks)], allTools).final().Content
		})
	}
	wg.Wait()
	for i := range got {
		assert.Equal(t, want[i%len(tasks)], got[i])
	}
}

func TestTokenCounts(t *testing.T) {
	root := writeFixture(t)
	r := converse(t, New(), root, "Where is Spawn handled?", allTools)
	// Every choice reports ceil(bytes/4) of the messages it saw and of
	// what it wrote.
	seen := 2 // system and human messages
	for _, c := range r.choices {
		in := 0
		for _, msg := range r.msgs[:seen] {
			for _, p := range msg.Parts {
				in += partChars(p)
			}
		}
		out := len(c.Content)
		for _, call := range c.ToolCalls {
			out += len(call.FunctionCall.Name) + len(call.FunctionCall.Arguments)
		}
		assert.Equal(t, (in+3)/4, c.GenerationInfo["PromptTokens"])
		assert.Equal(t, (out+3)/4, c.GenerationInfo["CompletionTokens"])
		assert.Equal(t, (in+3)/4+(out+3)/4, c.GenerationInfo["TotalTokens"])
		seen += 1 + len(c.ToolCalls)
	}
}

func TestMaxTokens(t *testing.T) {
	root := writeFixture(t)
	task := "Where is Spawn handled?"
	r := converse(t, New(), root, task, allTools)
	full := ParseFindings(r.final().Content)
	require.Greater(t, len(full), 3)
	// The messages up to the final answer.
	msgs := r.msgs

	fullTokens := r.final().GenerationInfo["CompletionTokens"].(int)
	tests := []struct {
		name         string
		maxTokens    int
		wantFindings int // -1: fewer than all, at least one
	}{
		{"no limit", 0, len(full)},
		{"roomy", fullTokens, len(full)},
		{"tight", fullTokens - 10, -1},
		{"disclaimer only", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := New().GenerateContent(context.Background(), msgs, llms.WithTools(allTools), llms.WithMaxTokens(tt.maxTokens))
			require.NoError(t, err)
			c := resp.Choices[0]
			assert.True(t, strings.HasPrefix(c.Content, Disclaimer+"\n"))
			got := ParseFindings(c.Content)
			switch tt.wantFindings {
			case -1:
				assert.Less(t, len(got), len(full))
				assert.NotEmpty(t, got)
				assert.Contains(t, c.Content, "omitted to fit the token limit")
				assert.LessOrEqual(t, c.GenerationInfo["CompletionTokens"], tt.maxTokens)
				assert.Equal(t, full[:len(got)], got, "findings are dropped from the end")
			default:
				assert.Len(t, got, tt.wantFindings)
			}
		})
	}

	t.Run("tool calls are trimmed too", func(t *testing.T) {
		start := r.msgs[:2]
		resp, err := New().GenerateContent(context.Background(), start, llms.WithTools(allTools), llms.WithMaxTokens(15))
		require.NoError(t, err)
		c := resp.Choices[0]
		require.Len(t, c.ToolCalls, 1)
		assert.Empty(t, c.Content)
	})
}

func TestContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Where is Spawn handled?")}
	resp, err := New().GenerateContent(ctx, msgs, llms.WithTools(allTools))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, resp)
}

func TestGrepNotOffered(t *testing.T) {
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Where is Spawn handled?")}
	_, err := New().GenerateContent(context.Background(), msgs, llms.WithTools(specs(toolRead, toolGlob)))
	require.ErrorIs(t, err, ErrGrepNotOffered)
	assert.Contains(t, err.Error(), "use a language model")
	assert.NotContains(t, err.Error(), "--model", "the library speaks in library terms")

	_, err = New().Call(context.Background(), "Where is Spawn handled?")
	assert.ErrorIs(t, err, ErrGrepNotOffered)
}

func TestCallAnswersWithTools(t *testing.T) {
	out, err := New().Call(context.Background(), "where is it?", llms.WithTools(allTools))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, Disclaimer))
	assert.Contains(t, out, "No search terms")
}

func TestOnlyGrepOffered(t *testing.T) {
	root := writeFixture(t)
	r := converse(t, New(), root, "Where is Spawn handled?", specs(toolGrep))
	require.Len(t, r.choices, 2, "search, then answer: nothing to read with")
	for _, name := range toolNames(r.choices[0].ToolCalls) {
		assert.Equal(t, toolGrep, name)
	}
	findings := ParseFindings(r.final().Content)
	require.NotEmpty(t, findings)
	assert.Equal(t, "manager/spawn.go", findings[0].Path)
}

func TestNoMatches(t *testing.T) {
	root := writeFixture(t)
	r := converse(t, New(), root, "where is the frobnicateWidgets retries handler?", allTools)
	require.Len(t, r.choices, 2, "nothing to read")
	final := r.final().Content
	assert.Empty(t, ParseFindings(final))
	assert.Contains(t, final, "No matches.")
	assert.Contains(t, final, "`frobnicate_widgets`")
}

func TestNoTerms(t *testing.T) {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "prompt"),
		llms.TextParts(llms.ChatMessageTypeHuman, "Where is it done?"),
	}
	resp, err := New().GenerateContent(context.Background(), msgs, llms.WithTools(allTools))
	require.NoError(t, err)
	c := resp.Choices[0]
	assert.Empty(t, c.ToolCalls)
	assert.Equal(t, "stop", c.StopReason)
	assert.Contains(t, c.Content, "No search terms")
}

func TestReadResponsesWithoutEchoedCalls(t *testing.T) {
	// A loop that forwards tool responses but not the assistant's tool
	// calls still gets the same answer: read IDs map to the read plan.
	root := writeFixture(t)
	r := converse(t, New(), root, "Where is Spawn handled?", allTools)
	var msgs []llms.MessageContent
	for _, msg := range r.msgs {
		if msg.Role != llms.ChatMessageTypeAI {
			msgs = append(msgs, msg)
		}
	}
	resp, err := New().GenerateContent(context.Background(), msgs, llms.WithTools(allTools))
	require.NoError(t, err)
	assert.Equal(t, r.final().Content, resp.Choices[0].Content)
}

func TestStreamingFunc(t *testing.T) {
	var streamed strings.Builder
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Where is it done?")}
	resp, err := New().GenerateContent(context.Background(), msgs, llms.WithTools(allTools),
		llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			streamed.Write(chunk)
			return nil
		}))
	require.NoError(t, err)
	assert.Equal(t, resp.Choices[0].Content, streamed.String())

	stop := errors.New("stop")
	_, err = New().GenerateContent(context.Background(), msgs, llms.WithTools(allTools),
		llms.WithStreamingFunc(func(context.Context, []byte) error { return stop }))
	assert.ErrorIs(t, err, stop)
}

func TestRetrievalOnly(t *testing.T) {
	var m llms.Model = New()
	r, ok := m.(interface{ RetrievalOnly() bool })
	require.True(t, ok)
	assert.True(t, r.RetrievalOnly())
	assert.Equal(t, "offline", Name)
}

func TestParseToolOutput(t *testing.T) {
	grep := "a/b.go:12:func X() {\n... 3 more matches not shown\nno matches\nweird line\n./c.go:3:x := 1:2\n"
	assert.Equal(t, []hit{
		{path: "a/b.go", line: 12, text: "func X() {"},
		{path: "c.go", line: 3, text: "x := 1:2"},
	}, parseGrep(grep))

	glob := "manager/spawn.go\n./docs/a b/c.md\nno matches\n... 4 more not shown\nerror: bad pattern\n\n"
	assert.Equal(t, []string{"manager/spawn.go", "docs/a b/c.md"}, parseGlob(glob))

	read := "     9\t// Spawn\n    10\tfunc Spawn() {\n(end of file)\n"
	assert.Equal(t, []hit{
		{path: "p.go", line: 9, text: "// Spawn"},
		{path: "p.go", line: 10, text: "func Spawn() {"},
	}, parseRead("p.go", read))
}

func TestDefName(t *testing.T) {
	tests := []struct{ line, want string }{
		{"func (m *Manager) Spawn(ctx context.Context) error {", "Spawn"},
		{"func parseBudget(s string) (Budget, error) {", "parseBudget"},
		{"type Agent struct {", "Agent"},
		{"\tAgent struct {", "Agent"},
		{"class Loader(Base):", "Loader"},
		{"    def load(self):", "load"},
		{"export async function fetchAll() {", "fetchAll"},
		{"pub fn spawn() -> Agent {", "spawn"},
		{"budget, err := parseBudget(s)", "budget"},
		{"const MaxDepth = 3", "MaxDepth"},
		{"public static final class Spawner {", "Spawner"},
		{"m.Spawn(ctx)", ""},
		{"// Spawn starts an agent", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, defName(tt.line), tt.line)
	}
}

func TestGlobPattern(t *testing.T) {
	assert.Equal(t, "**/*{spawn,Spawn}*", globPattern(extractTerms("Where is Spawn handled?")))
	assert.Equal(t, "**/*{parsebudget,parseBudget,parse_budget,budget,parse}*", globPattern(extractTerms("how does parseBudget work")))
	assert.Equal(t, "", globPattern(extractTerms(`"a b c"`)))
}
