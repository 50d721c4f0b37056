package agenttypes

import "regexp"

// A nameShape matches names of ASCII letters, digits and punctuation,
// each at most max bytes long. It stands for a pattern with a counted
// repetition such as `^[a-z][a-z0-9_]{0,63}$`, which the regexp package
// compiles into one copy of the class per count: a third of a
// millisecond, at every start of every program that links the package.
// The pattern without the count, and a length check, say the same.
type nameShape struct {
	re  *regexp.Regexp
	max int
}

func (n nameShape) MatchString(s string) bool { return len(s) <= n.max && n.re.MatchString(s) }

var (
	// typeName is what an agent type may be called.
	typeName = nameShape{regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`), 64}
	// toolName is what a script tool may be called.
	toolName = nameShape{regexp.MustCompile(`^[a-z][a-z0-9_]*$`), 64}
	// mcpServerName is what an MCP server may be called.
	mcpServerName = nameShape{regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`), 32}
)
