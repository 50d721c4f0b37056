package temporal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/tools"
	"github.com/troupe-dev/troupe/builtin/workspace"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// workerEnv makes the test binary a worker process, for the tests that
// kill one and the benchmarks: its value is "HOSTPORT QUEUE ROOT LOG
// DELAY [STATE]", DELAY each model call's (a Go duration). With STATE,
// a workspace state directory, the tree's agents change files
// (crashEditRegistry, crashModel's edits).
const workerEnv = "TROUPE_TEMPORAL_TEST_WORKER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		if err := runWorkerProcess(spec); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		// The SDK's workflow test environment keeps an activity's watcher
		// and retrier after the workflow that ran it gave up on it (the
		// cancel tests); a real worker does not (the integration tests).
		goleak.IgnoreTopFunction("go.temporal.io/sdk/internal.(*testWorkflowEnvironmentImpl).ExecuteActivity.func2"),
		goleak.IgnoreTopFunction("go.temporal.io/sdk/internal.(*testWorkflowEnvironmentImpl).executeActivityWithRetryForTest"))
}

// runWorkerProcess serves the crash tests' tree until SIGTERM.
func runWorkerProcess(spec string) error {
	f := strings.Fields(spec)
	if len(f) != 5 && len(f) != 6 {
		return fmt.Errorf("%s=%q: want HOSTPORT QUEUE ROOT LOG DELAY [STATE]", workerEnv, spec)
	}
	hostPort, queue, root, log := f[0], f[1], f[2], f[3]
	delay, err := time.ParseDuration(f[4])
	if err != nil {
		return err
	}
	c, err := client.Dial(client.Options{HostPort: hostPort, Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		return err
	}
	defer c.Close()
	cfg := manager.Config{Logger: slog.New(slog.DiscardHandler), DefaultModel: "scripted", MaxDepth: 2, MaxConcurrent: 64}
	edits := len(f) == 6
	if edits {
		spaces, err := workspace.New(workspace.Config{StateDir: f[5], ExcludesFile: filepath.Join(f[5], "no-excludes")})
		if err != nil {
			return err
		}
		defer spaces.Close()
		cfg.Workspaces = spaces
	}
	if cfg.Registry, err = crashRegistryFor(edits); err != nil {
		return err
	}
	model := crashModel(log, delay, edits)
	cfg.Models = manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })
	m, err := manager.New(cfg)
	if err != nil {
		return err
	}
	defer m.Close(context.Background())
	w, err := NewWorker(c, WorkerConfig{Manager: m, TaskQueue: queue, Root: root})
	if err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	return w.Run(stopChan(stop))
}

func stopChan(c chan os.Signal) <-chan any {
	out := make(chan any)
	go func() { <-c; close(out) }()
	return out
}

