package agenttypes

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
)

// Registry maps names to types and tools. It refuses duplicates and is safe
// for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	types map[string]*Type
	tools map[string]Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: map[string]*Type{}, tools: map[string]Tool{}}
}

// RegisterType validates t and adds a copy of it. It fails with
// ErrDuplicate when the name is taken.
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
	r.tools[name] = tool
	return nil
}

// Type returns the type registered under name. The value is shared and
// must not be modified.
func (r *Registry) Type(name string) (*Type, error) {
	r.mu.RLock()
	t, ok := r.types[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q; run 'troupe types list' to see the types there are", ErrUnknownType, name)
	}
	return t, nil
}

// Tool returns the tool registered under name.
func (r *Registry) Tool(name string) (Tool, error) {
	r.mu.RLock()
	t, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q; run 'troupe tools list' to see the tools there are", ErrUnknownTool, name)
	}
	return t, nil
}

// Types returns every registered type, sorted by name.
func (r *Registry) Types() []*Type {
	r.mu.RLock()
	out := make([]*Type, 0, len(r.types))
	for _, t := range r.types {
		out = append(out, t)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Type) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Tools returns every registered tool, sorted by name.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools))
	for _, t := range r.tools {
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
