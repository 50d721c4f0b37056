package script

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Program is one script as a runner receives it.
type Program struct {
	// ID names the program by its kind and source.
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Source string `json:"source"`
}

func newProgram(kind Kind, src string) *Program {
	sum := sha256.Sum256([]byte(string(kind) + "\x00" + src))
	return &Program{ID: hex.EncodeToString(sum[:12]), Kind: kind, Source: src}
}

// Call is one call of a hook or tool.
type Call struct {
	// Fn is Prompt, Result, BeforeTool or Run.
	Fn   string `json:"fn"`
	Root string `json:"root,omitempty"`
	// Top is the top of the agent's workspace, when it has one: Root is
	// then opened from it, so that a directory below it that a command
	// replaced is not followed.
	Top    string `json:"top,omitempty"`
	Task   *Task  `json:"task,omitempty"`
	Output string `json:"output,omitempty"`
	// Tool names the tool call a BeforeTool hook is asked about.
	Tool string `json:"tool,omitempty"`
	// Args are the arguments of that tool call, or of a Run call, as the
	// model sent them: they are decoded once, where the script runs.
	Args json.RawMessage `json:"args,omitempty"`
}

// Reply is what a call gave back.
type Reply struct {
	// Text is what Prompt or Run returned.
	Text string `json:"text,omitempty"`
	// Data is what Result returned, as JSON.
	Data json.RawMessage `json:"data,omitempty"`
	// Err is the error the hook returned, "" for none: the script's own
	// answer, not a failure.
	Err   string   `json:"err,omitempty"`
	Notes []string `json:"notes,omitempty"`
	Logs  []string `json:"logs,omitempty"`
}

// CompileError is a script that does not compile: each problem at a line
// and column of its source.
type CompileError struct {
	Problems []srcError
}

func (e *CompileError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Error()
	}
	return strings.Join(parts, "; ")
}

// instance is one interpreter holding one compiled program. It serves one
// call at a time.
type instance struct {
	prog  *Program
	i     *interp.Interpreter
	state *callState
	fns   map[string]reflect.Value
	// release lets the stopper's import fail once a stop is done.
	release chan struct{}
	stopped bool
	// blocks is the static check's: the program may wait in a channel
	// operation, which a stop does not end.
	blocks bool
	// watch bounds a call made on the caller's goroutine.
	watch watch
}

// stopperPath lets the host stop an interpreter's running code:
// evaluating an import of it under a context that is already cancelled
// makes yaegi stop every frame of the interpreter. The import blocks in
// the interpreter's file system (stopFS) until the stop is done and then
// fails, so the evaluation never gets as far as running anything that
// could race the code being stopped. Scripts cannot import it: the static
// check refuses every import outside Allowed.
const stopperPath = "troupe.internal/stop"

// stopFS is an interpreter's source file system: empty, but for the
// stopper's path, whose lookups wait for release.
type stopFS struct {
	release chan struct{}
}

