package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/script"
	"github.com/troupe-dev/troupe/plugins"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// BenchmarkBoundary: one call across a process boundary, troupe's beside
// the floor, a bare go-plugin gRPC call of the same size to a plugin that
// does nothing (internal/floorplugin, go-plugin's defaults on both sides),
// all in one run. Each sub-benchmark reports the median and the 99th
// percentile of its calls.
//
// Targets: plugin-tool ≤ 100 µs p50 and script-hook ≤ 120 µs p50, each
// read beside bare-grpc (make bench's table reads these names).
func BenchmarkBoundary(b *testing.B) {
	floor := startFloor(b)
	pid, pluginReq, pluginReply := pluginCall(b)
	hooks := scriptHooks(b)
	ctx := context.Background()
	args := json.RawMessage(`{"s":"hi"}`)

	b.Run("bare-grpc", func(b *testing.B) {
		req := floorRequest(pluginReq, pluginReply)
		percentiles(b, func() {
			if _, err := floor.CallTool(ctx, req); err != nil {
				b.Fatal(err)
			}
		})
	})
	// Target: ≤ 100 µs p50.
	b.Run("plugin-tool", func(b *testing.B) {
		percentiles(b, func() {
			if _, err := pid(); err != nil {
				b.Fatal(err)
			}
		})
	})
	// A turn's four tool calls to one plugin, made at once as the manager
	// makes them: what batching them into one round trip could save.
	b.Run("plugin-tool-4-at-once", func(b *testing.B) {
		var wg sync.WaitGroup
		percentiles(b, func() {
			for range 4 {
				wg.Go(func() {
					if _, err := pid(); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		})
	})
	b.Run("bare-grpc-script-size", func(b *testing.B) {
		req := floorRequest(scriptHookRequest, scriptHookReply)
		percentiles(b, func() {
			if _, err := floor.CallTool(ctx, req); err != nil {
				b.Fatal(err)
			}
		})
	})
	// Target: ≤ 120 µs p50.
	b.Run("script-hook", func(b *testing.B) {
		percentiles(b, func() {
			if _, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "abc"}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("script-tool", func(b *testing.B) {
		percentiles(b, func() {
			if _, err := hooks.Tools[0].Call(ctx, args); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// The sizes on the wire of a script hook's call in BenchmarkBoundary:
// its CallToolRequest (the call as JSON, the tool's name, a deadline) and
// the text of its reply.
const (
	scriptHookRequest = 165
	scriptHookReply   = 24
)

// percentiles times max(b.N, 2000) calls of fn after 100 unmeasured ones,
// and reports their median and 99th percentile in µs, and the mean as
// ns/op. It reports too the CPU time a call costs this process
// (host-cpu-µs) and the processes it started (child-cpu-µs), which a
// busy machine changes less than the time a call takes.
func percentiles(b *testing.B, fn func()) {
	for range 100 {
		fn()
	}
	n := max(b.N, 2000)
	ds := make([]time.Duration, n)
	host, child := cpuTimes()
	b.ResetTimer()
	for i := range n {
		start := time.Now()
		fn()
		ds[i] = time.Since(start)
	}
	b.StopTimer()
	host2, child2 := cpuTimes()
	b.ReportMetric(float64(host2-host)/float64(n)/float64(time.Microsecond), "host-cpu-µs")
	b.ReportMetric(float64(child2-child)/float64(n)/float64(time.Microsecond), "child-cpu-µs")
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[n/2])/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(ds[n*99/100])/float64(time.Microsecond), "p99-µs")
	b.ReportMetric(float64(total)/float64(n), "ns/op")
}

// floorRequest is a request to the floor plugin of size bytes on the wire
// (at least), whose reply is reply bytes of text.
func floorRequest(size, reply int) *pluginv1.CallToolRequest {
	req := &pluginv1.CallToolRequest{Name: strings.Repeat("r", reply)}
	if pad := size - proto.Size(req) - 3; pad > 0 {
		req.Args = []byte(strings.Repeat("a", pad))
	}
	return req
}

// pluginCall loads the test plugin and returns a call of its pid tool,
// the size of the request that call sends, and of its reply.
func pluginCall(b *testing.B) (call func() (string, error), request, reply int) {
	h, _ := newHost(b, plugins.Config{}, pluginDir(b, "test"))
	reg := agenttypes.NewRegistry()
	if problems := h.Load(context.Background(), reg); len(problems) > 0 {
		b.Fatal(problems)
	}
	tool, _ := reg.Tool("pid")
	env := &agenttypes.Env{AgentID: "bench", Dir: b.TempDir()}
	ctx := agenttypes.WithEnv(context.Background(), env)
	call = func() (string, error) { return tool.Call(ctx, []byte(`{}`)) }
	text, err := call()
	if err != nil {
		b.Fatal(err)
	}
	// For profiling the plugin's side: perf record -p the process ID
	// written there.
	if f := os.Getenv("BENCH_PID_FILE"); f != "" {
		_ = os.WriteFile(f, []byte(text), 0o644)
	}
	req := &pluginv1.CallToolRequest{Name: "pid", Args: []byte(`{}`), Agent: &pluginv1.Agent{Id: env.AgentID, Dir: env.Dir}}
	return call, proto.Size(req), len(text)
}

const benchHooks = `package hooks

import (
	"strings"
	"troupe"
)

func Prompt(task troupe.Task) (string, error) { return strings.ToUpper(task.Prompt), nil }
`

const benchTool = `package hooks

func Run(args map[string]any) (string, error) { s, _ := args["s"].(string); return s + "!", nil }
`

// scriptHooks compiles a Prompt hook and a script tool to run in a
// script host process: this test binary, re-executed.
func scriptHooks(b *testing.B) *agenttypes.Hooks {
	h := script.New(script.Options{})
	b.Cleanup(func() { _ = h.Close() })
	hooks, diags := h.Compile(context.Background(), "bench", &agenttypes.Scripts{
		Hooks: &agenttypes.Script{Source: benchHooks, File: "bench.yaml", Line: 1},
		Tools: []agenttypes.ScriptTool{{Name: "echo", Description: "echo", Script: agenttypes.Script{Source: benchTool, File: "bench.yaml", Line: 1}}},
	})
	if len(diags) > 0 {
		b.Fatal(diags)
	}
	return hooks
}

// cpuTimes is the CPU time this process has used, and the time the
// processes below it have, from the scheduler's count of each thread's
// time on a CPU (/proc/PID/task/TID/schedstat).
func cpuTimes() (self, below time.Duration) {
	parent := map[int]int{}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 {
				parent[pid], _ = strconv.Atoi(f[1])
			}
		}
	}
	me := os.Getpid()
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == me {
				below += onCPU(pid)
				break
			}
		}
	}
	return onCPU(me), below
}

// onCPU is the time pid's threads have run.
func onCPU(pid int) time.Duration {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tasks, _ := os.ReadDir(dir)
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		ns, _, _ := strings.Cut(string(data), " ")
		v, _ := strconv.ParseInt(ns, 10, 64)
		total += time.Duration(v)
	}
	return total
}

// floorHandshake is internal/floorplugin's.
var floorHandshake = plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "FLOOR_PLUGIN", MagicCookieValue: "floor"}

// floorClient is the host's side of the floor plugin.
type floorClient struct{ plugin.NetRPCUnsupportedPlugin }

func (floorClient) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("the floor plugin is served by its own binary")
}

func (floorClient) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginv1.NewPluginClient(c), nil
}

var (
	floorOnce sync.Once
	floorBin  string
	floorErr  error
)

// startFloor builds the floor plugin, once, starts it with go-plugin's
// defaults and returns its client; the process ends with the benchmark.
func startFloor(b *testing.B) pluginv1.PluginClient {
	floorOnce.Do(func() {
		floorBin = filepath.Join(filepath.Dir(testPlugin), "floorplugin")
		out, err := exec.Command("go", "build", "-o", floorBin, "./internal/floorplugin").CombinedOutput()
		if err != nil {
			floorErr = errors.New("building the floor plugin: " + err.Error() + "\n" + string(out))
		}
	})
	if floorErr != nil {
		b.Fatal(floorErr)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  floorHandshake,
		Plugins:          plugin.PluginSet{"floor": floorClient{}},
		Cmd:              exec.Command(floorBin),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
	})
	b.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := rpc.Dispense("floor")
	if err != nil {
		b.Fatal(err)
	}
	c := raw.(pluginv1.PluginClient)
	if _, err := c.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: strconv.Itoa(os.Getpid())}); err != nil {
		b.Fatal(err)
	}
	return c
}
