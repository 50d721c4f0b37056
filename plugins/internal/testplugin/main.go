// Command testplugin is the plugin the plugins package's tests run as a
// real process. It misbehaves on request: TESTPLUGIN_HANG=FIFO says its
// process ID on FIFO and hangs before serving, TESTPLUGIN_EXIT=1 exits at once, TESTPLUGIN_GATE=PATH waits
// before serving until the test lets it go (see atGate),
// TESTPLUGIN_BAD_TYPES=1 offers types the host must refuse or warn of
// beside the rest, TESTPLUGIN_NO_LANE=1 serves tool calls over gRPC alone,
// as a plugin older than the lane does, TESTPLUGIN_HOSTILE_SPANS=1 serves
// without the SDK and answers with spans no well-behaved plugin sends
// (see hostile.go); its tools block, panic or ignore cancellation when told to.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"
	"go.opentelemetry.io/otel"

	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/serve"
	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

type args struct {
	Text   string `json:"text"`
	Marker string `json:"marker"`
}

func parse(raw json.RawMessage) (args, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, sdk.Errorf(sdk.CodeInvalidArgument, "bad arguments: %v", err)
	}
	return a, nil
}

// mark writes the process's ID as a line to the marker a test waits on
// (a FIFO the test reads), when asked to.
func mark(a args) {
	if a.Marker == "" {
		return
	}
	f, err := os.OpenFile(a.Marker, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	_, _ = fmt.Fprintln(f, os.Getpid())
	_ = f.Close()
}

var schema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"marker":{"type":"string"}}}`)

func tool(name, desc string, fn func(ctx context.Context, a args, req sdk.CallRequest) (string, error)) sdk.Tool {
	return &sdk.ToolFunc{
		ToolSpec: sdk.ToolSpec{Name: name, Description: desc, Parameters: schema, ReadOnly: true},
		Func: func(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
			a, err := parse(req.Args)
			if err != nil {
				return nil, err
			}
			mark(a)
			text, err := fn(ctx, a, req)
			if err != nil {
				return nil, err
			}
			return &sdk.CallResponse{Text: text}, nil
		},
	}
}

func main() {
	if os.Getenv("TESTPLUGIN_NO_LANE") == "1" {
		// As a plugin built before the lane: it leaves the host's unused.
		_ = os.Unsetenv(wire.EnvLaneFD)
	}
	misbehaveAtStart()
	if v := os.Getenv("TESTPLUGIN_PROTOCOL"); v != "" {
		serveProtocol(v)
		return
	}
	if os.Getenv("TESTPLUGIN_HOSTILE_SPANS") == "1" {
		serveHostileSpans()
		return
	}
	serve.Serve(sdk.Plugin{
		Name:    "test",
		Version: "1.2.3",
		Tools:   slices.Concat(answerTools(), faultTools(), processTools(), traceTools()),
		Types: slices.Concat(modelTypes(), blockingTypes(), sessionTypes(), workspaceTypes(), []sdk.Type{
			{Name: "plain", Description: "A type the host's own loop runs.", Prompt: "You help.", Tools: []string{"shout"}},
		}),
	})
}

// workspaceTypes say where their agents work and what they may run; with
// TESTPLUGIN_BAD_TYPES=1, types whose workspace, run policy or setup the
// host must refuse or warn of come too, each named for what is wrong with
// it.
func workspaceTypes() []sdk.Type {
	fixer := sdk.Type{
		Name: "fixer", Description: "Fixes code in a workspace of its own and checks it with the tests.",
		Prompt: "Fix it.", Tools: []string{"read", "edit", "run"},
		Workspace: sdk.WorkspaceWorktree,
		Run:       sdk.RunPolicy{Allow: []string{"go test", "go mod download"}, Timeout: 90 * time.Second, Network: true},
		Setup:     []string{"go mod download"},
	}
	reader := sdk.Type{Name: "reader", Description: "Reads where it is put.", Prompt: "Read.", Tools: []string{"read"}, Workspace: sdk.WorkspaceNone}
	types := []sdk.Type{fixer, reader}
	if os.Getenv("TESTPLUGIN_BAD_TYPES") != "1" {
		return types
	}
	bad := func(name string, change func(*sdk.Type)) sdk.Type {
		t := fixer
		t.Name = name
		change(&t)
		return t
	}
	return append(types,
		bad("bad-setup", func(t *sdk.Type) { t.Setup = []string{"npm ci"} }),
		bad("bad-timeout", func(t *sdk.Type) { t.Run.Timeout = time.Hour }),
		bad("bad-negative-timeout", func(t *sdk.Type) { t.Run.Timeout = -time.Microsecond }),
		bad("bad-operator", func(t *sdk.Type) { t.Run.Allow = []string{"go test | tee out"} }),
		bad("bad-none", func(t *sdk.Type) { t.Workspace, t.Setup = sdk.WorkspaceNone, nil }),
		bad("bad-mode", func(t *sdk.Type) { t.Workspace = "tmpdir" }),
		bad("bad-long-allow", func(t *sdk.Type) { t.Run.Allow = slices.Repeat([]string{"go test"}, 65) }),
		bad("bad-long-entry", func(t *sdk.Type) { t.Run.Allow = append(t.Run.Allow, "go "+strings.Repeat("x", 2000)) }),
		bad("bad-long-setup", func(t *sdk.Type) { t.Setup = slices.Repeat([]string{"go test"}, 17) }),
		// Usable, but its run tool refuses every command: the host warns.
		bad("runs-nothing", func(t *sdk.Type) { t.Run, t.Setup = sdk.RunPolicy{}, nil }),
	)
}

// misbehaveAtStart hangs, exits or waits at the gate before serving, as
// the environment asks.
func misbehaveAtStart() {
	if hang := os.Getenv("TESTPLUGIN_HANG"); hang != "" {
		mark(args{Marker: hang})
		time.Sleep(time.Hour)
	}
	if os.Getenv("TESTPLUGIN_EXIT") == "1" {
		os.Exit(7)
	}
	if gate := os.Getenv("TESTPLUGIN_GATE"); gate != "" {
		atGate(gate)
	}
}

// serveProtocol serves as a plugin built against another version of the
// protocol, version v, would.
func serveProtocol(v string) {
	n, _ := strconv.Atoi(v)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{n: {wire.PluginName: &wire.Plugin{
			Serve: func(*plugin.GRPCBroker) pluginv1.PluginServer { return pluginv1.UnimplementedPluginServer{} },
		}}},
		GRPCServer: plugin.DefaultGRPCServer,
	})
}

// answerTools answer from their arguments and the calling agent.
func answerTools() []sdk.Tool {
	return []sdk.Tool{
		tool("shout", "Upper-cases text.", func(_ context.Context, a args, req sdk.CallRequest) (string, error) {
			return strings.ToUpper(a.Text) + " from " + req.Agent.ID, nil
		}),
		tool("pid", "Says the plugin's process ID.", func(context.Context, args, sdk.CallRequest) (string, error) {
			return strconv.Itoa(os.Getpid()), nil
		}),
	}
}

// faultTools misbehave in a call: they block, hang past cancellation,
// panic or fail.
func faultTools() []sdk.Tool {
	return []sdk.Tool{
		tool("block", "Waits until cancelled.", func(ctx context.Context, _ args, _ sdk.CallRequest) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}),
		tool("stubborn", "Ignores cancellation.", func(context.Context, args, sdk.CallRequest) (string, error) {
			time.Sleep(time.Hour)
			return "", nil
		}),
		tool("boom", "Panics.", func(context.Context, args, sdk.CallRequest) (string, error) {
			panic("boom in a tool")
		}),
		tool("fail", "Fails with the code its text names.", func(_ context.Context, a args, _ sdk.CallRequest) (string, error) {
			return "", fmt.Errorf("fail: %w", sdk.Errorf(sdk.Code(a.Text), "the plugin fails with %s", a.Text))
		}),
	}
}

// processTools say what the plugin's process sees (its environment, its
// deadline) or start processes of their own.
func processTools() []sdk.Tool {
	return []sdk.Tool{
		tool("env", "Lists the plugin's environment, one variable a line.", func(context.Context, args, sdk.CallRequest) (string, error) {
			env := os.Environ()
			slices.Sort(env)
			return strings.Join(env, "\n"), nil
		}),
		tool("spawn", "Starts a process of its own that sleeps, and says its process ID; with text \"escape\", in a session of its own.", func(_ context.Context, a args, _ sdk.CallRequest) (string, error) {
			cmd := exec.Command("sleep", "300")
			if a.Text == "escape" {
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			}
			if err := cmd.Start(); err != nil {
				return "", err
			}
			go func() { _ = cmd.Wait() }()
			return strconv.Itoa(cmd.Process.Pid), nil
		}),
		tool("deadline", "Says how long is left until its deadline.", func(ctx context.Context, _ args, _ sdk.CallRequest) (string, error) {
			d, ok := ctx.Deadline()
			if !ok {
				return "none", nil
			}
			return time.Until(d).Round(time.Second).String(), nil
		}),
	}
}

// modelTypes run the small custom loop over the host's model and tools.
func modelTypes() []sdk.Type {
	return []sdk.Type{
		{
			Name: "looper", Description: "Asks the host's model, runs the tools it asks for, answers.",
			Tools: []string{"echo", "shout"}, Loop: sdk.LoopFunc(loop),
		},
		{
			Name: "shouter", Description: "The looper with the troupe binary's own tools.",
			Tools: []string{"ls", "shout"}, Loop: sdk.LoopFunc(loop),
		},
	}
}

// blockingTypes block until cancelled, for the tests of stopping an
// agent and what it started.
func blockingTypes() []sdk.Type {
	return []sdk.Type{
		{
			Name: "waiter", Description: "Blocks until cancelled.",
			Loop: sdk.LoopFunc(func(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
				mark(args{Marker: req.Task})
				<-ctx.Done()
				return nil, ctx.Err()
			}),
		},
		{
			Name: "spawner", Description: "Starts a process that sleeps, writes the plugin's and that process's IDs to the file its task names, and blocks until cancelled.",
			Loop: sdk.LoopFunc(func(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
				cmd := exec.Command("sleep", "300")
				if err := cmd.Start(); err != nil {
					return nil, err
				}
				go func() { _ = cmd.Wait() }()
				pids := fmt.Sprintf("%d %d\n", os.Getpid(), cmd.Process.Pid)
				if err := os.WriteFile(req.Task, []byte(pids), 0o644); err != nil {
					return nil, err
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}),
		},
	}
}

// sessionTypes each use one call of the session: the model, the parent,
// and the errors that come back over it.
func sessionTypes() []sdk.Type {
	return []sdk.Type{
		{
			Name: "stepper", Description: "Makes as many model calls as its task says, for benchmarks.",
			Loop: sdk.LoopFunc(func(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
				n, _ := strconv.Atoi(req.Task)
				msgs := []sdk.Message{{Role: sdk.RoleUser, Text: "step"}}
				for range n {
					if _, err := s.Generate(ctx, sdk.GenerateRequest{Messages: msgs}); err != nil {
						return nil, err
					}
				}
				return &sdk.RunResponse{Output: strconv.Itoa(n)}, nil
			}),
		},
		{
			Name: "asker", Description: "Asks its parent the task and answers with the reply.",
			Loop: sdk.LoopFunc(func(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
				a, err := s.AskParent(ctx, sdk.Question{Text: req.Task, Suggestions: []string{"OAuth", "API keys"}})
				if err != nil {
					return nil, err
				}
				return &sdk.RunResponse{Output: a.By + ": " + a.Text}, nil
			}),
		},
		{
			Name: "relay", Description: "Makes a model call and returns its error, after checking that in the plugin too the error has the code its task names and matches that code's sentinel.",
			Loop: sdk.LoopFunc(relay),
		},
	}
}

// relay makes a model call and returns its error, after checking that in
// the plugin too the error has the code the task names and matches that
// code's sentinel.
func relay(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
	_, err := s.Generate(ctx, sdk.GenerateRequest{Messages: []sdk.Message{{Role: sdk.RoleUser, Text: req.Task}}})
	code := sdk.Code(req.Task)
	if got := sdk.CodeOf(err); got != code {
		return nil, fmt.Errorf("the plugin got code %s, not %s, from %v", got, code, err)
	}
	if s := code.Sentinel(); s != nil && !errors.Is(err, s) {
		return nil, fmt.Errorf("in the plugin, %v does not match the sentinel of %s", err, code)
	}
	return nil, err
}

// atGate holds the plugin's start until the test says: it writes its
// process ID as a line to the FIFO gate+".ready", then reads one byte from
// the FIFO gate: 'x' makes it exit with status 7, anything else (or the
// test closing the gate) lets it serve.
func atGate(gate string) {
	ready, err := os.OpenFile(gate+".ready", os.O_WRONLY, 0)
	if err != nil {
		os.Exit(8)
	}
	_, _ = fmt.Fprintln(ready, os.Getpid())
	_ = ready.Close()
	g, err := os.Open(gate)
	if err != nil {
		os.Exit(8)
	}
	b := make([]byte, 1)
	if n, _ := g.Read(b); n == 1 && b[0] == 'x' {
		os.Exit(7)
	}
	_ = g.Close()
}

// loop is a small custom loop: ask the model, run the tools it asks for,
// ask again, answer.
func loop(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
	slog.Info("loop started", "agent", req.Agent.ID)
	ctx, span := otel.Tracer("testplugin").Start(ctx, "loop")
	defer span.End()
	if err := s.Event(ctx, "looping on "+req.Task); err != nil {
		return nil, err
	}
	if err := s.Note(ctx, "noted by the plugin"); err != nil {
		return nil, err
	}
	specs, err := s.Tools(ctx)
	if err != nil {
		return nil, err
	}
	msgs := []sdk.Message{{Role: sdk.RoleSystem, Text: fmt.Sprintf("plugin loop with %d tools", len(specs))}, {Role: sdk.RoleUser, Text: req.Task}}
	for range 5 {
		resp, err := s.Generate(ctx, sdk.GenerateRequest{Messages: msgs})
		if err != nil {
			return nil, err
		}
		if len(resp.ToolCalls) == 0 {
			return &sdk.RunResponse{Output: resp.Text}, nil
		}
		msgs = append(msgs, sdk.Message{Role: sdk.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		for _, c := range resp.ToolCalls {
			var text string
			out, err := s.CallTool(ctx, c)
			switch {
			case errors.Is(err, sdk.ErrBudgetExceeded):
				return nil, err
			case err != nil:
				text = "error: " + err.Error()
			default:
				text = out.Text
			}
			msgs = append(msgs, sdk.Message{Role: sdk.RoleTool, ToolCallID: c.ID, Name: c.Name, Text: text})
		}
	}
	return nil, errors.New("no answer in five turns")
}
