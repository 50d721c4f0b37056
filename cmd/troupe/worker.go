package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/stepwire"
)

type workerFlags struct {
	temporalFlags
	yes bool
}

func (a *app) workerCommand() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the agents of runs on a Temporal cluster, with this project's types",
		Long: `Serve a Temporal task queue: take the steps of the runs that 'troupe run --temporal'
starts there, and run them with this project's registry (its types, plugins and
scripts, as far as you trust the project), its models and your keys, as
'troupe run' would here. Start as many workers as you like, on as many machines;
a run outlives any one of them.

A worker serves one checkout: --repo, and its git commit. A run started from
another commit is refused, naming both. Types that change files do not run on
Temporal. Ctrl-C stops the worker; the runs it was serving go on on the queue's other
workers, or wait for one.`,
		Example: `  troupe worker --temporal 127.0.0.1:7233
  troupe worker --temporal temporal.internal:7233 --task-queue reviews --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.worker(cmd, f) },
	}
	addRepoFlag(cmd, "the project checkout the worker serves")
	addTemporalFlags(cmd, &f.temporalFlags, "the Temporal cluster's frontend, HOST:PORT (such as 127.0.0.1:7233)")
	cmd.Flags().BoolVar(&f.yes, "yes", false, "let agents delegate to subagents (without it, delegation is refused)")
	return cmd
}

func (a *app) worker(cmd *cobra.Command, f workerFlags) error {
	ctx := cmd.Context()
	if err := f.check(cmd, true); err != nil {
		return err
	}
	helper, err := findHelper()
	if err != nil {
		return err
	}
	repo, where, err := repoDir(cmd)
	if err != nil {
		return err
	}
	checkout, err := a.checkoutOf(ctx, repo)
	if err != nil {
		return err
	}
	reg, resolver, err := a.openProject(repo)
	if err != nil {
		return err
	}
	mcpTools, closeMCP, err := a.mcpPool(reg)
	if err != nil {
		return err
	}
	defer closeMCP()
	def, _ := chooseModel(ctx, resolver, reg, "", "")
	spaces := a.workspaces(repo)
	defer spaces.close()
	mgr, err := a.newManager(ctx, manager.Config{
		Workspaces:        spaces,
		Registry:          reg,
		MCP:               mcpTools,
		Models:            resolver,
		DefaultModel:      def.Name,
		Logger:            a.logger(),
		ApproveDelegation: a.approver(f.yes, nil),
	})
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		if err := mgr.Close(closeCtx); err != nil {
			a.logger().Warn("agents still running at exit", "err", err)
		}
	}()
	fmt.Fprintf(a.stderr, "troupe: default model %s\n", def.Describe())
	fmt.Fprintf(a.stderr, "troupe: %s\n", workingIn(repo, where))
	serving := fmt.Sprintf("troupe: serving task queue %s on %s (namespace %s) for %s; Ctrl-C stops",
		f.queue(), f.address, f.space(), describeCheckout(checkout, repo))
	return a.serveSteps(ctx, helper, a.helperArgs("worker", f.temporalFlags, repo, checkout), stepwire.Local{Manager: mgr}, serving)
}

// serveSteps runs the helper's worker and serves it steps until ctx ends
// (exit 130) or the helper exits (exit 1: it said why on stderr). Once
// told to stop, the helper is given helperStopWait to stop its worker.
func (a *app) serveSteps(ctx context.Context, helper string, args []string, steps stepwire.Stepper, serving string) error {
	cmd := exec.Command(helper, args...)
	cmd.Env = stepwire.EnvWith("TEMPORAL_")
	cmd.Stderr = a.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", helper, err)
	}
	fmt.Fprintln(a.stderr, serving)
	served := make(chan error, 1)
	go func() { served <- stepwire.Serve(ctx, out, in, steps) }()
	var serr error
	select {
	case serr = <-served: // the helper closed its end: it is ending
	case <-ctx.Done():
		serr = stopHelper(cmd, in, served)
	}
	_ = in.Close()
	werr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return exitError{exitInterrupted}
	case serr != nil:
		return fmt.Errorf("serving steps to %s: %w", helper, serr)
	case werr != nil:
		return fmt.Errorf("%s ended (%w); what it said above tells why", helper, werr)
	}
	return errors.New(helper + " ended the worker unasked; what it said above tells why")
}

// stopHelper closes the helper's stdin, which tells it to stop its
// worker and exit, and waits for its stdout to close; past
// helperStopWait it kills it.
func stopHelper(cmd *exec.Cmd, in io.Closer, served <-chan error) error {
	_ = in.Close()
	t := time.NewTimer(helperStopWait)
	defer t.Stop()
	select {
	case err := <-served:
		return err
	case <-t.C:
		_ = cmd.Process.Kill()
		return <-served
	}
}
