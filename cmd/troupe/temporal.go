package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/stepwire"
)

// Runs on a Temporal cluster. troupe does not link Temporal: the helper
// troupe-temporal (the module manager/temporal builds it) does, and troupe
// runs it the way git runs git-foo. `troupe run --temporal` hands the run
// to `troupe-temporal run` (stepwire.Process), and `troupe worker` runs
// `troupe-temporal worker` and serves it the steps of the runs it takes,
// on this project's manager (stepwire.Serve).

const (
	helperName = "troupe-temporal"
	// The helper's defaults, named here for the lines that say what a
	// worker serves.
	defaultTaskQueue = "troupe"
	defaultNamespace = "default"
	// helperStopWait bounds how long a worker's helper is waited for once
	// told to stop, before it is killed.
	helperStopWait = 10 * time.Second
	// checkoutTimeout bounds reading the checkout's commit.
	checkoutTimeout = 10 * time.Second
	helperBuildHint = "'make build' builds it into bin/ beside troupe, or 'cd manager/temporal && go install ./cmd/troupe-temporal' puts it on your PATH"
)

// temporalFlags say which cluster, namespace and task queue.
type temporalFlags struct {
	address, taskQueue, namespace string
}

func addTemporalFlags(cmd *cobra.Command, f *temporalFlags, what string) {
	fl := cmd.Flags()
	fl.StringVar(&f.address, "temporal", "", what)
	fl.StringVar(&f.taskQueue, "task-queue", "", "the Temporal task queue (default \""+defaultTaskQueue+"\"); runs and the workers serving them must name the same")
	fl.StringVar(&f.namespace, "namespace", "", "the Temporal namespace (default \""+defaultNamespace+"\")")
}

// check refuses a --temporal that is not HOST:PORT, and --task-queue or
// --namespace given without it, or given empty.
func (f temporalFlags) check(cmd *cobra.Command, required bool) error {
	fl := cmd.Flags()
	switch {
	case !fl.Changed("temporal") && required:
		return usagef("%s needs --temporal HOST:PORT, the address of the Temporal cluster's frontend (such as 127.0.0.1:7233)", cmd.CommandPath())
	case !fl.Changed("temporal"):
		for _, name := range []string{"task-queue", "namespace"} {
			if fl.Changed(name) {
				return usagef("--%s is for runs on Temporal; give --temporal HOST:PORT too, or leave --%s out", name, name)
			}
		}
		return nil
	}
	host, port, err := net.SplitHostPort(f.address)
	if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n <= 0 || n > 65535 {
		return usagef("--temporal %q: give the address of the Temporal cluster's frontend as HOST:PORT, such as 127.0.0.1:7233", f.address)
	}
	for _, c := range []struct{ name, value string }{{"task-queue", f.taskQueue}, {"namespace", f.namespace}} {
		if fl.Changed(c.name) && strings.TrimSpace(c.value) == "" {
			return usagef("--%s is empty; give a name, or leave the flag out for the default", c.name)
		}
	}
	return nil
}

func (f temporalFlags) queue() string { return cmp.Or(f.taskQueue, defaultTaskQueue) }
func (f temporalFlags) space() string { return cmp.Or(f.namespace, defaultNamespace) }

// helperArgs is the helper's command line for sub (run or worker).
func (a *app) helperArgs(sub string, f temporalFlags, root, checkout string) []string {
	level := "warn"
	if sub == "worker" {
		level = "info"
	}
	if strings.EqualFold(a.getenv("TROUPE_LOG"), "debug") {
		level = "debug"
	}
	return []string{sub, "--address", f.address, "--namespace", f.space(), "--task-queue", f.queue(),
		"--root", root, "--checkout", checkout, "--log-level", level}
}

// findHelper finds troupe-temporal: beside this executable first (make
// build puts both in bin/), then on PATH.
func findHelper() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), helperName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(helperName)
	if err == nil {
		return filepath.Abs(p)
	}
	return "", usagef("runs on Temporal need %s, the helper that speaks to the cluster, and it is neither beside troupe nor on PATH; %s", helperName, helperBuildHint)
}

