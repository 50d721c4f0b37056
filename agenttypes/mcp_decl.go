package agenttypes

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MCPDeclarations are the MCP servers declared outside definitions, which
// a definition's mcp_servers names: in the project's .troupe/config.yaml
// (mcp_servers:), in the project's .mcp.json (Claude Code's file), and in
// the user's config (mcp_servers:), in that order of precedence.
type MCPDeclarations struct {
	byName map[string]mcpDeclared
}

type mcpDeclared struct {
	server  MCPServer
	project bool // declared by the project's files: it needs trust
}

// Where MCP servers are declared, under a project's root and the user's
// config directory.
const (
	MCPJSONFile = ".mcp.json"
	configFile  = "config.yaml"
)

// ReadMCPDeclarations reads the servers src's project and user declare.
// A missing file declares nothing; a file that cannot be read, or an
// entry that does not follow the format, is reported as FILE:LINE:COL
// and its entry left out.
func ReadMCPDeclarations(src Sources) (*MCPDeclarations, Diagnostics) {
	decl := &MCPDeclarations{byName: map[string]mcpDeclared{}}
	var diags Diagnostics
	type file struct {
		path    string
		json    bool
		project bool
	}
	var files []file
	if src.ProjectDir != "" {
		files = append(files, file{path: filepath.Join(src.ProjectDir, ".troupe", configFile), project: true},
			file{path: filepath.Join(src.ProjectDir, MCPJSONFile), json: true, project: true})
	}
	if src.UserConfigDir != "" {
		files = append(files, file{path: filepath.Join(src.UserConfigDir, "troupe", configFile)})
	}
	for _, f := range files {
		refs, ds := readMCPFile(f.path, f.json)
		diags = append(diags, ds...)
		for _, r := range refs {
			if prev, taken := decl.byName[r.name]; taken {
				diags = append(diags, Diagnostic{File: f.path, Line: r.at.line, Col: r.at.col, Severity: SeverityWarning,
					Message: fmt.Sprintf("MCP server %q is also declared in %s, which takes precedence; this entry is not used", r.name, prev.server.Source)})
				continue
			}
			decl.byName[r.name] = mcpDeclared{server: *r.entry, project: f.project}
		}
	}
	diags.Sort()
	return decl, diags
}

// readMCPFile reads the servers one file declares: .mcp.json's
// mcpServers, or a config file's mcp_servers.
func readMCPFile(path string, isJSON bool) (refs []mcpRef, diags Diagnostics) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, Diagnostics{{File: path, Severity: SeverityError, Message: strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "+path+": ")}}
	}
	if data == nil {
		return nil, nil
	}
	sink := &diagSink{file: path}
	if recoverPanics {
		defer func() {
			if r := recover(); r != nil {
				refs, diags = nil, Diagnostics{{File: path, Severity: SeverityError, Message: fmt.Sprintf("cannot read this file (the parser failed: %v)", r)}}
			}
		}()
	}
	refs = parseMCPFile(sink, path, data, isJSON)
	return refs, sink.diags
}

func parseMCPFile(sink *diagSink, path string, data []byte, isJSON bool) []mcpRef {
	text, ok := readText(sink, data)
	if !ok {
		return nil
	}
	var root *yaml.Node
	if isJSON {
		root = parseJSONNodes(sink, text)
	} else if r, err := parseYAML(text); err != nil {
		sink.errorf(yamlErrorLine(err), 1, "not valid YAML: %s", yamlErrorText(err))
	} else {
		root = r
	}
	if root == nil {
		return nil
	}
	if root, ok = checkShape(sink, root, 0); !ok {
		return nil
	}
	key := "mcp_servers"
	if isJSON {
		key = "mcpServers"
	}
	d := &definition{path: path, strict: !isJSON, given: map[string]pos{}}
	dc := &decoder{sink: sink, def: d}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == key {
			return dc.mcpEntries(key, deref(root.Content[i+1]), isJSON, path)
		}
	}
	return nil
}

// parseJSONNodes parses JSON text into YAML nodes, which carry the line
// and column of each value. JSON is YAML but for a few escapes (\/) the
// YAML parser refuses: such a file is read again from its re-encoded
// values, and its messages name the file without a place.
func parseJSONNodes(sink *diagSink, text string) *yaml.Node {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		line, col := 1, 1
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col = offsetPos(text, int(se.Offset))
		}
		sink.errorf(line, col, "not valid JSON: %v", err)
		return nil
	}
	if _, ok := v.(map[string]any); !ok {
		sink.errorf(1, 1, "the file is a JSON object, such as {\"mcpServers\": {\"fs\": {\"command\": \"npx\", \"args\": [...]}}}")
		return nil
	}
	root, err := parseYAML(text)
	if err != nil {
		b, _ := json.Marshal(v)
		if root, err = parseYAML(string(b)); err != nil {
			sink.errorf(1, 1, "cannot read this JSON: %v", err)
			return nil
		}
		// Places in the re-encoded text are not the file's: messages
		// name the file alone.
		shiftNodes(root, -1, 0, map[*yaml.Node]bool{})
	}
	return root
}

// offsetPos is the line and column of a byte offset into text.
func offsetPos(text string, off int) (line, col int) {
	off = min(max(off, 0), len(text))
	line = 1 + strings.Count(text[:off], "\n")
	col = off - strings.LastIndexByte(text[:off], '\n')
	return line, max(col, 1)
}

// Lookup returns the declared server of that name.
func (m *MCPDeclarations) Lookup(name string) (MCPServer, bool) {
	if m == nil {
		return MCPServer{}, false
	}
	d, ok := m.byName[name]
	return d.server.clone(), ok
}

// Names lists the declared servers' names, sorted.
func (m *MCPDeclarations) Names() []string {
	if m == nil {
		return nil
	}
	out := make([]string, 0, len(m.byName))
	for name := range m.byName {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Grants are the grants of the servers the project's files declare: each
// is a program the repository names, which runs only once trusted.
func (m *MCPDeclarations) Grants() []Grant {
	var out []Grant
	for _, name := range m.Names() {
		if d := m.byName[name]; d.project {
			out = append(out, d.server.Grant())
		}
	}
	return out
}

// fromProject reports whether the server of that name is the project's.
func (m *MCPDeclarations) fromProject(name string) bool {
	return m != nil && m.byName[name].project
}
