package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/builtin/offline"
	"github.com/troupe-dev/troupe/manager"
)

type runFlags struct {
	model        string
	maxTokens    int
	maxTime      time.Duration
	maxToolCalls int
	maxTurns     int
	maxCost      float64
	maxDepth     int
	json         bool
	progress     string
	yes          bool
	apply        bool
	temporal     temporalFlags
}

func (a *app) runCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run TYPE TASK...",
		Short: "Run one agent of a type on a task",
		Example: `  troupe run explore --repo . "where are budgets enforced?"
  troupe run explore --json --max-turns 5 "which files parse YAML?"
  troupe run plan --model openai:gpt-4o-mini "add a --dry-run flag"
  troupe run general --yes --max-cost 0.50 "review this change for security, correctness and style"
  troupe run general --apply "make the failing cart test pass"
  troupe run explore --temporal 127.0.0.1:7233 "where are budgets enforced?"`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.run(cmd, f, args[0], strings.Join(args[1:], " "))
		},
	}
	fl := cmd.Flags()
	addRepoFlag(cmd, "directory the agent works in")
	fl.StringVar(&f.model, "model", "", "model as provider:model, an alias (sonnet, haiku, opus, mini) or offline\n(default: $TROUPE_MODEL, the config file's model, a running Ollama, a present API key, else offline)")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "token budget: input plus output over all model calls")
	fl.DurationVar(&f.maxTime, "max-time", 0, "wall-time budget, such as 90s or 5m")
	fl.IntVar(&f.maxToolCalls, "max-tool-calls", 0, "tool-call budget")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "turn (model call) budget")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "cost budget in US dollars, such as 0.50, over the agent and its subagents\n(needs a model with a known price)")
	fl.IntVar(&f.maxDepth, "max-depth", 0, "how deep delegation may go: 1 (the default) lets the agent's subagents work\nbut not delegate, 2 lets them delegate once more")
	fl.BoolVar(&f.json, "json", false, "print the result as one JSON object")
	fl.StringVar(&f.progress, "progress", "auto", "progress on stderr: auto, plain, json or none")
	fl.BoolVar(&f.apply, "apply", false, "apply the run's changes to the directory it ran in once it completes, after showing them\n(a terminal asks first; elsewhere nothing is applied without --yes)")
	fl.BoolVar(&f.yes, "yes", false, "let agents delegate to subagents, and --apply apply the changes, without asking\n(without it, a terminal asks; elsewhere delegation is refused and nothing is applied)")
	addTemporalFlags(cmd, &f.temporal, "run on the Temporal cluster whose frontend is HOST:PORT, on the workers\n'troupe worker' runs there (they choose the model unless --model does)")
	return cmd
}

