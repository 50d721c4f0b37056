package agenttypes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"text/template"
	"text/template/parse"
)

// MaxPromptBytes caps a rendered system prompt. Far above any real prompt;
// it stops a template that expands without bound.
const MaxPromptBytes = 256 << 10

// maxRangeDepth is how deeply ranges may nest in a prompt template. With
// ranges only over the (short) fields of PromptData, two levels bound the
// work a template can do to a few thousand steps.
const maxRangeDepth = 2

// promptFuncs are the template functions a prompt may call: comparisons,
// logic and lookups whose work is bounded by their arguments. print,
// printf and println are left out because a width ("%999999999d") makes
// them build any amount of text in one step, and call because PromptData
// holds no functions.
var promptFuncs = map[string]bool{
	"and": true, "or": true, "not": true, "len": true, "index": true, "slice": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"html": true, "js": true, "urlquery": true,
}

// ErrPromptTemplate is wrapped by the errors of prompts that do not parse,
// use more of text/template than a prompt may, or render too large.
var ErrPromptTemplate = errors.New("bad prompt template")

// Prompt is a type's system prompt, checked and ready to render.
type Prompt struct {
	text string
	tmpl *template.Template // nil when the prompt has no actions
}

// CompilePrompt parses a prompt template and checks that rendering it is
// bounded in time and size. A prompt is a text/template executed with
// PromptData, limited to what a prompt needs: fields ({{.Dir}}), if, with,
// range over a field ({{range .Tools}}) nested at most two deep, and the
// functions and, or, not, len, index, slice, eq, ne, lt, le, gt, ge, html,
// js and urlquery. define, template and block, ranges over numbers or
// function results, and print, printf, println and call are refused.
func CompilePrompt(name, text string) (*Prompt, error) {
	if len(text) > MaxPromptBytes {
		return nil, fmt.Errorf("%w: the prompt is %d bytes; the limit is %d", ErrPromptTemplate, len(text), MaxPromptBytes)
	}
	if !strings.Contains(text, "{{") {
		return &Prompt{text: text}, nil
	}
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrPromptTemplate, strings.TrimPrefix(err.Error(), "template: "))
	}
	if len(t.Templates()) > 1 {
		return nil, fmt.Errorf("%w: define and block are not allowed in a prompt; write the text in place", ErrPromptTemplate)
	}
	if t.Tree != nil && t.Root != nil {
		if err := checkPromptNode(t.Root, 0); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPromptTemplate, err)
		}
	}
	return &Prompt{text: text, tmpl: t}, nil
}

// promptChecker walks a prompt's parse tree knowing, as far as can be told
// without running it, the type of dot and of each variable, so that a
// range is allowed only over a list of PromptData: a range over a number
// ({{$n := 100000000}}{{range $n}}, {{with 9999}}{{range .}}) repeats its
// body that many times whatever it writes.
type promptChecker struct {
	// assigned are the variables given a new value somewhere ({{$x = …}}),
	// maybe inside an if, so their type at a range cannot be told.
	assigned map[string]bool
}

// scope is what the checker knows at a point of the template: dot's type
// (nil: unknown) and the variables'.
type scope struct {
	dot  reflect.Type
	vars map[string]reflect.Type
}

func (s scope) with(dot reflect.Type) scope {
	vars := make(map[string]reflect.Type, len(s.vars))
	maps.Copy(vars, s.vars)
	return scope{dot: dot, vars: vars}
}

var promptDataType = reflect.TypeFor[PromptData]()

func checkPromptNode(n parse.Node, ranges int) error {
	root := scope{dot: promptDataType, vars: map[string]reflect.Type{"$": promptDataType}}
	c := promptChecker{assigned: map[string]bool{}}
	c.findAssigned(n)
	return c.node(n, ranges, root)
}

// findAssigned records every variable an assignment names.
func (c promptChecker) findAssigned(n parse.Node) {
	pipe := func(p *parse.PipeNode) {
		if p != nil && p.IsAssign {
			for _, v := range p.Decl {
				c.assigned[v.Ident[0]] = true
			}
		}
	}
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, x := range n.Nodes {
			c.findAssigned(x)
		}
	case *parse.ActionNode:
		pipe(n.Pipe)
	case *parse.IfNode:
		c.findAssignedBranch(&n.BranchNode, pipe)
	case *parse.WithNode:
		c.findAssignedBranch(&n.BranchNode, pipe)
	case *parse.RangeNode:
		c.findAssignedBranch(&n.BranchNode, pipe)
	}
}

func (c promptChecker) findAssignedBranch(b *parse.BranchNode, pipe func(*parse.PipeNode)) {
	pipe(b.Pipe)
	c.findAssigned(b.List)
	c.findAssigned(b.ElseList)
}

