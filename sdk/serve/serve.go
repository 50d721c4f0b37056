package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"go.opentelemetry.io/otel"
	"google.golang.org/grpc"

	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// Exit statuses of a plugin process.
const (
	// ExitByHand: the binary was run by hand, not by troupe.
	ExitByHand = 1
	// ExitHostGone: the host died.
	ExitHostGone = 3
	// ExitStuck: a call ignored its cancellation past the grace period.
	ExitStuck = 4
	// ExitBadPlugin: the Plugin value cannot be served.
	ExitBadPlugin = 5
)

// DefaultCancelGrace is how long a cancelled call may run on before the
// plugin exits, when the host does not say.
const DefaultCancelGrace = 2 * time.Second

// Serve serves p to the troupe host that started the process and returns
// only when the host ends the plugin; it exits the process on its own in
// the cases the package comment lists.
func Serve(p sdk.Plugin) {
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		fmt.Fprint(os.Stderr, byHand(p.Name, os.Args[0]))
		os.Exit(ExitByHand)
	}
	stderr := os.Stderr // go-plugin redirects os.Stderr once serving
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: hclogKeys}))
	slog.SetDefault(logger)
	srv, err := newServer(p, logger)
	if err != nil {
		logger.Error("cannot serve the plugin", "error", err)
		os.Exit(ExitBadPlugin)
	}
	// otel.Tracer anywhere in the plugin records into the calls' answers.
	otel.SetTracerProvider(newTracerProvider(srv.spans))
	if _, err := strconv.Atoi(os.Getenv(wire.EnvHostPID)); err == nil {
		// The parent is troupe, or the keeper troupe started the plugin
		// under, which dies with it: either way, once it is gone, so is
		// the host. A plugin already orphaned has no host to serve.
		parent := os.Getppid()
		if parent == 1 {
			logger.Warn("troupe, the host of this plugin, has gone; exiting")
			os.Exit(ExitHostGone)
		}
		go watchParent(parent, 250*time.Millisecond, func() {
			logger.Warn("troupe, the host of this plugin, has gone; exiting")
			os.Exit(ExitHostGone)
		})
	}
	if g, err := time.ParseDuration(os.Getenv(wire.EnvCancelGrace)); err == nil && g > 0 {
		srv.grace = g
	}
	srv.serveLane(logger)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(&wire.Plugin{Serve: srv.bind}),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(wire.ServerOptions(opts)...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{Name: p.Name, Output: stderr, JSONFormat: true, Level: hclog.Info}),
	})
}

// byHand is what a plugin binary run by hand prints.
func byHand(name, argv0 string) string {
	bin := filepath.Base(argv0)
	if name == "" {
		name = "NAME"
	}
	return fmt.Sprintf(`%s is a troupe plugin (%q): troupe starts it itself, it is not meant to be run by hand.

To install it, copy it into a plugin folder, named troupe-plugin-%s:
  the project's        .troupe/plugins/
  the user's           ${XDG_DATA_HOME:-~/.local/share}/troupe/plugins/
  or a folder listed in TROUPE_PLUGIN_PATH
then run 'troupe plugins lock' (when the project keeps a .troupe/plugins.lock)
and 'troupe plugins list' to see what it offers.
`, bin, name, name)
}

// hclogKeys renames slog's keys to hclog's, so that the host reads each
// line's level and message.
func hclogKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.LevelKey:
		lvl, _ := a.Value.Any().(slog.Level)
		s := "info"
		switch {
		case lvl < slog.LevelInfo:
			s = "debug"
		case lvl >= slog.LevelError:
			s = "error"
		case lvl >= slog.LevelWarn:
			s = "warn"
		}
		return slog.String("@level", s)
	case slog.MessageKey:
		return slog.Attr{Key: "@message", Value: a.Value}
	case slog.TimeKey:
		return slog.String("@timestamp", a.Value.Time().Format("2006-01-02T15:04:05.000000Z07:00"))
	}
	return a
}

// watchParent calls gone once the process's parent is no longer pid.
func watchParent(pid int, every time.Duration, gone func()) {
	for {
		if os.Getppid() != pid {
			gone()
			return
		}
		time.Sleep(every)
	}
}

