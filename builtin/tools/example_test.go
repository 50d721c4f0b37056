package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// exampleDir writes a small project and returns a context that carries it
// as the agent's directory, as the manager would.
func exampleDir() (context.Context, func()) {
	dir, err := os.MkdirTemp("", "tools-example")
	if err != nil {
		panic(err)
	}
	files := []struct{ name, text string }{
		{".gitignore", "*.log\n"},
		{"main.go", "package main\n\nfunc main() {\n\tserve()\n}\n"},
		{"server/serve.go", "package server\n\n// serve starts the server.\nfunc serve() {}\n"},
		{"debug.log", "serve called\n"},
	}
	for i, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.WriteFile(p, []byte(f.text), 0o644)
		mt := time.Date(2024, 1, 1, 0, i, 0, 0, time.UTC)
		_ = os.Chtimes(p, mt, mt)
	}
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: dir})
	return ctx, func() { os.RemoveAll(dir) }
}

func ExampleGrep() {
	ctx, cleanup := exampleDir()
	defer cleanup()
	out, err := tools.Grep().Call(ctx, json.RawMessage(`{"pattern": "serve\\(\\)"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out) // debug.log is ignored by .gitignore
	// Output:
	// main.go:4:	serve()
	// server/serve.go:4:func serve() {}
}

func ExampleSymbols() {
	ctx, cleanup := exampleDir()
	defer cleanup()
	out, _ := tools.Symbols().Call(ctx, json.RawMessage(`{"query": "start"}`))
	fmt.Println(out) // "start" matches serve's doc comment; main's name does not hold it
	// Output:
	// 2 declarations in 2 files; 1 match: start 1
	// server/serve.go:4-4 func serve func serve() — serve starts the server.
}

func ExampleRead() {
	ctx, cleanup := exampleDir()
	defer cleanup()
	out, _ := tools.Read().Call(ctx, json.RawMessage(`{"path": "main.go", "offset": 3, "limit": 2}`))
	fmt.Println(out)
	// Output:
	//      3	func main() {
	//      4		serve()
	// ... more lines follow; continue with offset=5
}

func ExampleGlob() {
	ctx, cleanup := exampleDir()
	defer cleanup()
	out, _ := tools.Glob().Call(ctx, json.RawMessage(`{"pattern": "**/*.go"}`))
	fmt.Println(out) // newest first
	// Output:
	// server/serve.go
	// main.go
}

func ExampleLs() {
	ctx, cleanup := exampleDir()
	defer cleanup()
	out, _ := tools.Ls().Call(ctx, json.RawMessage(`{}`))
	fmt.Println(out)
	// Output:
	// .gitignore	6
	// debug.log	13
	// main.go	39
	// server/
}

func ExampleReadOnly() {
	for _, t := range tools.ReadOnly() {
		fmt.Println(t.Spec().Name, t.Spec().ReadOnly)
	}
	// Output:
	// read true
	// grep true
	// symbols true
	// glob true
	// ls true
	// git true
}

// exampleTree stands for the manager: each task's child completes at once
// with a short report.
type exampleTree struct{ agenttypes.Tree }

func (exampleTree) Delegate(_ context.Context, req agenttypes.DelegateRequest) (*agenttypes.DelegateResponse, error) {
	resp := &agenttypes.DelegateResponse{Group: "g-1"}
	for i, t := range req.Tasks {
		resp.Results = append(resp.Results, agenttypes.ChildResult{
			Label: t.Label, ID: fmt.Sprintf("ag-%d", i+1), Type: t.Type, Model: "offline",
			Status: agenttypes.ChildOK, Reason: "done",
			Usage:     agenttypes.Usage{InputTokens: 1200 * (i + 1), OutputTokens: 150},
			ToolCalls: 3, Turns: 2, Duration: 1500 * time.Millisecond,
			Report: "Found it in `server/serve.go:4`.",
		})
	}
	return resp, nil
}

// Delegate hands tasks to children through the agent tree the manager
// puts in the tool's environment; here a stand-in answers.
func ExampleDelegate() {
	ctx, cleanup := exampleDir()
	defer cleanup()
	ctx = agenttypes.WithEnv(ctx, &agenttypes.Env{Dir: agenttypes.EnvFrom(ctx).Dir, Tree: exampleTree{}})
	out, err := tools.Delegate().Call(ctx, json.RawMessage(`{"tasks": [
		{"label": "entry", "prompt": "Where does the program start serving?", "context": ["main.go"]},
		{"label": "server", "prompt": "Where is serve defined?", "max_tool_calls": 10}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out)
	// Output:
	// # Subagents complete: 2/2
	//
	// ## [entry] ok — explore, model offline, 1.2k in / 150 out, 3 tool calls, 2 turns, 1.5s
	// Agent ID: ag-1
	//
	// Found it in `server/serve.go:4`.
	//
	// ## [server] ok — explore, model offline, 2.4k in / 150 out, 3 tool calls, 2 turns, 1.5s
	// Agent ID: ag-2
	//
	// Found it in `server/serve.go:4`.
}

// exampleWorkspace stands for an agent's workspace: a plain directory
// whose commands all fail a test, as a child's might.
type exampleWorkspace struct{ dir string }

func (w exampleWorkspace) Top() string { return w.dir }

func (w exampleWorkspace) Dir() string { return w.dir }

func (exampleWorkspace) Run(_ context.Context, cmd agenttypes.Command) (agenttypes.CommandResult, error) {
	if cmd.Args[0] != "go" {
		return agenttypes.CommandResult{}, fmt.Errorf("%w: %q does not start with an allowed prefix (go test, go vet)", agenttypes.ErrRunRefused, cmd.Args[0])
	}
	return agenttypes.CommandResult{
		ExitCode: 1, Duration: 2400 * time.Millisecond,
		Output:   "--- FAIL: TestServe\n    serve_test.go:9: serve() did not listen\nFAIL\n",
		Confined: agenttypes.Confinement{Network: true, Writes: true},
	}, nil
}

func (exampleWorkspace) Merge(context.Context, *agenttypes.Changes) (agenttypes.MergeResult, error) {
	return agenttypes.MergeResult{}, nil
}

func (exampleWorkspace) Close(context.Context) (*agenttypes.Changes, error) { return nil, nil }

// Write and edit change files in the agent's own workspace; the manager
// puts the workspace in the tools' environment.
func ExampleEdit() {
	ctx, cleanup := exampleDir()
	defer cleanup()
	ws := exampleWorkspace{dir: agenttypes.EnvFrom(ctx).Dir}
	ctx = agenttypes.WithEnv(ctx, &agenttypes.Env{Dir: ws.Dir(), Workspace: ws})
	out, _ := tools.Write().Call(ctx, json.RawMessage(`{"path": "cart/total.go", "content": "package cart\n// Total sums the prices.\nfunc Total(prices []int) int {\n\tsum := 0\n\tfor _, p := range prices {\n\t\tsum += p\n\t}\n\treturn sum\n}\n"}`))
	fmt.Println(out)
	out, _ = tools.Edit().Call(ctx, json.RawMessage(`{"path": "cart/total.go", "old_string": "\t\tsum += p\n", "new_string": "\t\tif p > 0 {\n\t\t\tsum += p\n\t\t}\n"}`))
	fmt.Println(out)
	_, err := tools.Edit().Call(ctx, json.RawMessage(`{"path": "cart/total.go", "old_string": "func Total(prices []float64) int {", "new_string": "func Sum(prices []int) int {"}`))
	fmt.Println(err)
	// Output:
	// created cart/total.go (9 lines, 136 bytes)
	// replaced 1 occurrence in cart/total.go (lines 6-8):
	//      4		sum := 0
	//      5		for _, p := range prices {
	//      6			if p > 0 {
	//      7				sum += p
	//      8			}
	//      9		}
	//     10		return sum
	// edit: old_string is not in cart/total.go. The closest lines are line 3, shown below with a line around them; read them and copy the text exactly, whitespace included, without the line numbers:
	//      2	// Total sums the prices.
	//      3	func Total(prices []int) int {
	//      4		sum := 0
}

// A command that fails is the tool's result, not its error: the model
// reads the failure.
func ExampleRun() {
	ws := exampleWorkspace{dir: os.TempDir()}
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: ws.Dir(), Workspace: ws})
	out, err := tools.Run().Call(ctx, json.RawMessage(`{"command": "go test ./server", "timeout": 60}`))
	fmt.Println(out, err)
	_, err = tools.Run().Call(ctx, json.RawMessage(`{"command": "curl example.com"}`))
	fmt.Println(err)
	// Output:
	// $ go test ./server
	// exit status 1 after 2.4s
	// confinement: no network, nor this machine's sockets; writes confined to the workspace and a private temporary directory
	// output:
	// --- FAIL: TestServe
	//     serve_test.go:9: serve() did not listen
	// FAIL <nil>
	// run: command refused: "curl" does not start with an allowed prefix (go test, go vet)
}

func ExampleChanging() {
	for _, t := range tools.Changing() {
		fmt.Println(t.Spec().Name, t.Spec().ReadOnly)
	}
	// Output:
	// write false
	// edit false
	// run false
	// merge false
}