// crashRegistry holds "lead" and "mid", which delegate, and "helper",
// which echoes.
func crashRegistry() (*agenttypes.Registry, error) {
	reg := agenttypes.NewRegistry()
	for _, tool := range append([]agenttypes.Tool{echoTool}, tools.Delegation()...) {
		if err := reg.RegisterTool(tool); err != nil {
			return nil, err
		}
	}
	for _, typ := range []agenttypes.Type{
		{Name: "lead", Description: "leads", Prompt: "You lead.", Tools: []string{"delegate"}},
		{Name: "mid", Description: "leads a part", Prompt: "You lead a part.", Tools: []string{"delegate", "echo"}},
		{Name: "helper", Description: "helps", Prompt: "You help.", Tools: []string{"echo"}},
	} {
		if err := reg.RegisterType(typ); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// crashEditRegistry holds "lead" and "mid", which delegate and merge
// their children's changes, and "helper", which writes a file.
func crashEditRegistry() (*agenttypes.Registry, error) {
	reg := agenttypes.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		return nil, err
	}
	for _, typ := range []agenttypes.Type{
		// A child has only the tools its parent has: write is passed down.
		{Name: "lead", Description: "leads", Prompt: "You lead.", Tools: []string{"delegate", "merge", "write"}},
		{Name: "mid", Description: "leads a part", Prompt: "You lead a part.", Tools: []string{"delegate", "merge", "write"}},
		{Name: "helper", Description: "helps", Prompt: "You help.", Tools: []string{"write"}},
	} {
		if err := reg.RegisterType(typ); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// crashRegistryFor is crashEditRegistry for a tree that edits, else
// crashRegistry.
func crashRegistryFor(edits bool) (*agenttypes.Registry, error) {
	if edits {
		return crashEditRegistry()
	}
	return crashRegistry()
}

// crashStepDelay is how long each model call of the crash tests takes:
// long enough that a worker killed while one runs is killed mid-call.
const crashStepDelay = 300 * time.Millisecond

// noLog is crashModel's log when none is kept.
const noLog = "-"

// crashModel plays a lead that delegates two parts to mids, mids that
// delegate two tasks each to helpers, and helpers that echo and report.
// With edits, helpers write a file named after their task instead, and
// the lead and the mids merge their children's changes, one a turn,
// before they report. Each call appends "start KEY PID" to log as it
// begins and "done KEY" once it has its answer, KEY naming the agent by
// its task and the call by its turn; each call takes delay. A log of
// noLog keeps none.
func crashModel(log string, delay time.Duration, edits bool) *scripted.Model {
	var mu sync.Mutex
	write := func(line string) {
		if log == noLog {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line + "\n"); err != nil {
			panic(err)
		}
	}
	step := scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
		system, task, turns := scripted.Text(msgs[0]), scripted.Text(msgs[1]), aiTurns(msgs)
		key := strings.ReplaceAll(task, " ", "_") + "/" + fmt.Sprint(turns)
		write(fmt.Sprintf("start %s %d", key, os.Getpid()))
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return scripted.Step{Err: ctx.Err()}
			}
		}
		defer write("done " + key)
		results := scripted.ToolResults(msgs)
		delegate := func(kind string, prompts ...string) scripted.Step {
			var tasks []map[string]any
			for i, p := range prompts {
				tasks = append(tasks, map[string]any{"label": fmt.Sprint(kind, i), "type": kind, "prompt": p})
			}
			return scripted.Step{InputTokens: 100, OutputTokens: 20, Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{"tasks": tasks})}}}
		}
		leads := !strings.Contains(system, "You help.")
		if edits {
			kind := "helper"
			if strings.Contains(system, "You lead.") {
				kind = "mid"
			}
			switch {
			case leads && (turns == 1 || turns == 2):
				return scripted.Step{InputTokens: 60, OutputTokens: 8, Calls: []scripted.Call{{Name: "merge", Args: scripted.JSON(map[string]string{"agent": fmt.Sprint(kind, turns-1)})}}}
			case leads && turns > 2:
				return scripted.Step{InputTokens: 200, OutputTokens: 30, Text: task + " merged: " + results[len(results)-1].Content}
			case !leads && turns == 0:
				name := strings.ReplaceAll(task, " ", "_") + ".txt"
				return scripted.Step{InputTokens: 50, OutputTokens: 10, Calls: []scripted.Call{{Name: "write", Args: scripted.JSON(map[string]string{"path": name, "content": task + "\n"})}}}
			}
		}
		switch {
		case turns > 0 && leads:
			return scripted.Step{InputTokens: 200, OutputTokens: 30, Text: task + " done: " + results[len(results)-1].Content}
		case strings.Contains(system, "You lead."):
			return delegate("mid", "part one", "part two")
		case strings.Contains(system, "You lead a part."):
			return delegate("helper", task+" alpha", task+" beta")
		case turns == 0:
			word := task[strings.LastIndex(task, " ")+1:]
			return scripted.Step{InputTokens: 50, OutputTokens: 10, Calls: []scripted.Call{{Name: "echo", Args: scripted.JSON(map[string]string{"text": word})}}}
		}
		return scripted.Step{InputTokens: 70, OutputTokens: 12, Text: "heard " + results[len(results)-1].Content}
	}}
	return scripted.New(step, step, step, step)
}

// aiTurns counts a conversation's assistant messages: the turns its
// agent has taken, which the tests' scripted models answer by.
func aiTurns(msgs []llms.MessageContent) int {
	n := 0
	for _, m := range msgs {
		if m.Role == llms.ChatMessageTypeAI {
			n++
		}
	}
	return n
}
