package agenttypes

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/troupe-dev/troupe/builtin/suggest"
)

// Bounds of MCP server entries, wherever they are written.
const (
	// MaxMCPServers bounds the servers one file declares, or one
	// definition names.
	MaxMCPServers = 32
	// MaxMCPArgs bounds a server's arguments, and its env and headers.
	MaxMCPArgs = 64
	// MaxMCPValue bounds one command, argument, URL, name or value, in
	// bytes.
	MaxMCPValue = 4096
)

var mcpEntryFields = []string{"type", "command", "args", "env", "url", "headers"}

// mcpRef is one item of a definition's mcp_servers: a server's name, or
// an entry written in place (entry set).
type mcpRef struct {
	name  string
	entry *MCPServer
	at    pos
}

// mcpEntries decodes v, a mapping of server names to entries, as
// .mcp.json's mcpServers and a config's mcp_servers are written. field
// names v in messages; lenient entries warn about keys they do not know
// (Claude Code's file may carry more) where strict ones refuse them.
func (dc *decoder) mcpEntries(field string, v *yaml.Node, lenient bool, source string) []mcpRef {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		dc.errorf(v, "%s is a mapping of server names to entries, such as %s", field, mcpExample)
		return nil
	}
	var out []mcpRef
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := deref(v.Content[i]), deref(v.Content[i+1])
		if len(out) == MaxMCPServers {
			dc.errorf(k, "%s declares more than %d servers; keep it to %d", field, MaxMCPServers, MaxMCPServers)
			break
		}
		if s, ok := dc.mcpEntry(field, k, val, lenient); ok {
			s.Source = source
			out = append(out, mcpRef{name: s.Name, entry: &s, at: dc.pos(k)})
		}
	}
	return out
}

const mcpExample = `{fs: {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", "."]}}`

// mcpEntry decodes the entry v of the server named k: {command, args,
// env} for a stdio server, {type: http, url, headers} for an HTTP one.
func (dc *decoder) mcpEntry(field string, k, v *yaml.Node, lenient bool) (MCPServer, bool) {
	s := MCPServer{Name: k.Value}
	if k.Kind != yaml.ScalarNode || !mcpServerName.MatchString(s.Name) || strings.Contains(s.Name, "__") {
		dc.errorf(k, "%s: server name %q: use 1 to 32 letters, digits, '-' or '_' (no \"__\"), starting with a letter or digit", field, k.Value)
		return s, false
	}
	where := field + "." + s.Name
	if v.Kind != yaml.MappingNode {
		dc.errorf(v, "%s is an entry, such as {command: npx, args: [...]} or {type: http, url: \"http://127.0.0.1:3000/mcp\"}", where)
		return s, false
	}
	before := len(dc.sink.diags)
	for i := 0; i+1 < len(v.Content); i += 2 {
		fk, fv := deref(v.Content[i]), deref(v.Content[i+1])
		dc.mcpField(&s, where, fk, fv, lenient)
	}
	if hasErrorsSince(dc.sink.diags, before) {
		return s, false
	}
	if s.Type == "sse" {
		dc.errorf(v, "%s: type sse (the old HTTP+SSE transport) is not supported; troupe speaks streamable HTTP: write type: http with the server's streamable HTTP URL", where)
		return s, false
	}
	if err := s.Validate(); err != nil {
		dc.errorf(v, "%s: %s", where, strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
		return s, false
	}
	return s, true
}

// mcpField decodes one field of an entry into s.
func (dc *decoder) mcpField(s *MCPServer, where string, k, v *yaml.Node, lenient bool) {
	switch k.Value {
	case "type":
		s.Type, _ = dc.mcpString(where+".type", v)
		s.Type = strings.ToLower(strings.TrimSpace(s.Type))
		if s.Type == "streamable-http" || s.Type == "streamable_http" {
			s.Type = MCPHTTP
		}
	case "command":
		s.Command, _ = dc.mcpString(where+".command", v)
	case "url":
		s.URL, _ = dc.mcpString(where+".url", v)
	case "args":
		s.Args = dc.mcpArgs(where+".args", v)
	case "env":
		s.Env = dc.mcpMap(where+".env", v)
	case "headers":
		s.Headers = dc.mcpMap(where+".headers", v)
	default:
		hint := "; the fields are " + strings.Join(mcpEntryFields, ", ")
		if near := suggest.Nearest(k.Value, mcpEntryFields); near != "" {
			hint = fmt.Sprintf("; did you mean %q?", near)
		}
		if lenient {
			dc.warnf(k, "%s: troupe does not know the field %q, and ignores it%s", where, k.Value, hint)
			return
		}
		dc.errorf(k, "%s: unknown field %q%s", where, k.Value, hint)
	}
}

// mcpString reads a string of at most MaxMCPValue bytes; numbers and
// booleans read as written.
func (dc *decoder) mcpString(where string, v *yaml.Node) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		dc.errorf(v, "%s is a single value, not a %s", where, kindName(v))
		return "", false
	}
	if len(v.Value) > MaxMCPValue {
		dc.errorf(v, "%s is %d bytes long; keep it to %d", where, len(v.Value), MaxMCPValue)
		return "", false
	}
	return v.Value, true
}

