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

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
	"github.com/troupe-dev/troupe/builtin/tools"
)

var symbolsTools = specs(toolRead, toolGrep, toolGlob, toolSymbols)

// symbolsArgs decodes a symbols call's arguments.
func symbolsArgs(t *testing.T, c llms.ToolCall) (query string, maxResults int) {
	t.Helper()
	var a struct {
		Query      string `json:"query"`
		MaxResults int    `json:"max_results"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.FunctionCall.Arguments), &a))
	return a.Query, a.MaxResults
}

// TestSearchAsksSymbolsWhenOffered: the search turn asks the symbols
// tool for the concepts' own words, once, when it is offered, and not
// otherwise; not for their vocabulary's, which its ranking would weigh
// as words of the question.
func TestSearchAsksSymbolsWhenOffered(t *testing.T) {
	task := "How can I limit the size of a request body?"
	r := newRanker(task, extractTerms(task))
	unlimited := allowance{turns: modelcap.Unlimited, toolCalls: modelcap.Unlimited}

	_, calls := searchTurn(r, extractTerms(task), map[string]bool{toolGlob: true, toolSymbols: true}, unlimited)
	var sym []llms.ToolCall
	for _, c := range calls {
		if c.FunctionCall.Name == toolSymbols {
			sym = append(sym, c)
		}
	}
	require.Len(t, sym, 1, "one symbols call")
	query, n := symbolsArgs(t, sym[0])
	assert.Equal(t, symbolsResults, n)
	words := strings.Fields(query)
	for _, w := range []string{"limit", "siz", "request", "bod"} {
		assert.Contains(t, words, w, "a concept's word or stem")
	}
	for _, w := range []string{"max", "len"} {
		assert.NotContains(t, words, w, "a vocabulary word (limit: max, size: len)")
	}

	_, calls = searchTurn(r, extractTerms(task), map[string]bool{toolGlob: true}, unlimited)
	assert.NotContains(t, toolNames(calls), toolSymbols)
}

// TestSymbolsFitTheBudget: the symbols call is the search's first call,
// kept when a single tool call is left, and asks for fewer lines when the
// tokens are few.
func TestSymbolsFitTheBudget(t *testing.T) {
	task := "where does the server stop accepting connections and wait for open ones?"
	r := newRanker(task, extractTerms(task))
	offered := map[string]bool{toolGlob: true, toolSymbols: true}
	_, calls := searchTurn(r, extractTerms(task), offered, allowance{turns: modelcap.Unlimited, toolCalls: 1})
	require.Len(t, calls, 1)
	assert.Equal(t, toolSymbols, calls[0].FunctionCall.Name)

	_, calls = searchTurn(r, extractTerms(task), offered, allowance{tokens: 30_000, turns: modelcap.Unlimited, toolCalls: modelcap.Unlimited})
	require.Equal(t, toolSymbols, calls[1].FunctionCall.Name, "after the glob")
	_, n := symbolsArgs(t, calls[1])
	assert.Less(t, n, symbolsResults)
	assert.Positive(t, n)
}

// docOnlyRepo holds a function whose name says nothing of what it does;
// only its doc comment does.
func docOnlyRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"server/wrap.go": "package server\n\nimport \"io\"\n\n" +
			"// wrapIncoming stops a client from sending more than n bytes of a request body:\n" +
			"// reading past the limit fails.\n" +
			"func wrapIncoming(r io.Reader, n int64) io.Reader {\n" +
			"\treturn io.LimitReader(r, n)\n" +
			"}\n\n" +
			"func unrelated() {}\n",
		"server/other.go": "package server\n\n// Serve answers requests.\nfunc Serve() {}\n",
	}
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return root
}

// TestADeclarationFoundByItsDocComment: a declaration whose doc comment
// says what the question asks is found, with its span, when no grep
// finds anything: the symbols tool's declarations are candidates.
func TestADeclarationFoundByItsDocComment(t *testing.T) {
	root := docOnlyRepo(t)
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: root})
	real := map[string]agenttypes.Tool{toolSymbols: tools.Symbols(), toolRead: tools.Read()}
	call := func(c llms.ToolCall) string {
		tl, ok := real[c.FunctionCall.Name]
		if !ok {
			return "no matches" // grep and glob find nothing
		}
		out, err := tl.Call(ctx, json.RawMessage(c.FunctionCall.Arguments))
		if err != nil {
			return "error: " + err.Error()
		}
		return out
	}
	r := converseUsing(t, New(), "How is the size of a request body a client sends limited?", symbolsTools, call)
	findings := ParseFindings(r.final().Content)
	require.NotEmpty(t, findings, r.final().Content)
	assert.Equal(t, Finding{Path: "server/wrap.go", Line: 7, EndLine: 9}, Finding{Path: findings[0].Path, Line: findings[0].Line, EndLine: findings[0].EndLine})
	assert.Contains(t, findings[0].Symbol, "wrapIncoming")
}

// TestSymbolsGiveSpansAndRarity: a definition grep found takes its span,
// kind and doc from the symbols tool, even unread; a declaration only
// symbols found joins when the tool ranks it among its first
// symbolsJoin or its doc holds a word of the question, not when only
// its name does further down; and a concept few declarations match
// weighs more than one many do.
func TestSymbolsGiveSpansAndRarity(t *testing.T) {
	task := "where is the retry delay computed?"
	r := newRanker(task, extractTerms(task))
	syms := []tools.Symbol{
		{Path: "a.go", Line: 10, End: 24, Kind: "func", Name: "retryDelay", Signature: "func retryDelay(n int) time.Duration", Doc: "retryDelay is how long to wait."},
	}
	for i := range symbolsJoin {
		syms = append(syms, tools.Symbol{Path: fmt.Sprintf("top%d.go", i), Line: 1, End: 2, Kind: "func", Name: fmt.Sprintf("f%d", i)})
	}
	syms = append(syms,
		tools.Symbol{Path: "b.go", Line: 3, End: 9, Kind: "func", Name: "backoff", Signature: "func backoff()", Doc: "backoff computes the delay before a retry."},
		tools.Symbol{Path: "c.go", Line: 5, End: 6, Kind: "func", Name: "retryAll", Signature: "func retryAll()"})
	ev := evidence{
		grep: []hit{{path: "a.go", line: 10, text: "func retryDelay(n int) time.Duration {"}},
		syms: syms,
		symCounts: tools.SymbolCounts{Declarations: 1000, Files: 10, Matches: 3,
			Words: []tools.WordCount{{Word: "retr", Count: 2}, {Word: "dela", Count: 600}}},
	}
	cands := r.candidates(ev)
	byPath := make(map[string]*cand)
	for _, c := range cands {
		byPath[c.path] = c
	}
	require.Contains(t, byPath, "a.go")
	assert.Equal(t, 24, byPath["a.go"].end, "the span symbols gave")
	assert.Equal(t, "func", byPath["a.go"].kind)
	assert.Equal(t, []string{"retryDelay is how long to wait."}, byPath["a.go"].doc)
	assert.Contains(t, byPath, "top0.go", "ranked second by the tool")
	assert.Contains(t, byPath, fmt.Sprintf("top%d.go", symbolsJoin-2), "ranked symbolsJoin-th")
	assert.NotContains(t, byPath, fmt.Sprintf("top%d.go", symbolsJoin-1), "ranked below symbolsJoin")
	assert.Contains(t, byPath, "b.go", "its doc holds the question's words")
	assert.NotContains(t, byPath, "c.go", "only its name matches, and it ranks low: grep's definitions search finds those")
	var retry, delay float64
	for i, w := range r.q {
		switch w.text {
		case "retry":
			retry = r.idf[i]
		case "delay":
			delay = r.idf[i]
		}
	}
	assert.Greater(t, retry, delay, "two declarations of a thousand say retry, six hundred say delay")
	findings := r.findings(r.resolve(cands, nil))
	require.NotEmpty(t, findings)
	for _, f := range findings {
		if f.Path == "a.go" {
			assert.Equal(t, 24, f.EndLine, "unread, the finding spans the whole definition")
		}
	}
}
