package agenttypes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/troupe-dev/troupe/builtin/models/modelname"
	"github.com/troupe-dev/troupe/builtin/suggest"
)

// Mode says how strictly a definition file is read.
type Mode int

const (
	// ModeAuto reads a file leniently when it lies under a .claude
	// directory or is Markdown whose front matter is Claude-style (Claude
	// keys such as disallowedTools or maxTurns, Claude tool names such as
	// Read or Bash), and strictly otherwise.
	ModeAuto Mode = iota
	// ModeStrict reads troupe's own schema: unknown fields, bad values and
	// invalid YAML are errors.
	ModeStrict
	// ModeLenient reads what Claude Code reads: unknown fields and tools
	// are warnings, and front matter that is not valid YAML is read line
	// by line.
	ModeLenient
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ModeStrict:
		return "strict"
	case ModeLenient:
		return "lenient"
	default:
		return "auto"
	}
}

// MaxDefinitionSize is the largest definition file troupe reads.
const MaxDefinitionSize = 1 << 20

// maxYAMLValues caps the number of values a definition's YAML may hold
// once aliases are expanded, so that an alias bomb is refused before
// anything walks it.
const maxYAMLValues = 20_000

// maxYAMLDepth caps how deeply a definition's YAML may nest (an alias
// counts as a level), which bounds every recursive walk of it.
const maxYAMLDepth = 100

// Field names of the definition schema.
var topFields = map[string]string{
	"name":                 "name: security-review",
	"description":          "description: Reviews a diff for security problems.",
	"prompt":               "prompt: You are a careful reviewer...",
	"tools":                "tools: [read, grep, glob]",
	"disallowed_tools":     "disallowed_tools: [git]",
	"model":                "model: anthropic:claude-sonnet-4-5",
	"budget":               "budget: {max_tokens: 200000, max_time: 5m}",
	"inherit_context":      "inherit_context: false",
	"needs_language_model": "needs_language_model: true",
	"output":               "output: {format: json, schema: {type: object}}",
	"extends":              "extends: explore",
	"examples":             "examples: [\"where is X handled?\"]",
	"color":                "color: blue",
	"script":               "script: |\n  package hooks\n  ...",
	"script_file":          "script_file: hooks.go",
	"script_tools":         "script_tools: [{name: count, description: ..., parameters: {type: object}, script_file: count.go}]",
	"workspace":            "workspace: worktree",
	"run":                  "run: {allow: [\"go test\", \"make\"], timeout: 2m, network: false}",
	"setup":                "setup: [\"go mod download\"]",
	"mcp_servers":          "mcp_servers: [fs, github]",
}

// claudeFields are Claude Code's spellings, read in lenient mode.
var claudeFields = map[string]string{
	"disallowedTools": "disallowed_tools",
	"maxTurns":        "maxTurns",
	"isolation":       "isolation",
	"mcpServers":      "mcp_servers",
}

// claudeIgnored are Claude Code keys troupe knows and does not support.
var claudeIgnored = map[string]bool{
	"permissionMode": true, "hooks": true, "skills": true,
	"memory": true, "background": true, "effort": true,
}

var budgetFields = []string{"max_tokens", "max_time", "max_tool_calls", "max_turns", "max_cost_usd"}

var outputFields = []string{"format", "schema"}

// pos is a place in a file; line 0 means the file as a whole.
type pos struct{ line, col int }

// definition is one file as written, before extends is resolved.
type definition struct {
	path     string
	strict   bool
	claude   bool // read as a Claude Code file
	markdown bool
	failed   bool // parsing found errors: resolve it for its diagnostics only

	name        string
	description string
	prompt      string
	tools       []string
	toolPos     []pos
	disallowed  []string
	model       string
	budget      Budget
	inherit     bool
	needsLM     bool
	output      Output
	extends     string
	examples    []string
	color       string
	hooks       *Script
	scriptTools []ScriptTool
	toolAt      []pos // where each script tool is declared
	workspace   string
	run         RunPolicy
	setup       []string
	setupAt     []pos
	bash        *bashTool // the tools list names Claude Code's Bash
	mcp         []mcpRef  // mcp_servers: names and entries, as given

	given map[string]pos // canonical field → where it was given

	digest  string // hex SHA-256 of the file's bytes
	project bool   // from the project layer: what it runs needs trust
	trusted bool   // a project definition whose grants were given
}

func (d *definition) has(field string) bool { _, ok := d.given[field]; return ok }

func (d *definition) at(field string) pos {
	if p, ok := d.given[field]; ok {
		return p
	}
	return pos{1, 1}
}