func (a *app) run(cmd *cobra.Command, f runFlags, typeName, task string) error {
	budget, err := budgetFlags(cmd, f)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("max-depth") && f.maxDepth <= 0 {
		return usagef("--max-depth %d: delegation depth must be at least 1; leave the flag out for 1", f.maxDepth)
	}
	mode, err := progressMode(f.progress, a.stderr, a.getenv, a.isTerminal)
	if err != nil {
		return err
	}
	if err := checkRemoteRun(cmd, f); err != nil {
		return err
	}
	repo, where, err := repoDir(cmd)
	if err != nil {
		return err
	}
	backend, err := a.remoteBackend(cmd.Context(), f.temporal, repo)
	if err != nil {
		return err
	}
	reg, resolver, err := a.openProject(repo)
	if err != nil {
		return err
	}
	eng, err := a.runEngine(cmd.Context(), f, backend, repo, reg, resolver, typeName)
	if err != nil {
		return err
	}
	defer eng.close()
	runs := a.transcriptDir()
	// The user is asked, about delegations and children's questions, only
	// where they can see the question and type an answer.
	var progress *progress
	var con *console
	if a.isTerminal(a.stdin) && a.isTerminal(a.stderr) {
		con = newConsole(a.stdin, a.stderr, func() func() { return progress.hold() })
		defer con.close()
	}
	spaces := a.workspaces(repo)
	defer spaces.close()
	cfg := manager.Config{
		Workspaces:        spaces,
		Registry:          reg,
		MCP:               eng.mcp,
		Models:            resolver,
		DefaultModel:      eng.def.Name,
		TranscriptDir:     runs,
		Stream:            mode == progressLive || mode == progressJSON,
		Logger:            a.logger(),
		ApproveDelegation: a.approver(f.yes, con),
		AskUser:           a.asker(con),
		MaxDepth:          f.maxDepth,
	}
	eng.configure(&cfg)
	mgr, err := a.newManager(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	if (mode == progressPlain || mode == progressLive) && a.announceRun(cmd.Context(), eng, f, reg, resolver, typeName) {
		fmt.Fprintln(a.stderr, workingIn(repo, where))
	}
	progress = startProgress(mgr, mode, a.stderr, progressOptions{
		colour: mode == progressLive && a.getenv("NO_COLOR") == "",
		width:  func() int { return termWidth(a.stderr, liveWidthNoTerm) },
	})

	// The run is locked before it starts, so runs list never sees it
	// without its lock and calls it interrupted.
	release, discard := func() {}, func() {}
	if runs != "" {
		release, discard = lockNewTranscript(mgr.TranscriptPath())
	}
	agent, err := mgr.Spawn(cmd.Context(), manager.SpawnRequest{Type: typeName, Task: task, Dir: repo, Budget: budget, Model: f.model})
	if err != nil {
		_ = mgr.Close(context.Background())
		progress.wait(context.Background())
		discard()
		return a.spawnRefused(err, eng, reg, resolver, typeName)
	}
	defer release()
	// Only an accepted run prunes: a refused command changes nothing on disk.
	if runs != "" {
		if err := a.pruneRuns(cmd.Context(), runs, manager.DefaultRetention, spaces); err != nil {
			fmt.Fprintf(a.stderr, "troupe: warning: could not remove old transcripts in %s: %v\n", runs, err)
		}
	}
	res, err := agent.Wait(cmd.Context())
	interrupted := false
	if err != nil {
		select {
		case <-agent.Done(): // it ended as the interrupt came: report how
			res, _ = agent.Wait(context.Background())
		default:
			interrupted = true
			res = stopAgent(agent, stopGrace)
		}
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), stopGrace)
	if err := mgr.Close(closeCtx); err != nil {
		a.logger().Warn("agents still running at exit", "err", err)
	}
	progress.wait(closeCtx)
	cancelClose()

	if res.Transcript != "" {
		if _, err := os.Stat(res.Transcript); err != nil {
			res.Transcript = "" // never name a transcript that was not written
		}
	}
	applying := f.apply && !interrupted
	if f.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(a.stdout, strings.TrimRight(res.Output, "\n"))
		if mode == progressPlain || mode == progressLive {
			fmt.Fprintln(a.stderr, summary(res, subtree(mgr, res.ID)))
		}
		if s := changesSummary(res.ID, res.Changes); s != "" && !(applying && res.State == manager.Completed) {
			fmt.Fprintln(a.stderr, s)
		}
	}
	if applying {
		if err := a.applyAfterRun(cmd.Context(), res, repo, f.yes, con, spaces); err != nil {
			return err
		}
	}
	switch {
	case interrupted:
		return exitError{exitInterrupted}
	case res.State != manager.Completed:
		if !f.json && res.Error != "" {
			fmt.Fprintf(a.stderr, "troupe: %s %s: %s\n", res.State, res.Reason, res.Error)
			if errors.Is(res.Err, offline.ErrGrepNotOffered) {
				fmt.Fprintln(a.stderr, "troupe: give this type the grep tool, or pass --model provider:model (or set TROUPE_MODEL) for a language model")
			}
		}
		return exitError{exitFailed}
	}
	return nil
}

// spawnRefused is a refused run's error, in the command line's words.
func (a *app) spawnRefused(err error, eng runEngine, reg *agenttypes.Registry, resolver models.Resolver, typeName string) error {
	t, _ := reg.Type(typeName)
	return a.lookupHint(modelHint(err, resolver, t, eng.used), reg, typeName)
}

// openProject reads the project the command works in (repoDir): its
// types and tools, and its models.
func (a *app) openProject(repo string) (reg *agenttypes.Registry, resolver models.Resolver, err error) {
	if reg, err = a.registry(repo); err != nil {
		return nil, resolver, err
	}
	if resolver, err = a.resolver(repo); err != nil {
		return nil, resolver, err
	}
	return reg, resolver, nil
}

// transcriptDir is where runs write their transcripts, or "" after a
// warning when that directory cannot be written: the run goes on without.
func (a *app) transcriptDir() string {
	runs := a.runsDir()
	if err := writableDir(runs); err != nil {
		fmt.Fprintf(a.stderr, "troupe: warning: cannot write transcripts to %s (%v); running without them (set TROUPE_RUNS_DIR to a writable directory)\n", runs, err)
		return ""
	}
	return runs
}

// stopGrace is how long the command waits, after an interrupt, for an
// agent to stop before it reports what it has and exits: a model or tool
// that ignores cancellation must not keep the command alive.
const stopGrace = 5 * time.Second

