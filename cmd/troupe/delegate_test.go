package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
)

// requireDelegate fails a test whose run needs the builtin delegate tool
// offered to the general type: without it the run would not delegate, and
// the test would fail later for a reason that names neither.
func requireDelegate(t *testing.T) {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	general, err := reg.Type("general")
	require.NoError(t, err)
	if _, err := reg.Tool("delegate"); err != nil {
		t.Fatalf("the builtin delegate tool is not registered: %v", err)
	}
	if !slices.Contains(general.Tools, "delegate") {
		t.Fatalf("the general type no longer offers the delegate tool; its tools are %v", general.Tools)
	}
}

var reviewLabels = []string{"security", "correctness", "refactor"}

// delegation is an OpenAI-compatible server playing a parent model that
// delegates three explore tasks and its children. It tells them apart by
// their messages: a child's task carries "CHILD <label>", and the parent's
// second turn carries the delegate tool's result.
type delegation struct {
	mu          sync.Mutex
	parentTurns int
	childModels map[string]string // label → the model a child asked for
	toolResult  string            // what the parent was sent back
	holdFirst   time.Duration     // how long the first child's answer waits
	// gate, when set, holds the first child's answer until it is closed;
	// held gets a value when that answer starts waiting.
	gate <-chan struct{}
	held chan struct{}
}

type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// text returns a message's content, a string or a list of text parts.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// chatReply answers with message, as one JSON object or, for a request
// that streams, as server-sent chunks.
func chatReply(w http.ResponseWriter, stream bool, model string, message map[string]any, finish string) {
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		delta := map[string]any{"role": "assistant", "content": message["content"]}
		if calls, ok := message["tool_calls"].([]any); ok {
			call := calls[0].(map[string]any)
			call["index"] = 0
			delta["tool_calls"] = []any{call}
		}
		for _, chunk := range []map[string]any{
			{"choices": []any{map[string]any{"index": 0, "delta": delta}}},
			{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}},
			{"choices": []any{}, "usage": usage},
		} {
			chunk["id"], chunk["object"], chunk["created"], chunk["model"] = "chatcmpl-1", "chat.completion.chunk", 1, model
			b, _ := json.Marshal(chunk)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
		"usage":   usage,
	})
}

func (d *delegation) serve(t *testing.T) *httptest.Server {
	d.childModels = map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var all strings.Builder
		var tool string
		for _, m := range req.Messages {
			all.WriteString(text(m.Content))
			if m.Role == "tool" {
				tool = text(m.Content)
			}
		}
		for i, label := range reviewLabels {
			if strings.Contains(all.String(), "CHILD "+label) {
				d.mu.Lock()
				d.childModels[label] = req.Model
				d.mu.Unlock()
				if i == 0 && d.holdFirst > 0 {
					time.Sleep(d.holdFirst) // so it ends last
				}
				if i == 0 && d.gate != nil {
					select {
					case d.held <- struct{}{}:
					default:
					}
					select {
					case <-d.gate:
					case <-r.Context().Done():
						return
					}
				}
				chatReply(w, req.Stream, req.Model, map[string]any{"role": "assistant", "content": "report from " + label}, "stop")
				return
			}
		}
		d.mu.Lock()
		d.parentTurns++
		d.mu.Unlock()
		if tool != "" {
			d.mu.Lock()
			d.toolResult = tool
			d.mu.Unlock()
			chatReply(w, req.Stream, req.Model, map[string]any{"role": "assistant", "content": "all three reviewed"}, "stop")
			return
		}
		var tasks []map[string]any
		for _, label := range reviewLabels {
			tasks = append(tasks, map[string]any{"label": label, "type": "explore", "prompt": "CHILD " + label + ": review the cart"})
		}
		args, _ := json.Marshal(map[string]any{"tasks": tasks})
		chatReply(w, req.Stream, req.Model, map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
			"id": "call_delegate", "type": "function", "function": map[string]any{"name": "delegate", "arguments": string(args)},
		}}}, "tool_calls")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// delegateRun runs troupe against the server with stdin and the terminal
// as given; runs is the transcripts' directory.
func delegateRun(t *testing.T, srv *httptest.Server, runs string, stdin string, terminal bool, args ...string) outcome {
	t.Helper()
	isolate(t)
	t.Setenv("TROUPE_RUNS_DIR", runs)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("TROUPE_MODEL", "")
	var out, errb bytes.Buffer
	a := newApp(&out, &errb)
	a.stdin = strings.NewReader(stdin)
	a.isTerminal = func(any) bool { return terminal }
	code := a.execute(context.Background(), args)
	return outcome{code, out.String(), errb.String()}
}