// recoverPanics is switched off by the fuzz tests, so that a panic in this
// package's own code is found rather than reported as a diagnostic.
var recoverPanics = true

// parseDefinition reads one definition file's bytes. It returns nil when
// errors leave nothing to build a type from; the diagnostics say why.
func parseDefinition(path string, data []byte, mode Mode) (def *definition, diags Diagnostics) {
	sink := &diagSink{file: path}
	if recoverPanics {
		defer func() {
			// yaml.v3 has panicked on hostile input before; a definition
			// file must never take the host down.
			if r := recover(); r != nil {
				sink.errorf(0, 0, "cannot read this file (the YAML parser failed: %v); simplify the front matter", r)
				def, diags = nil, sink.diags
			}
		}()
	}
	def = parseInto(sink, path, data, mode)
	if def != nil && sink.diags.HasErrors() {
		def.failed = true
	}
	if def != nil {
		sum := sha256.Sum256(data)
		def.digest = hex.EncodeToString(sum[:])
	}
	return def, sink.diags
}

func parseInto(sink *diagSink, path string, data []byte, mode Mode) *definition {
	text, ok := readText(sink, data)
	if !ok {
		return nil
	}
	d := &definition{path: path, given: map[string]pos{}}
	src, ok := splitSource(sink, d, path, text)
	if !ok {
		return nil
	}
	d.strict = mode == ModeStrict || (mode == ModeAuto && !inClaudeDir(path))
	root := parseFrontMatter(sink, d, src, mode)
	if root == nil {
		return nil
	}
	d.claude = d.markdown && !d.strict
	if root, ok = checkShape(sink, root, src.lineOff); !ok {
		return nil
	}
	dec := &decoder{sink: sink, def: d, lineOff: src.lineOff, lines: strings.Split(text, "\n")}
	dec.top(root)

	if d.markdown {
		takeBody(sink, d, src)
	}
	if d.has("prompt") {
		dec.checkPrompt()
	}
	if !d.has("name") {
		nameFromFile(sink, d, path)
	}
	return d
}

// readText is a definition file's text, with a byte order mark dropped and
// every line ending made "\n"; false, with an error reported, when the file
// is too large or is not UTF-8 text.
func readText(sink *diagSink, data []byte) (string, bool) {
	if len(data) > MaxDefinitionSize {
		sink.errorf(0, 0, "file is %s; definitions are limited to %s: move long text out of it", sizeString(int64(len(data))), sizeString(MaxDefinitionSize))
		return "", false
	}
	if line, col, msg := checkText(data); msg != "" {
		sink.errorf(line, col, "%s", msg)
		return "", false
	}
	text := strings.TrimPrefix(string(data), "\ufeff")
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	return text, true
}

// source is a definition file's text split into the YAML to decode and,
// in a Markdown file, the body below it.
type source struct {
	fm       string // the YAML: the whole file, or a Markdown file's front matter
	lineOff  int    // lines before the YAML, added to its line numbers
	body     string // a Markdown file's body
	bodyLine int    // the line the body starts on
}

// splitSource splits text by the kind of file path names, marking d as
// Markdown when it is; false, with an error reported, for a kind of file
// definitions are not written in or front matter that cannot be found.
func splitSource(sink *diagSink, d *definition, path, text string) (source, bool) {
	var src source
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		src.fm = text
	case ".md", ".markdown":
		d.markdown = true
		var ok bool
		src.fm, src.lineOff, src.body, src.bodyLine, ok = splitFrontMatter(sink, text)
		if !ok {
			return source{}, false
		}
	default:
		sink.errorf(0, 0, "unsupported file type %q: write definitions as *.yaml, *.yml or *.md", filepath.Ext(path))
		return source{}, false
	}
	return src, true
}

// parseFrontMatter parses src's YAML, and settles whether d is read
// strictly: Markdown front matter that is not valid YAML, or that looks
// like Claude Code's, is read leniently unless mode asks for strict. It
// returns nil, with an error reported, when nothing can be read.
func parseFrontMatter(sink *diagSink, d *definition, src source, mode Mode) *yaml.Node {
	root, yerr := parseYAML(src.fm)
	switch {
	case yerr != nil:
		line := yamlErrorLine(yerr)
		if d.markdown && mode != ModeStrict {
			lroot, ignored := parseLenient(src.fm)
			if !d.strict || looksClaude(lroot) {
				d.strict = false
				sink.warnf(line+src.lineOff, 1, "front matter is not valid YAML (%s); read it line by line instead. Quote values that hold \": \" (description: \"...\") to make it valid", yamlErrorText(yerr))
				for _, l := range ignored {
					sink.warnf(l+src.lineOff, 1, "ignored line: it is not \"key: value\" and follows no key")
				}
				root = lroot
			}
		}
		if root == nil {
			sink.errorf(line+src.lineOff, 1, "not valid YAML: %s", yamlErrorText(yerr))
			return nil
		}
	case d.markdown && mode == ModeAuto && d.strict && looksClaude(root):
		d.strict = false
	}
	return root
}

