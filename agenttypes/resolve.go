package agenttypes

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/builtin/suggest"
)

// resolver builds Types from definitions, following extends through the
// definitions it holds and then through base.
type resolver struct {
	defs      map[string]*definition
	base      func(name string) (*Type, bool)
	tools     func(name string) bool
	names     func() []string // every type name, for suggestions
	toolNames func() []string // every available tool name

	broken  map[string]string // names that must not resolve → the file at fault
	scripts ScriptCompiler    // nil: a definition with a script is refused
	// withheld are the types held back until the project is trusted; a
	// definition that extends one is withheld with it.
	withheld map[string]Withheld
	// trustScripts decides, for files loaded on their own (LoadFiles),
	// whose scripts are compiled; the others are checked without running
	// them, and withheld. Nil for a Reload, whose project definitions
	// were decided on before (definition.trusted).
	trustScripts func(Grant) bool
	// projectRun is the project's run policy: the commands of a type
	// that lists run and names none of its own. Nil: the project gives
	// none, or is not trusted.
	projectRun *RunPolicy
	// mcp are the declared MCP servers a definition may name; trustMCP
	// decides whether those a project names may run (nil: none may).
	mcp      *MCPDeclarations
	trustMCP func(Grant) bool

	diags  Diagnostics
	done   map[string]*Type
	failed map[string]bool
	stack  []string
}

