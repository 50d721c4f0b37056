package offline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

var delegateTools = specs(toolRead, toolGrep, toolGlob, "ls", toolDelegate)

const threeQuestions = `Please look into these:
1. Where is Spawn handled?
2. How does parseBudget work?
3. Where does the error "unknown agent type" come from?`

var threeAsked = []string{
	"Where is Spawn handled?",
	"How does parseBudget work?",
	`Where does the error "unknown agent type" come from?`,
}

func taskMessages(task string) []llms.MessageContent {
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You explore a repository and report findings with file:line references."),
		llms.TextParts(llms.ChatMessageTypeHuman, task),
	}
}

func generate(t *testing.T, msgs []llms.MessageContent, opts ...llms.CallOption) *llms.ContentChoice {
	t.Helper()
	resp, err := New().GenerateContent(context.Background(), msgs, opts...)
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	return resp.Choices[0]
}

func decodeDelegate(t *testing.T, c llms.ToolCall) delegateArgs {
	t.Helper()
	require.Equal(t, toolDelegate, c.FunctionCall.Name)
	var args delegateArgs
	dec := json.NewDecoder(strings.NewReader(c.FunctionCall.Arguments))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&args), c.FunctionCall.Arguments)
	return args
}

func TestDelegateTurnOneExploreTaskPerQuestion(t *testing.T) {
	c := generate(t, taskMessages(threeQuestions), llms.WithTools(delegateTools))
	assert.Equal(t, "tool_calls", c.StopReason)
	require.Len(t, c.ToolCalls, 1, "one delegate call, no search of its own")
	require.NotNil(t, c.FuncCall)
	assert.Equal(t, *c.ToolCalls[0].FunctionCall, *c.FuncCall)

	args := decodeDelegate(t, c.ToolCalls[0])
	assert.Equal(t, 2, args.Concurrency)
	assert.Equal(t, "parallel", args.Mode)
	assert.Equal(t, "json", args.Return)
	require.Len(t, args.Tasks, 3)
	seen := map[string]bool{}
	for i, task := range args.Tasks {
		assert.Equal(t, "explore", task.Type)
		assert.Equal(t, threeAsked[i], task.Prompt, "the prompt is the question")
		assert.NotEmpty(t, task.Label)
		assert.LessOrEqual(t, len(task.Label), 32)
		assert.False(t, seen[task.Label], "labels are unique: %q", task.Label)
		seen[task.Label] = true
	}
	assert.Equal(t, []string{"spawn", "parsebudget", "error-unknown-agent-type"},
		[]string{args.Tasks[0].Label, args.Tasks[1].Label, args.Tasks[2].Label})
}

func TestNoDelegationWithoutTheTool(t *testing.T) {
	c := generate(t, taskMessages(threeQuestions), llms.WithTools(allTools))
	require.NotEmpty(t, c.ToolCalls)
	assert.NotContains(t, toolNames(c.ToolCalls), toolDelegate)
	assert.Contains(t, toolNames(c.ToolCalls), toolGrep, "it searches itself, as before")
}

func TestNoDelegationForOneQuestion(t *testing.T) {
	for _, task := range []string{
		"Where is Spawn handled?",
		"Where is the budget parsed? It may be in:\n- agenttypes/\n- manager/",
		"Where is Spawn handled? Why?",
	} {
		t.Run(task, func(t *testing.T) {
			c := generate(t, taskMessages(task), llms.WithTools(delegateTools))
			require.NotEmpty(t, c.ToolCalls)
			assert.NotContains(t, toolNames(c.ToolCalls), toolDelegate)
		})
	}
}

