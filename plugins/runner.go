package plugins

import (
	"context"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/troupe-dev/troupe/builtin/process"
)

// keptRunner runs a plugin's command for go-plugin, and stops it so that
// nothing of it is left: asked first (a keeper then kills the plugin and
// every process it started, wherever they went), killed only if it does
// not end in time, and its process group after it. go-plugin's own
// runner kills at once, which leaves a keeper no time to do its work.
type keptRunner struct {
	cmd    *exec.Cmd
	name   string
	grace  time.Duration
	stdout io.ReadCloser
	stderr io.ReadCloser

	// started, if set, is told the process's ID once it runs.
	started func(pid int)

	waitOnce sync.Once
	waitErr  error
	done     chan struct{}
}

var _ runner.Runner = (*keptRunner)(nil)

// runnerFunc is the go-plugin RunnerFunc that runs cmd with a
// keptRunner, with the variables go-plugin adds to its own command (the
// handshake's) added to cmd's. started, if not nil, is told the process's
// ID once it runs.
func runnerFunc(cmd *exec.Cmd, name string, grace time.Duration, started func(pid int)) func(hclog.Logger, *exec.Cmd, string) (runner.Runner, error) {
	return func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
		cmd.Env = append(cmd.Env, spec.Env...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		return &keptRunner{cmd: cmd, name: name, grace: grace, stdout: stdout, stderr: stderr, started: started, done: make(chan struct{})}, nil
	}
}

func (r *keptRunner) Start(context.Context) error {
	if err := r.cmd.Start(); err != nil {
		return err
	}
	if r.started != nil {
		r.started(r.cmd.Process.Pid)
	}
	return nil
}

func (r *keptRunner) Wait(context.Context) error {
	r.waitOnce.Do(func() {
		r.waitErr = r.cmd.Wait()
		close(r.done)
	})
	<-r.done
	return r.waitErr
}

func (r *keptRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	pid := r.cmd.Process.Pid
	_ = process.Terminate(pid)
	select {
	case <-r.done:
	case <-time.After(r.grace):
		_ = r.cmd.Process.Kill()
	}
	return process.KillGroup(pid)
}

func (r *keptRunner) Stdout() io.ReadCloser           { return r.stdout }
func (r *keptRunner) Stderr() io.ReadCloser           { return r.stderr }
func (r *keptRunner) Name() string                    { return r.name }
func (r *keptRunner) Diagnose(context.Context) string { return "" }

func (r *keptRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

func (r *keptRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *keptRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
