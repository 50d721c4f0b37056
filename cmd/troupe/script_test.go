package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chatServer is an OpenAI-compatible server on loopback that answers each
// chat completion with the next of its replies: a text, or a tool call
// written "CALL name {json args}". It keeps the requests it received, and
// the key each came with.
type chatServer struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []string
	requests []string
	keys     []string
}

func newChatServer(t *testing.T, replies ...string) *chatServer {
	t.Helper()
	s := &chatServer{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		s.mu.Lock()
		s.requests = append(s.requests, string(body))
		s.keys = append(s.keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		reply := "done"
		if len(s.replies) > 0 {
			reply, s.replies = s.replies[0], s.replies[1:]
		}
		s.mu.Unlock()
		msg := map[string]any{"role": "assistant", "content": reply}
		finish := "stop"
		if rest, ok := strings.CutPrefix(reply, "CALL "); ok {
			name, args, _ := strings.Cut(rest, " ")
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call-1", "type": "function", "function": map[string]any{"name": name, "arguments": args}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) received() []string {
	_, bodies := s.seen()
	return bodies
}

// seen returns the key and the body of every request so far.
func (s *chatServer) seen() (keys, bodies []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...), append([]string(nil), s.requests...)
}

// scriptRepo is the shop repository with a file of TODOs and the given
// definitions in .troupe/agents (file name → content, or → an example's
// name under examples/agents when it starts with "example:").
func scriptRepo(t *testing.T, defs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(shop)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.go"), []byte("package shop\n// TODO: one\n// FIXME: two\n// TODO: three\n"), 0o644))
	agents := filepath.Join(dir, ".troupe", "agents")
	require.NoError(t, os.MkdirAll(agents, 0o755))
	for name, text := range defs {
		if ex, ok := strings.CutPrefix(text, "example:"); ok {
			data, err := os.ReadFile(filepath.Join("..", "..", "examples", "agents", ex))
			require.NoError(t, err)
			text = string(data)
		}
		require.NoError(t, os.WriteFile(filepath.Join(agents, name), []byte(text), 0o644))
	}
	return dir
}

func runScripted(t *testing.T, srv *chatServer, repo string, args ...string) (outcome, map[string]any) {
	t.Helper()
	o := runWith(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "HOME": t.TempDir()}, "",
		append([]string{"run", "--repo", repo, "--model", "openai:m", "--json", "--progress", "none"}, args...)...)
	var res map[string]any
	if o.stdout != "" {
		require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	}
	return o, res
}

func TestScriptExamplesRunThroughTheCLI(t *testing.T) {
	repo := scriptRepo(t, map[string]string{"verdict.yaml": "example:verdict.yaml", "todo-count.yaml": "example:todo-count.yaml"})
	o := troupe(t, "types", "list", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^  verdict\s.*its scripts run`, o.stdout, "untrusted, scripted types are listed as not loaded")
	assert.NotRegexp(t, `(?m)^verdict\s`, o.stdout)

	trustRepo(t, repo)
	o = troupe(t, "types", "list", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^verdict\s`, o.stdout)
	assert.Regexp(t, `(?m)^todo-count\s`, o.stdout)

	srv := newChatServer(t, "Looks fine.\n\n```json\n{\"verdict\": \"reject\", \"reasons\": [\"no tests\"]}\n```")
	o, res := runScripted(t, srv, repo, "verdict", "review cart/cart.go")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, map[string]any{"verdict": "reject", "reasons": []any{"no tests"}}, res["data"], "the Result hook parsed the verdict")
	assert.Contains(t, srv.received()[0], "review cart/cart.go\\n\\nEnd with the ```json verdict block.", "the Prompt hook shaped the task")

	srv = newChatServer(t, `CALL count_todos {}`, "There are 3.")
	o, res = runScripted(t, srv, repo, "todo-count", "how many TODOs?")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "completed", res["state"])
	reqs := srv.received()
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[1], `3 marker comments in 1 files\nnotes.go: 3`, "the script tool's result went back to the model")
}

// hostile scripts, each a Prompt hook, and what their agent's error says.
var hostile = []struct{ name, body, want string }{
	{"loop", `for { }`, "time budget"},
	{"recursion", `return recurse(0), nil`, "overflowed its stack"},
	{"alloc", `b := make([]byte, 4<<30); return string(b[len(b)-1:]), nil`, "memory"},
	{"goroutines", `for i := 0; i < 10000; i++ { go func() { select {} }() }; return "", nil`, "goroutines"},
	{"passwd", `return troupe.ReadFile("/etc/passwd")`, "refused the task"},
	{"escape", `return troupe.ReadFile("../../../../../../etc/passwd")`, "refused the task"},
	{"panic", `panic("boom")`, "panicked: boom"},
}