// TestRunDelegatesToThreeChildren is the whole path through the command
// line: the parent's delegate call, three explore children on the
// parent's model, their reports back to the parent in task order, and the
// four runs on disk.
func TestRunDelegatesToThreeChildren(t *testing.T) {
	requireDelegate(t)
	d := &delegation{holdFirst: 200 * time.Millisecond}
	srv := d.serve(t)
	runs := filepath.Join(t.TempDir(), "runs")
	o := delegateRun(t, srv, runs, "", false, "run", "general", "--yes", "--model", "openai:M", "--repo", shopCopy(t), "--json", "--progress", "plain", "review the cart package")
	require.Equal(t, 0, o.code, o.stderr)

	var res struct {
		jsonResult
		OwnUsage usageJSON `json:"own_usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	assert.Equal(t, "completed", res.State)
	assert.Equal(t, "all three reviewed", res.Output)
	assert.Equal(t, 2, d.parentTurns)
	assert.Equal(t, map[string]string{"security": "M", "correctness": "M", "refactor": "M"}, d.childModels, "the children ran on the parent's model")
	assert.Equal(t, 5*100, res.Usage.InputTokens, "usage covers the tree")
	assert.Equal(t, 2*100, res.OwnUsage.InputTokens, "own usage, the parent alone")

	at := func(s string) int { return strings.Index(d.toolResult, s) }
	for _, label := range reviewLabels {
		assert.Contains(t, d.toolResult, "report from "+label)
	}
	assert.Less(t, at("report from security"), at("report from correctness"), "input order, though security ended last:\n%s", d.toolResult)
	assert.Less(t, at("report from correctness"), at("report from refactor"))

	assert.Contains(t, o.stderr, "\n  ▸ [security] explore#", "plain progress indents the children and names them")

	list := delegateRun(t, srv, runs, "", false, "runs", "list")
	require.Equal(t, 0, list.code, list.stderr)
	rows := strings.Split(strings.TrimSpace(list.stdout), "\n")
	require.Len(t, rows, 5, list.stdout)
	assert.Regexp(t, `^`+res.ID+`\s+general\s+completed\s`, rows[1])
	for i, label := range reviewLabels {
		assert.Regexp(t, `^└ \S+\s+explore\s+completed\s.*\[`+label+`\] CHILD `+label, rows[2+i])
	}

	child := strings.Fields(strings.TrimPrefix(rows[2], "└ "))[0]
	show := delegateRun(t, srv, runs, "", false, "runs", "show", child)
	require.Equal(t, 0, show.code, show.stderr)
	assert.Contains(t, show.stdout, "report from security")
	assert.Contains(t, show.stdout, "delegated by run "+res.ID)
}

// TestRunSummaryShowsOwnUsageAfterDelegating: on stderr, the line after
// the run gives the tree's usage and the parent's own.
func TestRunSummaryShowsOwnUsageAfterDelegating(t *testing.T) {
	requireDelegate(t)
	d := &delegation{}
	srv := d.serve(t)
	o := delegateRun(t, srv, filepath.Join(t.TempDir(), "runs"), "", false, "run", "general", "--yes", "--model", "openai:M", "--repo", shopCopy(t), "--progress", "plain", "review the cart package")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "500 tokens in / 50 out in all (own 200 in / 20 out)")
}

// TestRunDelegationApproval: without --yes, delegation is asked about on
// a terminal and refused elsewhere, and the parent model reads why.
func TestRunDelegationApproval(t *testing.T) {
	requireDelegate(t)
	for _, tt := range []struct {
		name     string
		terminal bool
		typed    string
		children int
		told     string
	}{
		{"no terminal", false, "y\n", 0, "delegation needs approval: run with --yes to allow subagents without asking"},
		{"terminal yes", true, "y\n", 3, "report from refactor"},
		{"terminal no", true, "n\n", 0, "the user refused the delegation"},
		{"terminal, nobody types", true, "", 0, "delegation needs approval"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &delegation{}
			srv := d.serve(t)
			o := delegateRun(t, srv, filepath.Join(t.TempDir(), "runs"), tt.typed, tt.terminal, "run", "general", "--model", "openai:M", "--repo", shopCopy(t), "--progress", "plain", "review the cart package")
			require.Equal(t, 0, o.code, o.stderr)
			assert.Len(t, d.childModels, tt.children)
			assert.Contains(t, d.toolResult, tt.told)
			if tt.terminal {
				assert.Contains(t, o.stderr, "asks: Spawn 3 subagents")
				assert.Contains(t, o.stderr, "Allow? [y/N] ")
			} else {
				assert.NotContains(t, o.stderr, "Allow?")
			}
		})
	}
}

// TestRunMaxCostStopsTheRun: a price for the model and a cost budget
// that one call uses up.
func TestRunMaxCostStopsTheRun(t *testing.T) {
	d := &delegation{}
	srv := d.serve(t)
	isolate(t)
	o := runWith(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"}, "prices:\n  openai:m: {input: 10, output: 10}\n",
		"run", "general", "--yes", "--model", "openai:m", "--repo", shopCopy(t), "--json", "--progress", "none", "--max-cost", "0.0005", "review the cart package")
	if strings.Contains(o.stderr, "has no known price") {
		t.Fatalf("openai:m has a price in the config, yet the run says it has none: the configured model no longer tells the manager its price (modelcap.Pricer)\n%s", o.stderr)
	}
	assert.Equal(t, 1, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	assert.Equal(t, "failed", res.State)
	assert.Equal(t, "budget_cost", res.Reason, fmt.Sprintf("one call costs $%.4f", 110*10/1e6))
}
