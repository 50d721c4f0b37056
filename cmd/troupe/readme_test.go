package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The repository's own documentation: README.md and docs/*.md, read from
// the source tree this test is built in.
var repoRoot = filepath.Join("..", "..")

func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, docs, "no docs/*.md found beside the command's source")
	return append([]string{filepath.Join(repoRoot, "README.md")}, docs...)
}

// TestReadmeLinksPointAtFiles checks every relative link of README.md and
// docs/*.md: its file exists, and its #anchor names a heading there.
func TestReadmeLinksPointAtFiles(t *testing.T) {
	anchors := map[string]map[string]bool{} // file → its headings' anchors
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		for _, h := range markdownHeadings(t, path) {
			a[h.anchor] = true
		}
		anchors[path] = a
		return a
	}
	for _, doc := range docFiles(t) {
		for _, l := range markdownLinks(t, doc) {
			target, fragment, _ := strings.Cut(l.target, "#")
			if strings.Contains(target, ":") {
				continue // https:, mailto: and the like: not a file of the repository
			}
			where := fmt.Sprintf("%s:%d: link %q", rel(doc), l.line, l.target)
			path := doc
			if target != "" {
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(target))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: %s does not exist; fix the link or add the file", where, rel(path))
					continue
				}
			}
			if fragment != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[fragment] {
				t.Errorf("%s: %s has no heading with the anchor #%s", where, rel(path), fragment)
			}
		}
	}
}

// TestReadmeContentsMatchHeadings checks README.md's table of contents:
// it lists every ## heading, in order, each under its anchor, and any ###
// entry names a ### heading of the section it is listed under.
func TestReadmeContentsMatchHeadings(t *testing.T) {
	readme := filepath.Join(repoRoot, "README.md")
	entries := contentsEntries(t, readme)
	require.NotEmpty(t, entries, "README.md has no list under \"## Contents\"")
	next := 0
	for _, h := range markdownHeadings(t, readme) {
		if h.level > 3 || h.level < 2 || h.text == "Contents" {
			continue
		}
		var e tocEntry
		if next < len(entries) {
			e = entries[next]
		}
		if h.level == 3 {
			if e.nested && e.text == h.text {
				assert.Equal(t, h.anchor, e.anchor, "README.md: the contents entry %q links #%s, but its heading's anchor is #%s", e.text, e.anchor, h.anchor)
				next++
			}
			continue
		}
		if e.nested || e.text != h.text {
			t.Errorf("README.md:%d: heading %q is not next in the contents list (found %q there); add `- [%s](#%s)` in its place", h.line, h.text, e.text, h.text, h.anchor)
			return
		}
		assert.Equal(t, h.anchor, e.anchor, "README.md: the contents entry %q links #%s, but its heading's anchor is #%s", e.text, e.anchor, h.anchor)
		next++
	}
	for _, e := range entries[next:] {
		t.Errorf("README.md: the contents entry %q names no heading in that place; remove it or move it where its heading is", e.text)
	}
}

// TestReadmeSlug checks the anchors GitHub gives headings, which the link checks
// rely on.
func TestReadmeSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"MCP servers' tools":             "mcp-servers-tools",
		"The Go API in ten lines":        "the-go-api-in-ten-lines",
		"Scripts: hooks and tools in Go": "scripts-hooks-and-tools-in-go",
		"Start-up":                       "start-up",
		"`make test` and `make_lint`":    "make-test-and-make_lint",
		"[Plugins](docs/plugins.md)":     "plugins",
	} {
		assert.Equal(t, want, slug(heading), heading)
	}
}

type heading struct {
	level        int
	text, anchor string
	line         int
}

type link struct {
	target string
	line   int
}

type tocEntry struct {
	text, anchor string
	nested       bool
}

var (
	headingLine  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkPattern  = regexp.MustCompile(`!?\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	contentsLine = regexp.MustCompile(`^( *)- \[([^\]]+)\]\(#([^)]+)\)$`)
)

// markdownText returns path's text with the lines of fenced code blocks
// blanked, so that what is left is prose and each line keeps its number.
func markdownText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// markdownLines calls fn with each line of path that is outside fenced
// code blocks, numbered from 1.
func markdownLines(t *testing.T, path string, fn func(n int, line string)) {
	t.Helper()
	for i, line := range strings.Split(markdownText(t, path), "\n") {
		if line != "" {
			fn(i+1, line)
		}
	}
}

// markdownHeadings returns path's headings with the anchors GitHub gives
// them: a repeated one gets -1, -2, ...
func markdownHeadings(t *testing.T, path string) []heading {
	t.Helper()
	var out []heading
	seen := map[string]int{}
	markdownLines(t, path, func(n int, line string) {
		m := headingLine.FindStringSubmatch(line)
		if m == nil {
			return
		}
		anchor := slug(m[2])
		if k := seen[anchor]; k > 0 {
			anchor = fmt.Sprintf("%s-%d", anchor, k)
		}
		seen[slug(m[2])]++
		out = append(out, heading{level: len(m[1]), text: m[2], anchor: anchor, line: n})
	})
	return out
}

// markdownLinks returns path's links outside code blocks and code spans;
// a link's text may run over several lines.
func markdownLinks(t *testing.T, path string) []link {
	t.Helper()
	text := markdownText(t, path)
	code := codeSpans(text)
	var out []link
	for _, m := range linkPattern.FindAllStringSubmatchIndex(text, -1) {
		inCode := false
		for _, c := range code {
			inCode = inCode || (m[0] >= c[0] && m[0] < c[1])
		}
		if !inCode {
			out = append(out, link{target: text[m[4]:m[5]], line: 1 + strings.Count(text[:m[0]], "\n")})
		}
	}
	return out
}

// codeSpans returns where text's code spans are: a run of backticks up to
// the next run of as many.
func codeSpans(text string) [][2]int {
	var spans [][2]int
	run := func(i int) int { // the length of the backtick run at i
		n := 0
		for i+n < len(text) && text[i+n] == '`' {
			n++
		}
		return n
	}
	for i := 0; i < len(text); {
		n := run(i)
		if n == 0 {
			i++
			continue
		}
		end := -1
		for j := i + n; j < len(text); {
			if m := run(j); m == n {
				end = j + m
				break
			} else {
				j += max(m, 1)
			}
		}
		if end < 0 {
			i += n // a lone run of backticks is text
			continue
		}
		spans = append(spans, [2]int{i, end})
		i = end
	}
	return spans
}

// contentsEntries returns the list under README.md's "## Contents".
func contentsEntries(t *testing.T, path string) []tocEntry {
	t.Helper()
	var out []tocEntry
	in := false
	markdownLines(t, path, func(n int, line string) {
		if headingLine.MatchString(line) {
			in = line == "## Contents"
			return
		}
		if !in || strings.TrimSpace(line) == "" {
			return
		}
		m := contentsLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%s:%d: %q in the contents is not an entry `- [Heading](#anchor)`, indented two spaces for a ### heading", rel(path), n, line)
			return
		}
		out = append(out, tocEntry{text: m[2], anchor: m[3], nested: m[1] != ""})
	})
	return out
}

// slug is the anchor GitHub gives a heading: its text without markup,
// lower-cased, with punctuation but for '-' and '_' dropped and spaces
// made hyphens.
func slug(text string) string {
	text = linkPattern.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// rel names a file of the repository by its path from the repository's root.
func rel(path string) string {
	if r, err := filepath.Rel(repoRoot, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}
