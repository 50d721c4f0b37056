package script

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
)

// ChildEnv is set in the environment of a script host process; its value
// is the memory limit in bytes.
const ChildEnv = "TROUPE_SCRIPT_HOST"

// Limits of a script host process.
const (
	maxStack      = 64 << 20 // a goroutine's stack: unbounded recursion ends here
	maxGoroutines = 1000
)

// ServeIfChild serves scripts on standard input and output and exits,
// when the process was started as a script host (ChildEnv is set), and
// returns at once otherwise. A program that runs scripts out of process
// calls it first thing in main (and a test binary in TestMain), since the
// default script host is the program itself, re-executed.
func ServeIfChild() {
	v, ok := os.LookupEnv(ChildEnv)
	if !ok {
		return
	}
	mem, err := strconv.ParseInt(v, 10, 64)
	if err != nil || mem <= 0 {
		mem = DefaultMemoryLimit
	}
	os.Exit(serve(os.Stdin, os.Stdout, mem))
}

// serve is the script host's loop. It returns the exit status.
func serve(in io.Reader, out io.Writer, mem int64) int {
	setLimits(mem)
	debug.SetMaxStack(maxStack)
	debug.SetMemoryLimit(mem / 2)
	go watchdog(mem)

	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	progs := map[string]*instance{}
	base := runtime.NumGoroutine()
	for {
		var req request
		if err := readFrame(r, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintf(os.Stderr, "script host: bad request: %v\n", err)
			return 2
		}
		resp := handle(progs, &req)
		if used := heapBytes(); used > mem {
			resp.Fail = fmt.Sprintf("the script used more than %d MiB of memory (the limit); the script host was stopped", mem>>20)
			resp.Retire = true
		} else if n := settle(base); n > 0 {
			resp.Fail = fmt.Sprintf("the script left %d goroutines running after %s returned; a script must not leave goroutines behind", n, req.Call.fnName())
			resp.Retire = true
		}
		if err := writeFrame(w, resp); err != nil || w.Flush() != nil {
			return 2
		}
		if resp.Retire {
			return 0
		}
	}
}

func (c *Call) fnName() string {
	if c == nil {
		return "loading"
	}
	return c.Fn
}

func handle(progs map[string]*instance, req *request) (resp response) {
	if req.Prog == nil {
		resp.Fail = "request without a program"
		return resp
	}
	switch req.Op {
	case "load":
		if _, ok := progs[req.Prog.ID]; ok {
			return resp
		}
		inst, err := compile(context.Background(), req.Prog)
		if err != nil {
			var ce *CompileError
			if errors.As(err, &ce) {
				resp.Compile = ce.Problems
			} else {
				resp.Fail = err.Error()
			}
			return resp
		}
		progs[req.Prog.ID] = inst
	case "call":
		inst, ok := progs[req.Prog.ID]
		if !ok || req.Call == nil {
			resp.Fail = "call of a program that was not loaded"
			return resp
		}
		rep, err := inst.call(req.Call)
		resp.Reply = rep
		if err != nil {
			resp.Fail = err.Error()
		}
	default:
		resp.Fail = "unknown request " + strconv.Quote(req.Op)
	}
	return resp
}

// settle waits a moment for goroutines a call started to end, and returns
// how many are still running beyond base.
func settle(base int) int {
	for range 5 {
		n := runtime.NumGoroutine() - base
		if n <= 0 {
			return 0
		}
		time.Sleep(2 * time.Millisecond)
	}
	return max(runtime.NumGoroutine()-base, 0)
}

// heapBytes is the memory the heap's objects and the goroutines' stacks
// hold.
func heapBytes() int64 {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(samples)
	return int64(samples[0].Value.Uint64() + samples[1].Value.Uint64())
}

// watchdog ends the process when the script's heap or goroutines grow
// past their limits, saying so on standard error for the host to report.
func watchdog(mem int64) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	for {
		metrics.Read(samples)
		heap := int64(samples[0].Value.Uint64() + samples[1].Value.Uint64())
		if heap > mem {
			fatal(fmt.Sprintf("the script used more than %d MiB of memory (the limit)", mem>>20))
		}
		if g := samples[2].Value.Uint64(); g > maxGoroutines {
			fatal(fmt.Sprintf("the script started more than %d goroutines (the limit)", maxGoroutines))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// fatalPrefix marks the line a script host writes before it ends itself.
const fatalPrefix = "script host: "

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, fatalPrefix+msg)
	os.Exit(3)
}
