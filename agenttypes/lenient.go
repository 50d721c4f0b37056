package agenttypes

import (
	"regexp"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The lenient front-matter reader, for Claude-style files whose front
// matter is not valid YAML (an unquoted ": " in a description, <example>
// blocks, literal "\n"). It sees only the text between the front-matter
// delimiters, never the body, and reads it as top-level "key: value" lines;
// any other line continues the value of the key before it.

var lenientKeyLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$`)
})

// chatWords are words that open lines inside the <example> blocks of
// descriptions ("user: ...", "Context: ..."); at the start of a line they
// continue the value before them rather than start a key.
var chatWords = map[string]bool{
	"user": true, "assistant": true, "human": true, "ai": true, "system": true,
	"context": true, "example": true, "examples": true, "commentary": true,
	"note": true, "notes": true, "input": true, "response": true, "task": true,
	"query": true, "question": true, "answer": true, "result": true,
}

// isLenientKey decides whether "key:" at the start of a line starts a new
// key.
func isLenientKey(key string) bool {
	if _, ok := topFields[key]; ok {
		return true
	}
	if _, ok := claudeFields[key]; ok {
		return true
	}
	if chatWords[strings.ToLower(key)] {
		return false
	}
	return key[0] >= 'a' && key[0] <= 'z'
}

type lenientEntry struct {
	key   string
	line  int // 1-based, within the front matter
	col   int // of the value
	first string
	rest  []string // continuation lines, as written
}

// parseLenient reads front matter line by line into a mapping node whose
// positions are relative to the front matter, as yaml.v3's would be.
func parseLenient(fm string) (*yaml.Node, []int) {
	var entries []*lenientEntry
	var ignored []int // lines before the first key that were skipped
	var cur *lenientEntry
	for i, line := range strings.Split(fm, "\n") {
		n := i + 1
		if strings.HasPrefix(line, "#") {
			continue
		}
		if m := lenientKeyLine().FindStringSubmatch(line); m != nil && isLenientKey(m[1]) {
			value := strings.TrimRight(m[2], " \t")
			colon := strings.IndexByte(line, ':')
			after := line[colon+1:]
			col := colon + 1 + len(after) - len(strings.TrimLeft(after, " \t")) + 1
			cur = &lenientEntry{key: m[1], line: n, col: col, first: value}
			entries = append(entries, cur)
			continue
		}
		if cur == nil {
			if strings.TrimSpace(line) != "" {
				ignored = append(ignored, n)
			}
			continue
		}
		cur.rest = append(cur.rest, line)
	}
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: 1, Column: 1}
	for _, e := range entries {
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e.key, Line: e.line, Column: 1}
		root.Content = append(root.Content, key, e.value())
	}
	return root, ignored
}

// value builds the node for one entry's value.
func (e *lenientEntry) value() *yaml.Node {
	// Trailing blank lines belong to no value.
	rest := e.rest
	for len(rest) > 0 && strings.TrimSpace(rest[len(rest)-1]) == "" {
		rest = rest[:len(rest)-1]
	}
	scalar := func(v string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Line: e.line, Column: e.col}
		return n
	}
	first := e.first
	if lenientMappings[e.key] && (first == "" && len(rest) > 0 || strings.HasPrefix(first, "{")) {
		if n := e.mapping(rest); n != nil {
			return n
		}
	}
	switch {
	case first == "" && len(rest) == 0, first == "~", first == "null":
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: e.line, Column: e.col}
	case first == "" && allListItems(rest):
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: e.line, Column: e.col}
		for j, l := range rest {
			t := strings.TrimSpace(l)
			if t == "" {
				continue
			}
			item := unquote(strings.TrimSpace(strings.TrimPrefix(t, "-")))
			col := strings.Index(l, "-") + 3
			seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: item, Line: e.line + j + 1, Column: col})
		}
		return seq
	case strings.HasPrefix(first, "|") || strings.HasPrefix(first, ">"):
		return scalar(blockScalar(first[0] == '>', rest))
	case strings.HasPrefix(first, "["):
		text := strings.TrimSpace(strings.Join(append([]string{first}, trimAll(rest)...), " "))
		if strings.HasSuffix(text, "]") {
			seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: e.line, Column: e.col}
			for _, item := range splitTools(strings.TrimSuffix(strings.TrimPrefix(text, "["), "]")) {
				seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: unquote(item), Line: e.line, Column: e.col})
			}
			return seq
		}
		return scalar(text)
	}
	parts := append([]string{first}, trimAll(rest)...)
	if first == "" {
		parts = parts[1:]
	}
	return scalar(unquote(foldLines(parts)))
}

// lenientMappings are the keys whose value is a mapping that the line by
// line reader parses as YAML on its own: troupe's run:, which a Claude
// Code file whose front matter is not valid YAML may have been given, and
// the entries of mcpServers (mcp_servers).
var lenientMappings = map[string]bool{"run": true, "mcp_servers": true, "mcpServers": true}

// mapping parses the entry's value, a flow mapping on its line or a block
// below it, as YAML, with the positions of the file; nil when it is not a
// mapping.
func (e *lenientEntry) mapping(rest []string) *yaml.Node {
	text, lineOff, colOff := strings.Join(rest, "\n"), e.line, 0
	if e.first != "" {
		text, lineOff, colOff = strings.Join(append([]string{e.first}, rest...), "\n"), e.line-1, e.col-1
	}
	n, err := parseYAML(text)
	if err != nil || n.Kind != yaml.MappingNode {
		return nil
	}
	if count, tooDeep := countValues(n, maxYAMLValues); tooDeep || count > maxYAMLValues {
		return nil // too large for a run: section: read as text, and refused
	}
	shiftNodes(n, lineOff, colOff, map[*yaml.Node]bool{})
	return n
}

// shiftNodes moves n and the nodes below it by lines, and those on its
// first line by cols as well.
func shiftNodes(n *yaml.Node, lines, cols int, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	if n.Line == 1 {
		n.Column += cols
	}
	n.Line += lines
	for _, c := range n.Content {
		shiftNodes(c, lines, cols, seen)
	}
}

func allListItems(lines []string) bool {
	seen := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if t != "-" && !strings.HasPrefix(t, "- ") {
			return false
		}
		seen = true
	}
	return seen
}

func trimAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimSpace(l)
	}
	return out
}

// foldLines joins lines the way YAML folds a multi-line plain scalar: a
// single line break becomes a space, a blank line a newline.
func foldLines(lines []string) string {
	var b strings.Builder
	pendingBreak := false
	for _, l := range lines {
		if l == "" {
			b.WriteByte('\n')
			pendingBreak = false
			continue
		}
		if pendingBreak {
			b.WriteByte(' ')
		}
		b.WriteString(l)
		pendingBreak = true
	}
	return strings.TrimSpace(b.String())
}

// blockScalar reads the lines of a "|" or ">" block: dedented, then kept
// (literal) or folded.
func blockScalar(folded bool, lines []string) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			out[i] = l[indent:]
		} else {
			out[i] = strings.TrimSpace(l)
		}
	}
	if folded {
		return foldLines(trimAll(out))
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

// unquote removes one layer of YAML quotes when s is wholly quoted, reading
// the escapes of a double-quoted scalar; otherwise s is returned as is.
func unquote(s string) string {
	if len(s) < 2 {
		return s
	}
	switch {
	case s[0] == '\'' && s[len(s)-1] == '\'':
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	case s[0] == '"' && s[len(s)-1] == '"':
		return unescapeDouble(s[1 : len(s)-1])
	}
	return s
}

func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\', '/':
			b.WriteByte(s[i])
		case ' ':
			b.WriteByte(' ')
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
