package plugins

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

	watch *startWatch

	waitOnce sync.Once
	waitErr  error
	done     chan struct{}
}

var _ runner.Runner = (*keptRunner)(nil)

// runnerFunc is the go-plugin RunnerFunc that runs cmd with a
// keptRunner, with the variables go-plugin adds to its own command (the
// handshake's) added to cmd's. watch learns what happens as the process
// starts.
func runnerFunc(cmd *exec.Cmd, name string, grace time.Duration, watch *startWatch) func(hclog.Logger, *exec.Cmd, string) (runner.Runner, error) {
	return func(_ hclog.Logger, spec *exec.Cmd, socketDir string) (runner.Runner, error) {
		cmd.Env = append(cmd.Env, spec.Env...)
		// go-plugin removes the directory of the plugin's socket as it
		// kills it; if troupe is killed first, the keeper does.
		if dir, err := filepath.Abs(socketDir); err == nil && socketDir != "" {
			process.KeeperRemoves(cmd, dir)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		return &keptRunner{cmd: cmd, name: name, grace: grace, stdout: &handshakeReader{r: stdout, w: watch}, stderr: stderr, watch: watch, done: make(chan struct{})}, nil
	}
}

func (r *keptRunner) Start(context.Context) error {
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.watch.started(r.cmd.Process.Pid)
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

// startWatch is what the host learns of a plugin's process while
// go-plugin starts it: its ID, so that a start that is cancelled can end
// it, and the protocol version its handshake line announces.
type startWatch struct {
	mu        sync.Mutex
	pid       int
	cancelled bool
	line      []byte // the handshake line so far
	lineDone  bool
	announced int // the version the line announces, when lineDone
	parsed    bool
}

// started is told the process's ID once it runs.
func (w *startWatch) started(pid int) {
	w.mu.Lock()
	w.pid = pid
	cancelled := w.cancelled
	w.mu.Unlock()
	if cancelled {
		_ = process.Terminate(pid)
	}
}

// cancel ends the process, now or as soon as it runs. A keeper kills what
// it keeps, then exits; go-plugin's handshake then fails at once, and the
// start cleans up.
func (w *startWatch) cancel() {
	w.mu.Lock()
	w.cancelled = true
	pid := w.pid
	w.mu.Unlock()
	_ = process.Terminate(pid)
}

// maxHandshakeLine bounds what is kept of the handshake line: the
// versions come first.
const maxHandshakeLine = 256

// saw records bytes of the plugin's standard output until the handshake
// line, go-plugin's first, is complete or long enough to hold the
// versions.
func (w *startWatch) saw(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lineDone {
		return
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b, w.lineDone = b[:i], true
	}
	w.line = append(w.line, b[:min(len(b), maxHandshakeLine-len(w.line))]...)
	if len(w.line) >= maxHandshakeLine {
		w.lineDone = true
	}
	if w.lineDone {
		w.announced, w.parsed = handshakeVersion(string(w.line))
	}
}

// version is the plugin protocol version the plugin's handshake line
// announced, if a complete line did.
func (w *startWatch) version() (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.announced, w.parsed
}

// handshakeVersion reads the application protocol version from a
// go-plugin handshake line,
// CORE-PROTOCOL-VERSION|APP-PROTOCOL-VERSION|NETWORK-TYPE|NETWORK-ADDR|PROTOCOL,
// which is the contract between go-plugin's client and any plugin, in
// whatever language (go-plugin's docs/guide-plugin-write-non-go.md).
func handshakeVersion(line string) (int, bool) {
	parts := strings.Split(strings.TrimSpace(line), "|")
	if len(parts) < 2 {
		return 0, false
	}
	v, err := strconv.Atoi(parts[1])
	return v, err == nil
}

// handshakeReader passes a plugin's standard output on to go-plugin and
// shows its first line to a startWatch.
type handshakeReader struct {
	r io.ReadCloser
	w *startWatch
}

func (h *handshakeReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.w.saw(p[:n])
	return n, err
}

func (h *handshakeReader) Close() error { return h.r.Close() }
