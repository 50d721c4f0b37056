package offline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// realTools answers tool calls with troupe's builtin tools on dir.
func realTools(dir string) func(llms.ToolCall) string {
	byName := map[string]agenttypes.Tool{}
	for _, tl := range tools.ReadOnly() {
		byName[tl.Spec().Name] = tl
	}
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: dir})
	return func(c llms.ToolCall) string {
		tl, ok := byName[c.FunctionCall.Name]
		if !ok {
			return "error: unknown tool " + c.FunctionCall.Name
		}
		out, err := tl.Call(ctx, json.RawMessage(c.FunctionCall.Arguments))
		if err != nil {
			return "error: " + err.Error()
		}
		return out
	}
}

// File names holding ':' or a newline, or bytes that are not UTF-8, come
// out of the explore loop (real tools, the offline model, ParseFindings,
// JSON) as the paths of files that exist.
func TestFindingsForOddNames(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows refuses these file names")
	}
	dir := t.TempDir()
	var want []string
	for _, name := range []string{"plain.go", "a:b.go", "we\nird.go", "bad\xff\xfename.go", "sub/c:d.go"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if err := os.WriteFile(p, []byte("package x\n\nfunc frobnicateWidget() {}\n"), 0o644); err != nil {
			t.Logf("skipping name %q: %v", name, err)
			continue
		}
		want = append(want, name)
	}

	r := converseUsing(t, New(), "where is frobnicateWidget defined?", allTools, realTools(dir))
	findings := ParseFindings(r.final().Content)
	var got []string
	for _, f := range findings {
		got = append(got, f.Path)
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path)))
		assert.NoError(t, err, "finding %q is not a file", f.Path)
		assert.Equal(t, 3, f.Line, f.Path)
	}
	assert.ElementsMatch(t, want, got, r.final().Content)

	// As data.findings: valid JSON text, exact paths back.
	data, err := json.Marshal(struct {
		Findings []Finding `json:"findings"`
	}{findings})
	require.NoError(t, err)
	assert.True(t, utf8.Valid(data))
	assert.Contains(t, string(data), "\"path\":\"bad\ufffdname.go\",\"path_bytes\":\"YmFk//5uYW1lLmdv\"")
	var back struct {
		Findings []Finding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, findings, back.Findings)
}

func TestFindingJSON(t *testing.T) {
	plain, err := json.Marshal(Finding{Path: "a.go", Line: 1, Snippet: "x", Relevance: 1})
	require.NoError(t, err)
	assert.JSONEq(t, `{"path":"a.go","line":1,"end_line":1,"symbol":"","snippet":"x","relevance":1}`, string(plain))
	odd, err := json.Marshal(Finding{Path: "\xff.go", Line: 2})
	require.NoError(t, err)
	assert.JSONEq(t, `{"path":"\ufffd.go","path_bytes":"/y5nbw==","line":2,"end_line":2,"symbol":"","snippet":"","relevance":0}`, string(odd))
	var f Finding
	require.NoError(t, json.Unmarshal(odd, &f))
	assert.Equal(t, "\xff.go", f.Path)
}

func TestParseFindingsQuotedPaths(t *testing.T) {
	md := "1. `\"a:b.go\":3` — `func x()` (relevance 1.00)\n" +
		"2. `\"we\\nird.go\":4` (relevance 0.50)\n" +
		"3. `\"a.go:12:b.go\":5`\n" +
		"A JSON aside: {\"count\":3}\n"
	got := ParseFindings(md)
	require.Len(t, got, 3, got)
	assert.Equal(t, Finding{Path: "a:b.go", Line: 3, EndLine: 3, Snippet: "func x()", Relevance: 1}, got[0])
	assert.Equal(t, "we\nird.go", got[1].Path)
	assert.Equal(t, "a.go:12:b.go", got[2].Path)
	assert.Equal(t, 5, got[2].Line)
}
