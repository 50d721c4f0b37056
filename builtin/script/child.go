package script

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
)

// DefaultMemoryLimit is the memory a script host process may use.
const DefaultMemoryLimit = 512 << 20

// ChildOptions configure the script host processes.
type ChildOptions struct {
	// Command returns the command that starts a script host. Nil
	// re-executes the running program, whose main must call ServeIfChild
	// first. The environment is replaced by ChildEnv alone, so a script
	// host inherits no keys or tokens.
	Command func() (*exec.Cmd, error)
	// MemoryLimit caps a script host's heap; 0 means DefaultMemoryLimit.
	MemoryLimit int64
	// MaxProcs caps the script host processes running at once, and so the
	// script calls in flight; 0 means 4.
	MaxProcs int
	// Timeout caps one call; 0 means DefaultCallTimeout.
	Timeout time.Duration
}

// ChildRunner runs scripts in script host processes, one call at a time
// per process. A process whose script loops past its time, overflows its
// stack, runs out of memory, or leaves goroutines behind is ended; the
// call fails with an error wrapping agenttypes.ErrScript saying which, and
// the next call starts a fresh process. Processes are kept between calls
// and remember the programs they compiled.
type ChildRunner struct {
	opts ChildOptions
	sem  chan struct{}

	mu     sync.Mutex
	idle   []*proc
	all    map[*proc]bool
	closed bool
}

var _ Runner = (*ChildRunner)(nil)

// NewChildRunner returns a runner that starts processes as calls need
// them.
func NewChildRunner(opts ChildOptions) *ChildRunner {
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	if opts.MaxProcs <= 0 {
		opts.MaxProcs = 4
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultCallTimeout
	}
	return &ChildRunner{opts: opts, sem: make(chan struct{}, opts.MaxProcs), all: map[*proc]bool{}}
}

// ErrClosed is returned by the calls of a closed runner.
var ErrClosed = errors.New("script runner closed")

type proc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tail
	loaded map[string]bool
	dead   chan struct{} // closed once the process is reaped
	err    error         // cmd.Wait's, once dead is closed
	killed bool          // by the runner, for a timeout
}

// Load compiles p in a script host, so that its errors are found now.
func (r *ChildRunner) Load(ctx context.Context, p *Program) error {
	_, err := r.do(ctx, p, nil)
	return err
}

// Call runs one function of p in a script host process.
func (r *ChildRunner) Call(ctx context.Context, p *Program, c *Call) (Reply, error) {
	return r.do(ctx, p, c)
}

func (r *ChildRunner) do(ctx context.Context, p *Program, c *Call) (Reply, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, r.opts.Timeout, errCallTimeout)
	defer cancel()
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
	defer func() { <-r.sem }()
	pr, err := r.get()
	if err != nil {
		return Reply{}, err
	}
	fn := c.fnName()
	if !pr.loaded[p.ID] {
		resp, err := r.roundtrip(ctx, pr, &request{Op: "load", Prog: p}, "loading the script")
		if err != nil {
			return Reply{}, err
		}
		if len(resp.Compile) > 0 {
			r.put(pr)
			return Reply{}, &CompileError{Problems: resp.Compile}
		}
		if resp.Fail != "" {
			r.retire(pr, resp.Retire)
			return Reply{}, fmt.Errorf("%w: %s", agenttypes.ErrScript, resp.Fail)
		}
		pr.loaded[p.ID] = true
	}
	if c == nil {
		r.put(pr)
		return Reply{}, nil
	}
	resp, err := r.roundtrip(ctx, pr, &request{Op: "call", Prog: &Program{ID: p.ID, Kind: p.Kind}, Call: c}, fn)
	if err != nil {
		return Reply{}, err
	}
	r.retire(pr, resp.Retire)
	if resp.Fail != "" {
		return resp.Reply, fmt.Errorf("%w: %s", agenttypes.ErrScript, strings.TrimPrefix(resp.Fail, agenttypes.ErrScript.Error()+": "))
	}
	return resp.Reply, nil
}

// roundtrip sends one request and waits for its response, the process's
// end or ctx's. A process that does not answer in time is killed.
func (r *ChildRunner) roundtrip(ctx context.Context, pr *proc, req *request, fn string) (response, error) {
	type result struct {
		resp response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		var res result
		if res.err = writeFrame(pr.in, req); res.err == nil {
			res.err = readFrame(pr.out, &res.resp)
		}
		ch <- res
	}()
	select {
	case res := <-ch:
		if res.err == nil {
			return res.resp, nil
		}
		r.kill(pr)
		<-pr.dead
		r.forget(pr)
		return response{}, fmt.Errorf("%w: %s", agenttypes.ErrScript, pr.death(fn, r.opts.MemoryLimit))
	case <-ctx.Done():
		pr.killed = true
		r.kill(pr)
		<-ch
		<-pr.dead
		r.forget(pr)
		return response{}, stoppedError(ctx, fn, r.opts.Timeout)
	}
}

