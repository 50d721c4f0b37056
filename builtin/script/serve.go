package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/serve"
)

// ChildEnv is set in the environment of a script host process; its value
// is the memory limit in bytes.
const ChildEnv = "TROUPE_SCRIPT_HOST"

// childCPUEnv holds the milliseconds of CPU time one call may use in a
// script host process. (It held seconds under another name, which a
// script host of an older build does not read as milliseconds.)
const childCPUEnv = "TROUPE_SCRIPT_CPU_MS"

// childStackEnv holds the bytes a goroutine's stack may grow to in a
// script host process.
const childStackEnv = "TROUPE_SCRIPT_STACK"

// cpuMillis is d in whole milliseconds, at least one.
func cpuMillis(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}

// maxGoroutines is how many goroutines a script host process may run.
const maxGoroutines = 1000

// stderr is the script host's standard error as it started: go-plugin
// redirects os.Stderr once it serves, and the host reads a fatal line
// from the original.
var stderr = os.Stderr

// ServeIfChild serves scripts over the plugin protocol and exits, when
// the process was started as a script host (ChildEnv is set), and returns
// at once otherwise. A program that runs scripts out of process calls it
// first thing in main (and a test binary in TestMain), since the default
// script host is the program itself, re-executed.
func ServeIfChild() {
	v, ok := os.LookupEnv(ChildEnv)
	if !ok {
		return
	}
	mem, err := strconv.ParseInt(v, 10, 64)
	if err != nil || mem <= 0 {
		mem = DefaultMemoryLimit
	}
	setLimits(mem)
	cpuMs, _ := strconv.ParseInt(os.Getenv(childCPUEnv), 10, 64)
	cpu := time.Duration(cpuMs) * time.Millisecond
	stack, err := strconv.ParseInt(os.Getenv(childStackEnv), 10, 64)
	if err != nil || stack <= 0 {
		stack = DefaultStackLimit
	}
	debug.SetMaxStack(int(stack))
	debug.SetMemoryLimit(mem / 2)
	s := &server{mem: mem, watch: &watchdog{mem: mem, cpu: cpu}, progs: map[string]*instance{}}
	go s.watch.run()
	serve.Serve(sdk.Plugin{Name: pluginName, Tools: []sdk.Tool{
		&sdk.ToolFunc{ToolSpec: sdk.ToolSpec{Name: toolLoad, Description: "Compiles a script."}, Func: s.tool},
		&sdk.ToolFunc{ToolSpec: sdk.ToolSpec{Name: toolCall, Description: "Calls a function of a compiled script."}, Func: s.tool},
	}})
	os.Exit(0)
}

// server is the script host's side: the programs it compiled.
type server struct {
	mem   int64
	watch *watchdog

	mu    sync.Mutex // one call at a time
	progs map[string]*instance
}

