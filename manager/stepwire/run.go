package stepwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/manager"
)

// Runs across a pipe: the troupe command, which does not link a durable
// backend, hands a top-level agent to a helper process that does (the
// Temporal one's troupe-temporal), as a manager.Backend (Process). The
// helper serves it with ServeRun: it reads the run, sends back the
// events of its tree as they happen and then how it ended, and cancels it
// when told to. Frames are JSON lines of at most MaxFrame bytes.

// runFrame is one line of a run's protocol.
type runFrame struct {
	// Run is the run, sent first to the helper; Cancel cancels it.
	Run    *manager.RemoteRun `json:"run,omitempty"`
	Cancel bool               `json:"cancel,omitempty"`
	// Event is one of its tree's events, Outcome how it ended, and Error
	// why the helper could not run it; the helper sends them.
	Event   *manager.Event         `json:"event,omitempty"`
	Outcome *manager.RemoteOutcome `json:"outcome,omitempty"`
	Error   string                 `json:"error,omitempty"`
}

// ServeRun reads one run from r, runs it on b, and writes its events and
// then its outcome, or why it could not run, to w. A cancel read from r,
// r ending, or ctx ending cancels the run.
func ServeRun(ctx context.Context, r io.Reader, w io.Writer, b manager.Backend) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	frames := make(chan runFrame, 1)
	readDone := make(chan error, 1)
	go func() {
		readDone <- readLines(r, "run", func(f runFrame) bool {
			if f.Cancel {
				cancel()
				return false
			}
			frames <- f
			return true
		})
		cancel() // r ended: nobody waits for the run any more
	}()
	var first runFrame
	select {
	case first = <-frames:
	case <-ctx.Done():
		return errors.New("no run was sent before the pipe closed")
	}
	if first.Run == nil {
		return errors.New("the first frame is not a run")
	}
	out := &frameWriter{w: w}
	run := *first.Run
	run.Publish = func(e manager.Event) { _ = out.write(runFrame{Event: &e}) }
	outcome, err := b.Run(ctx, run)
	if err != nil {
		return out.write(runFrame{Error: err.Error()})
	}
	return out.write(runFrame{Outcome: &outcome})
}

// Process is a manager.Backend that hands each run to a helper process
// serving it with ServeRun: one process a run, started with Path and
// Args, given only Env (nil: none but what a program needs to start, so
// that no key reaches it).
type Process struct {
	Path string
	Args []string
	Env  []string
	// Stderr receives the helper's own messages; nil discards them.
	Stderr io.Writer
	// CancelWait bounds how long a cancelled run's helper is waited for
	// before it is killed. Default 10 s.
	CancelWait time.Duration
}

var _ manager.Backend = (*Process)(nil)

// Run starts the helper and runs run on it.
func (p *Process) Run(ctx context.Context, run manager.RemoteRun) (manager.RemoteOutcome, error) {
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = p.Env
	if cmd.Env == nil {
		cmd.Env = minimalEnv()
	}
	cmd.Stderr = p.Stderr
	// A helper's own children holding its output open do not hold Run.
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return manager.RemoteOutcome{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return manager.RemoteOutcome{}, err
	}
	if err := cmd.Start(); err != nil {
		return manager.RemoteOutcome{}, fmt.Errorf("starting %s: %w", p.Path, err)
	}
	in := &frameWriter{w: stdin}
	finished := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a cancel is sent once; the helper ends its run and says how
		defer wg.Done()
		select {
		case <-ctx.Done():
			_ = in.write(runFrame{Cancel: true})
			p.killAfter(cmd, finished)
		case <-finished:
		}
	}()
	sent := run
	sent.Publish = nil
	outcome, rerr := func() (manager.RemoteOutcome, error) {
		if err := in.write(runFrame{Run: &sent}); err != nil {
			return manager.RemoteOutcome{}, fmt.Errorf("sending the run: %w", err)
		}
		return readOutcome(stdout, run.Publish)
	}()
	_ = stdin.Close() // the helper's cue to exit
	// Waited for only now: Wait closes the pipes, which are read until here.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	werr := p.awaitExit(cmd, exited)
	close(finished)
	wg.Wait()
	if rerr != nil {
		if werr != nil {
			return manager.RemoteOutcome{}, fmt.Errorf("%s: %w (%w)", p.Path, rerr, werr)
		}
		return manager.RemoteOutcome{}, fmt.Errorf("%s: %w", p.Path, rerr)
	}
	return outcome, nil
}

func (p *Process) cancelWait() time.Duration {
	if p.CancelWait <= 0 {
		return 10 * time.Second
	}
	return p.CancelWait
}

// awaitExit waits for the helper to exit once its run is over, and kills
// one that lingers past CancelWait.
func (p *Process) awaitExit(cmd *exec.Cmd, exited <-chan error) error {
	t := time.NewTimer(p.cancelWait())
	defer t.Stop()
	select {
	case err := <-exited:
		return err
	case <-t.C:
		_ = cmd.Process.Kill()
		return <-exited
	}
}

// killAfter kills a cancelled run's helper that has not finished within
// CancelWait.
func (p *Process) killAfter(cmd *exec.Cmd, finished <-chan struct{}) {
	t := time.NewTimer(p.cancelWait())
	defer t.Stop()
	select {
	case <-t.C:
		_ = cmd.Process.Kill()
	case <-finished:
	}
}

// readOutcome publishes the events read from the helper and returns how
// the run ended.
func readOutcome(r io.Reader, publish func(manager.Event)) (manager.RemoteOutcome, error) {
	var outcome *manager.RemoteOutcome
	var failure string
	err := readLines(r, "run", func(f runFrame) bool {
		switch {
		case f.Event != nil:
			if publish != nil {
				publish(*f.Event)
			}
		case f.Outcome != nil:
			outcome = f.Outcome
			return false
		case f.Error != "":
			failure = f.Error
			return false
		}
		return true
	})
	switch {
	case outcome != nil:
		return *outcome, nil
	case failure != "":
		return manager.RemoteOutcome{}, errors.New(failure)
	case err != nil && !errors.Is(err, io.EOF):
		return manager.RemoteOutcome{}, err
	}
	return manager.RemoteOutcome{}, errors.New("the helper ended without saying how the run ended")
}

// minimalEnv is what a helper needs of the environment to start, and no
// more: no key reaches it.
func minimalEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// EnvWith is minimalEnv with the variables of the environment whose
// names start with one of prefixes (such as "TEMPORAL_").
func EnvWith(prefixes ...string) []string {
	env := minimalEnv()
	for _, kv := range os.Environ() {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				env = append(env, kv)
				break
			}
		}
	}
	return env
}
