package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcp"
)

// mcpTools gives a run the tools of the MCP servers its types name: a
// pool of the trusted servers, started lazily and stopped with close.
// The tools of the servers the type run names are described now,
// starting a server only when no description of its entry is cached;
// those of other types' servers are registered when a description is
// cached. A type that names a server the project's trust does not cover
// is refused, naming it.
func (a *app) mcpTools(ctx context.Context, reg *agenttypes.Registry, root, typeName string) (close func(), err error) {
	nothing := func() {}
	typ, err := reg.Type(typeName)
	if err != nil {
		return nothing, nil // the spawn says what is wrong with the name
	}
	if untrusted := typ.UntrustedMCPServers(); len(untrusted) > 0 {
		return nothing, usagef("%v; 'troupe trust --repo %s' shows what it would run and records your consent", untrusted[0].UntrustedError(), root)
	}
	servers := runServers(reg)
	if len(servers) == 0 {
		return nothing, nil
	}
	pool, err := mcp.NewPool(mcp.Config{Servers: servers, CacheDir: filepath.Join(a.cacheDir(), "mcp"), Logger: a.logger()})
	if err != nil {
		return nothing, err
	}
	close = func() { _ = pool.Close(context.Background()) }
	own := map[string]bool{}
	for _, s := range typ.MCPServers {
		own[s.Name] = true
	}
	for _, name := range pool.Servers() {
		tools, cached := pool.CachedTools(name)
		if own[name] && !cached {
			if tools, err = pool.Tools(ctx, name); err != nil {
				close()
				return nothing, err
			}
		}
		for _, t := range tools {
			if err := reg.RegisterTool(t); err != nil && !errors.Is(err, agenttypes.ErrDuplicate) {
				close()
				return nothing, fmt.Errorf("MCP server %q: %w", name, err)
			}
		}
	}
	return close, nil
}

// runServers are the trusted MCP servers the registry's types name, each
// once: the first entry of a name wins.
func runServers(reg *agenttypes.Registry) []agenttypes.MCPServer {
	var out []agenttypes.MCPServer
	seen := map[string]bool{}
	for _, t := range reg.Types() {
		for _, s := range t.MCPServers {
			if s.Untrusted || seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			out = append(out, s)
		}
	}
	return out
}

// registerCachedMCP registers the tools of the registry's trusted MCP
// servers whose descriptions are cached, starting none, for commands
// that list tools.
func (a *app) registerCachedMCP(reg *agenttypes.Registry) (close func()) {
	servers := runServers(reg)
	if len(servers) == 0 {
		return func() {}
	}
	pool, err := mcp.NewPool(mcp.Config{Servers: servers, CacheDir: filepath.Join(a.cacheDir(), "mcp"), Logger: a.logger()})
	if err != nil {
		return func() {}
	}
	for _, name := range pool.Servers() {
		tools, _ := pool.CachedTools(name)
		for _, t := range tools {
			_ = reg.RegisterTool(t) // a name taken already keeps its tool
		}
	}
	return func() { _ = pool.Close(context.Background()) }
}

// typeTools are the tools a type may call: its names, with its MCP
// entries (mcp__SERVER__*) standing for the registered tools they cover.
func typeTools(reg *agenttypes.Registry, t *agenttypes.Type) ([]agenttypes.Tool, error) {
	var out []agenttypes.Tool
	for _, name := range t.Tools {
		if _, _, mcpEntry := agenttypes.SplitMCPTool(name); mcpEntry {
			for _, tool := range reg.Tools() {
				if n := tool.Spec().Name; agenttypes.MatchTool(name, n) && t.Allows(n) {
					out = append(out, tool)
				}
			}
			continue
		}
		tool, err := reg.Tool(name)
		if err != nil {
			return nil, err
		}
		out = append(out, tool)
	}
	return out, nil
}