func TestSplitQuestions(t *testing.T) {
	tests := []struct {
		name string
		task string
		want []string
	}{
		{"numbered list", "1. where is Spawn?\n2) how is the budget parsed?", []string{"where is Spawn?", "how is the budget parsed?"}},
		{"bulleted list of topics", "Find these for me:\n- the retry loop\n* the refund path\n+ the discount codes",
			[]string{"the retry loop", "the refund path", "the discount codes"}},
		{"continuation lines and nested items join their item",
			"- where is the queue\n  drained when closing?\n- who calls Spawn?\n  - maybe the CLI",
			[]string{"where is the queue drained when closing?", "who calls Spawn? - maybe the CLI"}},
		{"question marks", "Where is Spawn? How is the budget parsed?", []string{"Where is Spawn?", "How is the budget parsed?"}},
		{"preamble dropped", "Two things: where is Spawn? where is Wait?", []string{"where is Spawn?", "where is Wait?"}},
		{"lines", "I wonder.\nwhere is Spawn?\nwhere is Wait?\nthanks", []string{"where is Spawn?", "where is Wait?"}},
		{"question marks in code and quotes do not split", "what matches `a? b`? and what prints \"who? me\"?",
			[]string{"what matches `a? b`?", "and what prints \"who? me\"?"}},
		{"a URL query is no question mark", "where is http://x/y?q=1 fetched?", nil},
		{"duplicates count once", "Where is Spawn? where is spawn?", nil},
		{"questions without search terms do not count", "Why? Where is Spawn?", nil},
		{"a list inside one question", "Where is the budget parsed? Candidates:\n- agenttypes\n- manager", nil},
		{"a list of questions inside a question", "Where is it? Either:\n- is it in agenttypes?\n- is it in manager?",
			[]string{"is it in agenttypes?", "is it in manager?"}},
		{"a fenced list is code", "Where is this?\n```\n- a\n- b\n```", nil},
		{"one question", "where is Spawn handled?", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, splitQuestions(tt.task))
		})
	}
}

func TestLabels(t *testing.T) {
	got := labels([]string{
		"Where is Spawn handled?",
		"where is spawn?",
		"Why?",
		"Where is supercalifragilisticexpialidocious_and_more_words defined?",
		"Where are ChargeWithRetry and the refund path and the discount codes?",
	})
	assert.Equal(t, []string{"spawn", "spawn-2", "question-3"}, got[:3], "unique, with a fallback for no words")
	for _, l := range got {
		assert.GreaterOrEqual(t, len(l), 1)
		assert.LessOrEqual(t, len(l), maxLabel, l)
	}
	assert.Equal(t, "supercalifragilisticexpialidocio", got[3], "a long word is cut at 32 bytes")
	assert.Equal(t, "chargewithretry-refund-path", got[4], "words are kept whole")
}

// delegateLikeTheTool answers a delegate call the way the delegate tool
// does with return json: each task runs as a child conversation of the
// offline model over root, with the read-only tools only.
func delegateLikeTheTool(t *testing.T, root string, call llms.ToolCall) string {
	t.Helper()
	args := decodeDelegate(t, call)
	type result struct {
		Label     string         `json:"label"`
		ID        string         `json:"id"`
		Type      string         `json:"type"`
		Model     string         `json:"model"`
		Status    string         `json:"status"`
		Reason    string         `json:"reason"`
		Usage     map[string]int `json:"usage"`
		ToolCalls int            `json:"tool_calls"`
		Turns     int            `json:"turns"`
		Report    string         `json:"report"`
		Extra     []string       `json:"some_future_field"`
	}
	out := struct {
		Completed int      `json:"completed"`
		Partial   int      `json:"partial"`
		Failed    int      `json:"failed"`
		Total     int      `json:"total"`
		Group     string   `json:"group"`
		Results   []result `json:"results"`
	}{Total: len(args.Tasks), Group: "g1"}
	for i, task := range args.Tasks {
		child := converse(t, New(), root, task.Prompt, allTools)
		calls := 0
		for _, c := range child.choices {
			calls += len(c.ToolCalls)
		}
		out.Completed++
		out.Results = append(out.Results, result{
			Label: task.Label, ID: fmt.Sprintf("a%d", i+1), Type: task.Type, Model: Name, Status: "ok", Reason: "done",
			Usage: map[string]int{"input_tokens": 100, "output_tokens": 10}, ToolCalls: calls, Turns: len(child.choices),
			Report: child.final().Content, Extra: []string{"ignored"},
		})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// withDelegateResult is the conversation after the delegate call with
// result as the tool's response.
func withDelegateResult(task string, call llms.ToolCall, result string) []llms.MessageContent {
	return append(taskMessages(task),
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: call.ID, Name: toolDelegate, Content: result},
		}},
	)
}