// server is the Plugin service of one plugin.
type server struct {
	pluginv1.UnimplementedPluginServer
	p      sdk.Plugin
	desc   *pluginv1.DescribeResponse
	tools  map[string]sdk.Tool
	types  map[string]sdk.Type
	logger *slog.Logger
	grace  time.Duration
	// stuck is called when a call outlives its cancellation by grace.
	stuck func(what string)

	// lane carries the host's tool calls, and the loops' calls to a host
	// that serves Host there too; nil when the host passed none.
	lane *wire.LaneServer
	// spans collects the spans each call makes, for its answer.
	spans *collector

	broker *plugin.GRPCBroker
	mu     sync.Mutex
	hosts  map[uint32]pluginv1.HostClient
	conns  []io.Closer
}

func newServer(p sdk.Plugin, logger *slog.Logger) (*server, error) {
	s := &server{p: p, tools: map[string]sdk.Tool{}, types: map[string]sdk.Type{}, logger: logger, grace: DefaultCancelGrace,
		hosts: map[uint32]pluginv1.HostClient{}, spans: newCollector()}
	s.stuck = func(what string) {
		logger.Error("a call ignored its cancellation; exiting so that troupe restarts the plugin", "call", what, "grace", s.grace.String())
		os.Exit(ExitStuck)
	}
	s.desc = &pluginv1.DescribeResponse{Name: p.Name, Version: p.Version, ProtocolVersion: wire.Version, TraceContext: true}
	for _, t := range p.Tools {
		spec := t.Spec()
		if _, dup := s.tools[spec.Name]; dup {
			return nil, fmt.Errorf("two tools are named %q", spec.Name)
		}
		s.tools[spec.Name] = t
		s.desc.Tools = append(s.desc.Tools, specToWire(spec))
	}
	for _, t := range p.Types {
		if _, dup := s.types[t.Name]; dup {
			return nil, fmt.Errorf("two types are named %q", t.Name)
		}
		s.types[t.Name] = t
		s.desc.Types = append(s.desc.Types, typeToWire(t))
	}
	return s, nil
}

// serveLane serves tool calls on the lane the host passed, if it passed
// one, and says so in the description.
func (s *server) serveLane(logger *slog.Logger) {
	lane, err := wire.LaneFromEnv()
	if err != nil {
		logger.Warn("cannot serve the host's lane; tool calls go over gRPC", "error", err)
	}
	if lane == nil {
		return
	}
	s.desc.LaneVersion = wire.LaneVersion
	s.lane = lane
	go func() {
		if err := lane.Serve(s.laneCall); err != nil {
			logger.Error("the lane failed", "error", err)
		}
	}()
}

// laneCall is CallTool as the lane calls it.
func (s *server) laneCall(ctx context.Context, req *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
	resp, _ := s.CallTool(ctx, req)
	return resp
}

func (s *server) bind(broker *plugin.GRPCBroker) pluginv1.PluginServer {
	s.mu.Lock()
	s.broker = broker
	s.mu.Unlock()
	return s
}

func (s *server) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return s.desc, nil
}

// CallTool runs a tool, and answers with the spans it made under the
// trace context the host sent, if it sent one.
func (s *server) CallTool(ctx context.Context, req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	ctx, spans := s.spans.begin(ctx)
	resp := s.callTool(ctx, req)
	answerTrace(resp, s.spans.finish(spans), func(b []byte) { resp.Trace = b })
	return resp, nil
}

func (s *server) callTool(ctx context.Context, req *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
	tool, ok := s.tools[req.GetName()]
	if !ok {
		return &pluginv1.CallToolResponse{Error: wire.ErrorToWire(sdk.Errorf(sdk.CodeNotFound, "plugin %s has no tool %q", s.p.Name, req.GetName()))}
	}
	ctx, cancel := wire.WithDeadline(ctx, req.GetDeadlineUnixMs())
	defer cancel()
	var resp *sdk.CallResponse
	err := s.guard(ctx, "tool "+req.GetName(), func(ctx context.Context) (err error) {
		resp, err = tool.Call(ctx, sdk.CallRequest{Args: req.GetArgs(), Agent: sdk.Agent{ID: req.GetAgent().GetId(), Dir: req.GetAgent().GetDir()}})
		return err
	})
	if err != nil {
		return &pluginv1.CallToolResponse{Error: wire.ErrorToWire(err)}
	}
	if resp == nil {
		return &pluginv1.CallToolResponse{}
	}
	return &pluginv1.CallToolResponse{Text: resp.Text}
}