// stopAgent cancels agent and returns its result, or after grace a partial
// result from its state at that moment.
func stopAgent(agent *manager.Agent, grace time.Duration) manager.Result {
	agent.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if res, err := agent.Wait(ctx); err == nil {
		return res
	}
	i := agent.Info()
	return manager.Result{
		ID: i.ID, Type: i.Type, Model: i.Model, State: i.State, Reason: manager.ReasonCancelled, Partial: true,
		Error: fmt.Sprintf("interrupted; the agent had not stopped %s later", grace), Usage: i.Usage,
		ToolCalls: i.ToolCalls, Turns: i.Turns,
	}
}

// budgetFlags turns the budget flags into a Budget, refusing zero and
// negative values for flags that were given.
func budgetFlags(cmd *cobra.Command, f runFlags) (agenttypes.Budget, error) {
	fl := cmd.Flags()
	for _, c := range []struct {
		name string
		bad  bool
	}{
		{"max-tokens", f.maxTokens <= 0},
		{"max-time", f.maxTime <= 0},
		{"max-tool-calls", f.maxToolCalls <= 0},
		{"max-turns", f.maxTurns <= 0},
		{"max-cost", !(f.maxCost > 0) || math.IsInf(f.maxCost, 0)},
	} {
		if fl.Changed(c.name) && c.bad {
			return agenttypes.Budget{}, notPositiveFlag("--"+c.name, fl.Lookup(c.name).Value.String())
		}
	}
	return agenttypes.Budget{MaxTokens: f.maxTokens, MaxTime: f.maxTime, MaxToolCalls: f.maxToolCalls, MaxTurns: f.maxTurns, MaxCostUSD: f.maxCost}, nil
}

// notPositiveFlag refuses a budget flag of zero or less.
func notPositiveFlag(flag, value string) error {
	return usagef("%s %s: a budget must be positive; leave the flag out to use the type's default", flag, value)
}

// summary is printed on stderr after a run: one line for the agent and,
// for an agent that had subagents, the whole tree's usage beside its own
// and one line for each agent below it, each with its own usage.
func summary(r manager.Result, below []manager.Info) string {
	var b strings.Builder
	mark := "✓"
	if r.State != manager.Completed {
		mark = "✗"
	}
	fmt.Fprintf(&b, "%s %s %s (%s) in %s · %d turns · %d tool calls · %d tokens in / %d out%s",
		mark, r.Type, r.State, r.Reason, r.Duration.Round(time.Millisecond), r.Turns, r.ToolCalls,
		r.Usage.InputTokens, r.Usage.OutputTokens, cost(r.Usage))
	if r.Usage.Estimated {
		b.WriteString(" (partly estimated)")
	}
	if r.Unsettled {
		b.WriteString(" (subagents still running: not final)")
	}
	if hadChildren(r) {
		fmt.Fprintf(&b, " in all (own %d in / %d out%s)", r.OwnUsage.InputTokens, r.OwnUsage.OutputTokens, cost(r.OwnUsage))
	}
	if r.Model != "" { // empty: a run on Temporal whose workers chose it
		fmt.Fprintf(&b, " · model %s", r.Model)
	}
	for _, i := range below {
		name := i.Type
		if i.Label != "" {
			name = "[" + i.Label + "] " + i.Type
		}
		fmt.Fprintf(&b, "\n%s└ %s %s (%s) · %d turns · %d tool calls · %d in / %d out%s · model %s",
			strings.Repeat("  ", i.Depth), name, i.State, i.Reason, i.Turns, i.ToolCalls,
			i.OwnUsage.InputTokens, i.OwnUsage.OutputTokens, cost(i.OwnUsage), i.Model)
	}
	if r.Transcript != "" {
		if _, err := os.Stat(r.Transcript); err == nil {
			fmt.Fprintf(&b, "\n  transcript: %s", r.Transcript)
		}
	}
	if r.TraceID != "" {
		fmt.Fprintf(&b, "\n  trace: %s", r.TraceID)
	}
	return b.String()
}

// subtree lists the agents below id, each after its parent, in the order
// they were spawned.
func subtree(mgr *manager.Manager, id string) []manager.Info {
	var out []manager.Info
	for _, c := range mgr.List(manager.Filter{ParentID: id}) {
		out = append(out, c)
		out = append(out, subtree(mgr, c.ID)...)
	}
	return out
}

// hadChildren reports whether the usage of r covers more than the agent:
// its subagents spent something too.
func hadChildren(r manager.Result) bool {
	own := r.OwnUsage
	return own != (manager.Usage{}) && r.Usage != own
}

// writableDir reports why transcripts could not be written to dir: it,
// or the nearest directory above it that exists (where the run would
// make it), must be a directory this process may write to. It changes
// nothing on disk.
func writableDir(dir string) error {
	d, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s is a %s, not a directory", d, fsroot.Kind(fi.Mode()))
		case err == nil:
			if err := canWrite(d); err != nil {
				return fmt.Errorf("%s is not writable: %w", d, err)
			}
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return unwrapPath(err)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return err
		}
		d = parent
	}
}