// tool serves both tools: a request with a Call is a call, one without
// is a load. Each is a span, under the trace context the host sent, if it
// sent one.
func (s *server) tool(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
	var r request
	if err := json.Unmarshal(req.Args, &r); err != nil {
		return nil, sdk.Errorf(sdk.CodeInvalidArgument, "bad request: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, span := startSpan(ctx, &r)
	resp := s.handle(&r)
	endSpan(span, &resp)
	data, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return &sdk.CallResponse{Text: string(data)}, nil
}

func (s *server) handle(req *request) (resp response) {
	base := runtime.NumGoroutine()
	s.watch.begin()
	defer s.watch.end()
	resp = handle(s.progs, req)
	if used := heapBytes(); used > s.mem {
		resp.Fail = fmt.Sprintf("the script used more than %d MiB of memory (the limit); the script host was stopped", s.mem>>20)
		resp.Retire = true
	} else if s.watch.overCPU() {
		resp.Fail = s.watch.cpuFailure() + "; the script host was stopped"
		resp.Retire = true
	} else if n := settle(base); n > 0 {
		resp.Fail = fmt.Sprintf("the script left %d goroutines running after %s returned; a script must not leave goroutines behind", n, req.Call.fnName())
		resp.Retire = true
	}
	return resp
}

// TracerScope names the tracer of a script host's spans, one for each
// load of a script and each call of a hook or tool, and of the host's
// records of them.
const TracerScope = "github.com/troupe-dev/troupe/builtin/script"

// tracer is the script host's tracer: the global provider's, which
// serve.Serve installs, once it has.
var tracer = otel.Tracer(TracerScope)

// Attributes of a script host's spans.
const (
	attrFunction = attribute.Key("troupe.script.function")
	attrKind     = attribute.Key("troupe.script.kind")
	attrProgram  = attribute.Key("troupe.script.program")
	attrTool     = attribute.Key("troupe.script.tool")
	attrRetired  = attribute.Key("troupe.script.host_retired")
)

// startSpan starts the span of a load or a call: "script load", or
// "script" and the function called. It holds what was called, never the
// arguments or the answer.
func startSpan(ctx context.Context, req *request) (context.Context, trace.Span) {
	fn := "load"
	if req.Call != nil {
		fn = req.Call.Fn
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(ctx) // not recorded: nothing to set
	}
	attrs := []attribute.KeyValue{attrFunction.String(fn)}
	if req.Prog != nil {
		attrs = append(attrs, attrKind.String(string(req.Prog.Kind)), attrProgram.String(req.Prog.ID))
	}
	if req.Call != nil && req.Call.Tool != "" {
		attrs = append(attrs, attrTool.String(req.Call.Tool))
	}
	return tracer.Start(ctx, "script "+fn, trace.WithAttributes(attrs...))
}

// endSpan ends a load's or a call's span with how it went.
func endSpan(span trace.Span, resp *response) {
	if !span.IsRecording() {
		return
	}
	switch {
	case len(resp.Compile) > 0:
		span.SetStatus(codes.Error, fmt.Sprintf("the script does not compile (%d problems)", len(resp.Compile)))
	case resp.Fail != "":
		span.SetStatus(codes.Error, resp.Fail)
	}
	if resp.Retire {
		span.SetAttributes(attrRetired.Bool(true))
	}
	span.End()
}

func (c *Call) fnName() string {
	if c == nil {
		return "loading"
	}
	return c.Fn
}

// scriptLabel marks the goroutines a script runs on, and those it starts,
// which inherit it.
var scriptLabel = pprof.Labels("troupe", "script")

func handle(progs map[string]*instance, req *request) (resp response) {
	if req.Prog == nil {
		resp.Fail = "request without a program"
		return resp
	}
	pprof.Do(context.Background(), scriptLabel, func(context.Context) {
		if req.Call == nil {
			if _, ok := progs[req.Prog.ID]; ok {
				return
			}
			inst, err := compile(context.Background(), req.Prog, 0)
			if err != nil {
				var ce *CompileError
				if errors.As(err, &ce) {
					resp.Compile = ce.Problems
				} else {
					resp.Fail = err.Error()
				}
				return
			}
			progs[req.Prog.ID] = inst
			return
		}
		inst, ok := progs[req.Prog.ID]
		if !ok {
			resp.Fail = "call of a program that was not loaded"
			return
		}
		rep, err := inst.call(req.Call)
		resp.Reply = rep
		if err != nil {
			resp.Fail = err.Error()
		}
	})
	return resp
}

// settle waits a moment for goroutines a call started to end, and returns
// how many are still running. The process's goroutines beyond base are
// only counted as the script's when they carry its label: the plugin
// protocol's own come and go.
func settle(base int) int {
	for range 5 {
		if runtime.NumGoroutine() <= base || labelled() == 0 {
			return 0
		}
		time.Sleep(2 * time.Millisecond)
	}
	return labelled()
}

// labelled counts the goroutines that carry scriptLabel.
func labelled() int {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return 0
	}
	n, count := 0, 0
	for line := range strings.Lines(buf.String()) {
		if c, _, ok := strings.Cut(line, " @ "); ok {
			count, _ = strconv.Atoi(c)
			continue
		}
		if strings.HasPrefix(line, "# labels: ") && strings.Contains(line, `"troupe":"script"`) {
			n += count
		}
	}
	return n
}

// heapBytes is the memory the heap's objects and the goroutines' stacks
// hold.
func heapBytes() int64 {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(samples)
	return int64(samples[0].Value.Uint64() + samples[1].Value.Uint64())
}

// fatalPrefix marks the line a script host writes before it ends itself.
const fatalPrefix = "script host: "

func fatal(msg string) {
	fmt.Fprintln(stderr, fatalPrefix+msg)
	os.Exit(3)
}
