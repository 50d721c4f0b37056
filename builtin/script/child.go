package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// DefaultMemoryLimit is the memory a script host process may use.
const DefaultMemoryLimit = 512 << 20

// DefaultStackLimit is the stack a goroutine of a script host process may
// grow to: a recursion without end stops there.
const DefaultStackLimit = 64 << 20

// ChildOptions configure the script host processes.
type ChildOptions struct {
	// Command returns the command that starts a script host. Nil
	// re-executes the running program, whose main must call ServeIfChild
	// first. The environment is replaced by ChildEnv and the plugin
	// handshake's variables alone, so a script host inherits no keys or
	// tokens.
	Command func() (*exec.Cmd, error)
	// MemoryLimit caps a script host's heap; 0 means DefaultMemoryLimit.
	MemoryLimit int64
	// StackLimit caps the stack of each goroutine in a script host, and
	// so how deep a script may recurse; 0 means DefaultStackLimit. Filling
	// a stack takes CPU time in proportion to its size, which a recursion
	// without end spends before it is stopped.
	StackLimit int64
	// MaxProcs caps the script host processes running at once, and so the
	// script calls in flight; 0 means 4.
	MaxProcs int
	// Timeout caps one call; 0 means DefaultCallTimeout.
	Timeout time.Duration
	// CPUTime caps the CPU time one call may use, as the kernel counts it
	// for the script host process, which is ended once the call has used
	// it (the count is read every few milliseconds); 0 means Timeout plus
	// a second. One goroutine cannot use more
	// CPU than wall time, so it is the script that keeps several cores
	// busy at once that meets this limit before Timeout.
	CPUTime time.Duration
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
	if opts.StackLimit <= 0 {
		opts.StackLimit = DefaultStackLimit
	}
	if opts.MaxProcs <= 0 {
		opts.MaxProcs = 4
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultCallTimeout
	}
	if opts.CPUTime <= 0 {
		opts.CPUTime = opts.Timeout + time.Second
	}
	return &ChildRunner{opts: opts, sem: make(chan struct{}, opts.MaxProcs), all: map[*proc]bool{}}
}

// ErrClosed is returned by the calls of a closed runner.
var ErrClosed = errors.New("script runner closed")

type proc struct {
	cmd    *exec.Cmd
	client *plugin.Client
	conn   pluginv1.PluginClient
	// lane carries the calls when the script host serves it; nil: gRPC
	// does.
	lane *wire.Lane
	// traces: the script host takes a call's trace context, and answers
	// with its span of the call.
	traces bool
	dir    string // its working and temporary directory, where its socket is
	stderr *tail
	loaded map[string]bool
	dead   chan struct{} // closed once go-plugin has seen the process exit
	status string        // how it exited, once dead is closed
	once   sync.Once
}

// exited records how pr's process ended.
func (pr *proc) exited(status string) {
	pr.once.Do(func() {
		pr.status = status
		close(pr.dead)
	})
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
		resp, err := r.roundtrip(ctx, pr, toolLoad, &request{Prog: p}, "loading the script")
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
	resp, err := r.roundtrip(ctx, pr, toolCall, &request{Prog: &Program{ID: p.ID, Kind: p.Kind}, Call: c}, fn)
	if err != nil {
		return Reply{}, err
	}
	r.retire(pr, resp.Retire)
	if resp.Fail != "" {
		return resp.Reply, fmt.Errorf("%w: %s", agenttypes.ErrScript, strings.TrimPrefix(resp.Fail, agenttypes.ErrScript.Error()+": "))
	}
	return resp.Reply, nil
}

