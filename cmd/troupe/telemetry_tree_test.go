package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tree of three levels, as the tree model plays it: the lead calls
// the plugin's shout tool and delegates to a middle agent, which greps
// and delegates to a leaf, which lists a directory and calls the
// plugin's traced tool, which makes spans of its own in the plugin's
// process. Each agent is told apart by its task's first word.
var treeScript = map[string][]treeStep{
	"LEAD": {
		{tool: "shout", args: `{"text":"lead"}`},
		{tool: "delegate", args: `{"tasks":[{"type":"middle","label":"middle","prompt":"MIDDLE: look at the cart"}]}`},
		{text: "lead done"},
	},
	"MIDDLE": {
		{tool: "grep", args: `{"pattern":"Total"}`},
		{tool: "delegate", args: `{"tasks":[{"type":"leaf","label":"leaf","prompt":"LEAF: look at payments"}]}`},
		{text: "middle done"},
	},
	"LEAF": {
		{tool: "ls", args: `{"path":"."}`},
		{tool: "traced", args: `{}`},
		{text: "leaf done"},
	},
}

// treeTypes are the agent types of the tree, defined in the project. A
// subagent gets only tools its parent has: the upper types list the
// tools of those below.
var treeTypes = map[string]string{
	"lead":   "name: lead\ndescription: Leads a review and hands part of it to a middle agent.\nprompt: You lead.\ntools: [shout, grep, ls, traced, delegate]\n",
	"middle": "name: middle\ndescription: Looks at one part and hands a piece of it to a leaf agent.\nprompt: You look.\ntools: [grep, ls, traced, delegate]\n",
	"leaf":   "name: leaf\ndescription: Looks at one small thing.\nprompt: You look closely.\ntools: [ls, traced]\n",
}

// treeTools are the tools each agent of the tree calls, by type.
var treeTools = map[string][]string{"lead": {"delegate", "shout"}, "middle": {"delegate", "grep"}, "leaf": {"ls", "traced"}}

type treeStep struct {
	tool, args string // a tool call, or
	text       string // the final answer
}

// tokens is a model call's usage as the model reported it.
type tokens struct{ in, out int }

// treeModel is an OpenAI-compatible server that plays every agent of the
// tree, each turn with usage of its own, and remembers what it reported
// for each agent.
type treeModel struct {
	mu     sync.Mutex
	served map[string][]tokens // task word → usage reported, turn by turn
}

func newTreeModel(t *testing.T) (*treeModel, *httptest.Server) {
	m := &treeModel{served: map[string][]tokens{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&req); err != nil || req.Stream {
			http.Error(w, fmt.Sprintf("want one JSON request, not streamed: %v", err), http.StatusBadRequest)
			return
		}
		who, turn := "", 0
		for _, msg := range req.Messages {
			switch msg.Role {
			case "user":
				if who == "" {
					who, _, _ = strings.Cut(text(msg.Content), ":")
				}
			case "tool":
				turn++
			}
		}
		script, ok := treeScript[who]
		if !ok || turn >= len(script) {
			http.Error(w, fmt.Sprintf("no script for %q turn %d", who, turn), http.StatusBadRequest)
			return
		}
		// Usage of its own for each call: 100s for the lead, 200s for
		// the middle agent, 300s for the leaf; tens for the turn.
		level := map[string]int{"LEAD": 1, "MIDDLE": 2, "LEAF": 3}[who]
		use := tokens{100*level + 10*(turn+1), 10*level + turn + 1}
		m.mu.Lock()
		m.served[who] = append(m.served[who], use)
		m.mu.Unlock()
		step := script[turn]
		msg := map[string]any{"role": "assistant", "content": step.text}
		finish := "stop"
		if step.tool != "" {
			msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("call_%s_%d", who, turn), "type": "function",
				"function": map[string]any{"name": step.tool, "arguments": step.args}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": use.in, "completion_tokens": use.out, "total_tokens": use.in + use.out},
		})
	}))
	t.Cleanup(srv.Close)
	return m, srv
}

func (m *treeModel) usage() map[string][]tokens {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]tokens{}
	for k, v := range m.served {
		out[k] = slices.Clone(v)
	}
	return out
}

// treeProject is a project in a temporary directory with the tree's
// agent types and the test plugin in its .troupe/plugins, which the
// user has trusted with the built command, as a user would.
func treeProject(t *testing.T, bin string) string {
	t.Helper()
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(shop)))
	agents := filepath.Join(repo, ".troupe", "agents")
	plugins := filepath.Join(repo, ".troupe", "plugins")
	require.NoError(t, os.MkdirAll(agents, 0o755))
	require.NoError(t, os.MkdirAll(plugins, 0o755))
	for name, def := range treeTypes {
		require.NoError(t, os.WriteFile(filepath.Join(agents, name+".yaml"), []byte(def), 0o644))
	}
	built, err := filepath.EvalSymlinks(filepath.Join(testPluginDir(t), "troupe-plugin-test"))
	require.NoError(t, err)
	plugin, err := os.ReadFile(built)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "troupe-plugin-test"), plugin, 0o755))
	o := runTroupe(t, bin, nil, "trust", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	require.Contains(t, o.stdout, "trusted "+repo)
	return repo
}

