package agenttypes

import (
	"context"
	"errors"
	"fmt"
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

func checkPromptNode(n parse.Node, ranges int) error {
	switch n := n.(type) {
	case nil:
		return nil
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkPromptNode(c, ranges); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return checkPromptPipe(n.Pipe)
	case *parse.IfNode:
		return checkPromptBranch(&n.BranchNode, ranges)
	case *parse.WithNode:
		return checkPromptBranch(&n.BranchNode, ranges)
	case *parse.RangeNode:
		if ranges+1 > maxRangeDepth {
			return fmt.Errorf("line %d: ranges nest at most %d deep in a prompt", n.Line, maxRangeDepth)
		}
		if !rangesOverData(n.Pipe) {
			return fmt.Errorf("line %d: range only over a field such as .Tools, not over a number or a function's result", n.Line)
		}
		return checkPromptBranch(&n.BranchNode, ranges+1)
	case *parse.TemplateNode:
		return fmt.Errorf("line %d: {{template}} is not allowed in a prompt; write the text in place", n.Line)
	}
	return nil
}

func checkPromptBranch(b *parse.BranchNode, ranges int) error {
	if err := checkPromptPipe(b.Pipe); err != nil {
		return err
	}
	if err := checkPromptNode(b.List, ranges); err != nil {
		return err
	}
	return checkPromptNode(b.ElseList, ranges)
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

// rangesOverData accepts a range whose pipeline is one field or variable
// reference: .Tools, $.Tools, $x.
func rangesOverData(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	switch p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode, *parse.VariableNode, *parse.DotNode:
		return true
	}
	return false
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