// checkoutOf names the checkout at dir: the commit HEAD names, when dir
// is the top of a git repository's work tree or below it; "" when it is
// in none, or has no commit yet. git runs through gitsafe, so nothing the
// repository configures runs.
func (a *app) checkoutOf(ctx context.Context, dir string) (string, error) {
	top, ok := gitTop(dir)
	if !ok {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkoutTimeout)
	defer cancel()
	g, err := gitsafe.New(ctx, top, gitsafe.Options{})
	switch {
	case errors.Is(err, gitsafe.ErrNoGit):
		fmt.Fprintf(a.stderr, "troupe: warning: no git on PATH to read the commit of %s; the run names no checkout, and any worker takes it\n", top)
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading the commit of %s: %w", top, err)
	}
	out, err := g.Output(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", "HEAD^{commit}")
	var gerr *gitsafe.Error
	if errors.As(err, &gerr) && gerr.ExitCode() == 1 {
		return "", nil // no commit yet
	}
	if err != nil {
		return "", fmt.Errorf("reading the commit of %s: %w", top, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// gitTop is the top of the git work tree dir is in: the nearest
// directory, dir or above, that holds a .git.
func gitTop(dir string) (string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// describeCheckout says which checkout a worker serves.
func describeCheckout(checkout, repo string) string {
	if checkout == "" {
		return "any checkout (" + repo + " has no git commit to name)"
	}
	return "checkout " + checkout
}

// temporalBackend is the backend of `troupe run --temporal`: the helper,
// handed each run, with no more of the environment than its own settings
// (TEMPORAL_*), so that no key reaches it.
func (a *app) temporalBackend(f temporalFlags, helper, repo, checkout string) manager.Backend {
	return &stepwire.Process{
		Path:   helper,
		Args:   a.helperArgs("run", f, repo, checkout),
		Env:    stepwire.EnvWith("TEMPORAL_"),
		Stderr: a.stderr,
	}
}

// checkRemoteRun checks run's flags for a run on Temporal: --temporal's
// own, and none that only a run in process honours.
func checkRemoteRun(cmd *cobra.Command, f runFlags) error {
	if err := f.temporal.check(cmd, false); err != nil {
		return err
	}
	switch {
	case f.temporal.address == "":
		return nil
	case f.yes && !f.apply:
		return usagef("--yes with --temporal: on Temporal the workers approve delegation, not this command; start them with 'troupe worker --yes' to let agents delegate, and leave --yes out here (with --apply, it applies the run's changes without asking)")
	}
	return nil
}

// remoteBackend is the backend of a run with --temporal, nil without.
func (a *app) remoteBackend(ctx context.Context, f temporalFlags, repo string) (manager.Backend, error) {
	if f.address == "" {
		return nil, nil
	}
	helper, err := findHelper()
	if err != nil {
		return nil, err
	}
	checkout, err := a.checkoutOf(ctx, repo)
	if err != nil {
		return nil, err
	}
	return a.temporalBackend(f, helper, repo, checkout), nil
}

// runEngine is where a run's agents run: in this process, with the
// project's MCP servers and the model chosen here, or on the workers of
// a Temporal cluster (backend), which have their own.
type runEngine struct {
	backend manager.Backend
	mcp     agenttypes.MCPToolSource
	close   func()
	// def is the default model and used the one the agent runs on, when
	// chosen here.
	def, used models.Choice
}

func (a *app) runEngine(ctx context.Context, f runFlags, backend manager.Backend, repo string, reg *agenttypes.Registry, resolver models.Resolver, typeName string) (runEngine, error) {
	e := runEngine{backend: backend, close: func() {}}
	if backend != nil {
		return e, nil
	}
	var err error
	if e.mcp, e.close, err = a.mcpTools(reg, agenttypes.FindProjectRoot(repo), typeName); err != nil {
		return e, err
	}
	e.def, e.used = chooseModel(ctx, resolver, reg, typeName, f.model)
	return e, nil
}

// configure fits a run's manager to where it runs: on Temporal the
// workers resolve the models, with their keys, and run the tools.
func (e runEngine) configure(cfg *manager.Config) {
	if e.backend != nil {
		cfg.Backend, cfg.Models, cfg.Workspaces, cfg.MCP = e.backend, nil, nil, nil
	}
}

// announceRun says on stderr, before the run, where it runs and on which
// model (see announceModel); it reports whether it said it.
func (a *app) announceRun(ctx context.Context, e runEngine, f runFlags, reg *agenttypes.Registry, resolver models.Resolver, typeName string) bool {
	if e.backend == nil {
		return announceModel(ctx, a.stderr, reg, resolver, typeName, e.used)
	}
	model := " (its workers choose the model)"
	if f.model != "" {
		model = ", model " + f.model + " (--model)"
	}
	fmt.Fprintf(a.stderr, "running on Temporal at %s, task queue %s%s\n", f.temporal.address, f.temporal.queue(), model)
	return true
}