func TestMergedAnswerHasEachChildsFindings(t *testing.T) {
	root := writeFixture(t)
	first := generate(t, taskMessages(threeQuestions), llms.WithTools(delegateTools))
	require.Len(t, first.ToolCalls, 1)
	result := delegateLikeTheTool(t, root, first.ToolCalls[0])

	msgs := withDelegateResult(threeQuestions, first.ToolCalls[0], result)
	final := generate(t, msgs, llms.WithTools(delegateTools))
	assert.Equal(t, "stop", final.StopReason)
	assert.Empty(t, final.ToolCalls, "it answers; it does not delegate again")

	firstLine, _, _ := strings.Cut(final.Content, "\n")
	assert.Contains(t, firstLine, "not a language model")
	assert.Contains(t, firstLine, "mechanically into 3 subtasks, one per listed question")
	assert.Contains(t, final.Content, "Subtasks: 3 completed, 0 partial, 0 failed, of 3.")

	// One section per question, in order, each with its child's best
	// finding.
	want := []struct{ path, line string }{
		{"manager/spawn.go", "func (m *Manager) Spawn(ctx context.Context, typ, task string) (*Agent, error) {"},
		{"agenttypes/budget.go", "func parseBudget(s string) (Budget, error) {"},
		{"manager/errors.go", `var ErrUnknownType = errors.New("unknown agent type")`},
	}
	rest := final.Content
	for i, q := range threeAsked {
		heading := fmt.Sprintf("\n## %d. %s\n", i+1, q)
		at := strings.Index(rest, heading)
		require.GreaterOrEqual(t, at, 0, "section %q in\n%s", heading, final.Content)
		rest = rest[at+len(heading):]
		body := rest
		if next := strings.Index(body, "\n## "); next >= 0 {
			body = body[:next]
		}
		bodyFindings := ParseFindings(body)
		require.NotEmpty(t, bodyFindings, "findings for %q", q)
		assert.Equal(t, want[i].path, bodyFindings[0].Path)
		assert.Equal(t, want[i].line, fixtureLine(t, bodyFindings[0].Path, bodyFindings[0].Line))
		assert.Contains(t, body, "explore agent `", "the section says which agent answered")
	}

	// data.findings: every merged finding names a line that exists.
	merged := ParseFindings(final.Content)
	require.NotEmpty(t, merged)
	for _, f := range merged {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		require.NoError(t, err, "finding %s:%d names a file of the repository", f.Path, f.Line)
		assert.LessOrEqual(t, f.Line, strings.Count(string(data), "\n")+1, "finding %s:%d", f.Path, f.Line)
	}

	again := generate(t, msgs, llms.WithTools(delegateTools))
	assert.Equal(t, final.Content, again.Content, "the answer is derived from the messages only")
}

func TestMergedAnswerFromAResponseWithoutName(t *testing.T) {
	first := generate(t, taskMessages(threeQuestions), llms.WithTools(delegateTools))
	result := `{"completed":0,"partial":0,"failed":3,"total":3,"results":[]}`
	msgs := append(taskMessages(threeQuestions), llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: first.ToolCalls[0].ID, Content: result},
	}})
	final := generate(t, msgs, llms.WithTools(delegateTools))
	assert.Empty(t, final.ToolCalls, "the response is known as the delegate call's by its ID")
	assert.Contains(t, final.Content, "Subtasks: 0 completed, 0 partial, 3 failed, of 3.")
	assert.Equal(t, 3, strings.Count(final.Content, "has no entry for this question"))
}

func TestMergedAnswerMatchesResultsByLabel(t *testing.T) {
	first := generate(t, taskMessages(threeQuestions), llms.WithTools(delegateTools))
	args := decodeDelegate(t, first.ToolCalls[0])
	// Out of order, with a failed child and fields the model ignores.
	result := fmt.Sprintf(`{"completed":2,"partial":0,"failed":1,"total":3,"group":"g7","results":[
		{"label":%q,"id":"a3","status":"ok","reason":"done","usage":{"input_tokens":5},"report":"1. `+"`manager/errors.go:5`"+` — the error (relevance 0.9)"},
		{"label":%q,"id":"a1","status":"ok","reason":"done","report":"1. `+"`manager/spawn.go:12`"+` — Spawn (relevance 1.00)"},
		{"label":%q,"id":"a2","status":"failed","reason":"model_error","error":"the provider said no","report":""}]}`,
		args.Tasks[2].Label, args.Tasks[0].Label, args.Tasks[1].Label)
	final := generate(t, withDelegateResult(threeQuestions, first.ToolCalls[0], result), llms.WithTools(delegateTools))

	got := ParseFindings(final.Content)
	require.Len(t, got, 2, final.Content)
	assert.Equal(t, "manager/spawn.go", got[0].Path, "the first question's finding comes first")
	assert.Equal(t, "manager/errors.go", got[1].Path)
	assert.Equal(t, 0.9, got[1].Relevance, "a child's relevance is kept")
	assert.Contains(t, final.Content, "explore agent `parsebudget`: failed (model_error), 0 tool calls, 0 turns.\n\n```\nthe provider said no\n```\n")
	assert.Contains(t, final.Content, "No findings.")
}

