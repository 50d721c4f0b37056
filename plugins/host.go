package plugins

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/process"
	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// Config configures a Host. Every field is optional.
type Config struct {
	// Dirs are the plugin directories, highest precedence first; see Dirs.
	Dirs []Dir
	// Env are variables every plugin gets ("NAME=value"), beyond the
	// allow-listed ones of this process's environment (see
	// process.AllowedEnv). Nothing else passes: an API key reaches a
	// plugin only if it is named here.
	Env []string
	// LockFile is the lock file to verify plugins against; none when empty
	// or when the file does not exist. A lock file pins versions: it is
	// never consent to run a project's plugin (see TrustProject).
	LockFile string
	// TrustProject says whether the plugin of the project's directory
	// (LayerProject) called name may run, given the SHA-256 of the very
	// bytes that would run. Nil: no project plugin runs, and none is
	// described. Plugins of the user's own directories need no trust.
	TrustProject func(name, sha256 string) bool
	// Logger receives the host's logs and the plugins' own, each with the
	// plugin's name. Default slog.Default().
	Logger *slog.Logger
	// StartTimeout bounds a plugin's start, handshake and Describe.
	// Default 10 s.
	StartTimeout time.Duration
	// CancelGrace is how long a plugin's call may run on after it was
	// cancelled before the plugin exits (and is restarted on next use).
	// Default 2 s.
	CancelGrace time.Duration
	// CacheDir keeps what each plugin binary offers, by its checksum, so
	// that learning it again does not start the plugin: with it, a plugin
	// starts when an agent first uses it. Empty: every Load starts each
	// plugin it has not described yet.
	CacheDir string
	// Digests remembers the checksums of the binaries that are checked
	// (a project's, and every one when there is a lock file) by their
	// files' identity, so that an unchanged binary is not read and
	// hashed at every Load (see process.Digests). Its zero value hashes
	// every time. Keep it where the user's consent is kept: it vouches
	// for what the consent is pinned to.
	Digests process.Digests
	// MaxCrashes in CrashWindow disable a plugin until the next Load.
	// Defaults 3 and 60 s.
	MaxCrashes  int
	CrashWindow time.Duration
	// MeterProvider, when set, counts the restarts of plugins that
	// crashed (RestartsMetric, by PluginNameKey). Nil: nothing is
	// counted.
	MeterProvider metric.MeterProvider
}

// RestartsMetric counts the starts of a plugin's process after one that
// exited on its own (a crash); PluginNameKey names the plugin.
const (
	RestartsMetric = "troupe.plugin.restarts"
	PluginNameKey  = attribute.Key("troupe.plugin.name")
)

// restarts is the counter of RestartsMetric, nil without a
// MeterProvider.
func (c *Config) restarts() metric.Int64Counter {
	if c.MeterProvider == nil {
		return nil
	}
	counter, err := c.MeterProvider.Meter(Scope).Int64Counter(RestartsMetric,
		metric.WithUnit("{restart}"), metric.WithDescription("Starts of a plugin's process after one that crashed."))
	if err != nil {
		c.Logger.Warn("plugin restarts are not counted", "error", err)
		return nil
	}
	return counter
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = 2 * time.Second
	}
	if c.MaxCrashes <= 0 {
		c.MaxCrashes = 3
	}
	if c.CrashWindow <= 0 {
		c.CrashWindow = time.Minute
	}
	c.Env = withoutTelemetryEnv(c.Env, c.Logger)
}