func hostileDef(name, body string) string {
	src := "package hooks\n\nimport \"troupe\"\n\nfunc recurse(n int) string { return recurse(n+1) + \"x\" }\n\nfunc Prompt(task troupe.Task) (string, error) {\n" + body + "\n}\n"
	// Only the endless loop is meant to meet the time budget; the others
	// get time enough on a loaded machine to meet their own limit first.
	budget := "10s"
	if name == "loop" {
		budget = "3s"
	}
	return "name: hostile-" + name + "\ndescription: A hostile script.\nneeds_language_model: true\ntools: [read]\nbudget: {max_time: " + budget + "}\nscript: |\n" + indent(src) + "\n"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func TestHostileScriptsFailTheirAgentOnly(t *testing.T) {
	defs := map[string]string{"verdict.yaml": "example:verdict.yaml"}
	for _, h := range hostile {
		defs["hostile-"+h.name+".yaml"] = hostileDef(h.name, h.body)
	}
	repo := scriptRepo(t, defs)
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			trustRepo(t, repo)
			srv := newChatServer(t, "never asked")
			o, res := runScripted(t, srv, repo, "hostile-"+h.name, "go")
			require.Equal(t, 1, o.code, o.stderr)
			assert.Equal(t, "failed", res["state"])
			assert.Equal(t, "script_error", res["reason"])
			assert.Contains(t, o.stdout, h.want)
			assert.NotContains(t, o.stdout, "root:x:0", "nothing of /etc/passwd reaches the result")
			assert.Empty(t, srv.received(), "the model was never called")

			srv = newChatServer(t, "ok {\"verdict\": \"approve\", \"reasons\": []}")
			o, res = runScripted(t, srv, repo, "verdict", "review")
			require.Equal(t, 0, o.code, o.stderr)
			assert.Equal(t, "approve", res["data"].(map[string]any)["verdict"], "a good scripted type runs after it")
		})
	}
}

func TestRefusedScriptsFailValidationWithTheirLine(t *testing.T) {
	// The user's own definitions, whose scripts are compiled, so that what
	// only compiling finds is found too.
	isolate(t)
	dir := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "troupe", "agents")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	cases := map[string]struct{ src, want string }{
		"exec.yaml":      {"package hooks\n\nimport \"os/exec\"\n\nfunc Prompt(t troupe.Task) (string, error) { return exec.Command(\"sh\").String(), nil }\n", `exec.yaml:8:10: import "os/exec" is not allowed`},
		"unsafe.yaml":    {"package hooks\n\nimport \"unsafe\"\n\nfunc Result(s string) (any, error) { return unsafe.Sizeof(s), nil }\n", `unsafe.yaml:8:10: import "unsafe" is not allowed`},
		"write.yaml":     {"package hooks\n\nimport \"os\"\n\nfunc Result(s string) (any, error) { return nil, os.WriteFile(\"/tmp/x\", nil, 0o644) }\n", `write.yaml:8:10: import "os" is not allowed`},
		"ioutil.yaml":    {"package hooks\n\nimport \"io/ioutil\"\n\nfunc Result(s string) (any, error) { return nil, ioutil.WriteFile(\"/tmp/x\", nil, 0o644) }\n", `ioutil.yaml:8:10: import "io/ioutil" is not allowed`},
		"hostapi.yaml":   {"package hooks\n\nimport \"troupe\"\n\nfunc Result(s string) (any, error) { return nil, troupe.WriteFile(\"x\", s) }\n", `hostapi.yaml:10:52: package troupe "troupe" has no symbol WriteFile`},
		"signature.yaml": {"package hooks\n\nfunc Result(s string) string { return s }\n", `signature.yaml:8:8: Result is func(string) string; it must be func(output string) (any, error)`},
		"rangeint.yaml":  {"package hooks\n\nfunc Result(s string) (any, error) {\n\tn := 0\n\tfor i := range 3 {\n\t\tn += i\n\t}\n\treturn n, nil\n}\n", `rangeint.yaml:10:4: range over an integer (Go 1.22) is not supported`},
	}
	var paths []string
	for name, c := range cases {
		def := "name: " + strings.TrimSuffix(name, ".yaml") + "\ndescription: refused.\ntools: [read]\nbudget: {max_time: 3s}\nscript: |\n" + indent(c.src) + "\n"
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(def), 0o644))
		paths = append(paths, p)
	}
	o := troupe(t, append([]string{"types", "validate"}, paths...)...)
	assert.Equal(t, 1, o.code)
	for _, c := range cases {
		assert.Regexp(t, regexp.QuoteMeta(c.want), o.stdout+o.stderr)
	}
}