// roundtrip makes one call of the script host's tool and waits for its
// answer, the process's end or ctx's. A process that does not answer in
// time is killed.
func (r *ChildRunner) roundtrip(ctx context.Context, pr *proc, tool string, req *request, fn string) (response, error) {
	args, err := json.Marshal(req)
	if err != nil {
		r.put(pr)
		return response{}, fmt.Errorf("%w: %s: %v", agenttypes.ErrScript, fn, err)
	}
	traced := pr.traces && wire.Traced(ctx)
	var start time.Time
	if traced {
		start = time.Now()
	}
	res, err := pr.callTool(ctx, &pluginv1.CallToolRequest{Name: tool, Args: args, DeadlineUnixMs: wire.Deadline(ctx)})
	if err == nil && traced {
		wire.RecordSpans(ctx, TracerScope, res.GetTrace(), start, time.Now())
	}
	var resp response
	if err == nil {
		if e := res.GetError(); e != nil {
			err = wire.ErrorFromWire(e, "")
		} else {
			err = json.Unmarshal([]byte(res.GetText()), &resp)
		}
		if err == nil {
			return resp, nil
		}
		// The script host does not speak the protocol it should: it is
		// not used again.
		r.end(pr)
		return response{}, fmt.Errorf("%w: %s: the script host answered badly: %v", agenttypes.ErrScript, fn, err)
	}
	if status.Code(err) == codes.DeadlineExceeded {
		// The script host's side may see the deadline, which is ctx's,
		// a moment before this one does.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if ctx.Err() != nil {
		r.end(pr)
		return response{}, stoppedError(ctx, fn, r.opts.Timeout)
	}
	// The transport failed: the process died, or is about to. Its exit
	// status and standard error say why.
	select {
	case <-pr.dead:
	case <-time.After(2 * time.Second):
	}
	r.end(pr)
	return response{}, fmt.Errorf("%w: %s", agenttypes.ErrScript, pr.death(fn, r.opts.MemoryLimit))
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
		if last == "" && strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "{") {
			last = strings.TrimSpace(l)
		}
	}
	switch {
	case strings.Contains(text, "stack exceeds") || strings.Contains(text, "stack overflow"):
		return fn + ": the script overflowed its stack (a recursion without end?); the script host was stopped"
	case strings.Contains(text, "out of memory") || strings.Contains(text, "cannot allocate memory"):
		return fmt.Sprintf("%s: the script ran out of memory (the limit is %d MiB); the script host was stopped", fn, mem>>20)
	}
	status := pr.status
	if status == "" {
		status = "it exited"
	}
	if last != "" {
		return fmt.Sprintf("%s: the script host ended (%s): %s", fn, status, last)
	}
	return fmt.Sprintf("%s: the script host ended (%s)", fn, status)
}

func (r *ChildRunner) get() (*proc, error) {
	pr, dead, err := r.takeIdle()
	for _, d := range dead {
		d.stop() // go-plugin's side of it, and its directory
	}
	if pr != nil || err != nil {
		return pr, err
	}
	pr, err = r.start()
	if err != nil {
		return nil, fmt.Errorf("%w: cannot start the script host: %v", agenttypes.ErrScript, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		pr.stop()
		return nil, ErrClosed
	}
	r.all[pr] = true
	return pr, nil
}

// takeIdle takes an idle script host that is alive, if there is one, and
// the dead ones it found on its way, which are forgotten and for the
// caller to stop.
func (r *ChildRunner) takeIdle() (pr *proc, dead []*proc, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, ErrClosed
	}
	for len(r.idle) > 0 {
		pr := r.idle[len(r.idle)-1]
		r.idle = r.idle[:len(r.idle)-1]
		select {
		case <-pr.dead:
			delete(r.all, pr)
			dead = append(dead, pr)
		default:
			return pr, dead, nil
		}
	}
	return nil, dead, nil
}

func (r *ChildRunner) put(pr *proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		pr.stop()
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
	r.end(pr)
}

// end kills pr at once and forgets it.
func (r *ChildRunner) end(pr *proc) {
	pr.kill()
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
	// they are what the host reads. go-plugin adds its handshake's
	// variables and, with SkipHostEnv, nothing of this process's.
	cmd.Env = []string{
		ChildEnv + "=" + strconv.FormatInt(r.opts.MemoryLimit, 10), "GOTRACEBACK=none",
		childCPUEnv + "=" + strconv.FormatInt(cpuMillis(r.opts.CPUTime), 10),
		childStackEnv + "=" + strconv.FormatInt(r.opts.StackLimit, 10),
		wire.EnvHostPID + "=" + strconv.Itoa(os.Getpid()),
	}
	// The script host works in a directory of its own, removed once it
	// has exited, and it is its temporary directory, where go-plugin puts
	// its socket: a socket in the system's stays behind a host that was
	// killed, one more with every script host a run kills.
	dir, err := scratchDir()
	if err != nil {
		return nil, err
	}
	cmd.Dir = dir
	if len(dir)+len("/plugin0123456789") < maxSocketPath {
		cmd.Env = append(cmd.Env, "TMPDIR="+dir)
	} // else a socket's path below it would be too long: the system's default
	cmd.SysProcAttr = procAttr()
	pr := &proc{cmd: cmd, dir: dir, stderr: &tail{max: 4 << 10}, loaded: map[string]bool{}, dead: make(chan struct{})}
	if lane, end, err := wire.NewLane(); err == nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, end)
		cmd.Env = append(cmd.Env, wire.EnvLaneFD+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
		defer end.Close() // the script host has its own copy once started
		pr.lane = lane
	}
	pr.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(&wire.Plugin{}),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     startTimeout,
		Logger:           &exitLogger{Logger: hclog.NewNullLogger(), exited: pr.exited},
		// The script host's standard error is kept for the message of
		// its death, not logged: it is the script's, not the operator's.
		Stderr:          pr.stderr,
		SyncStdout:      io.Discard,
		SyncStderr:      io.Discard,
		GRPCDialOptions: wire.DialOptions(),
	})
	rpc, err := pr.client.Client()
	if err != nil {
		pr.stop()
		return nil, err
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		pr.stop()
		return nil, err
	}
	pr.conn = raw.(*wire.Conn).Plugin
	if err := pr.describe(r.opts.Command == nil); err != nil {
		pr.stop()
		return nil, err
	}
	return pr, nil
}