func (s stopFS) Open(name string) (fs.File, error) {
	if strings.Contains(name, stopperPath) {
		<-s.release
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

var wantTypes = map[string]reflect.Type{
	"Prompt":     reflect.TypeFor[func(Task) (string, error)](),
	"Result":     reflect.TypeFor[func(string) (any, error)](),
	"BeforeTool": reflect.TypeFor[func(ToolCall) error](),
	"Run":        reflect.TypeFor[func(map[string]any) (string, error)](),
}

var yaegiPos = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[^:\s]*:)?(\d+):(\d+): (.*)$`) })

// compile checks and evaluates a program in a fresh interpreter. The
// package's top-level declarations run here, so it must run where a
// script may fail: in the script host, or in process under a limit.
// They are stopped when ctx ends, or limit after they start (0: no
// limit).
func compile(ctx context.Context, p *Program, limit time.Duration) (inst *instance, err error) {
	c, problems := check(p.Source, p.Kind)
	if len(problems) > 0 {
		return nil, &CompileError{Problems: problems}
	}
	st := &callState{}
	release := make(chan struct{})
	i := interp.New(interp.Options{
		GoPath:               "/nonexistent-troupe-script-gopath",
		SourcecodeFilesystem: stopFS{release},
		Stdin:                strings.NewReader(""),
		Stdout:               io.Discard,
		Stderr:               io.Discard,
		Args:                 []string{"script"},
		Env:                  []string{},
	})
	if err := i.Use(allowedSymbols()); err != nil {
		return nil, err
	}
	if err := i.Use(interp.Exports{HostPackage + "/" + HostPackage: hostAPI(st)}); err != nil {
		return nil, err
	}
	inst = &instance{prog: p, i: i, state: st, fns: map[string]reflect.Value{}, release: release, blocks: c.blocks}
	defer func() {
		if r := recover(); r != nil {
			err = &CompileError{Problems: []srcError{{1, 1, interpreterPanic(r)}}}
		}
	}()
	if err := evalCtx(ctx, inst, p.Source, limit); err != nil {
		return nil, compileError(err)
	}
	for name, line := range c.has {
		v, err := i.Eval("hooks." + name)
		if err != nil {
			return nil, &CompileError{Problems: []srcError{{line, 1, err.Error()}}}
		}
		if want := wantTypes[name]; v.Type() != want {
			return nil, &CompileError{Problems: []srcError{{line, 1, fmt.Sprintf("%s has type %s; it must be %s", name, v.Type(), want)}}}
		}
		inst.fns[name] = v
	}
	return inst, nil
}

// evalCtx compiles src, then runs its top-level declarations, stopping
// them when ctx ends or limit after they start. Compiling runs none of
// the script and always ends, so it is not stopped: a stop while the
// interpreter compiles races with the compiler.
func evalCtx(ctx context.Context, inst *instance, src string, limit time.Duration) error {
	prog, err := inst.i.Compile(src)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return topLevelStopped(ctx)
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, limit, errCallTimeout)
		defer cancel()
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- &CompileError{Problems: []srcError{{1, 1, interpreterPanic(r)}}}
			}
		}()
		_, err := inst.i.Execute(prog)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		inst.stop()
		<-done
		return topLevelStopped(ctx)
	}
}

// topLevelStopped says why a script's top-level declarations were
// stopped, or did not start: their time ran out, or ctx was cancelled.
func topLevelStopped(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errCallTimeout) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: the script's top-level declarations ran past their time and were stopped", agenttypes.ErrScript)
	}
	return fmt.Errorf("%w: the script was stopped before its top-level declarations ended: %w", agenttypes.ErrScript, ctx.Err())
}

func interpreterPanic(r any) string {
	msg := fmt.Sprint(r)
	if strings.Contains(msg, "nil type") {
		return "the script interpreter cannot compile this script (" + msg + "); a range over an integer or a function (Go 1.22, 1.23) does this: write a counted for loop"
	}
	return "the script interpreter failed on this script: " + msg
}

func compileError(err error) error {
	var ce *CompileError
	if errors.As(err, &ce) {
		return ce
	}
	if errors.Is(err, agenttypes.ErrScript) {
		return err
	}
	var out []srcError
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if m := yaegiPos().FindStringSubmatch(line); m != nil {
			l, _ := strconv.Atoi(m[1])
			c, _ := strconv.Atoi(m[2])
			out = append(out, srcError{l, c, m[3]})
			continue
		}
		out = append(out, srcError{1, 1, line})
	}
	if len(out) == 0 {
		out = append(out, srcError{1, 1, err.Error()})
	}
	return &CompileError{Problems: out}
}

// stop halts every frame running in the interpreter. The instance is not
// used again.
func (inst *instance) stop() {
	if inst.stopped {
		return
	}
	inst.stopped = true
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = inst.i.EvalWithContext(ctx, `import _ "`+stopperPath+`"`)
	close(inst.release)
}

// call runs one hook or tool function. A panic in the script comes back
// as an error wrapping agenttypes.ErrScript; the hook's own error is the
// Reply's Err.
func (inst *instance) call(c *Call) (r Reply, err error) {
	fn, ok := inst.fns[c.Fn]
	if !ok {
		return r, fmt.Errorf("%w: the script has no %s", agenttypes.ErrScript, c.Fn)
	}
	inst.state.reset(c.Top, c.Root)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s panicked: %v", agenttypes.ErrScript, c.Fn, p)
		}
		r.Notes, r.Logs = inst.state.take()
	}()
	var herr error
	switch c.Fn {
	case "Prompt":
		var t Task
		if c.Task != nil {
			t = *c.Task
		}
		r.Text, herr = fn.Interface().(func(Task) (string, error))(t)
	case "Result":
		var v any
		v, herr = fn.Interface().(func(string) (any, error))(c.Output)
		if herr == nil {
			data, merr := json.Marshal(v)
			if merr != nil {
				return r, fmt.Errorf("%w: Result returned a value that is not JSON: %v", agenttypes.ErrScript, merr)
			}
			r.Data = data
		}
	case "BeforeTool":
		var args map[string]any
		_ = json.Unmarshal(c.Args, &args) // arguments that are not an object come as none
		herr = fn.Interface().(func(ToolCall) error)(ToolCall{Name: c.Tool, Args: args})
	case "Run":
		args := map[string]any{}
		if len(c.Args) > 0 {
			if jerr := json.Unmarshal(c.Args, &args); jerr != nil {
				r.Err = fmt.Sprintf("the arguments are not a JSON object: %v", jerr)
				return r, nil
			}
		}
		r.Text, herr = fn.Interface().(func(map[string]any) (string, error))(args)
	}
	if herr != nil {
		r.Err = herr.Error()
		if r.Err == "" {
			r.Err = "refused"
		}
	}
	if len(r.Text) > maxReplyBytes || len(r.Data) > maxReplyBytes {
		return Reply{}, fmt.Errorf("%w: %s returned more than %d KiB", agenttypes.ErrScript, c.Fn, maxReplyBytes>>10)
	}
	return r, nil
}
