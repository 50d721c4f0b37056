package agenttypes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MCP server transports (MCPServer.Type).
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
)

// MCPToolPrefix begins the name of every tool an MCP server offers:
// mcp__SERVER__TOOL, the convention Claude Code's files use in tools:.
const MCPToolPrefix = "mcp__"

// MaxToolName is the longest tool name the model providers accept.
const MaxToolName = 64

// MCPServer is an MCP server that agent types may use the tools of: a
// program troupe starts and speaks to over its standard input and
// output, or a server reached over streamable HTTP.
type MCPServer struct {
	// Name names the server in tool names (mcp__NAME__TOOL) and in
	// definitions' mcp_servers lists.
	Name string `json:"name"`
	// Type is MCPStdio (the default when Command is set) or MCPHTTP.
	Type string `json:"type,omitempty"`
	// Command and Args start a stdio server; Env is what it gets besides
	// troupe's scrubbed environment: names to values, where a value may
	// name a variable of troupe's own environment as ${VAR}.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL and Headers reach an HTTP server; a header's value may name a
	// variable as ${VAR}, as Env's do.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Source is the file that declares the server, for messages and
	// trust; it is not part of the entry's digest.
	Source string `json:"source,omitempty"`
	// Untrusted is set by loading on a server that a project's files name
	// (its .mcp.json, its config, an entry in one of its definitions)
	// while the user has not trusted it as it is: it must not be started
	// or reached (UntrustedError says so). It is not part of the digest.
	Untrusted bool `json:"untrusted,omitempty"`
}

// toolNameUnsafe matches what a tool's name may not hold; compiled at
// first use.
var toolNameUnsafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]`) })

// Transport is the server's transport, Type or the default.
func (s MCPServer) Transport() string {
	if s.Type == "" && s.URL != "" && s.Command == "" {
		return MCPHTTP
	}
	if s.Type == "" {
		return MCPStdio
	}
	return s.Type
}

// Validate reports what makes s unusable, saying how to fix it.
func (s MCPServer) Validate() error {
	if !mcpServerName.MatchString(s.Name) || strings.Contains(s.Name, "__") {
		return fmt.Errorf("%w: MCP server name %q: use 1 to 32 letters, digits, '-' or '_' (no \"__\"), starting with a letter or digit", ErrInvalid, s.Name)
	}
	switch s.Transport() {
	case MCPStdio:
		if strings.TrimSpace(s.Command) == "" {
			return fmt.Errorf("%w: MCP server %q has no command; give the program that serves it over stdio, or a url for an HTTP server", ErrInvalid, s.Name)
		}
		if s.URL != "" {
			return fmt.Errorf("%w: MCP server %q has both a command and a url; a stdio server has a command, an HTTP one a url", ErrInvalid, s.Name)
		}
	case MCPHTTP:
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: MCP server %q: url %q is not an http or https URL", ErrInvalid, s.Name, s.URL)
		}
		if s.Command != "" {
			return fmt.Errorf("%w: MCP server %q has both a command and a url; a stdio server has a command, an HTTP one a url", ErrInvalid, s.Name)
		}
	default:
		return fmt.Errorf("%w: MCP server %q has type %q; use %q or %q", ErrInvalid, s.Name, s.Type, MCPStdio, MCPHTTP)
	}
	return nil
}

// Digest is the hex SHA-256 of the entry as it would run (Source left
// out): trust and description caches are keyed by it, so a changed
// entry is asked about, and described, again.
func (s MCPServer) Digest() string {
	s.Source, s.Untrusted = "", false
	b, _ := json.Marshal(s) // maps marshal in key order: the digest is stable
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// clone copies s's slices and maps.
func (s MCPServer) clone() MCPServer {
	s.Args = slices.Clone(s.Args)
	s.Env = maps.Clone(s.Env)
	s.Headers = maps.Clone(s.Headers)
	return s
}

// MCPToolName is the name of server's tool as agents see it:
// mcp__SERVER__TOOL, with every character the model providers refuse in
// a tool name replaced by '_'; past MaxToolName it is shortened the same
// way every time: a readable prefix and a short hash of the whole name.
func MCPToolName(server, tool string) string {
	full := MCPToolPrefix + server + "__" + tool
	name := toolNameUnsafe().ReplaceAllString(full, "_")
	if len(name) <= MaxToolName && name == full {
		return name
	}
	if len(name) <= MaxToolName {
		// Two tools whose names differ only where they were replaced
		// must not share one.
		sum := sha256.Sum256([]byte(full))
		hash := hex.EncodeToString(sum[:])[:8]
		return name[:min(len(name), MaxToolName-len(hash)-1)] + "_" + hash
	}
	sum := sha256.Sum256([]byte(full))
	hash := hex.EncodeToString(sum[:])[:8]
	return name[:MaxToolName-len(hash)-1] + "_" + hash
}

// MCPToolSource describes MCP servers' tools on demand: what a run that
// may use the servers gives its manager, so that an agent of any type,
// top-level or delegated to, gets the tools of the servers its type
// names when it is spawned. builtin/mcp's Pool is one.
type MCPToolSource interface {
	// Tools returns the tools of the named server, named
	// MCPToolName(server, tool). It may start the server to learn them,
	// bounded by ctx; an error says why the server is unusable (it does
	// not start, it fails the handshake, it is not known).
	Tools(ctx context.Context, server string) ([]Tool, error)
}

// GrantMCP: a project's files name an MCP server, a program troupe would
// start (or a server it would send requests to) for the project.
const GrantMCP = "mcp"

// Grant is what trusting the server allows: GrantMCP, the server's name
// and file, its digest, and what it runs.
func (s MCPServer) Grant() Grant {
	return Grant{Kind: GrantMCP, Type: s.Name, File: s.Source, Digest: s.Digest(), Detail: s.Runs()}
}

// Runs says what the server runs or reaches, for people: "runs: npx -y
// @modelcontextprotocol/server-filesystem ." or "connects to URL".
func (s MCPServer) Runs() string {
	if s.Transport() == MCPHTTP {
		return "connects to " + s.URL
	}
	words := make([]string, 0, 1+len(s.Args))
	for _, w := range append([]string{s.Command}, s.Args...) {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`") {
			w = strconv.Quote(w)
		}
		words = append(words, w)
	}
	out := "runs: " + strings.Join(words, " ")
	if len(s.Env) > 0 {
		out += " with " + strings.Join(slices.Sorted(maps.Keys(s.Env)), ", ") + " set"
	}
	return out
}

