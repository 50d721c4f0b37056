package agenttypes

import (
	"fmt"
	"slices"
	"strings"
)

// RefusedPlugin is a plugin that was found but not run: a lock file or
// the user's trust refused it. The registry keeps what it is known to
// offer, so that looking up one of those names says which plugin it
// comes from and why that plugin was refused, rather than that the name
// is unknown.
type RefusedPlugin struct {
	Name string
	// Types and Tools are the names the plugin offered when it last ran,
	// if that is known; nil when it never ran here.
	Types, Tools []string
	// Reason is why it was refused.
	Reason error
}

// SetRefusedPlugins replaces the plugins refused at the last discovery
// (see SetPlugins, which sets what the others offer).
func (r *Registry) SetRefusedPlugins(refused []RefusedPlugin) {
	refused = slices.Clone(refused)
	r.mu.Lock()
	r.refused = refused
	r.mu.Unlock()
}

// refusedError is the lookup of a name a refused plugin offers. It is
// both the lookup's sentinel (ErrUnknownType, ErrUnknownTool) and the
// refusal's reason.
type refusedError struct {
	what, name, plugin string
	sentinel, reason   error
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s %q comes from plugin %s, which was refused: %v", e.what, e.name, e.plugin, e.reason)
}

func (e *refusedError) Unwrap() []error { return []error{e.sentinel, e.reason} }

// refusedLookup is the error for name, of a type (tool false) or a tool,
// when a refused plugin is known to offer it, else nil.
func (r *Registry) refusedLookup(name string, tool bool) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, p := range r.refused {
		names, what, sentinel := p.Types, "type", ErrUnknownType
		if tool {
			names, what, sentinel = p.Tools, "tool", ErrUnknownTool
		}
		if slices.Contains(names, name) {
			return &refusedError{what: what, name: name, plugin: p.Name, sentinel: sentinel, reason: p.Reason}
		}
	}
	return nil
}

// refusedUnknown adds, to the error for a name no plugin is known to
// offer, the refused plugins whose offers are unknown: the name may be
// one of theirs.
func (r *Registry) refusedUnknown() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var unknown []RefusedPlugin
	for _, p := range r.refused {
		if p.Types == nil && p.Tools == nil {
			unknown = append(unknown, p)
		}
	}
	switch len(unknown) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; it may come from plugin %s, which was refused, so what it offers is unknown: %v", unknown[0].Name, unknown[0].Reason)
	}
	names := make([]string, len(unknown))
	for i, p := range unknown {
		names[i] = p.Name
	}
	return fmt.Sprintf("; it may come from plugins %s, which were refused, so what they offer is unknown", strings.Join(names, ", "))
}