// describe asks pr's script host what it serves: it keeps pr's lane when
// the script host serves it (one of an older program may not), and
// closes it otherwise, and sends calls' trace context when it takes it.
// A script host of this program (self) takes it, as its serve.Serve says:
// without a lane to ask about, it is not asked.
func (pr *proc) describe(self bool) error {
	if self && pr.lane == nil {
		pr.traces = true
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	d, err := pr.conn.Describe(ctx, &pluginv1.DescribeRequest{ProtocolVersion: wire.Version})
	if err != nil {
		return err
	}
	pr.traces = d.GetTraceContext()
	if pr.lane == nil {
		return nil
	}
	if d.GetLaneVersion() != wire.LaneVersion {
		_ = pr.lane.Close()
		pr.lane = nil
	} else if pr.traces {
		pr.lane.CarryTrace()
	}
	return nil
}

// callTool makes one call of the script host's tools, on its lane when it
// has one, else over gRPC, as it does a call the lane could not send;
// the errors are gRPC's either way.
func (pr *proc) callTool(ctx context.Context, req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	if pr.lane != nil {
		resp, err := pr.lane.CallTool(ctx, req)
		if !errors.Is(err, wire.ErrLaneBusy) {
			return resp, err
		}
	}
	if pr.traces {
		ctx = wire.OutgoingTrace(ctx)
	}
	return pr.conn.CallTool(ctx, req)
}

// scratchDir makes a script host's directory. Its path is absolute: the
// host resolves its TMPDIR from the directory it starts in, which this
// is.
func scratchDir() (string, error) {
	dir, err := os.MkdirTemp("", "troupe-")
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		_ = os.Remove(dir)
		return "", err
	}
	return abs, nil
}

// maxSocketPath is the longest path of a Unix socket everywhere (macOS's
// bound; Linux's is 108).
const maxSocketPath = 104

// startTimeout bounds a script host's start and handshake.
const startTimeout = 10 * time.Second

// kill ends pr's process at once, and waits until go-plugin is done with
// it.
func (pr *proc) kill() {
	if pr.cmd.Process != nil {
		_ = pr.cmd.Process.Kill()
	}
	pr.stop()
}

// stop asks pr's process to exit, kills it when it does not, and waits
// until go-plugin is done with it.
func (pr *proc) stop() {
	if pr.lane != nil {
		_ = pr.lane.Close()
	}
	pr.client.Kill()
	// go-plugin has seen the process exit, or never started it.
	pr.exited("not started")
	_ = os.RemoveAll(pr.dir)
}

// exitLogger is go-plugin's logger of a script host: it logs nothing, and
// tells exited how the process ended.
type exitLogger struct {
	hclog.Logger
	exited func(status string)
}

func (l *exitLogger) Info(msg string, args ...any) {
	if msg == "plugin process exited" {
		l.exited("exit status 0")
	}
}

func (l *exitLogger) Error(msg string, args ...any) {
	if msg != "plugin process exited" {
		return
	}
	status := "it exited"
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "error" {
			status = fmt.Sprint(args[i+1])
		}
	}
	l.exited(status)
}

// Close stops every script host process and waits for them.
func (r *ChildRunner) Close() error {
	r.mu.Lock()
	r.closed = true
	all := make([]*proc, 0, len(r.all))
	for pr := range r.all {
		all = append(all, pr)
	}
	r.all, r.idle = map[*proc]bool{}, nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, pr := range all {
		wg.Go(pr.stop)
	}
	wg.Wait()
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