// RunLoop runs a type's loop, and answers with the spans it made under
// the trace context the host sent, if it sent one.
func (s *server) RunLoop(ctx context.Context, req *pluginv1.RunLoopRequest) (*pluginv1.RunLoopResponse, error) {
	ctx, spans := s.spans.begin(ctx)
	resp := s.runLoop(ctx, req)
	answerTrace(resp, s.spans.finish(spans), func(b []byte) { resp.Trace = b })
	return resp, nil
}

func (s *server) runLoop(ctx context.Context, req *pluginv1.RunLoopRequest) *pluginv1.RunLoopResponse {
	t, ok := s.types[req.GetType()]
	if !ok || t.Loop == nil {
		return &pluginv1.RunLoopResponse{Error: wire.ErrorToWire(sdk.Errorf(sdk.CodeNotFound, "plugin %s has no type %q with its own loop", s.p.Name, req.GetType()))}
	}
	host, err := s.host(req)
	if err != nil {
		return &pluginv1.RunLoopResponse{Error: wire.ErrorToWire(sdk.Errorf(sdk.CodeUnavailable, "cannot reach the host: %v", err))}
	}
	ctx, cancel := wire.WithDeadline(ctx, req.GetDeadlineUnixMs())
	defer cancel()
	sess := &session{c: host, run: req.GetRunId()}
	var resp *sdk.RunResponse
	err = s.guard(ctx, "loop of type "+t.Name, func(ctx context.Context) (err error) {
		resp, err = t.Loop.Run(ctx, sess, sdk.RunRequest{Task: req.GetTask(), Type: t.Name, Agent: sdk.Agent{ID: req.GetAgent().GetId(), Dir: req.GetAgent().GetDir()}})
		return err
	})
	if err != nil {
		return &pluginv1.RunLoopResponse{Error: wire.ErrorToWire(err)}
	}
	if resp == nil {
		return &pluginv1.RunLoopResponse{}
	}
	return &pluginv1.RunLoopResponse{Output: resp.Output}
}

// host returns the client of the host's Host service for a loop: on the
// lane when the host serves it there, else on the broker connection the
// request names, dialled once and then shared.
func (s *server) host(req *pluginv1.RunLoopRequest) (pluginv1.HostClient, error) {
	if req.GetHostLane() && s.lane != nil {
		return s.lane.Host(), nil
	}
	id := req.GetHostBrokerId()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.hosts[id]; ok {
		return c, nil
	}
	if s.broker == nil {
		return nil, fmt.Errorf("no broker")
	}
	conn, err := s.broker.DialWithOptions(id, wire.DialOptions()...)
	if err != nil {
		return nil, err
	}
	c := pluginv1.NewHostClient(conn)
	s.hosts[id] = c
	s.conns = append(s.conns, conn)
	return c, nil
}

// maxStack bounds the stack kept in a panic's message.
const maxStack = 16 << 10

// guard runs fn, turning a panic into an error with code internal, and
// calls s.stuck when fn runs on for longer than the grace period after
// ctx ended.
func (s *server) guard(ctx context.Context, what string, fn func(context.Context) error) (err error) {
	// No goroutine per call: a timer starts only once ctx ends.
	var finished atomic.Bool
	var timer atomic.Pointer[time.Timer]
	stop := context.AfterFunc(ctx, func() {
		timer.Store(time.AfterFunc(s.grace, func() {
			if !finished.Load() {
				s.stuck(what)
			}
		}))
	})
	defer func() {
		finished.Store(true)
		if !stop() {
			if t := timer.Load(); t != nil {
				t.Stop()
			}
		}
	}()
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			s.logger.Error("panic", "in", what, "panic", fmt.Sprint(v), "stack", string(stack))
			if len(stack) > maxStack {
				stack = stack[:maxStack]
			}
			err = &sdk.Error{Code: sdk.CodeInternal, Message: fmt.Sprintf("plugin %s: panic in %s: %v\n%s", s.p.Name, what, v, stack)}
		}
	}()
	return fn(ctx)
}