func (c promptChecker) node(n parse.Node, ranges int, sc scope) error {
	switch n := n.(type) {
	case nil:
		return nil
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, x := range n.Nodes {
			if err := c.node(x, ranges, sc); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		if err := checkPromptPipe(n.Pipe); err != nil {
			return err
		}
		c.declare(n.Pipe, sc, sc.vars)
	case *parse.IfNode:
		return c.branch(&n.BranchNode, ranges, sc, false)
	case *parse.WithNode:
		return c.branch(&n.BranchNode, ranges, sc, true)
	case *parse.RangeNode:
		if ranges+1 > maxRangeDepth {
			return fmt.Errorf("line %d: ranges nest at most %d deep in a prompt", n.Line, maxRangeDepth)
		}
		if err := checkPromptPipe(n.Pipe); err != nil {
			return err
		}
		t := c.pipeType(n.Pipe, sc)
		if t == nil || (t.Kind() != reflect.Slice && t.Kind() != reflect.Array && t.Kind() != reflect.Map) {
			return fmt.Errorf("line %d: range only over a field such as .Tools, not over a number or a function's result", n.Line)
		}
		inner := sc.with(t.Elem())
		if d := n.Pipe.Decl; len(d) == 2 {
			inner.vars[d[0].Ident[0]] = nil // the index or key: no list
			inner.vars[d[1].Ident[0]] = t.Elem()
		} else if len(d) == 1 {
			inner.vars[d[0].Ident[0]] = t.Elem()
		}
		if err := c.node(n.List, ranges+1, inner); err != nil {
			return err
		}
		return c.node(n.ElseList, ranges, sc)
	case *parse.TemplateNode:
		return fmt.Errorf("line %d: {{template}} is not allowed in a prompt; write the text in place", n.Line)
	}
	return nil
}

// branch checks an if or a with; inside a with, dot is the pipeline's value.
func (c promptChecker) branch(b *parse.BranchNode, ranges int, sc scope, with bool) error {
	if err := checkPromptPipe(b.Pipe); err != nil {
		return err
	}
	inner := sc.with(sc.dot)
	c.declare(b.Pipe, sc, inner.vars)
	if with {
		inner.dot = c.pipeType(b.Pipe, sc)
	}
	if err := c.node(b.List, ranges, inner); err != nil {
		return err
	}
	return c.node(b.ElseList, ranges, sc)
}

// declare records the variables a pipeline declares ({{$x := …}}) or
// assigns ({{$x = …}}) in vars.
func (c promptChecker) declare(p *parse.PipeNode, sc scope, vars map[string]reflect.Type) {
	if p == nil || len(p.Decl) == 0 {
		return
	}
	t := c.pipeType(p, sc)
	for _, v := range p.Decl {
		vars[v.Ident[0]] = t
	}
}

// pipeType is the type a pipeline yields when it is a reference into the
// prompt's data (.Tools, $.Dir, $x, .) or a constant; nil when that cannot
// be told without running it (a function's result, a chain of commands).
func (c promptChecker) pipeType(p *parse.PipeNode, sc scope) reflect.Type {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return nil
	}
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.DotNode:
		return sc.dot
	case *parse.FieldNode:
		return fieldType(sc.dot, a.Ident)
	case *parse.VariableNode:
		t, ok := sc.vars[a.Ident[0]]
		if !ok || c.assigned[a.Ident[0]] {
			return nil
		}
		return fieldType(t, a.Ident[1:])
	case *parse.NumberNode:
		return reflect.TypeFor[int]()
	case *parse.StringNode:
		return reflect.TypeFor[string]()
	}
	return nil
}

// fieldType follows a chain of field names from t.
func fieldType(t reflect.Type, names []string) reflect.Type {
	for _, name := range names {
		if t == nil || t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := t.FieldByName(name)
		if !ok {
			return nil
		}
		t = f.Type
	}
	return t
}

func checkPromptPipe(p *parse.PipeNode) error {
	if p == nil {
		return nil
	}
	for _, c := range p.Cmds {
		for _, arg := range c.Args {
			switch a := arg.(type) {
			case *parse.IdentifierNode:
				if !promptFuncs[a.Ident] {
					return fmt.Errorf("line %d: %s is not available in a prompt; use fields, if, with, range and the functions and, or, not, len, index, slice, eq, ne, lt, le, gt, ge", p.Line, a.Ident)
				}
			case *parse.PipeNode:
				if err := checkPromptPipe(a); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Render executes the prompt with data. It stops with an error when the
// text passes MaxPromptBytes or ctx ends.
func (p *Prompt) Render(ctx context.Context, data PromptData) (string, error) {
	if p.tmpl == nil {
		return p.text, nil
	}
	w := &promptWriter{ctx: ctx}
	if err := p.tmpl.Execute(w, data); err != nil {
		if w.err != nil {
			return "", w.err
		}
		return "", fmt.Errorf("%w: %s", ErrPromptTemplate, strings.TrimPrefix(err.Error(), "template: "))
	}
	return w.b.String(), nil
}

// promptWriter collects rendered text up to MaxPromptBytes, checking ctx
// on every write so that rendering honours the agent's context.
type promptWriter struct {
	ctx context.Context
	b   strings.Builder
	err error
}

func (w *promptWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		w.err = err
		return 0, err
	}
	if w.b.Len()+len(p) > MaxPromptBytes {
		w.err = fmt.Errorf("%w: the rendered prompt passes %d bytes", ErrPromptTemplate, MaxPromptBytes)
		return 0, w.err
	}
	return w.b.Write(p)
}
