package agenttypes

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/troupe-dev/troupe/builtin/suggest"
)

// Registry maps names to types and tools. It refuses duplicates and is safe
// for concurrent use.
//
// Types come in three sets. Types registered with RegisterType (the
// builtin set) stay until the registry is dropped. Types and tools that
// plugins offer (SetPlugins) are replaced as a whole when plugins are
// discovered again; a plugin type hides a registered type of the same
// name. Types loaded from definition files (Reload, SetFileTypes) are
// replaced as a whole on each reload, and a file type hides a plugin or
// registered type of the same name. Every *Type the registry hands out is
// immutable, so an agent that holds one keeps running unchanged across
// reloads.
type Registry struct {
	mu      sync.RWMutex
	types   map[string]*Type // registered with RegisterType
	plugins map[string]*Type // offered by plugins; replaced whole, never changed
	files   map[string]*Type // loaded from files; replaced whole, never changed
	broken  map[string]error // names whose highest-precedence file did not load
	held    map[string]Withheld
	tools   map[string]Tool
	ptools  map[string]Tool // offered by plugins; replaced whole
	refused []RefusedPlugin // plugins found and not run; replaced whole

	scripts ScriptCompiler
}

// SetScriptCompiler sets the compiler this registry's definitions with
// scripts are compiled with, by Reload and by the Load functions given
// the registry in LoadOptions. Without one, a definition with a script is
// refused with a diagnostic saying so. A program that runs scripts sets
// it on each registry before loading definitions into it; to load files
// without a registry of types, pass a NewRegistry with only the compiler
// set.
func (r *Registry) SetScriptCompiler(c ScriptCompiler) {
	r.mu.Lock()
	r.scripts = c
	r.mu.Unlock()
}

func (r *Registry) scriptCompiler() ScriptCompiler {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.scripts
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: map[string]*Type{}, plugins: map[string]*Type{}, files: map[string]*Type{}, tools: map[string]Tool{}, ptools: map[string]Tool{}}
}

