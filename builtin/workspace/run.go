package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/process"
)

// errNoAllowRun is the refusal of a Provider whose Config says nothing
// about running commands.
var errNoAllowRun = errors.New("this program does not run commands in workspaces (workspace.Config.AllowRun is not set)")

// Run runs a command in the workspace's directory under its type's run
// policy: only a command whose first words the policy allows, in a
// process tree that is killed whole on timeout, on cancel and when it
// ends, with the environment scrubbed of keys and troupe's own
// variables, without network unless the policy gives it, and able to
// write only in the workspace, a private temporary directory and the
// cache directory, where the platform allows. A command that ran is a
// result whatever its exit status; a refused one is an error wrapping
// agenttypes.ErrRunRefused, and so is one whose directory an earlier
// command replaced, with a symlink say: it is no longer a real
// directory inside the worktree.
func (w *Workspace) Run(ctx context.Context, cmd agenttypes.Command) (agenttypes.CommandResult, error) {
	if err := w.mayRun(cmd.Args); err != nil {
		return agenttypes.CommandResult{}, fmt.Errorf("%w: %w", agenttypes.ErrRunRefused, err)
	}
	if err := w.checkDir(); err != nil {
		return agenttypes.CommandResult{}, fmt.Errorf("%w: %w", agenttypes.ErrRunRefused, err)
	}
	tmp, err := os.MkdirTemp(w.p.dirs.tmp, "run-")
	if err != nil {
		return agenttypes.CommandResult{}, fmt.Errorf("making the command's temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	env, writable, err := w.runEnv(tmp)
	if err != nil {
		return agenttypes.CommandResult{}, err
	}
	res, err := process.Run(ctx, process.Command{
		Args: cmd.Args, Dir: w.Dir(), Env: env, Timeout: w.policy.TimeoutFor(cmd.Timeout),
		// git in the worktree reads the repository's directory, wherever
		// the project lies.
		Writable: writable, Visible: []string{w.rec.Repo}, Network: w.policy.Network,
	})
	out := agenttypes.CommandResult{
		ExitCode: res.ExitCode, Output: res.Output, TimedOut: res.TimedOut, Duration: res.Duration,
		Confined: agenttypes.Confinement{Network: res.Confined.Network, Writes: res.Confined.Writes},
	}
	if err == nil {
		w.p.warnUnconfined(out.Confined, w.policy.Network)
	}
	if errors.Is(err, process.ErrInvalidCommand) || errors.Is(err, exec.ErrNotFound) {
		return out, fmt.Errorf("%w: %w", agenttypes.ErrRunRefused, err)
	}
	return out, err
}

// mayRun refuses a command the project or the policy does not allow.
func (w *Workspace) mayRun(args []string) error {
	allow := w.p.cfg.AllowRun
	if allow == nil {
		return errNoAllowRun
	}
	if err := allow(w.rec.Top); err != nil {
		return err
	}
	if len(args) == 0 {
		return errors.New("the command is empty")
	}
	if !w.policy.Allows(args) {
		if len(w.policy.Allow) == 0 {
			return fmt.Errorf("%q: this type may run no command (its run.allow is empty)", strings.Join(args, " "))
		}
		return fmt.Errorf("%q is not among the commands this type may run: %s; run one of those", strings.Join(args, " "), strings.Join(w.policy.Allow, ", "))
	}
	return nil
}

// runEnv is a command's environment and the directories it may write:
// troupe's environment less everything process.Env keeps back, the
// private temporary directory, and the build caches in the cache
// directory.
func (w *Workspace) runEnv(tmp string) (env, writable []string, err error) {
	writable = []string{w.rec.Tree, tmp}
	extra := []string{"TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp, "GOTOOLCHAIN=local"}
	if cache := w.p.cfg.CacheDir; cache != "" {
		goCache := filepath.Join(cache, "go-build")
		if err := os.MkdirAll(goCache, 0o700); err != nil {
			return nil, nil, fmt.Errorf("making the build cache: %w", err)
		}
		writable = append(writable, cache)
		extra = append(extra, "GOCACHE="+goCache, "XDG_CACHE_HOME="+cache)
	}
	for _, name := range []string{"GOPATH", "GOMODCACHE", "GOROOT", "GOFLAGS"} {
		if v, ok := os.LookupEnv(name); ok {
			extra = append(extra, name+"="+v)
		}
	}
	return process.Env(os.Environ(), extra...), writable, nil
}

// warnUnconfined tells the program's user, once per Provider, when a
// command ran with less confinement than asked because the platform
// could not apply it: the agent's model is told in the result, but the
// user should know too.
func (p *Provider) warnUnconfined(c agenttypes.Confinement, networkAllowed bool) {
	var missing []string
	if !c.Writes {
		missing = append(missing, "its writes were not confined to its workspace (this system has no Landlock)")
	}
	if !c.Network && !networkAllowed {
		missing = append(missing, "it could reach the network or this machine's sockets (this system would not make a network namespace, or would not hide the sockets in a mount namespace)")
	}
	if len(missing) == 0 {
		return
	}
	p.warnOnce.Do(func() {
		p.cfg.Logger.Warn("a command ran with less confinement than asked: " + strings.Join(missing, "; ") + "; only run commands of projects you trust on such a system")
	})
}
