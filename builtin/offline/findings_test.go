package offline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lineFinding is a Finding without its span and symbol.
type lineFinding struct {
	Path      string
	Line      int
	Snippet   string
	Relevance float64
}

func TestParseFindings(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []lineFinding
	}{
		{
			name: "offline model format",
			in: Disclaimer + "\n\nSearched for `Spawn`.\n\n## Findings\n\n" +
				"1. `manager/spawn.go:11` — `func (m *Manager) Spawn() {` (relevance 1.00)\n" +
				"2. `docs/spawning.md:3` — `` Call `Spawn` to start `` (relevance 0.34)\n" +
				"3. `README.md:1` (relevance 0.10)\n",
			want: []lineFinding{
				{"manager/spawn.go", 11, "func (m *Manager) Spawn() {", 1},
				{"docs/spawning.md", 3, "Call `Spawn` to start", 0.34},
				{"README.md", 1, "", 0.10},
			},
		},
		{
			name: "bold paths and colons, no relevance",
			in: "Spawn is defined in the manager package.\n\n" +
				"1. **manager/spawn.go:42** — creates the agent and queues it.\n" +
				"2. **cmd/troupe/run.go:88**: calls `Spawn` for `troupe run`\n" +
				"3. manager/manager.go:15 - SpawnAll loops over tasks\n" +
				"4. manager/spawn_test.go:5\n",
			want: []lineFinding{
				{"manager/spawn.go", 42, "creates the agent and queues it.", 1},
				{"cmd/troupe/run.go", 88, "calls `Spawn` for `troupe run`", 0.75},
				{"manager/manager.go", 15, "SpawnAll loops over tasks", 0.5},
				{"manager/spawn_test.go", 5, "", 0.25},
			},
		},
		{
			name: "links, ranges, columns and percent",
			in: "- See [manager/loop.go:55](manager/loop.go#L55) - the budget check (relevance 90%)\n" +
				"- `manager/loop.go:80-95` — the turn loop\n" +
				"- ./agenttypes/budget.go:12:5: parseBudget (score: 0.4)\n" +
				"- https://github.com/o/r/blob/main/x.go#L3 is upstream\n",
			want: []lineFinding{
				{"manager/loop.go", 55, "the budget check", 0.9},
				{"manager/loop.go", 80, "the turn loop", 0.67},
				{"agenttypes/budget.go", 12, "parseBudget", 0.4},
			},
		},
		{
			name: "reference after the text, tables, code fences",
			in: "The token check happens in the loop (`manager/loop.go:86`).\n\n" +
				"| file | what |\n|---|---|\n| `manager/config.go:27` | RetrievalOnly interface |\n\n" +
				"```go\n// see main.go:3\nfunc main() {}\n```\n" +
				"Also `Makefile:12`, but not Step:1, 10:30 or localhost:8080.\n",
			want: []lineFinding{
				{"manager/loop.go", 86, "The token check happens in the loop", 1},
				{"manager/config.go", 27, "RetrievalOnly interface", 0.67},
				{"Makefile", 12, "but not Step:1, 10:30 or localhost:8080.", 0.33},
			},
		},
		{
			name: "several references on one line share its text",
			in:   "- `a/x.go:10`, `a/x.go:20` — both retry\n- `a/x.go:10` again\n",
			want: []lineFinding{
				{"a/x.go", 10, "both retry", 1},
				{"a/x.go", 20, "both retry", 0.5},
			},
		},
		{
			name: "nothing",
			in:   Disclaimer + "\n\n## Findings\n\nNo matches.\n",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []lineFinding
			for _, f := range ParseFindings(tt.in) {
				got = append(got, lineFinding{f.Path, f.Line, f.Snippet, f.Relevance})
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCodeSpanRoundTrip(t *testing.T) {
	for _, s := range []string{"plain", "a `b` c", "`start", "end`", "``double``", "x := `raw`"} {
		assert.Equal(t, s, unwrap(codeSpan(s)), s)
	}
}

func TestParseFindingsSpanAndSymbol(t *testing.T) {
	md := "1. `server.go:3150-3186` in `func (srv *Server) Shutdown(ctx context.Context) error` — `srv.inShutdown.Store(true)` (relevance 1.00)\n" +
		"2. `\"a:b.go\":3-9` in ``func x() `y` `` (relevance 0.50)\n" +
		"3. `c.go:7` — `in the loop` (relevance 0.40)\n" +
		"4. See `d.go:2-1` in the loop.\n"
	got := ParseFindings(md)
	require.Len(t, got, 4)
	assert.Equal(t, Finding{Path: "server.go", Line: 3150, EndLine: 3186, Symbol: "func (srv *Server) Shutdown(ctx context.Context) error",
		Snippet: "srv.inShutdown.Store(true)", Relevance: 1}, got[0])
	assert.Equal(t, Finding{Path: "a:b.go", Line: 3, EndLine: 9, Symbol: "func x() `y`", Relevance: 0.5}, got[1])
	assert.Equal(t, Finding{Path: "c.go", Line: 7, EndLine: 7, Snippet: "in the loop", Relevance: 0.4}, got[2])
	assert.Equal(t, 2, got[3].EndLine, "an end before the start is no span")
	assert.Empty(t, got[3].Symbol, "prose is no symbol")
}

// The answer groups its findings by file when a file holds several: each
// file once, in the order of its best finding, with its symbols in rank
// order; and leaves the section out when every finding is in its own file.
func TestAnswerGroupsFindingsByFile(t *testing.T) {
	f := func(path string, line int, symbol string, rel float64) scored {
		return scored{Finding: Finding{Path: path, Line: line, EndLine: line + 3, Symbol: symbol, Relevance: rel}}
	}
	a := answer{searched: []string{"spawn"}, findings: []scored{
		f("manager/manager.go", 140, "func (m *Manager) Spawn()", 1),
		f("manager/group.go", 56, "func (m *Manager) SpawnGroup()", 0.9),
		f("manager/manager.go", 159, "func (m *Manager) prepare()", 0.8),
		f("manager/manager.go", 290, "", 0.5),
	}}
	out := a.render(len(a.findings), false)
	_, byFile, ok := strings.Cut(out, "### By file\n\n")
	require.True(t, ok, out)
	assert.Equal(t, "- `manager/manager.go`: `func (m *Manager) Spawn()`, `func (m *Manager) prepare()`, `line 290`\n"+
		"- `manager/group.go`: `func (m *Manager) SpawnGroup()`\n", byFile)

	single := answer{searched: []string{"spawn"}, findings: a.findings[:2]}
	assert.NotContains(t, single.render(2, false), "By file", "no grouping when each file has one finding")
}