func newResolver(defs map[string]*definition, reg *Registry, baseOnly bool) *resolver {
	r := &resolver{defs: defs, done: map[string]*Type{}, failed: map[string]bool{}, withheld: map[string]Withheld{}}
	r.base = func(string) (*Type, bool) { return nil, false }
	r.tools = func(name string) bool { return slices.Contains(DefaultTools, name) }
	r.names = func() []string { return slices.Collect(maps.Keys(defs)) }
	r.toolNames = func() []string { return slices.Sorted(slices.Values(DefaultTools)) }
	if reg != nil {
		r.scripts = reg.scriptCompiler()
		lookup := reg.visibleType
		if baseOnly {
			lookup = reg.baseType
		}
		r.base = lookup
		r.tools = func(name string) bool { return reg.hasTool(name) || slices.Contains(DefaultTools, name) }
		r.toolNames = func() []string {
			out := slices.Clone(DefaultTools)
			for _, t := range reg.Tools() {
				if name := t.Spec().Name; !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
			slices.Sort(out)
			return out
		}
		r.names = func() []string {
			out := slices.Collect(maps.Keys(defs))
			for _, t := range reg.Types() {
				out = append(out, t.Name)
			}
			return out
		}
	}
	return r
}

func (r *resolver) errorf(d *definition, at pos, format string, args ...any) {
	r.diags = append(r.diags, Diagnostic{File: d.path, Line: at.line, Col: at.col, Severity: SeverityError, Message: fmt.Sprintf(format, args...)})
}

func (r *resolver) warnf(d *definition, at pos, format string, args ...any) {
	r.diags = append(r.diags, Diagnostic{File: d.path, Line: at.line, Col: at.col, Severity: SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

// all resolves every definition, in name order.
func (r *resolver) all() []Type {
	var out []Type
	for _, name := range slices.Sorted(maps.Keys(r.defs)) {
		if t, ok := r.resolve(name); ok {
			out = append(out, *t)
		}
	}
	return out
}

func (r *resolver) resolve(name string) (*Type, bool) {
	if t, ok := r.done[name]; ok {
		return t, true
	}
	if r.failed[name] {
		return nil, false
	}
	d := r.defs[name]
	var parent *Type
	if d.extends != "" {
		var ok bool
		if parent, ok = r.parent(d); !ok {
			r.failed[name] = true
			return nil, false
		}
	}
	t, ok := r.build(d, parent)
	if !ok || d.failed {
		r.failed[name] = true
		return nil, false
	}
	r.done[name] = t
	return t, true
}

// parent finds the type d extends, reporting self-extension, cycles and
// unknown names.
func (r *resolver) parent(d *definition) (*Type, bool) {
	at := d.at("extends")
	if d.extends == d.name {
		// A definition may extend the type it shadows: "explore, with my
		// prompt" starts from the explore below it.
		if t, ok := r.base(d.name); ok && t.Source != d.path {
			return t, true
		}
		r.errorf(d, at, "type %q extends itself and there is no lower %q to start from; extend another type (such as explore), or remove extends", d.name, d.name)
		return nil, false
	}
	if pd, ok := r.defs[d.extends]; ok {
		if i := slices.Index(r.stack, pd.name); i >= 0 {
			members := append(slices.Clone(r.stack[i:]), d.name)
			cycle := strings.Join(append(slices.Clone(members), pd.name), " → ")
			for _, n := range members {
				r.failed[n] = true
				cd := r.defs[n]
				r.errorf(cd, cd.at("extends"), "extends cycle: %s; remove extends from one of them", cycle)
			}
			return nil, false
		}
		r.stack = append(r.stack, d.name)
		pt, ok := r.resolve(pd.name)
		r.stack = r.stack[:len(r.stack)-1]
		if w, held := r.withheld[pd.name]; !ok && held {
			r.withholdChild(d, w)
			return nil, false
		}
		if !ok {
			if !r.failed[d.name] { // not already reported as part of a cycle
				r.errorf(d, at, "extends %q, which has errors (see %s)", d.extends, pd.path)
			}
			return nil, false
		}
		return pt, true
	}
	if where, ok := r.broken[d.extends]; ok {
		r.errorf(d, at, "extends %q, which has errors (see %s)", d.extends, where)
		return nil, false
	}
	// A withheld name falls to the type below it, for extends as for a
	// lookup; with nothing below, what extends it waits with it.
	if t, ok := r.base(d.extends); ok {
		return t, true
	}
	if w, ok := r.withheld[d.extends]; ok {
		r.withholdChild(d, w)
		return nil, false
	}
	names := slices.DeleteFunc(r.names(), func(n string) bool { return n == d.name })
	r.errorf(d, at, "extends unknown type %q%s", d.extends, suggest.Hint(d.extends, names, "types"))
	return nil, false
}

// withholdChild withholds d, which extends the withheld type w: trusting
// what w needs loads both.
func (r *resolver) withholdChild(d *definition, w Withheld) {
	r.withheld[d.name] = Withheld{Name: d.name, Source: d.path, Extends: w.Name, Grants: slices.Clone(w.Grants)}
}

// build makes the Type of d, starting from parent when it has one.
func (r *resolver) build(d *definition, parent *Type) (*Type, bool) {
	before := len(r.diags)
	var t Type
	if parent != nil {
		t = *parent.clone()
		t.Extends = parent.Name
		t.Shadows = nil
	} else {
		t.Tools = slices.Clone(DefaultTools)
		t.NeedsLanguageModel = true
	}
	t.Name, t.Source = d.name, d.path
	if d.has("description") {
		t.Description = d.description
	}
	if d.has("prompt") {
		t.Prompt = d.prompt
	}
	if d.has("model") {
		t.Model = d.model
	}
	t.Budget = d.budget.Merge(t.Budget)
	if d.has("inherit_context") {
		t.InheritContext = d.inherit
	}
	if d.has("needs_language_model") {
		t.NeedsLanguageModel = d.needsLM
	}
	if d.has("output") {
		t.Output = Output{Format: d.output.Format, Schema: d.output.Schema}
		t.ParseOutput = nil // the parent's parser reads the parent's format
	}
	if d.has("examples") {
		t.Examples = slices.Clone(d.examples)
	}
	if d.has("tools") {
		t.Tools = r.available(d)
	}
	t.Tools = slices.DeleteFunc(t.Tools, func(name string) bool {
		return slices.ContainsFunc(d.disallowed, func(p string) bool { return MatchTool(p, name) })
	})
	r.applyMCP(d, &t)
	if withheld := r.compileScripts(d, &t); withheld {
		return nil, false
	}
	r.applyWorkspace(d, &t)
	switch {
	case t.Description != "":
	case !d.has("description"):
		r.errorf(d, d.at("description"), "no description: add description: saying in a sentence what the type is for (a parent model reads it to choose a type)")
	case !d.failed: // when parsing failed, it said what is wrong with it
		r.errorf(d, d.at("description"), "the description is empty: say in a sentence what the type is for (a parent model reads it to choose a type)")
	}
	// Parsing has reported what makes a failed definition invalid; this
	// catches anything else, so that no invalid type gets through.
	if err := t.Validate(); err != nil && len(r.diags) == before && !d.failed {
		r.errorf(d, d.at("name"), "%v", err)
	}
	for _, dg := range r.diags[before:] {
		if dg.Severity == SeverityError {
			return nil, false
		}
	}
	return &t, true
}

// available keeps the tools of d that exist, reporting the others.
func (r *resolver) available(d *definition) []string {
	out := []string{}
	for i, name := range d.tools {
		at := d.toolPos[i]
		switch {
		case slices.ContainsFunc(d.scriptTools, func(st ScriptTool) bool { return st.Name == name }):
			// added with the type's script tools
		case r.tools(name), strings.HasPrefix(name, MCPToolPrefix):
			out = append(out, name) // an MCP tool is settled with the type's servers
		case d.bash != nil && name == "run" && at == d.bash.at:
			r.warnf(d, at, "tool \"Bash\" is troupe's run tool, which is not available here; the agent runs without it")
		case slices.Contains(optionalTools, name):
			r.warnf(d, at, "tool %q is not offered here; the agent runs without it", name)
		default:
			hint := ""
			if near := suggest.Nearest(name, KnownToolNames()); near != "" {
				hint = fmt.Sprintf("; did you mean %q?", near)
			}
			if d.strict {
				r.errorf(d, at, "unknown tool %q%s (the tools there are: %s)", name, hint, strings.Join(r.toolNames(), ", "))
			} else {
				r.warnf(d, at, "unknown tool %q%s; the agent runs without it", name, hint)
			}
		}
	}
	return out
}

// compileScripts checks and compiles d's scripts into t.Hooks, reporting
// their problems at their place in the definition or script file. A type
// that extends another keeps the parent's hooks (Prompt, Result,
// BeforeTool) unless it has a script: or script_file: of its own, and the
// parent's script tools unless it has script_tools of its own; each of
// the two is inherited on its own. It reports whether d was withheld
// rather than compiled.
func (r *resolver) compileScripts(d *definition, t *Type) (withheld bool) {
	if d.hooks == nil && len(d.scriptTools) == 0 {
		return false
	}
	for i, st := range d.scriptTools {
		if r.tools(st.Name) {
			r.errorf(d, d.toolAt[i], "script tool %q has the name of a tool troupe already has; give it another name", st.Name)
			return false
		}
	}
	scripts := &Scripts{Hooks: d.hooks, Tools: d.scriptTools}
	grant := Grant{Kind: GrantScripts, Type: d.name, File: d.path, Digest: scriptsDigest(d), Detail: scriptsDetail(d)}
	untrusted := d.project && !d.trusted
	if r.trustScripts != nil {
		untrusted = !r.trustScripts(grant)
	}
	if untrusted {
		// Compiling runs a script's top-level declarations: only a check
		// that runs nothing is allowed here.
		if c, ok := r.scripts.(ScriptChecker); ok {
			ds := c.Check(d.name, scripts)
			r.diags = append(r.diags, ds...)
			if ds.HasErrors() {
				return false
			}
		}
		r.withheld[d.name] = Withheld{Name: d.name, Source: d.path, Grants: []Grant{grant}}
		r.warnf(d, d.at("name"), "the scripts were checked but not compiled, which would run them: this definition is not trusted")
		return true
	}
	if r.scripts == nil {
		at := d.at("script")
		if !d.has("script") {
			at = d.at("script_file")
		}
		if !d.has("script") && !d.has("script_file") {
			at = d.at("script_tools")
		}
		r.errorf(d, at, "%v", errNoCompiler)
		return false
	}
	hooks, diags := r.scripts.Compile(context.Background(), d.name, scripts)
	r.diags = append(r.diags, diags...)
	if diags.HasErrors() || hooks == nil {
		return false
	}
	if parent := t.Hooks; parent != nil {
		if d.hooks == nil {
			hooks.Prompt, hooks.Result, hooks.BeforeTool = parent.Prompt, parent.Result, parent.BeforeTool
			if t.Scripts != nil {
				scripts.Hooks = t.Scripts.Hooks
			}
		}
		if len(d.scriptTools) == 0 {
			hooks.Tools = slices.Clone(parent.Tools)
			if t.Scripts != nil {
				scripts.Tools = t.Scripts.Tools
			}
		} else {
			// The parent's script tools are gone with them.
			t.Tools = slices.DeleteFunc(t.Tools, func(name string) bool {
				_, had := parent.Tool(name)
				_, has := hooks.Tool(name)
				return had && !has
			})
		}
	}
	t.Scripts = scripts
	t.Hooks = hooks
	for _, st := range d.scriptTools {
		if !slices.Contains(t.Tools, st.Name) {
			t.Tools = append(t.Tools, st.Name)
		}
	}
	return false
}
