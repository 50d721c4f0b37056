package main

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcp"
)

// mcpTools gives a run the MCP servers its types name: a pool of the
// trusted ones, started lazily and stopped with close, from which the
// manager describes a server's tools when it spawns an agent whose type
// names it (nil when no type names a server). The run's type is refused
// now when it names a server the project's trust does not cover; a
// child's type is refused at the child's spawn.
func (a *app) mcpTools(reg *agenttypes.Registry, root, typeName string) (tools agenttypes.MCPToolSource, close func(), err error) {
	nothing := func() {}
	typ, err := reg.Type(typeName)
	if err != nil {
		return nil, nothing, nil // the spawn says what is wrong with the name
	}
	if untrusted := typ.UntrustedMCPServers(); len(untrusted) > 0 {
		return nil, nothing, usagef("%v; 'troupe trust --repo %s' shows what it would run and records your consent", untrusted[0].UntrustedError(), root)
	}
	return a.mcpPool(reg)
}

// mcpPool is the pool of the trusted MCP servers the registry's types
// name (nil when no type names a server).
func (a *app) mcpPool(reg *agenttypes.Registry) (tools agenttypes.MCPToolSource, close func(), err error) {
	nothing := func() {}
	if !slices.ContainsFunc(reg.Types(), func(t *agenttypes.Type) bool { return len(t.MCPServers) > 0 }) {
		return nil, nothing, nil
	}
	// A pool even when every server is untrusted: the manager refuses a
	// child that names one, where with no pool it would run the child
	// without the server's tools.
	pool, err := mcp.NewPool(mcp.Config{Servers: runServers(reg), CacheDir: filepath.Join(a.cacheDir(), "mcp"), Logger: a.logger()})
	if err != nil {
		return nil, nothing, err
	}
	return pool, func() { _ = pool.Close(context.Background()) }, nil
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