// runLeadTree runs the tree's lead on the tree model through the built
// command, with the test's OTEL_* variables, and returns its result.
func runLeadTree(t *testing.T, bin, repo string, model *httptest.Server) jsonResult {
	t.Helper()
	o := runTroupe(t, bin, map[string]string{"OPENAI_BASE_URL": model.URL + "/v1"},
		"run", "lead", "--repo", repo, "--model", "openai:M", "--yes", "--max-depth", "2", "--progress", "none", "--json", "LEAD: review the shop")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	require.Equal(t, "completed", res.State, o.stdout)
	require.Equal(t, "lead done", res.Output)
	return res
}

// checkTreeTrace checks the spans of one run of the tree, however they
// were collected: one trace; the lead's invoke_agent span at its root,
// each agent's under the delegate call that made it; each agent's tool
// calls and model calls under its own span, the plugin's among them;
// and on each chat span the tokens the model reported for that call;
// under the plugin's traced call, the spans the plugin made.
func checkTreeTrace(t *testing.T, spans []received, served map[string][]tokens) {
	t.Helper()
	traces := map[string]bool{}
	byParent := map[string][]received{}
	for _, s := range spans {
		traces[s.trace] = true
		byParent[s.parent] = append(byParent[s.parent], s)
	}
	require.Len(t, traces, 1, "one trace for the run: %v", names(spans))
	roots := byParent[""]
	require.Len(t, roots, 1, "one root: %v", names(roots))
	agent := roots[0]
	require.Equal(t, "invoke_agent lead", agent.name)
	for _, typ := range []string{"lead", "middle", "leaf"} {
		below := byParent[agent.id]
		var tools, chats []received
		var delegate received
		for _, s := range below {
			switch {
			case strings.HasPrefix(s.name, "execute_tool "):
				tools = append(tools, s)
				if s.name == "execute_tool delegate" {
					delegate = s
				}
			case strings.HasPrefix(s.name, "chat "):
				chats = append(chats, s)
			}
		}
		var called []string
		for _, s := range tools {
			called = append(called, strings.TrimPrefix(s.name, "execute_tool "))
		}
		sort.Strings(called)
		assert.Equal(t, treeTools[typ], called, "%s's tool calls", typ)
		who := strings.ToUpper(typ)
		require.Len(t, chats, len(treeScript[who]), "%s's model calls: %v", typ, names(below))
		sort.Slice(chats, func(i, j int) bool { return chats[i].attrs["troupe.turn"] < chats[j].attrs["troupe.turn"] })
		for i, c := range chats {
			require.Less(t, i, len(served[who]))
			assert.Equal(t, "chat M", c.name)
			assert.Equal(t, strconv.Itoa(served[who][i].in), c.attrs["gen_ai.usage.input_tokens"], "%s turn %d", typ, i+1)
			assert.Equal(t, strconv.Itoa(served[who][i].out), c.attrs["gen_ai.usage.output_tokens"], "%s turn %d", typ, i+1)
		}
		if typ == "leaf" {
			break
		}
		require.NotEmpty(t, delegate.id, "%s delegated", typ)
		children := byParent[delegate.id]
		require.Len(t, children, 1, "the agent %s's delegate call made: %v", typ, names(children))
		agent = children[0]
	}
	assert.Equal(t, "invoke_agent leaf", agent.name)
	var traced []received
	for _, s := range byParent[agent.id] {
		if s.name == "execute_tool traced" {
			traced = append(traced, s)
		}
	}
	require.Len(t, traced, 1, "the leaf's call of the plugin's traced tool")
	step := byParent[traced[0].id]
	require.Len(t, step, 1, "the plugin's span under its tool call: %v", names(step))
	assert.Equal(t, "step", step[0].name)
	assert.Equal(t, "look", step[0].attrs["step.what"])
	inner := byParent[step[0].id]
	require.Len(t, inner, 1, "the plugin's span under its own: %v", names(inner))
	assert.Equal(t, "inner", inner[0].name)
}

// TestRunTreeIsOneTrace: a run whose lead delegates to a middle agent
// that delegates to a leaf, through the built command, arrives at the
// collector as one trace of that shape, down to the leaf's tool calls,
// the plugin's among them, with each model call's tokens.
func TestRunTreeIsOneTrace(t *testing.T) {
	requireDelegate(t)
	bin := troupeBinary(t)
	rcv := newOTLPReceiver(t)
	otelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.httpURL, envMetricsExporter: "none"})
	repo := treeProject(t, bin)
	model, srv := newTreeModel(t)
	runLeadTree(t, bin, repo, srv)
	spans, _ := rcv.got()
	checkTreeTrace(t, spans, model.usage())
}
