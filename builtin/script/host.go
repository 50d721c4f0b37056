package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Options configure a Host. They are the operator's: nothing in a
// definition file changes them.
type Options struct {
	// InProcess lists the types whose scripts run in the host process,
	// for speed. Every other type's scripts run in a script host child
	// process. Use it only for scripts you trust: in process, a script
	// that recurses without end or allocates without bound ends the whole
	// program.
	InProcess []string
	// AllInProcess runs every type's scripts in the host process, with
	// the same warning; programs that cannot start a child use it.
	AllInProcess bool
	// CallTimeout caps one hook or tool call, within the agent's own time
	// budget; 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// Child configures the script host processes.
	Child ChildOptions
	// Logger receives the scripts' troupe.Log lines; nil discards them.
	Logger *slog.Logger
}

// Host compiles definitions' scripts and runs them. It implements
// agenttypes.ScriptCompiler: set it on the registry with
// Registry.SetScriptCompiler before loading definitions, and Close it
// when the program ends.
type Host struct {
	opts   Options
	inproc *InProcess
	child  Runner

	mu     sync.Mutex
	closed bool
}

var _ agenttypes.ScriptCompiler = (*Host)(nil)

// New returns a Host. Script host processes are started when first
// needed.
func New(opts Options) *Host {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	h := &Host{opts: opts, inproc: &InProcess{Timeout: opts.CallTimeout}}
	if !opts.AllInProcess {
		co := opts.Child
		co.Timeout = opts.CallTimeout
		h.child = NewChildRunner(co)
	}
	return h
}

// Close stops every script host process.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	var err error
	if h.child != nil {
		err = h.child.Close()
	}
	return errors.Join(err, h.inproc.Close())
}

func (h *Host) runner(typeName string) Runner {
	if h.child == nil || slices.Contains(h.opts.InProcess, typeName) {
		return h.inproc
	}
	return h.child
}