func TestMergedAnswerQuotesAResultThatIsNotJSON(t *testing.T) {
	first := generate(t, taskMessages(threeQuestions), llms.WithTools(delegateTools))
	// Not an error (a refusal is searched around instead), but no JSON.
	raw := "Subagents finished; see manager/config.go:42 for their reports."
	final := generate(t, withDelegateResult(threeQuestions, first.ToolCalls[0], raw), llms.WithTools(delegateTools))
	assert.Equal(t, "stop", final.StopReason)
	assert.Contains(t, final.Content, "could not be read as JSON")
	assert.Contains(t, final.Content, "```\n"+raw+"\n```\n", "the result is quoted as it came")
	assert.Empty(t, ParseFindings(final.Content), "a quoted error is not a finding")
}

func TestMergedAnswerReadsJSONInsideText(t *testing.T) {
	first := generate(t, taskMessages(threeQuestions), llms.WithTools(delegateTools))
	raw := "```json\n{\"completed\":1,\"total\":1,\"results\":[{\"label\":\"spawn\",\"status\":\"ok\",\"report\":\"- `manager/spawn.go:12`\"}]}\n```"
	final := generate(t, withDelegateResult(threeQuestions, first.ToolCalls[0], raw), llms.WithTools(delegateTools))
	got := ParseFindings(final.Content)
	require.Len(t, got, 1, final.Content)
	assert.Equal(t, "manager/spawn.go", got[0].Path)
}

func TestDelegationCapsQuestions(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "%d. where is handler%d registered?\n", i, i)
	}
	task := b.String()
	first := generate(t, taskMessages(task), llms.WithTools(delegateTools))
	args := decodeDelegate(t, first.ToolCalls[0])
	require.Len(t, args.Tasks, 8)
	assert.Equal(t, "where is handler8 registered?", args.Tasks[7].Prompt)

	final := generate(t, withDelegateResult(task, first.ToolCalls[0], `{"results":[]}`), llms.WithTools(delegateTools))
	assert.Contains(t, final.Content, `not asked: "where is handler9 registered?", "where is handler10 registered?".`)
	assert.Equal(t, 8, strings.Count(final.Content, "\n## "))
}

func TestMergedAnswerMaxTokens(t *testing.T) {
	first := generate(t, taskMessages(threeQuestions), llms.WithTools(delegateTools))
	args := decodeDelegate(t, first.ToolCalls[0])
	var results []string
	for _, task := range args.Tasks {
		var report strings.Builder
		for i := 1; i <= 20; i++ {
			fmt.Fprintf(&report, "%d. `pkg/%s.go:%d` — line %d (relevance 0.5)\n", i, task.Label, i, i)
		}
		b, err := json.Marshal(map[string]any{"label": task.Label, "status": "ok", "report": report.String()})
		require.NoError(t, err)
		results = append(results, string(b))
	}
	result := `{"completed":3,"total":3,"results":[` + strings.Join(results, ",") + `]}`
	msgs := withDelegateResult(threeQuestions, first.ToolCalls[0], result)

	full := generate(t, msgs, llms.WithTools(delegateTools))
	assert.Len(t, ParseFindings(full.Content), 3*maxMergedFindings, "at most %d findings a question", maxMergedFindings)
	assert.Contains(t, full.Content, "_12 more findings not shown._")

	limit := estimateTokens(len(full.Content)) / 2
	small := generate(t, msgs, llms.WithTools(delegateTools), llms.WithMaxTokens(limit))
	assert.LessOrEqual(t, estimateTokens(len(small.Content)), limit)
	assert.Less(t, len(ParseFindings(small.Content)), 3*maxMergedFindings)
	assert.NotEmpty(t, ParseFindings(small.Content))
	assert.Equal(t, 3, strings.Count(small.Content, "\n## "), "every question keeps its section")

	tiny := generate(t, msgs, llms.WithTools(delegateTools), llms.WithMaxTokens(10))
	assert.Equal(t, delegationDisclaimer(3)+"\n", tiny.Content, "the first line always stays")
}