// checkShape refuses YAML too large or too deep to be a definition, and
// YAML that is not a mapping; an empty document is an empty mapping.
func checkShape(sink *diagSink, root *yaml.Node, lineOff int) (*yaml.Node, bool) {
	switch n, deep := countValues(root, maxYAMLValues); {
	case deep:
		sink.errorf(1+lineOff, 1, "the YAML is nested more than %d levels deep; a definition needs a few", maxYAMLDepth)
		return nil, false
	case n > maxYAMLValues:
		sink.errorf(1+lineOff, 1, "the YAML holds more than %d values once aliases (*name) are expanded; write the values out instead of repeating aliases", maxYAMLValues)
		return nil, false
	}
	if root.Kind != yaml.MappingNode {
		if !(root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
			sink.errorf(root.Line+lineOff, root.Column, "a definition is a mapping of \"key: value\" lines, such as %s", topFields["name"])
			return nil, false
		}
		root = &yaml.Node{Kind: yaml.MappingNode}
	}
	return root, true
}

// takeBody makes a Markdown file's body its prompt: a prompt: key in the
// front matter is a problem there, since the body is where a prompt goes.
func takeBody(sink *diagSink, d *definition, src source) {
	if d.has("prompt") {
		p := d.at("prompt")
		sink.problem(d.strict, p.line, p.col, "prompt: in a Markdown file the body below the front matter is the prompt; move this text there")
	}
	if body := strings.TrimSpace(src.body); body != "" {
		d.prompt = body
		d.given["prompt"] = pos{src.bodyLine, 1}
	}
}

// nameFromFile names a definition without name: after its file: the file
// name itself, or, for a Claude Code file, the file name made
// lowercase-and-hyphens.
func nameFromFile(sink *diagSink, d *definition, path string) {
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	d.name = stem
	if slug := slugOf(stem); d.claude && slug != "" && slug != stem {
		sink.warnf(1, 1, "no name: and the file name %q is not lowercase-and-hyphens as Claude Code asks; the type is called %q (add name: %s to say so)", stem, slug, slug)
		d.name = slug
	} else if !typeName.MatchString(stem) {
		sink.errorf(1, 1, "no name: and the file name %q is not a type name; add name: %s", stem, slugify(stem))
	}
}

// checkText refuses what is not UTF-8 text, saying where the first bad byte
// is.
func checkText(data []byte) (line, col int, msg string) {
	bad, what := -1, ""
	if i := bytes.IndexByte(data, 0); i >= 0 {
		bad, what = i, "a NUL byte: this is a binary file, not a definition"
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		if bad < 0 || i < bad {
			bad, what = i, "bytes that are not UTF-8: save the file as UTF-8 text"
		}
	}
	if bad < 0 {
		return 0, 0, ""
	}
	line = 1 + bytes.Count(data[:bad], []byte{'\n'})
	col = bad - bytes.LastIndexByte(data[:bad], '\n')
	return line, col, "the file holds " + what
}

// splitFrontMatter cuts "---\nfront matter\n---\nbody". lineOff is the
// number of file lines before the front matter's first line.
func splitFrontMatter(sink *diagSink, text string) (fm string, lineOff int, body string, bodyLine int, ok bool) {
	lines := strings.SplitAfter(text, "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) || strings.TrimRight(lines[i], " \t\n") != "---" {
		sink.errorf(i+1, 1, "no front matter: start the file with a line \"---\", then name: and description: lines, then \"---\"; the prompt goes below")
		return "", 0, "", 0, false
	}
	open := i
	for j := open + 1; j < len(lines); j++ {
		if t := strings.TrimRight(lines[j], " \t\n"); isFrontMatterEnd(t) {
			return strings.Join(lines[open+1:j], ""), open + 1, strings.Join(lines[j+1:], ""), j + 2, true
		}
	}
	sink.errorf(open+1, 1, "the front matter opened here is never closed: add a line \"---\" after its last key")
	return "", 0, "", 0, false
}