// Compile checks and compiles a definition's scripts, once. Problems are
// reported at their line in the file the script came from.
func (h *Host) Compile(ctx context.Context, typeName string, s *agenttypes.Scripts) (*agenttypes.Hooks, agenttypes.Diagnostics) {
	r := h.runner(typeName)
	var diags agenttypes.Diagnostics
	hooks := &agenttypes.Hooks{}
	if s.Hooks != nil {
		p, ds := h.load(ctx, r, KindHooks, s.Hooks)
		diags = append(diags, ds...)
		if p != nil {
			h.bindHooks(typeName, r, p, s.Hooks, hooks)
		}
	}
	for _, st := range s.Tools {
		p, ds := h.load(ctx, r, KindTool, &st.Script)
		diags = append(diags, ds...)
		if p != nil {
			hooks.Tools = append(hooks.Tools, &scriptTool{h: h, typeName: typeName, r: r, p: p,
				spec: agenttypes.ToolSpec{Name: st.Name, Description: st.Description, Parameters: st.Parameters, ReadOnly: true}})
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return hooks, diags
}

func (h *Host) load(ctx context.Context, r Runner, kind Kind, s *agenttypes.Script) (*Program, agenttypes.Diagnostics) {
	diag := func(line, col int, msg string) agenttypes.Diagnostic {
		l, c := s.Pos(line, col)
		return agenttypes.Diagnostic{File: s.File, Line: l, Col: c, Severity: agenttypes.SeverityError, Message: msg}
	}
	// The static check is cheap and runs nothing; what it refuses never
	// reaches an interpreter.
	if _, problems := check(s.Source, kind); len(problems) > 0 {
		var ds agenttypes.Diagnostics
		for _, pr := range problems {
			ds = append(ds, diag(pr.Line, pr.Col, pr.Msg))
		}
		return nil, ds
	}
	p := newProgram(kind, s.Source)
	err := r.Load(ctx, p)
	var ce *CompileError
	switch {
	case err == nil:
		return p, nil
	case errors.As(err, &ce):
		var ds agenttypes.Diagnostics
		for _, pr := range ce.Problems {
			ds = append(ds, diag(pr.Line, pr.Col, pr.Msg))
		}
		return nil, ds
	default:
		return nil, agenttypes.Diagnostics{diag(0, 0, "the script failed while it was loaded: "+err.Error())}
	}
}

// call runs one function and hands its notes and log lines to the agent.
func (h *Host) call(ctx context.Context, typeName string, r Runner, p *Program, c *Call) (Reply, error) {
	env := agenttypes.EnvFrom(ctx)
	c.Root = env.Dir
	if env.Workspace != nil {
		c.Top = env.Workspace.Top()
	}
	rep, err := r.Call(ctx, p, c)
	for _, n := range rep.Notes {
		env.Note(n)
	}
	if h.opts.Logger != nil {
		for _, l := range rep.Logs {
			h.opts.Logger.Info("script", "type", typeName, "fn", c.Fn, "agent", env.AgentID, "msg", l)
		}
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, agenttypes.ErrScript) {
		err = fmt.Errorf("%w: %w", agenttypes.ErrScript, err)
	}
	return rep, err
}

func (h *Host) bindHooks(typeName string, r Runner, p *Program, s *agenttypes.Script, hooks *agenttypes.Hooks) {
	c, _ := check(s.Source, KindHooks)
	if _, ok := c.has["Prompt"]; ok {
		hooks.Prompt = func(ctx context.Context, t agenttypes.ScriptTask) (string, error) {
			rep, err := h.call(ctx, typeName, r, p, &Call{Fn: "Prompt", Task: &Task{Prompt: t.Prompt, Type: t.Type, Root: t.Root}})
			if err != nil {
				return "", err
			}
			if rep.Err != "" {
				return "", errors.New(rep.Err)
			}
			return rep.Text, nil
		}
	}
	if _, ok := c.has["Result"]; ok {
		hooks.Result = func(ctx context.Context, output string) (any, error) {
			rep, err := h.call(ctx, typeName, r, p, &Call{Fn: "Result", Output: output})
			if err != nil {
				return nil, err
			}
			if rep.Err != "" {
				return nil, errors.New(rep.Err)
			}
			var v any
			if len(rep.Data) > 0 {
				if err := json.Unmarshal(rep.Data, &v); err != nil {
					return nil, fmt.Errorf("%w: Result: %v", agenttypes.ErrScript, err)
				}
			}
			return v, nil
		}
	}
	if _, ok := c.has["BeforeTool"]; ok {
		hooks.BeforeTool = func(ctx context.Context, name string, args json.RawMessage) error {
			if !json.Valid(args) {
				args = nil // the hook sees no arguments; the tool refuses them itself
			}
			rep, err := h.call(ctx, typeName, r, p, &Call{Fn: "BeforeTool", Tool: name, Args: args})
			if err != nil {
				return err
			}
			if rep.Err != "" {
				return errors.New(rep.Err)
			}
			return nil
		}
	}
}

// scriptTool is a script_tools entry: its Run function as a Tool.
type scriptTool struct {
	h        *Host
	typeName string
	r        Runner
	p        *Program
	spec     agenttypes.ToolSpec
}

func (t *scriptTool) Spec() agenttypes.ToolSpec { return t.spec }

// Call checks the arguments against the tool's declared parameters before
// the script sees them, so a script's Run may trust their shape. They
// cross as the model sent them, and are decoded where the script runs.
func (t *scriptTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if err := agenttypes.ValidateArgs(ctx, t.spec.Parameters, args); err != nil {
		return "", err
	}
	rep, err := t.h.call(ctx, t.typeName, t.r, t.p, &Call{Fn: "Run", Args: args})
	if err != nil {
		return "", err
	}
	if rep.Err != "" {
		return rep.Text, errors.New(rep.Err)
	}
	return rep.Text, nil
}