func TestQuestionWithAReferenceIsNoFinding(t *testing.T) {
	task := "1. what calls manager/spawn.go:12?\n2. where is parseBudget?"
	first := generate(t, taskMessages(task), llms.WithTools(delegateTools))
	final := generate(t, withDelegateResult(task, first.ToolCalls[0], `{"results":[]}`), llms.WithTools(delegateTools))
	assert.Contains(t, final.Content, `## 1. what calls manager/spawn.go\:12?`)
	assert.Empty(t, ParseFindings(final.Content))
}

func TestRefusedDelegationFallsBackToSearchingTheWholeTask(t *testing.T) {
	first := generate(t, taskMessages(threeQuestions), llms.WithTools(delegateTools))
	require.Len(t, first.ToolCalls, 1)
	refusal := "error: cannot spawn subagents: delegation refused: not approved"
	msgs := append(taskMessages(threeQuestions),
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{first.ToolCalls[0]}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: first.ToolCalls[0].ID, Name: toolDelegate, Content: refusal},
		}},
	)
	second := generate(t, msgs, llms.WithTools(delegateTools))
	require.NotEmpty(t, second.ToolCalls, "a refused split is no answer: the model searches itself")
	assert.NotContains(t, toolNames(second.ToolCalls), toolDelegate, "and does not ask again")
	assert.Contains(t, toolNames(second.ToolCalls), toolGrep)
}

// TestDelegateTurnSharesTheTokensLeft gives each child its share of the
// tokens left after what merging their results takes, so that together
// they stay within the parent's budget.
func TestDelegateTurnSharesTheTokensLeft(t *testing.T) {
	qs := []string{"where is a?", "where is b?", "where is c?"}
	_, calls := delegateTurn(qs, allowance{tokens: 100_000, turns: modelcap.Unlimited, toolCalls: modelcap.Unlimited})
	require.Len(t, calls, 1)
	args := decodeDelegate(t, calls[0])
	require.Len(t, args.Tasks, 3)
	total := 0
	for _, task := range args.Tasks {
		assert.Positive(t, task.MaxTokens)
		total += task.MaxTokens
	}
	assert.LessOrEqual(t, total, 100_000-mergeReserveBase)

	_, calls = delegateTurn(qs, allowance{turns: modelcap.Unlimited, toolCalls: modelcap.Unlimited})
	assert.NotContains(t, calls[0].FunctionCall.Arguments, "max_tokens", "no limit, no share")
}

// TestSearchFitsATightBudget: with few tokens left the search asks for
// fewer lines and makes fewer calls.
func TestSearchFitsATightBudget(t *testing.T) {
	task := "where does the server stop accepting connections and wait for open ones?"
	r := newRanker(task, extractTerms(task))
	results := func(calls []llms.ToolCall) int {
		n := 0
		for _, c := range calls {
			var a struct {
				MaxResults int `json:"max_results"`
			}
			if c.FunctionCall.Name == toolGrep {
				require.NoError(t, json.Unmarshal([]byte(c.FunctionCall.Arguments), &a))
				n += a.MaxResults
			}
		}
		return n
	}
	unlimited := allowance{turns: modelcap.Unlimited, toolCalls: modelcap.Unlimited}
	_, full := searchTurn(r, extractTerms(task), map[string]bool{toolGlob: true}, unlimited)
	al := unlimited
	al.tokens = 30_000
	_, tight := searchTurn(r, extractTerms(task), map[string]bool{toolGlob: true}, al)
	assert.Less(t, len(tight), len(full))
	// Read by the read turn and the answer's, beside four reads.
	assert.LessOrEqual(t, 2*results(tight)*grepLineTokens+leanReads*candReadLimit*readLineTokens, 30_000)
	assert.Less(t, results(tight), results(full)/3)
}