func (dc *decoder) mcpArgs(where string, v *yaml.Node) []string {
	if v.Kind != yaml.SequenceNode {
		dc.errorf(v, "%s is a list of arguments, such as [-y, \"@modelcontextprotocol/server-filesystem\", \".\"]", where)
		return nil
	}
	if len(v.Content) > MaxMCPArgs {
		dc.errorf(v, "%s has %d items; keep it to %d", where, len(v.Content), MaxMCPArgs)
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for _, item := range v.Content {
		if s, ok := dc.mcpString(where+" item", deref(item)); ok {
			out = append(out, s)
		}
	}
	return out
}

func (dc *decoder) mcpMap(where string, v *yaml.Node) map[string]string {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		dc.errorf(v, "%s is a mapping of names to values, such as {LOG_LEVEL: debug, TOKEN: \"${MY_TOKEN}\"}", where)
		return nil
	}
	if len(v.Content)/2 > MaxMCPArgs {
		dc.errorf(v, "%s has %d entries; keep it to %d", where, len(v.Content)/2, MaxMCPArgs)
		return nil
	}
	out := make(map[string]string, len(v.Content)/2)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k := deref(v.Content[i])
		name, ok := dc.mcpString(where+" name", k)
		if !ok {
			continue
		}
		if _, dup := out[name]; dup {
			dc.errorf(k, "%s: %q is given twice; keep one", where, name)
			continue
		}
		if val, ok := dc.mcpString(where+"."+name, deref(v.Content[i+1])); ok {
			out[name] = val
		}
	}
	return out
}

// mcpServers decodes a definition's mcp_servers (Claude Code's
// mcpServers): a list whose items are server names or {NAME: entry}
// mappings, a comma-separated string of names, or a mapping of names to
// entries (null for a declared server).
func (dc *decoder) mcpServers(k, v *yaml.Node) {
	d := dc.def
	var refs []mcpRef
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			delete(d.given, "mcp_servers")
			return
		}
		for _, name := range splitTools(v.Value) {
			refs = append(refs, mcpRef{name: name, at: dc.pos(v)})
		}
	case yaml.SequenceNode:
		for _, item := range v.Content {
			refs = append(refs, dc.mcpItem(k.Value, deref(item))...)
		}
	case yaml.MappingNode:
		refs = dc.mcpNamedEntries(k.Value, v)
	default:
		dc.errorf(v, "%s lists servers by name, such as [fs, github], or gives entries, such as %s", k.Value, mcpExample)
		return
	}
	if len(refs) > MaxMCPServers {
		dc.errorf(v, "%s names %d servers; keep it to %d", k.Value, len(refs), MaxMCPServers)
		return
	}
	d.mcp = refs
}

// mcpItem decodes one item of an mcp_servers list.
func (dc *decoder) mcpItem(field string, item *yaml.Node) []mcpRef {
	switch {
	case item.Kind == yaml.ScalarNode && item.Tag != "!!null" && strings.TrimSpace(item.Value) != "":
		return []mcpRef{{name: strings.TrimSpace(item.Value), at: dc.pos(item)}}
	case item.Kind == yaml.MappingNode:
		return dc.mcpNamedEntries(field, item)
	}
	dc.errorf(item, "%s: each item is a server's name, such as fs, or an entry, such as %s", field, mcpExample)
	return nil
}

// mcpNamedEntries decodes a mapping of names to entries, where a null
// entry stands for the declared server of that name.
func (dc *decoder) mcpNamedEntries(field string, v *yaml.Node) []mcpRef {
	var refs []mcpRef
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := deref(v.Content[i]), deref(v.Content[i+1])
		if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
			refs = append(refs, mcpRef{name: k.Value, at: dc.pos(k)})
			continue
		}
		s, ok := dc.mcpEntry(field, k, val, !dc.def.strict)
		if !ok {
			continue
		}
		s.Source = dc.def.path
		refs = append(refs, mcpRef{name: s.Name, entry: &s, at: dc.pos(k)})
	}
	return refs
}

func hasErrorsSince(ds Diagnostics, from int) bool {
	return ds[from:].HasErrors()
}