// isFrontMatterEnd reports whether a line (its trailing blanks removed)
// closes front matter: "---", "...", or a longer run of dashes such as
// "-----", which files in the wild use. A line of dashes at the start of a
// line cannot be part of YAML front matter, so reading it as the end only
// turns what would be a YAML error into the file its author meant.
func isFrontMatterEnd(line string) bool {
	return line == "..." || (len(line) >= 3 && strings.Trim(line, "-") == "")
}

// parseYAML parses one YAML document into a node tree, without expanding
// aliases. An empty document gives a null scalar.
func parseYAML(text string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: 1, Column: 1}, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("yaml: line %d: a second YAML document; a file holds one definition", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: 1, Column: 1}, nil
		}
		return doc.Content[0], nil
	}
	return &doc, nil
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): `) })

func yamlErrorLine(err error) int {
	if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil {
			return n
		}
	}
	return 1
}

func yamlErrorText(err error) string {
	s := yamlLine().ReplaceAllString(err.Error(), "")
	return strings.TrimPrefix(s, "yaml: ")
}

// countValues counts the nodes of n with aliases expanded, stopping once
// the count passes limit. Shared subtrees are counted once per use, which
// is what a walk would cost; memoising keeps the count itself cheap.
func countValues(n *yaml.Node, limit int) (count int, tooDeep bool) {
	memo := map[*yaml.Node]int{}
	var walk func(n *yaml.Node, depth int) int
	walk = func(n *yaml.Node, depth int) int {
		if n == nil {
			return 0
		}
		if depth > maxYAMLDepth {
			tooDeep = true
			return limit + 1
		}
		if c, ok := memo[n]; ok {
			return c
		}
		memo[n] = limit + 1 // a node reached again while counting it is a cycle
		total := 1
		if n.Kind == yaml.AliasNode {
			total += walk(n.Alias, depth+1)
		}
		for _, c := range n.Content {
			if total > limit {
				break
			}
			total += walk(c, depth+1)
		}
		total = min(total, limit+1)
		memo[n] = total
		return total
	}
	return walk(n, 0), tooDeep
}

func inClaudeDir(path string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(filepath.Clean(path)), "/"), ".claude")
}

// looksClaude reports whether front matter is written for Claude Code:
// Claude's keys, or Claude's tool names.
func looksClaude(root *yaml.Node) bool {
	if root == nil || root.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i].Value, deref(root.Content[i+1])
		if _, ok := claudeFields[k]; ok || claudeIgnored[k] {
			return true
		}
		if k != "tools" && k != "disallowed_tools" {
			continue
		}
		var names []string
		switch v.Kind {
		case yaml.ScalarNode:
			names = splitTools(v.Value)
		case yaml.SequenceNode:
			for _, item := range v.Content {
				names = append(names, splitTools(deref(item).Value)...)
			}
		}
		if slices.ContainsFunc(names, isClaudeToolName) {
			return true
		}
	}
	return false
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	if n == nil || n.Kind == yaml.AliasNode {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return n
}

// decoder turns the node tree of one file into a definition, reporting
// every problem it meets rather than stopping at the first.
type decoder struct {
	sink    *diagSink
	def     *definition
	lineOff int
	lines   []string // the file's lines, for the columns of a script block
}

func (dc *decoder) pos(n *yaml.Node) pos { return pos{n.Line + dc.lineOff, max(n.Column, 1)} }

func (dc *decoder) errorf(n *yaml.Node, format string, args ...any) {
	p := dc.pos(n)
	dc.sink.errorf(p.line, p.col, format, args...)
}

// problem is an error in strict mode and a warning in lenient mode.
func (dc *decoder) problem(n *yaml.Node, format string, args ...any) {
	p := dc.pos(n)
	dc.sink.problem(dc.def.strict, p.line, p.col, format, args...)
}

func (dc *decoder) warnf(n *yaml.Node, format string, args ...any) {
	p := dc.pos(n)
	dc.sink.warnf(p.line, p.col, format, args...)
}

func (dc *decoder) top(root *yaml.Node) {
	d := dc.def
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], deref(root.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			dc.problem(k, "keys are plain words, such as %s", topFields["name"])
			continue
		}
		key := k.Value
		field, ok := dc.canonical(k)
		if !ok {
			continue
		}
		if p, dup := d.given[field]; dup {
			dc.problem(k, "%s is given twice (first at line %d); keep one", key, p.line)
		}
		d.given[field] = dc.pos(k)
		dc.field(field, k, v)
	}
}

// field decodes v, the value of the top-level key k, which stands for
// field.
func (dc *decoder) field(field string, k, v *yaml.Node) {
	d := dc.def
	switch field {
	case "name":
		dc.name(k, v)
	case "description":
		if s, ok := dc.str(k, v); ok {
			d.description = strings.TrimSpace(s)
		}
	case "prompt":
		if s, ok := dc.str(k, v); ok {
			d.prompt = s
			d.given["prompt"] = dc.pos(v)
		}
	case "tools":
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			delete(d.given, "tools") // "tools:" with nothing: the default set
			return
		}
		d.tools, d.toolPos = dc.toolList(k, v)
	case "disallowed_tools":
		d.disallowed, _ = dc.toolList(k, v)
	case "model":
		dc.model(k, v)
	case "budget":
		dc.budget(v)
	case "maxTurns":
		if n, ok := dc.count(k, v); ok {
			d.budget.MaxTurns = n
		}
	case "inherit_context":
		d.inherit, _ = dc.boolean(k, v)
	case "needs_language_model":
		d.needsLM, _ = dc.boolean(k, v)
	case "output":
		dc.output(v)
	case "extends":
		dc.extends(k, v)
	case "examples":
		dc.examples(k, v)
	case "color":
		d.color, _ = dc.str(k, v)
	case "script", "script_file":
		if d.hooks != nil {
			dc.errorf(k, "give the hooks once: script: (the source) or script_file: (a .go file beside the definition), not both")
			return
		}
		d.hooks = dc.script(k, v)
	case "script_tools":
		dc.scriptTools(v)
	case "workspace":
		dc.workspace(k, v)
	case "isolation":
		dc.isolation(k, v)
	case "run":
		dc.run(v)
	case "mcp_servers":
		dc.mcpServers(k, v)
	case "setup":
		d.setup, d.setupAt = dc.commands("setup", v, MaxSetupCommands, topFields["setup"])
		if d.setup == nil {
			delete(d.given, "setup") // "setup:" with nothing: the parent's, or none
		}
	}
}

// name decodes name:, checking that it is a type name.
func (dc *decoder) name(k, v *yaml.Node) {
	d := dc.def
	s, ok := dc.str(k, v)
	if !ok {
		return
	}
	d.name = strings.TrimSpace(s)
	if slug := slugOf(d.name); d.claude && slug != "" && slug != d.name {
		// Claude Code's names are lowercase words joined by
		// hyphens, and files in the wild often write a title.
		dc.warnf(v, "name %q is not lowercase-and-hyphens as Claude Code asks; the type is called %q (write name: %s to say so)", d.name, slug, slug)
		d.name = slug
	} else if !typeName.MatchString(d.name) {
		dc.errorf(v, "name %q is not a type name: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (no spaces or '/'), such as %q", d.name, slugify(d.name))
	}
}

// model decodes model:, a model name or alias; one it cannot read is
// inherit in a lenient file.
func (dc *decoder) model(k, v *yaml.Node) {
	d := dc.def
	s, ok := dc.str(k, v)
	if !ok {
		return
	}
	m, err := modelname.Normalize(s)
	if err != nil {
		dc.problem(v, "%s", err)
		if !d.strict {
			m = modelname.Inherit
		}
	}
	d.model = m
}

// extends decodes extends:, the name of the type this one builds on.
func (dc *decoder) extends(k, v *yaml.Node) {
	d := dc.def
	s, ok := dc.str(k, v)
	if !ok {
		return
	}
	d.extends = strings.TrimSpace(s)
	d.given["extends"] = dc.pos(v)
	if !typeName.MatchString(d.extends) {
		dc.errorf(v, "extends %q: name a type, such as explore", d.extends)
	}
}

// canonical maps a key onto a field name, reporting keys it does not know.
func (dc *decoder) canonical(k *yaml.Node) (string, bool) {
	key, d := k.Value, dc.def
	if _, ok := topFields[key]; ok {
		return key, true
	}
	if to, ok := claudeFields[key]; ok && !d.strict {
		return to, true
	}
	if claudeIgnored[key] && !d.strict {
		dc.warnf(k, "%s is a Claude Code setting troupe does not support; ignored", key)
		return "", false
	}
	names := slices.Sorted(maps.Keys(topFields))
	if key == "<<" {
		dc.problem(k, "merge keys (<<) are not supported in definitions; write the fields out")
		return "", false
	}
	hint := ""
	switch {
	case slices.Contains(budgetFields, key):
		hint = fmt.Sprintf("; it belongs under budget:, as budget: {%s: ...}", key)
	case key == "maxTurns":
		hint = "; write budget: {max_turns: N}"
	case key == "disallowedTools":
		hint = "; write disallowed_tools:"
	case key == "isolation":
		hint = "; write workspace: worktree (the default for a type that changes files)"
	default:
		if near := suggest.Nearest(key, names); near != "" {
			hint = fmt.Sprintf("; did you mean %q?", near)
		} else if d.strict {
			hint = "; the fields are " + strings.Join(names, ", ")
		}
	}
	if d.strict {
		dc.errorf(k, "unknown field %q%s", key, hint)
	} else {
		dc.warnf(k, "ignored field %q%s", key, hint)
	}
	return "", false
}

// str reads a scalar as a string; null reads as "".
func (dc *decoder) str(k, v *yaml.Node) (string, bool) {
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return "", true
	case v.Kind == yaml.ScalarNode:
		return v.Value, true
	}
	dc.errorf(v, "%s must be a single value, not a %s; quote it if it holds \": \" or starts with [ or {", k.Value, kindName(v))
	return "", false
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	default:
		return "value"
	}
}

// count reads a budget field: a positive whole number. Zero is refused as
// well as negatives: in a Budget zero means "not set", and a file that
// wants that leaves the field out.
func (dc *decoder) count(k, v *yaml.Node) (int, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		dc.errorf(v, "%s must be a whole number, such as 20", k.Value)
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(v.Value), "_", ""), 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange), err == nil && (n > 1<<40 || n < -1<<40):
		dc.errorf(v, "%s %s is out of range; give a smaller number", k.Value, v.Value)
		return 0, false
	case err != nil:
		dc.errorf(v, "%s must be a whole number, such as 20, not %q", k.Value, v.Value)
		return 0, false
	case n <= 0:
		dc.errorf(v, "%s is %d: %s", k.Value, n, notPositive(k.Value))
		return 0, false
	}
	return int(n), true
}

func (dc *decoder) boolean(k, v *yaml.Node) (bool, bool) {
	if v.Kind == yaml.ScalarNode {
		switch strings.ToLower(strings.TrimSpace(v.Value)) {
		case "true", "yes", "on":
			return true, true
		case "false", "no", "off":
			return false, true
		}
	}
	dc.problem(v, "%s must be true or false", k.Value)
	return false, false
}

// toolList reads tools as a YAML list, a comma string or [].
func (dc *decoder) toolList(k, v *yaml.Node) ([]string, []pos) {
	type raw struct {
		name string
		at   pos
	}
	var items []raw
	addScalar := func(n *yaml.Node) {
		p := dc.pos(n)
		from := 0
		for _, part := range splitTools(n.Value) {
			at := p
			// Point at the name itself on a one-line plain scalar.
			if n.Style == 0 && !strings.Contains(n.Value, "\n") {
				if i := strings.Index(n.Value[from:], part); i >= 0 {
					at.col = p.col + from + i
					from += i + len(part)
				}
			}
			items = append(items, raw{part, at})
		}
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag != "!!null" {
			addScalar(v)
		}
	case yaml.SequenceNode:
		for _, item := range v.Content {
			item = deref(item)
			if item.Kind != yaml.ScalarNode {
				dc.problem(item, "%s: each item is a tool name, such as read", k.Value)
				continue
			}
			addScalar(item)
		}
	default:
		dc.problem(v, "%s is a list of tool names, such as [read, grep, glob], or \"Read, Grep, Glob\"", k.Value)
		return nil, nil
	}
	names, at := []string{}, []pos{}
	allowed := k.Value == "tools"
	for _, it := range items {
		m := mapTool(it.name)
		switch {
		case allowed && m.warn != "":
			dc.sink.warnf(it.at.line, it.at.col, "%s", m.warn)
		case !allowed && m.bash && it.name != "Bash":
			dc.sink.warnf(it.at.line, it.at.col, "tool %q: troupe cannot refuse some commands only, so the agent runs without run", it.name)
		}
		if allowed && m.bash {
			dc.noteBash(it.at, m.allow)
		}
		if m.name == "" || slices.Contains(names, m.name) {
			continue
		}
		names, at = append(names, m.name), append(at, it.at)
	}
	return names, at
}

// noteBash records that the tools list names Bash, at at, and the command
// prefix its pattern gives, if any.
func (dc *decoder) noteBash(at pos, allow string) {
	d := dc.def
	if d.bash == nil {
		d.bash = &bashTool{at: at}
	}
	if allow != "" && !slices.Contains(d.bash.allow, allow) && len(d.bash.allow) < MaxRunAllow {
		d.bash.allow = append(d.bash.allow, allow)
	}
}

func (dc *decoder) budget(v *yaml.Node) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return
	}
	if v.Kind != yaml.MappingNode {
		dc.errorf(v, "budget is a mapping, such as %s", topFields["budget"])
		return
	}
	b := &dc.def.budget
	seen := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], deref(v.Content[i+1])
		key := k.Value
		if !slices.Contains(budgetFields, key) && !dc.def.strict {
			// Lenient files may write maxTokens or max-time.
			for _, f := range budgetFields {
				if suggest.SameName(f, key) {
					key = f
				}
			}
		}
		if seen[key] {
			dc.problem(k, "budget.%s is given twice; keep one", key)
		}
		seen[key] = true
		switch key {
		case "max_tokens":
			if n, ok := dc.count(k, val); ok {
				b.MaxTokens = n
			}
		case "max_tool_calls":
			if n, ok := dc.count(k, val); ok {
				b.MaxToolCalls = n
			}
		case "max_turns":
			if n, ok := dc.count(k, val); ok {
				b.MaxTurns = n
			}
		case "max_time":
			b.MaxTime = dc.duration(k, val)
		case "max_cost_usd":
			b.MaxCostUSD = dc.dollars(k, val)
		default:
			hint := "; the budget fields are " + strings.Join(budgetFields, ", ")
			if near := suggest.Nearest(key, budgetFields); near != "" {
				hint = fmt.Sprintf("; did you mean %q?", near)
			}
			dc.problem(k, "unknown budget field %q%s", key, hint)
		}
	}
}

// dollars reads an amount in US dollars, such as 0.50.
func (dc *decoder) dollars(k, v *yaml.Node) float64 {
	s := strings.TrimPrefix(strings.TrimSpace(v.Value), "$")
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case v.Kind != yaml.ScalarNode || v.Tag == "!!null" || err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		dc.errorf(v, "%s is an amount in US dollars, such as 0.50", k.Value)
		return 0
	case f <= 0:
		dc.errorf(v, "%s is %s: %s", k.Value, v.Value, notPositive(k.Value))
		return 0
	}
	return f
}

func (dc *decoder) duration(k, v *yaml.Node) time.Duration {
	return dc.positiveDuration(k, v, notPositive(k.Value))
}

// positiveDuration reads a duration above zero; nonPositive is what one
// of zero or less is told.
func (dc *decoder) positiveDuration(k, v *yaml.Node, nonPositive string) time.Duration {
	s := strings.TrimSpace(v.Value)
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || s == "" {
		dc.errorf(v, "%s is a duration, such as 90s, 5m or 1h30m", k.Value)
		return 0
	}
	dur, err := ParseDuration(k.Value, s)
	switch {
	case err != nil:
		dc.errorf(v, "%s", err)
		return 0
	case dur <= 0:
		dc.errorf(v, "%s is %s: %s", k.Value, s, nonPositive)
		return 0
	}
	return dur
}

// notPositive is what a budget field of zero or less is told. The same
// rule holds for budgets given on the command line.
func notPositive(field string) string {
	return fmt.Sprintf("a budget must be positive; leave %s out to inherit the default", field)
}

func (dc *decoder) output(v *yaml.Node) {
	o := &dc.def.output
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return
		}
		dc.format(v)
		return
	case yaml.MappingNode:
	default:
		dc.errorf(v, "output is a mapping, such as %s", topFields["output"])
		return
	}
	var schemaNode *yaml.Node
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], deref(v.Content[i+1])
		switch k.Value {
		case "format":
			dc.format(val)
		case "schema":
			schemaNode = val
			if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
				continue
			}
			raw, err := schemaJSON(val)
			if err != nil {
				dc.errorf(val, "output.schema: %v", err)
				continue
			}
			if err := checkSchema(raw); err != nil {
				dc.errorf(val, "output.schema is not a usable JSON schema: %v", err)
				continue
			}
			o.Schema = raw
		default:
			hint := "; the output fields are format and schema"
			if near := suggest.Nearest(k.Value, outputFields); near != "" {
				hint = fmt.Sprintf("; did you mean %q?", near)
			}
			dc.problem(k, "unknown output field %q%s", k.Value, hint)
		}
	}
	if len(o.Schema) > 0 {
		switch o.Format {
		case "":
			o.Format = OutputJSON
		case OutputText:
			dc.errorf(schemaNode, "output.schema needs format: json; a text answer is not checked against a schema")
		}
	}
}

func (dc *decoder) format(v *yaml.Node) {
	f := strings.ToLower(strings.TrimSpace(v.Value))
	if v.Kind != yaml.ScalarNode || (f != OutputText && f != OutputJSON) {
		dc.errorf(v, "output format %q: write text or json", v.Value)
		return
	}
	dc.def.output.Format = f
}

// schemaJSON converts a schema written as YAML (or as a JSON string) into
// JSON.
func schemaJSON(n *yaml.Node) (json.RawMessage, error) {
	if n.Kind == yaml.ScalarNode {
		s := strings.TrimSpace(n.Value)
		if !json.Valid([]byte(s)) {
			return nil, errors.New("write the schema as a YAML mapping, such as {type: object, required: [answer]}, or as a JSON string")
		}
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, err
		}
		if _, ok := v.(map[string]any); !ok {
			if _, isBool := v.(bool); !isBool {
				return nil, errors.New("a schema is an object, such as {type: object}")
			}
		}
		return json.RawMessage(s), nil
	}
	v, err := nodeValue(n)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("a schema is a mapping, such as {type: object, required: [answer]}")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot be written as JSON: %w", err)
	}
	return b, nil
}

// nodeValue converts a node to plain Go values; countValues has bounded
// its size already.
func nodeValue(n *yaml.Node) (any, error) {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key must be a plain value", k.Line)
			}
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return n.Value, nil //nolint:nilerr // an undecodable scalar is kept as text
		}
		switch x := v.(type) {
		case nil, bool, int, int64, uint64, float64, string:
			return x, nil
		default:
			return n.Value, nil
		}
	}
	return nil, nil
}

func (dc *decoder) examples(k, v *yaml.Node) {
	d := dc.def
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag != "!!null" && strings.TrimSpace(v.Value) != "" {
			d.examples = []string{strings.TrimSpace(v.Value)}
		}
	case yaml.SequenceNode:
		d.examples = []string{}
		for _, item := range v.Content {
			item = deref(item)
			if item.Kind != yaml.ScalarNode || strings.TrimSpace(item.Value) == "" {
				dc.problem(item, "examples: each item is a task, such as \"where is X handled?\"")
				continue
			}
			d.examples = append(d.examples, strings.TrimSpace(item.Value))
		}
	default:
		dc.problem(v, "%s is a list of tasks, such as %s", k.Value, topFields["examples"])
	}
}

// checkPrompt makes sure a troupe prompt parses as a template and keeps to
// what a prompt may use (CompilePrompt); a Claude Code prompt is plain
// text, so its "{{" are escaped instead.
func (dc *decoder) checkPrompt() {
	d := dc.def
	if !strings.Contains(d.prompt, "{{") {
		return
	}
	if d.claude {
		d.prompt = escapeTemplate(d.prompt)
		return
	}
	p := d.at("prompt")
	if _, err := template.New(d.name).Option("missingkey=error").Parse(d.prompt); err != nil {
		msg := strings.TrimPrefix(err.Error(), "template: ")
		dc.sink.problem(d.strict, p.line, p.col, "the prompt is a text/template and does not parse (%s); write {{\"{{\"}} for a literal {{", msg)
	} else if _, err := CompilePrompt(d.name, d.prompt); err != nil {
		msg := strings.TrimPrefix(err.Error(), ErrPromptTemplate.Error()+": ")
		dc.sink.problem(d.strict, p.line, p.col, "the prompt template is refused: %s", msg)
	} else {
		return
	}
	if !d.strict {
		d.prompt = escapeTemplate(d.prompt)
	}
}

// escapeTemplate makes text render as itself through text/template.
func escapeTemplate(s string) string {
	return strings.ReplaceAll(s, "{{", "{{\"{{\"}}")
}

var slugBad = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

// slugify turns a would-be name into a valid one, for suggestions.
func slugify(s string) string {
	if s = slugOf(s); s != "" {
		return s
	}
	return "my-agent"
}

// slugOf is s lowercased, with each run of characters a type name cannot
// hold replaced by '-': "Python Security Expert" is
// "python-security-expert". It is "" when nothing of s is left.
func slugOf(s string) string {
	s = strings.Trim(slugBad().ReplaceAllString(strings.ToLower(strings.TrimSpace(s)), "-"), "-._")
	if len(s) > 64 {
		s = strings.TrimRight(s[:64], "-._")
	}
	return s
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