// death says why a process ended, from its exit status and the last lines
// it wrote to standard error.
func (pr *proc) death(fn string, mem int64) string {
	text := pr.stderr.String()
	var last string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(l, fatalPrefix) {
			return fn + ": " + strings.TrimPrefix(l, fatalPrefix) + "; the script host was stopped"
		}
		if last == "" && strings.TrimSpace(l) != "" {
			last = strings.TrimSpace(l)
		}
	}
	switch {
	case strings.Contains(text, "stack exceeds") || strings.Contains(text, "stack overflow"):
		return fn + ": the script overflowed its stack (a recursion without end?); the script host was stopped"
	case strings.Contains(text, "out of memory") || strings.Contains(text, "cannot allocate memory"):
		return fmt.Sprintf("%s: the script ran out of memory (the limit is %d MiB); the script host was stopped", fn, mem>>20)
	}
	status := "it exited"
	if pr.err != nil {
		status = pr.err.Error()
	}
	if last != "" {
		return fmt.Sprintf("%s: the script host ended (%s): %s", fn, status, last)
	}
	return fmt.Sprintf("%s: the script host ended (%s)", fn, status)
}

func (r *ChildRunner) get() (*proc, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	for len(r.idle) > 0 {
		pr := r.idle[len(r.idle)-1]
		r.idle = r.idle[:len(r.idle)-1]
		select {
		case <-pr.dead:
			delete(r.all, pr)
			continue
		default:
		}
		r.mu.Unlock()
		return pr, nil
	}
	r.mu.Unlock()
	pr, err := r.start()
	if err != nil {
		return nil, fmt.Errorf("%w: cannot start the script host: %v", agenttypes.ErrScript, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.kill(pr)
		<-pr.dead
		return nil, ErrClosed
	}
	r.all[pr] = true
	return pr, nil
}

func (r *ChildRunner) put(pr *proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.kill(pr)
		<-pr.dead
		return
	}
	r.idle = append(r.idle, pr)
}

// retire ends a process the script host asked to end; it keeps any other.
func (r *ChildRunner) retire(pr *proc, retire bool) {
	if !retire {
		r.put(pr)
		return
	}
	r.kill(pr)
	<-pr.dead
	r.forget(pr)
}

func (r *ChildRunner) forget(pr *proc) {
	r.mu.Lock()
	delete(r.all, pr)
	r.mu.Unlock()
}

func (r *ChildRunner) start() (*proc, error) {
	var cmd *exec.Cmd
	if r.opts.Command != nil {
		c, err := r.opts.Command()
		if err != nil {
			return nil, err
		}
		cmd = c
	} else {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd = exec.Command(exe)
	}
	// No traceback: a fatal error's first lines say what happened, and
	// they are what the host reads.
	cmd.Env = []string{ChildEnv + "=" + strconv.FormatInt(r.opts.MemoryLimit, 10), "GOTRACEBACK=none"}
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = procAttr()
	pr := &proc{cmd: cmd, stderr: &tail{max: 4 << 10}, loaded: map[string]bool{}, dead: make(chan struct{})}
	cmd.Stderr = pr.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pr.in, pr.out = in, bufio.NewReaderSize(out, 64<<10)
	go func() {
		pr.err = cmd.Wait()
		close(pr.dead)
	}()
	return pr, nil
}

func (r *ChildRunner) kill(pr *proc) {
	if pr.cmd.Process != nil {
		_ = pr.cmd.Process.Kill()
	}
}

// Close kills every script host process and waits for them.
func (r *ChildRunner) Close() error {
	r.mu.Lock()
	r.closed = true
	all := make([]*proc, 0, len(r.all))
	for pr := range r.all {
		all = append(all, pr)
	}
	r.all, r.idle = map[*proc]bool{}, nil
	r.mu.Unlock()
	for _, pr := range all {
		_ = pr.in.Close() // a script host ends at the end of its input
		select {
		case <-pr.dead:
		case <-time.After(time.Second):
			r.kill(pr)
			<-pr.dead
		}
	}
	return nil
}

// tail keeps the first and the last max bytes written to it: a fatal
// error says what happened at its start, and a stack trace follows.
type tail struct {
	mu   sync.Mutex
	max  int
	head []byte
	buf  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := t.max - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + "\n" + string(t.buf)
}
