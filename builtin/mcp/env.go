package mcp

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/agenttypes"
)

// variableRef is ${VAR} or ${VAR:-default} in an entry's env or headers.
var variableRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`) })

// expand returns values with every ${VAR} replaced by VAR's value in
// environ; a variable that is not set (and has no default) is an error
// naming it, the server and the file.
func expand(s agenttypes.MCPServer, what string, values map[string]string, environ []string) (map[string]string, error) {
	lookup := map[string]string{}
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok {
			lookup[name] = value
		}
	}
	out := make(map[string]string, len(values))
	for _, key := range slices.Sorted(maps.Keys(values)) {
		var missing string
		out[key] = variableRef().ReplaceAllStringFunc(values[key], func(ref string) string {
			m := variableRef().FindStringSubmatch(ref)
			if v, ok := lookup[m[1]]; ok {
				return v
			}
			if m[2] != "" {
				return m[2][2:]
			}
			if missing == "" {
				missing = m[1]
			}
			return ""
		})
		if missing != "" {
			return nil, fmt.Errorf("%w: %s: its %s %s names ${%s}, which troupe's environment does not set; set it, or give a default as ${%s:-VALUE}",
				ErrStart, describe(s), what, key, missing, missing)
		}
	}
	return out, nil
}

// envEntries are vars as NAME=value entries, in name order.
func envEntries(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// describe names a server and the file that declares it, for messages.
func describe(s agenttypes.MCPServer) string {
	if s.Source == "" {
		return fmt.Sprintf("MCP server %q", s.Name)
	}
	return fmt.Sprintf("MCP server %q (declared in %s)", s.Name, s.Source)
}