// SetPlugins replaces the types and tools plugins offer with these, at
// once. Each type is validated and copied; a plugin type hides a
// registered (builtin) type of the same name, which its Shadows then
// lists after the sources it already names, and is hidden by a file type.
// A plugin tool may not take the name of a registered tool. It fails,
// changing nothing, when a type is invalid, two types or two tools share
// a name, or a tool takes a registered tool's name: the caller decides
// between plugins before.
func (r *Registry) SetPlugins(types []Type, tools []Tool) error {
	pt := make(map[string]*Type, len(types))
	for _, t := range types {
		if err := t.Validate(); err != nil {
			return err
		}
		if old, ok := pt[t.Name]; ok {
			return fmt.Errorf("type %q from %s: %w by %s; rename one of them", t.Name, sourceOf(t.Source), ErrDuplicate, sourceOf(old.Source))
		}
		pt[t.Name] = t.clone()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ptools := make(map[string]Tool, len(tools))
	for _, tool := range tools {
		name := tool.Spec().Name
		if !typeName.MatchString(name) {
			return fmt.Errorf("%w: tool name %q: use letters, digits, '.', '_' or '-'", ErrInvalid, name)
		}
		if _, ok := r.tools[name]; ok {
			return fmt.Errorf("plugin tool %q: %w by a builtin tool; rename the plugin's tool", name, ErrDuplicate)
		}
		if _, ok := ptools[name]; ok {
			return fmt.Errorf("plugin tool %q: %w; rename one of them", name, ErrDuplicate)
		}
		ptools[name] = tool
	}
	for name, t := range pt {
		if base, ok := r.types[name]; ok {
			t.Shadows = append(t.Shadows, sourceOf(base.Source))
		}
	}
	r.plugins, r.ptools = pt, ptools
	return nil
}

// RegisterType validates t and adds a copy of it. It fails with
// ErrDuplicate when another registered type has the name. A type loaded
// from a file may have it: the file type hides the registered one, as it
// would had it been registered first (its Shadows, computed by Reload,
// then lists it only after the next Reload).
func (r *Registry) RegisterType(t Type) error {
	if err := t.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.types[t.Name]; ok {
		return fmt.Errorf("type %q from %s: %w by %s; rename one of them", t.Name, sourceOf(t.Source), ErrDuplicate, sourceOf(old.Source))
	}
	r.types[t.Name] = t.clone()
	return nil
}

// SetFileTypes replaces the set of file-loaded types with types, at once:
// a lookup sees either the old set or the new one. Each type is validated
// and copied; a file type hides a registered type of the same name. It
// fails, changing nothing, when a type is invalid or two share a name.
// Reload is the usual way in; this is for callers that load definitions
// themselves.
func (r *Registry) SetFileTypes(types []Type) error {
	return r.setFiles(types, nil, nil)
}

func (r *Registry) setFiles(types []Type, broken map[string]error, held map[string]Withheld) error {
	files := make(map[string]*Type, len(types))
	for _, t := range types {
		if err := t.Validate(); err != nil {
			return err
		}
		if old, ok := files[t.Name]; ok {
			return fmt.Errorf("type %q from %s: %w by %s; rename one of them", t.Name, sourceOf(t.Source), ErrDuplicate, sourceOf(old.Source))
		}
		files[t.Name] = t.clone()
	}
	r.mu.Lock()
	r.files, r.broken, r.held = files, broken, held
	r.mu.Unlock()
	return nil
}

// Reload discovers the definition files src names, resolves them (extends
// may name any registered type, so register the builtin set first) and
// swaps them in as the registry's file types, replacing those of the last
// Reload. Definitions with errors are left out; their names then report
// the error on lookup instead of falling back to a type of lower
// precedence. The returned diagnostics hold every error and warning; agents
// already running keep the types they started with.
func (r *Registry) Reload(src Sources) Diagnostics {
	res := load(r, src)
	if err := r.setFiles(res.types, res.broken, res.withheld); err != nil {
		// load validated every type already; this is a bug, not bad input.
		res.diags = append(res.diags, Diagnostic{Severity: SeverityError, Message: err.Error()})
	}
	return res.diags
}

// RegisterTool adds a tool under the name its Spec gives. It fails with
// ErrDuplicate when the name is taken.
func (r *Registry) RegisterTool(tool Tool) error {
	name := tool.Spec().Name
	if !typeName.MatchString(name) {
		return fmt.Errorf("%w: tool name %q: use letters, digits, '.', '_' or '-'", ErrInvalid, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[name]; ok {
		return fmt.Errorf("tool %q: %w; rename one of them", name, ErrDuplicate)
	}
	if _, ok := r.ptools[name]; ok {
		return fmt.Errorf("tool %q: %w by a plugin; rename one of them", name, ErrDuplicate)
	}
	r.tools[name] = tool
	return nil
}

// Type returns the type registered under name: a file-loaded type before a
// registered one. The value is shared and must not be modified. An unknown
// name fails with ErrUnknownType, saying which name was likely meant (or,
// when there are few, which there are), and, for a name a refused plugin
// offers (SetRefusedPlugins), which plugin and why it was refused; a name
// whose definition file has errors fails with ErrInvalid, naming the file;
// a type the project defines but that is withheld fails with
// ErrUntrusted, saying why.
func (r *Registry) Type(name string) (*Type, error) {
	t, ok, broken := r.find(name)
	if broken != nil {
		return nil, broken
	}
	if !ok {
		r.mu.RLock()
		w, held := r.held[name]
		r.mu.RUnlock()
		if held {
			return nil, w.Error()
		}
		if err := r.refusedLookup(name, false); err != nil {
			return nil, err
		}
		var names []string
		for _, t := range r.Types() {
			names = append(names, t.Name)
		}
		return nil, fmt.Errorf("%w %q%s%s", ErrUnknownType, name, suggest.Hint(name, names, "types"), r.refusedUnknown())
	}
	return t, nil
}

// find looks name up as Type does; broken is the error of a name whose
// definition file did not load.
func (r *Registry) find(name string) (t *Type, ok bool, broken error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok = r.files[name]
	broken = r.broken[name]
	if !ok && broken == nil {
		t, ok = r.plugins[name]
	}
	if !ok && broken == nil {
		t, ok = r.types[name]
	}
	return t, ok && broken == nil, broken
}

// visibleType is Type without the error.
func (r *Registry) visibleType(name string) (*Type, bool) {
	t, ok, _ := r.find(name)
	return t, ok
}

// baseType looks name up among plugin and registered types, not file
// types.
func (r *Registry) baseType(name string) (*Type, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if t, ok := r.plugins[name]; ok {
		return t, ok
	}
	t, ok := r.types[name]
	return t, ok
}

func (r *Registry) hasTool(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.tools[name]
	if !ok {
		_, ok = r.ptools[name]
	}
	return ok
}

// Withheld returns the types the project defines that the last Reload
// held back, since TrustProject refused what they need, sorted by name.
// A withheld type that would have hidden another leaves that one in
// place.
func (r *Registry) Withheld() []Withheld {
	r.mu.RLock()
	out := make([]Withheld, 0, len(r.held))
	for _, w := range r.held {
		out = append(out, w)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Withheld) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Tool returns the tool registered under name.
func (r *Registry) Tool(name string) (Tool, error) {
	r.mu.RLock()
	t, ok := r.tools[name]
	if !ok {
		t, ok = r.ptools[name]
	}
	r.mu.RUnlock()
	if !ok {
		if err := r.refusedLookup(name, true); err != nil {
			return nil, err
		}
		var names []string
		for _, t := range r.Tools() {
			names = append(names, t.Spec().Name)
		}
		return nil, fmt.Errorf("%w %q%s%s", ErrUnknownTool, name, suggest.Hint(name, names, "tools"), r.refusedUnknown())
	}
	return t, nil
}

// Types returns every type a lookup can find, sorted by name: file-loaded
// types, and the plugin and registered types they do not hide.
func (r *Registry) Types() []*Type {
	r.mu.RLock()
	out := make([]*Type, 0, len(r.types)+len(r.plugins)+len(r.files))
	for _, t := range r.files {
		out = append(out, t)
	}
	for name, t := range r.plugins {
		if _, hidden := r.files[name]; !hidden && r.broken[name] == nil {
			out = append(out, t)
		}
	}
	for name, t := range r.types {
		_, byFile := r.files[name]
		_, byPlugin := r.plugins[name]
		if !byFile && !byPlugin && r.broken[name] == nil {
			out = append(out, t)
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Type) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Tools returns every registered and plugin tool, sorted by name.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools)+len(r.ptools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	for _, t := range r.ptools {
		out = append(out, t)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Tool) int { return cmp.Compare(a.Spec().Name, b.Spec().Name) })
	return out
}

func sourceOf(s string) string {
	if s == "" {
		return "an unnamed source"
	}
	return s
}
