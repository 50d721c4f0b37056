package agenttypes

import (
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/builtin/suggest"
)

// mcpWhere says where servers are declared, for messages.
const mcpWhere = "the project's .mcp.json or .troupe/config.yaml (mcp_servers:), or your own config's mcp_servers"

// applyMCP gives t the MCP servers of d (its mcp_servers, and the servers
// its tools name), keeps the MCP tools of t that a server of t offers,
// and reports the rest where d names them.
func (r *resolver) applyMCP(d *definition, t *Type) {
	if d.has("mcp_servers") {
		t.MCPServers = r.mcpRefs(d)
	}
	if d.has("tools") {
		t.Tools = r.mcpTools(d, t)
	} else if d.has("mcp_servers") {
		// Naming a server without a tools list allows its tools.
		for _, s := range t.MCPServers {
			if !slices.ContainsFunc(t.Tools, func(name string) bool { return mcpToolOf(name, s.Name) }) {
				t.Tools = append(t.Tools, MCPToolPrefix+s.Name+"__"+MCPAllTools)
			}
		}
	}
	r.dropStrayMCPTools(d, t)
	for _, name := range d.disallowed {
		if strings.HasPrefix(name, MCPToolPrefix) && !slices.Contains(t.DisallowedTools, name) {
			t.DisallowedTools = append(t.DisallowedTools, name)
		}
	}
}

// mcpRefs resolves d's mcp_servers: an entry written in place is taken as
// it is, a name is looked up among the declared servers.
func (r *resolver) mcpRefs(d *definition) []MCPServer {
	var out []MCPServer
	for _, ref := range d.mcp {
		if slices.ContainsFunc(out, func(s MCPServer) bool { return s.Name == ref.name }) {
			r.errorf(d, ref.at, "MCP server %q is named twice; keep one", ref.name)
			continue
		}
		if ref.entry != nil {
			s := ref.entry.clone()
			s.Untrusted = r.inlineNeedsTrust(d) && !r.trusts(s.Grant())
			out = append(out, s)
			continue
		}
		s, ok := r.declared(ref.name)
		if !ok {
			r.errorf(d, ref.at, "unknown MCP server %q: declare it in %s, or give its entry here, as in mcp_servers: %s%s",
				ref.name, mcpWhere, mcpExample, suggest.Hint(ref.name, r.mcp.Names(), "declared servers"))
			continue
		}
		out = append(out, s)
	}
	return out
}

// declared is the declared server of that name, marked Untrusted when the
// project declares it and trust refuses it.
func (r *resolver) declared(name string) (MCPServer, bool) {
	s, ok := r.mcp.Lookup(name)
	if ok && r.mcp.fromProject(name) {
		s.Untrusted = !r.trusts(s.Grant())
	}
	return s, ok
}

// inlineNeedsTrust reports whether an entry d writes in place needs trust:
// one of a project's definitions does, as does any of the files
// LoadFiles reads, whose trust its caller decides.
func (r *resolver) inlineNeedsTrust(d *definition) bool {
	return d.project || r.trustScripts != nil
}

func (r *resolver) trusts(g Grant) bool {
	return r.trustMCP != nil && r.trustMCP(g)
}

// mcpTools keeps the MCP tools of d's tools list whose server t has, or
// that a declared server offers (which t then gets, as Claude Code gives
// its agents the servers of the session); the others are reported, an
// error in a troupe file and a warning in a Claude Code file, whose
// servers may live where troupe does not look.
func (r *resolver) mcpTools(d *definition, t *Type) []string {
	out := make([]string, 0, len(t.Tools))
	for _, name := range t.Tools {
		i := slices.Index(d.tools, name)
		if !strings.HasPrefix(name, MCPToolPrefix) || i < 0 {
			out = append(out, name)
			continue
		}
		at := d.toolPos[i]
		server, _, ok := SplitMCPTool(name)
		if !ok {
			r.problem(d, at, "tool %q is not an MCP tool name: write mcp__SERVER__TOOL, or mcp__SERVER__* for every tool of a server", name)
			continue
		}
		if !slices.ContainsFunc(t.MCPServers, func(s MCPServer) bool { return s.Name == server }) {
			s, declared := r.declared(server)
			if !declared {
				r.problem(d, at, "tool %q is a tool of MCP server %q, which is not declared: declare it in %s, or give its entry in this definition's mcp_servers%s",
					name, server, mcpWhere, r.withoutIt(d))
				continue
			}
			t.MCPServers = append(t.MCPServers, s)
		}
		out = append(out, name)
	}
	for _, s := range t.MCPServers {
		if !slices.ContainsFunc(out, func(name string) bool { return mcpToolOf(name, s.Name) }) && slices.ContainsFunc(d.mcp, func(ref mcpRef) bool { return ref.name == s.Name }) {
			r.warnf(d, d.at("tools"), "MCP server %q is named, but tools allows none of its tools: add mcp__%s__* (or the ones it needs) to tools", s.Name, s.Name)
		}
	}
	return out
}

// dropStrayMCPTools drops the MCP tools t has from its parent whose
// server d's mcp_servers no longer names.
func (r *resolver) dropStrayMCPTools(d *definition, t *Type) {
	t.Tools = slices.DeleteFunc(t.Tools, func(name string) bool {
		server, _, ok := SplitMCPTool(name)
		if !ok || slices.ContainsFunc(t.MCPServers, func(s MCPServer) bool { return s.Name == server }) {
			return false
		}
		r.warnf(d, d.at("mcp_servers"), "tool %q of the type this one extends is dropped: mcp_servers does not name %q", name, server)
		return true
	})
}

// withoutIt ends a message about a tool a lenient file loses.
func (r *resolver) withoutIt(d *definition) string {
	if d.strict {
		return ""
	}
	return "; the agent runs without it"
}

func (r *resolver) problem(d *definition, at pos, format string, args ...any) {
	if d.strict {
		r.errorf(d, at, format, args...)
	} else {
		r.warnf(d, at, format, args...)
	}
}

// mcpToolOf reports whether the tool name (or pattern) is one of server's.
func mcpToolOf(name, server string) bool {
	s, _, ok := SplitMCPTool(name)
	return ok && s == server
}

// mcpGrants are the grants of the entries a project definition writes in
// place: programs the repository names.
func mcpGrants(d *definition) []Grant {
	var out []Grant
	for _, ref := range d.mcp {
		if ref.entry != nil {
			out = append(out, ref.entry.Grant())
		}
	}
	return out
}
