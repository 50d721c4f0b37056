package agenttypes

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultTools are the tools a definition gets when it names none and
// extends nothing: troupe's read-only set. Treat it as read-only.
var DefaultTools = []string{"read", "grep", "symbols", "glob", "ls", "git", "note"}

// optionalTools are troupe tools a program may leave out of its
// registry: ask_parent and delegate come with delegation, write, edit,
// run and merge with workspaces. A definition naming one the program
// does not offer gets a warning, not an error.
var optionalTools = []string{"ask_parent", "delegate", "write", "edit", "run", "merge"}

// KnownToolNames returns troupe's builtin tool names, those every program
// has and those it may leave out, sorted.
func KnownToolNames() []string {
	return slices.Sorted(slices.Values(append(slices.Clone(DefaultTools), optionalTools...)))
}

// claudeTools maps Claude Code's tool names onto troupe's. An empty value
// means troupe has no equivalent; why says what the warning tells the user.
var claudeTools = map[string]struct{ to, why string }{
	"Read":         {to: "read"},
	"Grep":         {to: "grep"},
	"Glob":         {to: "glob"},
	"LS":           {to: "ls"},
	"TodoWrite":    {to: "note"},
	"TodoRead":     {to: "note"},
	"Edit":         {to: "edit"},
	"MultiEdit":    {to: "edit"},
	"NotebookEdit": {to: "edit"},
	"Write":        {to: "write"},
	"Agent":        {to: "delegate"},
	"Task":         {to: "delegate"},
	"Bash":         {to: "run"},
	"BashOutput":   {why: "troupe's run tool has no commands left running in the background; the agent runs without it"},
	"KillShell":    {why: "troupe's run tool has no commands left running in the background; the agent runs without it"},
	"WebFetch":     {why: "troupe has no web tools; the agent runs without WebFetch"},
	"WebSearch":    {why: "troupe has no web tools; the agent runs without WebSearch"},
	"NotebookRead": {why: "troupe has no notebook tool; use read"},
}

// isClaudeToolName reports whether name is written the way Claude Code
// writes its tools, which marks a file as Claude-style. MCP tools'
// mcp__SERVER__TOOL is troupe's spelling too, and marks nothing.
func isClaudeToolName(name string) bool {
	base, _, _ := strings.Cut(name, "(")
	_, ok := claudeTools[strings.TrimSpace(base)]
	return ok
}

// mappedTool is one entry of a tools list after mapping.
type mappedTool struct {
	name string // troupe's name, "" when dropped
	warn string // a warning to report, if any
	// bash is set for Claude Code's Bash, which is run; allow is the
	// command prefix its pattern gives, if any.
	bash  bool
	allow string
}

// mapTool maps one name from a tools list onto troupe's names. Troupe's own
// names pass through; unknown names are kept for the registry to judge.
func mapTool(raw string) mappedTool {
	raw = strings.TrimSpace(raw)
	base, args, hasArgs := strings.Cut(raw, "(")
	base = strings.TrimSpace(base)
	args = strings.TrimSuffix(strings.TrimSpace(args), ")")
	if server, tool, ok := SplitMCPTool(raw); ok {
		// mcp__SERVER, Claude Code's "every tool of SERVER", is written
		// one way: mcp__SERVER__*.
		return mappedTool{name: MCPToolPrefix + server + "__" + tool}
	}
	if base == "Bash" && hasArgs && (args == "git" || strings.HasPrefix(args, "git ") || strings.HasPrefix(args, "git:")) {
		return mappedTool{name: "git", warn: fmt.Sprintf("tool %q is mapped to troupe's read-only git tool (diff, log, show, status, blame)", raw)}
	}
	if base == "Bash" {
		return mapBash(raw, args, hasArgs)
	}
	if c, ok := claudeTools[base]; ok {
		if c.to == "" {
			return mappedTool{warn: fmt.Sprintf("tool %q: %s", raw, c.why)}
		}
		if hasArgs && c.to != "delegate" {
			return mappedTool{name: c.to, warn: fmt.Sprintf("tool %q: troupe ignores the pattern in parentheses and allows %s on every path inside the agent's root", raw, c.to)}
		}
		return mappedTool{name: c.to}
	}
	return mappedTool{name: raw}
}

// mapBash maps Claude Code's Bash onto run. A pattern gives run a command
// prefix: Bash(go test:*) and Bash(go test *) allow "go test" and what
// follows it; Bash(make) allows make as a prefix too, with a warning.
func mapBash(raw, args string, hasArgs bool) mappedTool {
	m := mappedTool{name: "run", bash: true}
	if !hasArgs {
		return m
	}
	prefix, exact := strings.TrimSpace(args), true
	for _, suffix := range []string{":*", " *"} {
		if strings.HasSuffix(prefix, suffix) {
			prefix, exact = strings.TrimSpace(strings.TrimSuffix(prefix, suffix)), false
			break
		}
	}
	words, err := SplitCommand(prefix)
	switch {
	case err != nil || len(words) == 0 || strings.Contains(prefix, "*") || len(prefix) > MaxCommandLength:
		m.warn = fmt.Sprintf("tool %q: the pattern is not a command prefix troupe can allow (such as Bash(go test:*)), so it allows nothing; list the commands in run: {allow: [...]}", raw)
	case exact:
		m.allow = prefix
		m.warn = fmt.Sprintf("tool %q: run allows %q with any arguments after it, since troupe allows commands by prefix", raw, prefix)
	default:
		m.allow = prefix
	}
	return m
}

// splitTools splits a tools string written as "Read, Grep, Agent(a, b)":
// commas inside parentheses do not split, and a list with no commas splits
// on spaces.
func splitTools(s string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if part := strings.TrimSpace(s[start:end]); part != "" {
			out = append(out, part)
		}
	}
	hasComma := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				hasComma = true
				flush(i)
				start = i + 1
			}
		}
	}
	flush(len(s))
	if hasComma {
		return out
	}
	// "Read Grep Glob": split on spaces outside parentheses.
	var words []string
	for _, part := range out {
		words = append(words, splitOutsideParens(part)...)
	}
	return words
}

func splitOutsideParens(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case (c == ' ' || c == '\t') && depth == 0:
			if p := strings.TrimSpace(s[start:i]); p != "" {
				out = append(out, p)
			}
			start = i + 1
		}
	}
	if p := strings.TrimSpace(s[start:]); p != "" {
		out = append(out, p)
	}
	return out
}