// withoutTelemetryEnv is env without the OpenTelemetry SDK's variables
// (OTEL_*): they say where the host's telemetry goes, with its
// credentials (OTEL_EXPORTER_OTLP_HEADERS), and a plugin's spans reach
// the exporter through the host, never on their own.
func withoutTelemetryEnv(env []string, logger *slog.Logger) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(strings.ToUpper(name), "OTEL_") {
			logger.Warn("a plugin's environment never holds the OpenTelemetry variables; its spans reach the exporter through troupe", "variable", name)
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Host discovers plugins, starts each on first use, shares its one
// process among every agent that needs it, restarts it after a crash and
// stops it on Close. It is safe for concurrent use.
type Host struct {
	cfg   Config
	mu    sync.Mutex
	procs map[string]*proc // by plugin name
	// dropped are the plugins a Load replaced or no longer found: their
	// tools, still held by a registry of before, may start them again,
	// so Close stops them too.
	dropped []*proc
	lock    *Lock
	closed  bool
	// bg holds the starts in flight and the kills of exited processes,
	// which Close waits for; bgMu guards adding to it, and shut, which
	// Close sets before it waits.
	bg   sync.WaitGroup
	bgMu sync.Mutex
	shut bool
	// restarts counts RestartsMetric; nil without a MeterProvider.
	restarts metric.Int64Counter
}

// New returns a host; Load discovers the plugins.
func New(cfg Config) *Host {
	cfg.setDefaults()
	return &Host{cfg: cfg, procs: map[string]*proc{}, restarts: cfg.restarts()}
}

// proc is one plugin: its binary and, while it runs, its process.
type proc struct {
	h   *Host
	bin Binary
	// stamp is the binary's size and time when desc was read.
	stamp string

	mu  sync.Mutex
	cur *running
	// starting is the start in flight, if any; see get.
	starting *starting
	// img is the binary, read and checked, for the next start; see image.
	img     *process.Image
	desc    *pluginv1.DescribeResponse
	crashes []time.Time
	// crashed: the last process exited on its own, so the next start is
	// a restart.
	crashed  bool
	disabled error
	closing  bool
}

// running is one process of a plugin.
type running struct {
	p      *proc
	cmd    *exec.Cmd // as started: the keeper, or the plugin
	client *plugin.Client
	conn   *wire.Conn
	pid    int
	// exited is closed when go-plugin reports the process's exit.
	exited     chan struct{}
	exitOnce   sync.Once
	exitStatus string
	// stopping is set when the host ends the process on purpose.
	stopping bool

	// lane carries tool calls when the plugin serves it; nil: gRPC does.
	lane *wire.Lane
	// traces: the plugin takes its calls' trace context, and answers
	// with the spans it made under it.
	traces bool

	hostOnce sync.Once
	hostID   uint32
	runs     sync.Map // run ID → *loopRun
}

func stampOf(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
}

// get returns the plugin's running process, starting it if it is not
// running. The start runs once, on a goroutine of its own, whoever asked
// for it: a caller whose ctx ends leaves at once with ctx's error, and the
// start goes on for the callers that still wait, and for later ones. A
// start that fails is every waiter's error; the next call starts again.
func (p *proc) get(ctx context.Context) (*running, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	if p.disabled != nil {
		err := p.disabled
		p.mu.Unlock()
		return nil, err
	}
	if r := p.cur; r != nil {
		select {
		case <-r.exited:
			p.endedLocked(r)
			if err := p.disabled; err != nil {
				p.mu.Unlock()
				return nil, err
			}
		default:
			p.mu.Unlock()
			return r, nil
		}
	}
	s := p.starting
	if s == nil {
		s = p.startLocked()
	}
	p.mu.Unlock()
	s.waiters.Add(1)
	defer s.waiters.Add(-1)
	select {
	case <-s.done:
		return s.r, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// starting is a start of a plugin's process in flight. Its waiters read r
// and err once done is closed.
type starting struct {
	done chan struct{}
	r    *running
	err  error
	// stop ends the start early: the host is closing, or the plugin was
	// dropped by a Load.
	stop context.CancelFunc
	// waiters counts the callers waiting on it.
	waiters atomic.Int32
}

// startLocked begins a start of p's process. p.mu is held.
func (p *proc) startLocked() *starting {
	ctx, stop := context.WithCancel(context.Background())
	s := &starting{done: make(chan struct{}), stop: stop}
	p.starting = s
	started := p.h.background(func() {
		defer stop()
		r, err := p.start(ctx)
		p.mu.Lock()
		p.starting = nil
		if p.closing || ctx.Err() != nil {
			// Stopped while it started: what started is not wanted.
			if err == nil {
				r.stopping = true
				p.h.bg.Go(r.kill)
			}
			r, err = nil, p.stoppedWhileStarting()
		}
		p.cur = r
		restarted := err == nil && p.crashed
		p.crashed = p.crashed && !restarted
		name := p.bin.Name
		p.mu.Unlock()
		if restarted && p.h.restarts != nil {
			p.h.restarts.Add(context.Background(), 1, metric.WithAttributes(PluginNameKey.String(name)))
		}
		s.r, s.err = r, err
		close(s.done)
	})
	if !started {
		// The host closed: a plugin whose name a Load dropped is not
		// marked closing, and must not start either.
		stop()
		p.starting = nil
		s.err = ErrClosed
		close(s.done)
	}
	return s
}

// background runs fn on a goroutine that Close waits for, and reports
// false, without running it, once Close has begun.
func (h *Host) background(fn func()) bool {
	h.bgMu.Lock()
	defer h.bgMu.Unlock()
	if h.shut {
		return false
	}
	h.bg.Go(fn)
	return true
}

// stoppedWhileStarting is the error of a start that the host ended. p.mu
// is held.
func (p *proc) stoppedWhileStarting() error {
	if p.closing {
		return ErrClosed
	}
	return fmt.Errorf("%w: plugin %s was stopped while it started (its binary changed, or it is gone); it is started again on next use", ErrStart, p.bin.Name)
}

// start starts a process of the plugin and checks its description. The
// binary is read once, and what runs is the bytes whose checksum the lock
// file and the project's trust were checked against. When ctx ends first,
// the process is ended and the start fails.
func (p *proc) start(ctx context.Context) (*running, error) {
	h := p.h
	h.mu.Lock()
	lock := h.lock
	h.mu.Unlock()
	cmd, done, err := p.command(lock)
	if err != nil {
		return nil, err
	}
	defer done() // once started, the process runs on from its own copy
	r := &running{p: p, exited: make(chan struct{})}
	env := append(slices.Clone(h.cfg.Env),
		wire.EnvHostPID+"="+strconv.Itoa(os.Getpid()),
		wire.EnvCancelGrace+"="+h.cfg.CancelGrace.String())
	lane, laneEnv, laneDone := p.offerLane(cmd)
	defer laneDone()
	cmd.Env = process.Env(os.Environ(), append(env, laneEnv...)...)
	r.cmd = process.Kept(cmd)
	// go-plugin's handshake takes no context: ending the process is what
	// ends it early.
	watch := &startWatch{}
	defer context.AfterFunc(ctx, watch.cancel)()
	r.client = plugin.NewClient(p.clientConfig(r, watch))
	if err := p.connect(r, watch); err != nil {
		closeLane(lane)
		r.kill()
		return nil, err
	}
	d, err := p.describe(ctx, r)
	if err != nil {
		closeLane(lane)
		r.kill()
		return nil, err
	}
	r.traces = d.GetTraceContext()
	if d.GetLaneVersion() == wire.LaneVersion && lane != nil {
		r.lane = lane
		if r.traces {
			lane.CarryTrace()
		}
		lane.ServeHost(&hostService{r: r})
	} else {
		closeLane(lane)
	}
	p.keepDescription(d)
	h.cfg.Logger.Debug("plugin started", "plugin", p.bin.Name, "pid", r.pid)
	return r, nil
}

// offerLane makes a lane for the process cmd starts and passes its end
// in cmd's files; env names it to the plugin, and done closes this
// process's copy of the end, once the plugin has started. lane is nil
// when none can be made: calls then go over gRPC, as they do to a
// plugin that does not serve it.
//
// A plugin whose description says it does not serve the lane gets none:
// the host cannot make the descriptor close on exec in the plugin, so a
// plugin that leaves it alone would pass it, and its variable, to every
// process it starts. One not yet described (its first start with this
// binary) gets it, since only its answer tells.
func (p *proc) offerLane(cmd *exec.Cmd) (lane *wire.Lane, env []string, done func()) {
	p.mu.Lock()
	d := p.desc
	p.mu.Unlock()
	if d != nil && d.GetLaneVersion() != wire.LaneVersion {
		return nil, nil, func() {}
	}
	lane, end, err := wire.NewLane()
	if err != nil {
		p.h.cfg.Logger.Debug("no lane for the plugin; its calls go over gRPC", "plugin", p.bin.Name, "error", err)
		return nil, nil, func() {}
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, end)
	return lane, []string{wire.EnvLaneFD + "=" + strconv.Itoa(2+len(cmd.ExtraFiles))}, func() { _ = end.Close() }
}

func closeLane(l *wire.Lane) {
	if l != nil {
		_ = l.Close()
	}
}

// clientConfig is how go-plugin runs r's command: through the runner that
// watch sees the handshake of, over gRPC alone, with the plugin's log
// lines going to the host's logger and its exit closing r.exited.
func (p *proc) clientConfig(r *running, watch *startWatch) *plugin.ClientConfig {
	h := p.h
	logger := &slogger{l: h.cfg.Logger, name: p.bin.Name, onExit: func(status string) {
		r.exitOnce.Do(func() {
			r.exitStatus = status
			close(r.exited)
		})
	}}
	return &plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(&wire.Plugin{}),
		RunnerFunc:       runnerFunc(r.cmd, p.bin.Path, h.cfg.CancelGrace, watch),
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     h.cfg.StartTimeout,
		Logger:           logger,
		Stderr:           io.Discard,
		SyncStdout:       io.Discard,
		SyncStderr:       io.Discard,
		GRPCDialOptions:  wire.DialOptions(),
	}
}

// connect starts r's process and makes the handshake, refusing a plugin
// that speaks another version of the protocol, and takes the connection
// to the plugin.
func (p *proc) connect(r *running, watch *startWatch) error {
	rpc, err := r.client.Client()
	if v, ok := watch.version(); ok && v != wire.Version {
		// Read from the plugin's own handshake line, not from go-plugin's
		// error: a plugin that announces another version is refused for
		// that, whatever go-plugin makes of it.
		return fmt.Errorf("%w: %w: plugin %s (%s) speaks version %d of the plugin protocol, and this troupe speaks %d: rebuild it against this troupe's sdk",
			ErrStart, ErrProtocolVersion, p.bin.Name, p.bin.Path, v, wire.Version)
	}
	if err != nil {
		return fmt.Errorf("%w: plugin %s (%s): %v", ErrStart, p.bin.Name, p.bin.Path, err)
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		return fmt.Errorf("%w: plugin %s: %v", ErrStart, p.bin.Name, err)
	}
	r.conn = raw.(*wire.Conn)
	if r.cmd.Process != nil {
		r.pid = r.cmd.Process.Pid
	}
	return nil
}

// describe asks r's process to describe itself, and checks what it says.
// Every process describes itself, so a description from the cache is
// checked against the process that now serves it.
func (p *proc) describe(ctx context.Context, r *running) (*pluginv1.DescribeResponse, error) {
	dctx, cancel := context.WithTimeout(ctx, p.h.cfg.StartTimeout)
	defer cancel()
	d, err := r.conn.Plugin.Describe(dctx, &pluginv1.DescribeRequest{ProtocolVersion: wire.Version})
	if err != nil {
		return nil, fmt.Errorf("%w: plugin %s did not describe itself: %v", ErrStart, p.bin.Name, err)
	}
	if err := wire.Check(d, wire.Version); err != nil {
		return nil, fmt.Errorf("%w: plugin %s: %v", ErrStart, p.bin.Name, err)
	}
	return d, nil
}

// keepDescription makes d the plugin's description, and caches it when
// it changed; a change shows in the types and tools at the next load.
func (p *proc) keepDescription(d *pluginv1.DescribeResponse) {
	h := p.h
	p.mu.Lock()
	changed := p.desc == nil || !proto.Equal(p.desc, d)
	if changed && p.desc != nil {
		h.cfg.Logger.Warn("plugin describes itself otherwise than before; its types and tools change at the next load", "plugin", p.bin.Name)
	}
	p.desc = d
	p.mu.Unlock()
	if changed {
		h.storeDescription(p.cacheKey(), d)
	}
}

// command is the command that starts the plugin. When the lock file or
// the user's trust has a say, the binary is read once and checked, and the
// command runs those very bytes; otherwise (a plugin of the user's own
// folders, and no lock file) it runs the binary as it is.
// done frees what the command needed to start.
func (p *proc) command(lock *Lock) (cmd *exec.Cmd, done func(), err error) {
	if lock == nil && p.bin.Layer != LayerProject {
		return exec.Command(p.bin.Path), func() {}, nil
	}
	p.mu.Lock()
	im := p.img // read when the plugin was described, if it was
	p.img = nil
	p.mu.Unlock()
	if im == nil {
		if im, err = p.h.cfg.Digests.Open(p.bin.Path); err != nil {
			return nil, nil, fmt.Errorf("%w: plugin %s: %v", ErrStart, p.bin.Name, err)
		}
	}
	if err := p.allowed(lock, im.SHA256); err != nil {
		im.Close()
		return nil, nil, err
	}
	p.h.cfg.Digests.Remember(im)
	return im.Command(), func() { _ = im.Close() }, nil
}

// allowed checks a binary with checksum sum against the lock file, when
// there is one, and, for a plugin of the project, against the user's
// trust.
func (p *proc) allowed(lock *Lock, sum string) error {
	h := p.h
	if lock != nil {
		e, ok := lock.Plugins[p.bin.Name]
		if !ok {
			return fmt.Errorf("%w: plugin %s (%s) is not in %s; if it is trusted, add it to the lock file", ErrChecksum, p.bin.Name, p.bin.Path, h.cfg.LockFile)
		}
		if e.SHA256 != sum {
			return fmt.Errorf("%w: plugin %s (%s) has SHA-256 %s but %s lists %s; if the new binary is trusted, write the lock file again",
				ErrChecksum, p.bin.Name, p.bin.Path, sum, h.cfg.LockFile, e.SHA256)
		}
	}
	if !h.trusts(p.bin, sum) {
		return p.untrusted()
	}
	return nil
}

// trusts reports whether the binary b, whose checksum is sum, may run as
// far as trust goes: the user's own plugins may, the project's only when
// TrustProject trusts that very binary.
func (h *Host) trusts(b Binary, sum string) bool {
	return b.Layer != LayerProject || (h.cfg.TrustProject != nil && h.cfg.TrustProject(b.Name, sum))
}

// untrusted is the refusal of a project's plugin the user has not trusted.
func (p *proc) untrusted() error {
	return fmt.Errorf("plugin %s (%s) is not run: it is the project's, and %w", p.bin.Name, p.bin.Path, errProjectUntrusted)
}

// errProjectUntrusted says why a project's plugin does not run, and
// wraps agenttypes.ErrUntrusted.
var errProjectUntrusted = fmt.Errorf("its binary is %w", agenttypes.ErrUntrusted)

// kill ends r's process and everything left in its process group.
// (go-plugin asks it to exit, then its runner, keptRunner, stops it).
func (r *running) kill() {
	closeLane(r.lane)
	r.client.Kill()
	if r.cmd.Process != nil {
		_ = process.KillGroup(r.cmd.Process.Pid)
	}
}

// ended forgets r, whose process has exited, and kills what is left of
// it; an exit the host did not ask for counts as a crash.
func (p *proc) ended(r *running) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endedLocked(r)
}

func (p *proc) endedLocked(r *running) {
	if p.cur != r {
		return
	}
	p.cur = nil
	// The process is gone; this ends go-plugin's goroutines and what it
	// left.
	if !p.h.background(r.kill) {
		go r.kill()
	}
	if r.stopping || p.closing {
		return
	}
	p.crashed = true
	now := time.Now()
	window := p.h.cfg.CrashWindow
	p.crashes = slices.DeleteFunc(append(p.crashes, now), func(t time.Time) bool { return now.Sub(t) > window })
	p.h.cfg.Logger.Warn("plugin exited", "plugin", p.bin.Name, "status", r.exitStatus, "crashes", len(p.crashes))
	if len(p.crashes) >= p.h.cfg.MaxCrashes {
		p.disabled = fmt.Errorf("%w: plugin %s crashed %d times in %s (last: %s); it stays disabled until troupe restarts or the plugins are loaded again",
			ErrDisabled, p.bin.Name, len(p.crashes), window, r.exitStatus)
		p.h.cfg.Logger.Error("plugin disabled", "plugin", p.bin.Name, "reason", p.disabled.Error())
	}
}

// stop ends the plugin's process, if it runs: go-plugin asks it to exit,
// waits, then kills it.
func (p *proc) stop() {
	p.mu.Lock()
	r := p.cur
	p.cur = nil
	if r != nil {
		r.stopping = true
	}
	if s := p.starting; s != nil {
		s.stop()
	}
	if p.img != nil {
		_ = p.img.Close()
		p.img = nil
	}
	p.mu.Unlock()
	if r != nil {
		r.kill()
	}
}

// callFailed turns the transport error of a call on r into the error the
// caller sees: an ExitError when the process exited (it waits a moment
// for go-plugin to notice), else the transport's meaning.
func (p *proc) callFailed(ctx context.Context, r *running, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch status.Code(err) {
	case codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted:
		// The call ended (the plugin's side may see the deadline first),
		// or a message was too big: the process is not in question.
		return fmt.Errorf("plugin %s: %w", p.bin.Name, wire.TransportError(ctx, err))
	}
	select {
	case <-r.exited:
	case <-time.After(2 * time.Second):
	}
	select {
	case <-r.exited:
		p.ended(r)
		return &ExitError{Plugin: p.bin.Name, Status: r.exitStatus}
	default:
	}
	return fmt.Errorf("plugin %s: %w", p.bin.Name, wire.TransportError(ctx, err))
}

// PID is the process ID of the process started for the plugin: the
// plugin itself, or its keeper when the program serves keepers (see
// process.ServeIfKeeper). It is 0 when none runs (or when the host has
// seen it exit).
func (h *Host) PID(name string) int {
	h.mu.Lock()
	p := h.procs[name]
	h.mu.Unlock()
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		return 0
	}
	select {
	case <-p.cur.exited:
		return 0
	default:
		return p.cur.pid
	}
}

// Close stops every plugin process: each is asked to exit, given a moment,
// then killed. Calls after Close fail with ErrClosed.
func (h *Host) Close() error {
	h.bgMu.Lock()
	h.shut = true
	h.bgMu.Unlock()
	h.mu.Lock()
	h.closed = true
	procs := slices.Clone(h.dropped)
	for _, p := range h.procs {
		procs = append(procs, p)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		p.mu.Lock()
		p.closing = true
		p.mu.Unlock()
		wg.Go(p.stop)
	}
	wg.Wait()
	h.bg.Wait()
	return nil
}
