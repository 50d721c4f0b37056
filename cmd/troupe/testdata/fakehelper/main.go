// Command fakehelper plays troupe-temporal for the command's tests, with
// no cluster. As run, it serves one run with stepwire.ServeRun, as the
// real helper does, on a backend that runs nothing and ends the run as
// TEMPORAL_TROUPE_FAKE says (complete, fail, hold, else an error). As
// worker, it asks the troupe process for a start step, as a worker's
// activity would, and then exits (TEMPORAL_TROUPE_FAKE=exit) or waits
// for its stdin to close. It appends what happened to the file
// TEMPORAL_TROUPE_FAKE_MARKS names.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/stepwire"
)

func main() {
	signal.Ignore(syscall.SIGINT) // as the real helper: troupe decides
	f := fake{scenario: os.Getenv("TEMPORAL_TROUPE_FAKE"), marks: os.Getenv("TEMPORAL_TROUPE_FAKE_MARKS"), args: os.Args[1:]}
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "run":
		err = stepwire.ServeRun(context.Background(), os.Stdin, os.Stdout, f)
	case len(os.Args) > 1 && os.Args[1] == "worker":
		err = f.worker()
	default:
		err = errors.New("give run or worker")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakehelper:", err)
		os.Exit(1)
	}
}

// worker runs a start step on the troupe process, as an activity would.
func (f fake) worker() error {
	f.mark("started %d", os.Getpid())
	f.mark("args %s", strings.Join(f.args, " "))
	root := ""
	for i, a := range f.args {
		if a == "--root" && i+1 < len(f.args) {
			root = f.args[i+1]
		}
	}
	steps := stepwire.NewClient(os.Stdin, os.Stdout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := steps.Start(ctx, stepwire.Input{Agent: manager.StepAgent{ID: "fake-agent", Type: "explore", Task: "where is the discount applied?", Dir: root}})
	if err != nil {
		return fmt.Errorf("the start step: %w", err)
	}
	f.mark("step model %s, %d messages", out.Model, len(out.Messages))
	if f.scenario == "exit" {
		return nil
	}
	<-steps.Done()
	f.mark("stdin closed")
	return nil
}

type fake struct {
	scenario, marks string
	args            []string
}

func (f fake) mark(format string, args ...any) {
	if f.marks == "" {
		return
	}
	out, err := os.OpenFile(f.marks, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer out.Close()
	fmt.Fprintf(out, format+"\n", args...)
}

func (f fake) Run(ctx context.Context, run manager.RemoteRun) (manager.RemoteOutcome, error) {
	var names []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	slices.Sort(names)
	f.mark("started %d", os.Getpid())
	f.mark("args %s", strings.Join(f.args, " "))
	f.mark("env %s", strings.Join(names, " "))
	f.mark("run %s %s %q", run.ID, run.Type, run.Task)
	run.Publish(manager.Event{Kind: manager.EventToolCall, Turn: 1, Tool: "grep", Args: `{"pattern":"discount"}`})
	run.Publish(manager.Event{Kind: manager.EventSpawned, AgentID: "child-0001", ParentID: run.ID, Type: "explore", Label: "helper", Depth: 1, State: manager.Pending, Text: "look at the cart"})
	run.Publish(manager.Event{Kind: manager.EventCompleted, AgentID: "child-0001", ParentID: run.ID, Type: "explore", Label: "helper", Depth: 1, State: manager.Completed, Reason: manager.ReasonDone})
	switch f.scenario {
	case "complete":
		return manager.RemoteOutcome{State: manager.Completed, Reason: manager.ReasonDone, Output: "fake output for: " + run.Task,
			Usage: manager.Usage{InputTokens: 120, OutputTokens: 12}, OwnUsage: manager.Usage{InputTokens: 100, OutputTokens: 10}, ToolCalls: 1, Turns: 2}, nil
	case "changed-elsewhere":
		// Workers with a checkout of their own changed a file there.
		return manager.RemoteOutcome{State: manager.Completed, Reason: manager.ReasonDone, Output: "wrote the notes", Turns: 2, ToolCalls: 1,
			Changes: &agenttypes.Changes{Dir: "/srv/worker/checkout", Repo: "/srv/worker/checkout/.git", Branch: "troupe/run/agent",
				Base: strings.Repeat("a", 40), Head: strings.Repeat("b", 40), Added: []string{"notes.md"}, Insertions: 1,
				Diffstat: " notes.md | 1 +\n 1 file changed, 1 insertion(+)"}}, nil
	case "fail":
		return manager.RemoteOutcome{State: manager.Failed, Reason: manager.ReasonBudgetTurns, Error: "the turn budget of 1 is spent", Partial: true, Turns: 1}, nil
	case "hold":
		f.mark("holding")
		<-ctx.Done()
		f.mark("cancelled")
		return manager.RemoteOutcome{State: manager.Cancelled, Reason: manager.ReasonCancelled, Error: "cancelled on the cluster", Partial: true}, nil
	}
	return manager.RemoteOutcome{}, errors.New("cannot reach the Temporal cluster (fake)")
}