// UntrustedError is the error of using a server that is not trusted: it
// names the server, its file, and what it would run, and wraps
// ErrUntrusted.
func (s MCPServer) UntrustedError() error {
	return fmt.Errorf("MCP server %q (%s) is %w (it %s)", s.Name, s.Source, ErrUntrusted, s.Runs())
}

// UntrustedMCPServers are the servers of t that loading marked Untrusted:
// a caller refuses to start an agent of t while there are any.
func (t *Type) UntrustedMCPServers() []MCPServer {
	var out []MCPServer
	for _, s := range t.MCPServers {
		if s.Untrusted {
			out = append(out, s.clone())
		}
	}
	return out
}

// MCPAllTools is the tool part of a pattern that allows every tool of a
// server: mcp__SERVER__*.
const MCPAllTools = "*"

// SplitMCPTool splits an MCP tool's name, or a pattern of them, as a
// type's tools and disallowed_tools write them: mcp__SERVER__TOOL gives
// SERVER and TOOL; mcp__SERVER__* and Claude Code's mcp__SERVER give
// SERVER and MCPAllTools. ok is false for any other name, including one
// that starts with mcp__ but names no server (or a tool pattern other
// than "*").
func SplitMCPTool(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, MCPToolPrefix)
	if !found {
		return "", "", false
	}
	server, tool, cut := strings.Cut(rest, "__")
	if !cut {
		tool = MCPAllTools
	}
	switch {
	case !mcpServerName.MatchString(server), tool == "":
		return "", "", false
	case strings.Contains(tool, "*") && tool != MCPAllTools:
		return "", "", false
	}
	return server, tool, true
}

// MatchTool reports whether pattern, an entry of a type's tools or
// disallowed_tools, covers the tool called name: the same name, or
// mcp__SERVER__* (mcp__SERVER) for any tool of SERVER. Only MCP tools
// have patterns.
func MatchTool(pattern, name string) bool {
	if pattern == name {
		return true
	}
	ps, pt, ok := SplitMCPTool(pattern)
	if !ok || pt != MCPAllTools {
		return false
	}
	ns, _, ok := SplitMCPTool(name)
	return ok && ns == ps
}
