package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
)

// The MCP servers of agent types. Before an agent is prepared, the tools
// of each server its type names are described (Config.MCP) and
// registered, so that the type's tool set, built next, covers them: a
// child's type may name a server its parent's does not.

// mcpDescription is one description of a server's tools, shared by the
// spawns that need it while it runs. done is closed once err is set.
type mcpDescription struct {
	done chan struct{}
	err  error
	// abandoned: the spawn that described it ended first (its context
	// did), so the failure is its own and a waiting spawn tries again.
	abandoned bool
}

// describeMCP registers the tools of every MCP server typ names, each
// described at most once per manager: a success is remembered, a failure
// is not, so a later spawn asks again.
func (m *Manager) describeMCP(ctx context.Context, typ *agenttypes.Type) error {
	if m.cfg.MCP == nil {
		return nil
	}
	for _, s := range typ.MCPServers {
		if s.Untrusted {
			return fmt.Errorf("%w to type %q: %w", ErrMCPServer, typ.Name, s.UntrustedError())
		}
		if err := m.describeServer(ctx, s.Name); err != nil {
			// The source's error may name the server and its file
			// already (builtin/mcp's do); say it once.
			where := fmt.Sprintf("MCP server %q", s.Name)
			if s.Source != "" {
				where += fmt.Sprintf(" (declared in %s)", s.Source)
			}
			if strings.Contains(err.Error(), where) {
				return fmt.Errorf("%w to type %q: %w", ErrMCPServer, typ.Name, err)
			}
			return fmt.Errorf("%w to type %q: %s: %w", ErrMCPServer, typ.Name, where, err)
		}
	}
	return nil
}

// describeServer makes sure the named server's tools are registered. Only
// the lookup of the description in progress holds the lock: the spawns
// that arrive while one is described wait for it, never for the lock.
func (m *Manager) describeServer(ctx context.Context, server string) error {
	for {
		m.mcpMu.Lock()
		d, ok := m.mcpDescribed[server]
		if !ok {
			d = &mcpDescription{done: make(chan struct{})}
			m.mcpDescribed[server] = d
			m.mcpMu.Unlock()
			d.err = m.registerMCP(ctx, server)
			if d.err != nil {
				d.abandoned = ctx.Err() != nil
				m.mcpMu.Lock()
				delete(m.mcpDescribed, server)
				m.mcpMu.Unlock()
			}
			close(d.done)
			return d.err
		}
		m.mcpMu.Unlock()
		select {
		case <-d.done:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if d.err == nil || !d.abandoned || ctx.Err() != nil {
			return d.err
		}
	}
}

// registerMCP describes the named server and registers its tools; a name
// already registered keeps its tool.
func (m *Manager) registerMCP(ctx context.Context, server string) error {
	tools, err := m.cfg.MCP.Tools(ctx, server)
	if err != nil {
		return err
	}
	prefix := agenttypes.MCPToolPrefix + server + "__"
	for _, t := range tools {
		name := t.Spec().Name
		if !strings.HasPrefix(name, prefix) {
			return fmt.Errorf("it described a tool named %q, which is not one of its tools (%s...)", name, prefix)
		}
		if err := m.cfg.Registry.RegisterTool(t); err != nil && !errors.Is(err, agenttypes.ErrDuplicate) {
			return fmt.Errorf("its tool %q: %w", name, err)
		}
	}
	return nil
}

// passesDown reports whether a child of a may have the tool named n. A
// child has only tools its parent has, but for one kind: an MCP tool of a
// server a's type does not name (a server given to the child's type
// alone) passes unless a's type disallows it, a's task narrowed a's
// tools, or a's own parent would not pass it down.
func (a *Agent) passesDown(n string) bool {
	if a.tools.byName[n] != nil {
		return true
	}
	server, _, ok := agenttypes.SplitMCPTool(n)
	switch {
	case !ok || a.narrowed:
		return false
	case slices.ContainsFunc(a.typ.MCPServers, func(s agenttypes.MCPServer) bool { return s.Name == server }):
		return false // a's type chose which of its server's tools it has
	case slices.ContainsFunc(a.typ.DisallowedTools, func(p string) bool { return agenttypes.MatchTool(p, n) }):
		return false
	}
	return a.parent == nil || a.parent.passesDown(n)
}
