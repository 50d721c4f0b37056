package agenttypes_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelname"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/agents/golden")

// fixtures is the definition fixtures directory, relative to this package.
var fixtures = filepath.Join("..", "testdata", "agents")

// testRegistry holds what builtin.Register would add, in small: the
// read-only tools, the tools that change files, and an explore type that
// works offline.
func testRegistry(t testing.TB) *agenttypes.Registry {
	t.Helper()
	reg := agenttypes.NewRegistry()
	for _, name := range append(slices.Clone(agenttypes.DefaultTools), agenttypes.ChangingTools...) {
		require.NoError(t, reg.RegisterTool(&agenttypes.ToolFunc{
			ToolSpec: agenttypes.ToolSpec{Name: name, Description: "the " + name + " tool", ReadOnly: !slices.Contains(agenttypes.ChangingTools, name)},
			Func:     func(context.Context, json.RawMessage) (string, error) { return name, nil },
		}))
	}
	require.NoError(t, reg.RegisterType(agenttypes.Type{
		Name:        "explore",
		Description: "Finds where things are in a repository.",
		Prompt:      "You explore {{.Dir}}.",
		Tools:       agenttypes.DefaultTools,
		Budget:      agenttypes.Budget{MaxTokens: 200_000, MaxTime: 5 * time.Minute, MaxToolCalls: 60, MaxTurns: 25},
		ParseOutput: func(s string) (any, error) { return s, nil },
		Source:      "builtin",
	}))
	return reg
}

// fixtureFiles lists every definition fixture, good and bad.
func fixtureFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(fixtures, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "golden" {
			return filepath.SkipDir
		}
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".md":
			files = append(files, p)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// render is the golden form of one load: the diagnostics, then the type.
func render(t *testing.T, typ agenttypes.Type, diags agenttypes.Diagnostics) string {
	var b strings.Builder
	b.WriteString("== diagnostics\n")
	for _, d := range diags {
		b.WriteString(filepath.ToSlash(d.String()) + "\n")
	}
	b.WriteString("== type\n")
	if !diags.HasErrors() {
		typ.Source = filepath.ToSlash(typ.Source)
		out, err := json.MarshalIndent(typ, "", "  ")
		require.NoError(t, err)
		b.Write(out)
		b.WriteString("\n")
	}
	return b.String()
}

func TestFixturesGolden(t *testing.T) {
	reg := testRegistry(t)
	for _, f := range fixtureFiles(t) {
		rel, _ := filepath.Rel(fixtures, f)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			typ, diags := agenttypes.LoadFile(f, agenttypes.LoadOptions{Registry: reg})
			got := render(t, typ, diags)
			golden := filepath.Join(fixtures, "golden", strings.ReplaceAll(filepath.ToSlash(rel), "/", "__")+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./agenttypes -run TestFixturesGolden -update")
			assert.Equal(t, string(want), got)

			good := strings.HasPrefix(filepath.ToSlash(rel), "good/")
			assert.Equal(t, good, !diags.HasErrors(), "fixtures under good/ load, those under bad/ do not:\n%s", diags)
			if good {
				assert.Equal(t, f, typ.Source)
				assert.NoError(t, typ.Validate())
			} else {
				assert.Equal(t, agenttypes.Type{}.Name, typ.Name, "a failed load returns no type")
			}
		})
	}
}

func TestDefinitionFields(t *testing.T) {
	reg := testRegistry(t)
	load := func(t *testing.T, rel string) agenttypes.Type {
		t.Helper()
		typ, diags := agenttypes.LoadFile(filepath.Join(fixtures, rel), agenttypes.LoadOptions{Registry: reg})
		require.False(t, diags.HasErrors(), "%s", diags)
		return typ
	}
	t.Run("every field", func(t *testing.T) {
		typ := load(t, "good/reviewer.yaml")
		assert.Equal(t, "reviewer", typ.Name)
		assert.Equal(t, []string{"read", "grep", "git"}, typ.Tools, "disallowed_tools takes glob out")
		assert.Equal(t, "anthropic:claude-sonnet-4-5", typ.Model)
		assert.Equal(t, agenttypes.Budget{MaxTokens: 150000, MaxTime: 5 * time.Minute, MaxToolCalls: 40, MaxTurns: 20}, typ.Budget)
		assert.True(t, typ.InheritContext)
		assert.Equal(t, agenttypes.OutputJSON, typ.Output.Format)
		assert.JSONEq(t, `{"type":"object","required":["findings"],"properties":{"findings":{"type":"array","items":{"type":"object","required":["severity","text"],"properties":{"severity":{"enum":["high","medium","low"]},"text":{"type":"string"}}}}}}`, string(typ.Output.Schema))
		assert.Equal(t, []string{"review the uncommitted diff", "review HEAD~1..HEAD"}, typ.Examples)
		assert.True(t, typ.NeedsLanguageModel, "a file type needs a language model unless it says otherwise")
		assert.Contains(t, typ.Prompt, "{{.Dir}}", "a troupe prompt stays a template")
	})
	t.Run("extends", func(t *testing.T) {
		typ := load(t, "good/todo-list.yml")
		assert.Equal(t, "explore", typ.Extends)
		assert.Equal(t, "You explore {{.Dir}}.", typ.Prompt, "the prompt comes from explore")
		assert.Equal(t, agenttypes.DefaultTools, typ.Tools)
		assert.Equal(t, agenttypes.Budget{MaxTokens: 200_000, MaxTime: 90 * time.Second, MaxToolCalls: 60, MaxTurns: 25}, typ.Budget, "budget fields override one by one")
		assert.False(t, typ.NeedsLanguageModel, "explore works offline, and so does what extends it")
		assert.NotNil(t, typ.ParseOutput, "the parent's output parser comes along")
	})
	t.Run("markdown", func(t *testing.T) {
		typ := load(t, "good/summarizer.md")
		assert.Equal(t, "Summarises a package: what it is for and its main entry points.", typ.Description, "folded description")
		assert.Equal(t, []string{"read", "glob", "ls"}, typ.Tools)
		assert.Equal(t, "You summarise Go packages in {{.Dir}}. Read the package comment first.", typ.Prompt)
	})
	t.Run("claude", func(t *testing.T) {
		typ := load(t, "good/claude/code-reviewer.md")
		assert.Equal(t, []string{"read", "grep", "glob"}, typ.Tools, "Bash is given no commands to run")
		assert.Equal(t, modelname.Inherit, typ.Model)
		assert.Contains(t, typ.Prompt, `{{"{{"}} .Values.image }}`, "a Claude prompt is text: its {{ are escaped")
	})
	t.Run("claude tools", func(t *testing.T) {
		typ := load(t, "good/claude/agent-tools.md")
		assert.Equal(t, []string{"read", "note", "git"}, typ.Tools)
		assert.Equal(t, "anthropic:claude-sonnet-4-5", typ.Model)
	})
	t.Run("claude list and unknown keys", func(t *testing.T) {
		typ := load(t, "good/claude/list-tools.md")
		assert.Equal(t, []string{"read", "glob", "note"}, typ.Tools)
		assert.Equal(t, 12, typ.Budget.MaxTurns, "maxTurns")
	})
	t.Run("empty tools", func(t *testing.T) {
		typ := load(t, "good/claude/empty-tools.md")
		assert.Empty(t, typ.Tools)
		assert.NotNil(t, typ.Tools)
		assert.Equal(t, "anthropic:claude-haiku-4-5", typ.Model)
	})
	t.Run("fallback never reads the body", func(t *testing.T) {
		typ := load(t, "good/claude/multiline-fallback.md")
		assert.Equal(t, "data-scientist", typ.Name)
		assert.Equal(t, []string{"read", "grep"}, typ.Tools)
		assert.Contains(t, typ.Description, "BigQuery operations and data insights")
		assert.Contains(t, typ.Description, "Context: a capitalised line", "an example line continues the description")
		assert.Contains(t, typ.Prompt, "name: body-name")
		typ = load(t, "good/claude/messy-description.md")
		assert.Equal(t, "api-designer", typ.Name)
		assert.Contains(t, typ.Description, `<example>\nContext:`)
		assert.Equal(t, []string{"read", "write", "edit"}, typ.Tools)
		assert.Contains(t, typ.Prompt, "name: not-a-key")
	})
	t.Run("claude title as name", func(t *testing.T) {
		typ := load(t, "good/claude/title-name.md")
		assert.Equal(t, "python-security-expert", typ.Name)
		assert.Equal(t, []string{"read", "grep", "glob"}, typ.Tools)
	})
	t.Run("claude front matter closed by a longer line", func(t *testing.T) {
		typ := load(t, "good/claude/long-closer.md")
		assert.Equal(t, "changelog-writer", typ.Name)
		assert.Equal(t, []string{"read", "grep"}, typ.Tools)
		assert.Equal(t, "You write changelog entries. Keep each to one line.", typ.Prompt)
	})
	t.Run("name from the file", func(t *testing.T) {
		assert.Equal(t, "no-name", load(t, "good/claude/no-name.md").Name)
	})
}

func TestStrictAndLenient(t *testing.T) {
	tests := []struct {
		name, path, text string
		mode             agenttypes.Mode
		errs, warns      []string // substrings, in order
	}{
		{
			name: "strict rejects unknown fields and says what to write",
			path: "agents/x.yaml", text: "name: x\ndescription: d\ntols: [read]\nversion: 2\n",
			errs: []string{`x.yaml:3:1: unknown field "tols"; did you mean "tools"?`, `x.yaml:4:1: unknown field "version"; the fields are budget, color`},
		},
		{
			name: "lenient ignores unknown fields with a warning",
			path: ".claude/agents/x.yaml", text: "name: x\ndescription: d\nversion: 2\n",
			warns: []string{`x.yaml:3:1: warning: ignored field "version"`},
		},
		{
			name: "a Claude key makes a Markdown file lenient",
			path: "agents/x.md", text: "---\nname: x\ndescription: d\ncolor: red\nmaxTurns: 3\nauthor: me\n---\nbody\n",
			warns: []string{`x.md:6:1: warning: ignored field "author"`},
		},
		{
			name: "Claude tool names make a Markdown file lenient",
			path: "agents/x.md", text: "---\nname: x\ndescription: d\ntools: Read, Grep\ntags: [a]\n---\nbody\n",
			warns: []string{`x.md:5:1: warning: ignored field "tags"`},
		},
		{
			name: "forced strict refuses Claude keys",
			path: ".claude/agents/x.md", text: "---\nname: x\ndescription: d\nmaxTurns: 3\n---\nbody\n", mode: agenttypes.ModeStrict,
			errs: []string{`x.md:4:1: unknown field "maxTurns"; write budget: {max_turns: N}`},
		},
		{
			name: "strict Markdown with invalid YAML is an error with a line",
			path: "agents/x.md", text: "---\nname: x\ndescription: a: b\n---\nbody\n",
			errs: []string{`x.md:3:1: not valid YAML: mapping values are not allowed in this context`},
		},
		{
			name: "lenient Markdown with invalid YAML falls back with a warning",
			path: ".claude/agents/x.md", text: "---\nname: x\ndescription: a: b\n---\nbody\n",
			warns: []string{`x.md:3:1: warning: front matter is not valid YAML`},
		},
		{
			name: "YAML files never fall back",
			path: ".claude/agents/x.yaml", text: "name: x\ndescription: a: b\n",
			errs: []string{`x.yaml:2:1: not valid YAML`},
		},
		{
			name: "prompt in Markdown front matter",
			path: "agents/x.md", text: "---\nname: x\ndescription: d\nprompt: p\n---\nbody\n",
			errs: []string{`x.md:4:9: prompt: in a Markdown file the body below the front matter is the prompt`},
		},
		{
			name: "every problem at once",
			path: "agents/x.yaml", text: "name: a b\ndescription: [d]\ntools: read\nbudget: {max_tokens: -1, max_time: soon, max_turns: 1.5}\noutput: {format: text, schema: {type: object}}\nextends: explore\n",
			errs: []string{
				`x.yaml:1:7: name "a b" is not a type name`,
				`x.yaml:2:14: description must be a single value`,
				`x.yaml:4:22: max_tokens is -1`,
				`x.yaml:4:36: max_time "soon" is not a duration`,
				`x.yaml:4:53: max_turns must be a whole number`,
				`x.yaml:5:32: output.schema needs format: json`,
				`x.yaml:6:10: extends unknown type "explore"`,
			},
		},
		{
			name: "unknown tool: error when strict, warning when lenient",
			path: "agents/x.yaml", text: "name: x\ndescription: d\ntools: [read, reed, frobnicate]\n",
			errs: []string{`x.yaml:3:15: unknown tool "reed"; did you mean "read"?`, `x.yaml:3:21: unknown tool "frobnicate" (the tools there are: git, glob, grep, ls, note, read, symbols)`},
		},
		{
			name: "unknown tool in lenient mode",
			path: ".claude/agents/x.md", text: "---\nname: x\ndescription: d\ntools: Read, Frobnicate\n---\n",
			warns: []string{`x.md:4:14: warning: unknown tool "Frobnicate"; the agent runs without it`},
		},
		{
			name: "tools to come are a warning",
			path: "agents/x.yaml", text: "name: x\ndescription: d\ntools: [read, write]\n",
			warns: []string{`x.yaml:3:15: warning: tool "write" is not offered here`},
		},
		{
			name: "bad model",
			path: "agents/x.yaml", text: "name: x\ndescription: d\nmodel: gpt-4o\n",
			errs: []string{`x.yaml:3:8: model "gpt-4o": write provider:model; did you mean openai:gpt-4o?`},
		},
		{
			name: "duplicate key",
			path: "agents/x.yaml", text: "name: x\ndescription: d\ndescription: e\n",
			errs: []string{`x.yaml:3:1: description is given twice (first at line 2); keep one`},
		},
		{
			name: "prompt template that does not parse",
			path: "agents/x.yaml", text: "name: x\ndescription: d\nprompt: \"hello {{ .Dir\"\n",
			errs: []string{`x.yaml:3:9: the prompt is a text/template and does not parse`},
		},
		{
			name: "a second document",
			path: "agents/x.yaml", text: "name: x\ndescription: d\n---\nname: y\n",
			errs: []string{`x.yaml:3:1: not valid YAML: a second YAML document; a file holds one definition`},
		},
		{
			name: "front matter is not a mapping",
			path: "agents/x.md", text: "---\n- a\n- b\n---\n",
			errs: []string{`x.md:2:1: a definition is a mapping of "key: value" lines`},
		},
		{
			name: "unsupported extension",
			path: "agents/x.json", text: "{}",
			errs: []string{`x.json: unsupported file type ".json"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, diags := agenttypes.ParseDefinition(tt.path, []byte(tt.text), agenttypes.LoadOptions{Mode: tt.mode})
			assertDiags(t, tt.errs, diags.Errors())
			if tt.warns != nil {
				assertDiags(t, tt.warns, diags.Warnings())
			}
			if len(tt.errs) == 0 {
				assert.Equal(t, "x", typ.Name)
			}
		})
	}
}

// assertDiags checks that each diagnostic contains the substring at its
// index, and that there are as many of each.
func assertDiags(t *testing.T, want []string, got agenttypes.Diagnostics) {
	t.Helper()
	require.Len(t, got, len(want), "%s", got)
	for i, w := range want {
		assert.Contains(t, got[i].String(), w)
	}
}

// Claude Code files from the wild that differ from troupe's format in
// small ways load, with a warning where the name changes.
func TestClaudeNamesAndDelimiters(t *testing.T) {
	tests := []struct {
		name, path, text string
		wantName         string // "" when the file does not load
		want             []string
	}{
		{
			name: "a title as name is slugged", path: ".claude/agents/x.md",
			text:     "---\nname: Python Security Expert\ndescription: d\n---\nbody\n",
			wantName: "python-security-expert",
			want:     []string{`.claude/agents/x.md:2:7: warning: name "Python Security Expert" is not lowercase-and-hyphens as Claude Code asks; the type is called "python-security-expert" (write name: python-security-expert to say so)`},
		},
		{
			name: "capitals are lowered", path: ".claude/agents/x.md",
			text:     "---\nname: CodeReviewer\ndescription: d\n---\nbody\n",
			wantName: "codereviewer",
			want:     []string{`.claude/agents/x.md:2:7: warning: name "CodeReviewer" is not lowercase-and-hyphens as Claude Code asks; the type is called "codereviewer"`},
		},
		{
			name: "a Claude-style file outside .claude is slugged too", path: "agents/x.md",
			text:     "---\nname: Data Scientist\ndescription: d\ntools: Read, Bash\n---\nbody\n",
			wantName: "data-scientist",
			want:     []string{`x.md:2:7: warning: name "Data Scientist" is not lowercase-and-hyphens`, `x.md:4:14: warning: tool "Bash"`},
		},
		{
			name: "a file name that is a title", path: ".claude/agents/Python Expert.md",
			text:     "---\ndescription: d\n---\nbody\n",
			wantName: "python-expert",
			want:     []string{`Python Expert.md:1:1: warning: no name: and the file name "Python Expert" is not lowercase-and-hyphens as Claude Code asks; the type is called "python-expert" (add name: python-expert to say so)`},
		},
		{
			name: "a name with nothing to slug is an error", path: ".claude/agents/x.md",
			text: "---\nname: \"???\"\ndescription: d\n---\nbody\n",
			want: []string{`x.md:2:7: name "???" is not a type name`},
		},
		{
			name: "troupe's own files keep the error", path: "agents/x.md",
			text: "---\nname: Python Security Expert\ndescription: d\n---\nbody\n",
			want: []string{`x.md:2:7: name "Python Security Expert" is not a type name: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (no spaces or '/'), such as "python-security-expert"`},
		},
		{
			name: "and keep capitals", path: "agents/x.yaml",
			text:     "name: CodeReviewer\ndescription: d\nprompt: body\n",
			wantName: "CodeReviewer",
		},
		{
			name: "a longer closing line", path: ".claude/agents/x.md",
			text:     "---\nname: x\ndescription: d\ntools: Read\n-----\nbody\n",
			wantName: "x",
		},
		{
			name: "a longer closing line in troupe's own Markdown", path: "agents/x.md",
			text:     "---\nname: x\ndescription: d\n----------\nbody\n",
			wantName: "x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, diags := agenttypes.ParseDefinition(tt.path, []byte(tt.text), agenttypes.LoadOptions{})
			if tt.wantName == "" {
				assertDiags(t, tt.want, diags.Errors())
				return
			}
			require.False(t, diags.HasErrors(), "%s", diags)
			assertDiags(t, tt.want, diags)
			assert.Equal(t, tt.wantName, typ.Name)
			assert.Equal(t, "body", typ.Prompt, "the body after the closing line is the prompt")
		})
	}
}

// A budget written in a file must be positive: zero does not mean "the
// default" there (leaving the field out does), and the command line
// refuses zero too.
func TestBudgetMustBePositive(t *testing.T) {
	tests := []struct {
		name, path, text, want string
	}{
		{"zero tool calls", "agents/x.yaml", "name: x\ndescription: d\nbudget: {max_tool_calls: 0}\n",
			"agents/x.yaml:3:26: max_tool_calls is 0: a budget must be positive; leave max_tool_calls out to inherit the default"},
		{"zero tokens", "agents/x.yaml", "name: x\ndescription: d\nbudget:\n  max_tokens: 0\n",
			"agents/x.yaml:4:15: max_tokens is 0: a budget must be positive; leave max_tokens out to inherit the default"},
		{"zero turns", "agents/x.yaml", "name: x\ndescription: d\nbudget:\n  max_turns: 0\n",
			"agents/x.yaml:4:14: max_turns is 0: a budget must be positive; leave max_turns out to inherit the default"},
		{"negative turns", "agents/x.yaml", "name: x\ndescription: d\nbudget:\n  max_turns: -2\n",
			"agents/x.yaml:4:14: max_turns is -2: a budget must be positive; leave max_turns out to inherit the default"},
		{"zero time", "agents/x.yaml", "name: x\ndescription: d\nbudget:\n  max_time: 0s\n",
			"agents/x.yaml:4:13: max_time is 0s: a budget must be positive; leave max_time out to inherit the default"},
		{"zero time with no unit", "agents/x.yaml", "name: x\ndescription: d\nbudget:\n  max_time: 0\n",
			"agents/x.yaml:4:13: max_time is 0: a budget must be positive; leave max_time out to inherit the default"},
		{"negative time", "agents/x.yaml", "name: x\ndescription: d\nbudget:\n  max_time: -5m\n",
			"agents/x.yaml:4:13: max_time is -5m: a budget must be positive; leave max_time out to inherit the default"},
		{"Claude maxTurns 0", ".claude/agents/x.md", "---\nname: x\ndescription: d\nmaxTurns: 0\n---\nbody\n",
			".claude/agents/x.md:4:11: maxTurns is 0: a budget must be positive; leave maxTurns out to inherit the default"},
		{"lenient budget with a zero", ".claude/agents/x.md", "---\nname: x\ndescription: d\ntools: Read\nbudget: {maxToolCalls: 0}\n---\nbody\n",
			".claude/agents/x.md:5:24: maxToolCalls is 0: a budget must be positive; leave maxToolCalls out to inherit the default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, diags := agenttypes.ParseDefinition(tt.path, []byte(tt.text), agenttypes.LoadOptions{})
			require.Len(t, diags.Errors(), 1, "%s", diags)
			assert.Equal(t, tt.want, diags.Errors()[0].String())
			assert.Empty(t, typ.Name, "the type is not loaded")
		})
	}
	typ, diags := agenttypes.ParseDefinition("agents/x.yaml", []byte("name: x\ndescription: d\nbudget: {max_tool_calls: 1, max_turns: 1, max_tokens: 1, max_time: 1ms}\n"), agenttypes.LoadOptions{})
	require.Empty(t, diags)
	assert.Equal(t, agenttypes.Budget{MaxToolCalls: 1, MaxTurns: 1, MaxTokens: 1, MaxTime: time.Millisecond}, typ.Budget, "the smallest positive values load")
}

func TestDiagnosticsError(t *testing.T) {
	_, diags := agenttypes.LoadFile(filepath.Join(fixtures, "bad", "typo.yaml"), agenttypes.LoadOptions{})
	err := diags.Err()
	require.Error(t, err)
	var de *agenttypes.DefinitionError
	require.True(t, errors.As(err, &de))
	assert.ErrorIs(t, err, agenttypes.ErrInvalid)
	assert.Len(t, de.Diagnostics, strings.Count(err.Error(), "\n")+1, "one line per diagnostic")
	assert.Nil(t, agenttypes.Diagnostics{{Severity: agenttypes.SeverityWarning, Message: "w"}}.Err(), "warnings are no error")

	d := agenttypes.Diagnostic{File: "a.yaml", Line: 3, Col: 5, Severity: agenttypes.SeverityError, Message: "m"}
	assert.Equal(t, "a.yaml:3:5: m", d.String())
	d.Severity = agenttypes.SeverityWarning
	assert.Equal(t, "a.yaml:3:5: warning: m", d.String())
	assert.Equal(t, "a.yaml: m", agenttypes.Diagnostic{File: "a.yaml", Severity: agenttypes.SeverityError, Message: "m"}.String())
}

func TestClaudeToolsAndModels(t *testing.T) {
	tests := []struct {
		tools string
		want  []string
	}{
		{"Read, Grep, Glob", []string{"read", "grep", "glob"}},
		{"Read Grep LS", []string{"read", "grep", "ls"}},
		{"[Read, Glob]", []string{"read", "glob"}},
		{"[]", []string{}},
		{`""`, []string{}},
		{"Agent(worker, researcher), Read", []string{"read"}},
		{"Bash, WebFetch, WebSearch, mcp__x__y, NotebookEdit, MultiEdit", []string{}},
		{"TodoWrite, read, Read", []string{"note", "read"}},
		{"Bash(git log:*)", []string{"git"}},
		{"Read(src/**)", []string{"read"}},
	}
	for _, tt := range tests {
		t.Run(tt.tools, func(t *testing.T) {
			text := "---\nname: x\ndescription: d\ntools: " + tt.tools + "\n---\n"
			typ, diags := agenttypes.ParseDefinition(".claude/agents/x.md", []byte(text), agenttypes.LoadOptions{})
			require.False(t, diags.HasErrors(), "%s", diags)
			assert.Equal(t, tt.want, typ.Tools)
		})
	}
	models := map[string]string{
		"sonnet":                   "anthropic:claude-sonnet-4-5",
		"opus":                     "anthropic:claude-opus-4-1",
		"haiku":                    "anthropic:claude-haiku-4-5",
		"inherit":                  "inherit",
		"claude-sonnet-4-20250514": "anthropic:claude-sonnet-4-20250514",
		"openai:gpt-4o-mini":       "openai:gpt-4o-mini",
		"offline":                  "offline",
	}
	for in, want := range models {
		typ, diags := agenttypes.ParseDefinition(".claude/agents/x.md", []byte("---\nname: x\ndescription: d\nmodel: "+in+"\n---\n"), agenttypes.LoadOptions{})
		require.False(t, diags.HasErrors(), "%s", diags)
		assert.Equal(t, want, typ.Model, in)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	t.Run("a 50 MB file is refused before it is read", func(t *testing.T) {
		p := filepath.Join(dir, "huge.md")
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(50<<20)) // sparse: nothing is allocated
		require.NoError(t, f.Close())
		_, diags := agenttypes.LoadFile(p, agenttypes.LoadOptions{})
		require.Len(t, diags, 1)
		assert.Equal(t, p+": file is 50.0 MiB; definitions are limited to 1.0 MiB: move long text out of it", diags[0].String())
		_, diags = agenttypes.ParseDefinition(p, make([]byte, agenttypes.MaxDefinitionSize+1), agenttypes.LoadOptions{})
		assert.Contains(t, diags.String(), "definitions are limited to 1.0 MiB")
	})
	t.Run("alias bomb", func(t *testing.T) {
		start := time.Now()
		_, diags := agenttypes.LoadFile(filepath.Join(fixtures, "bad", "alias-bomb.yaml"), agenttypes.LoadOptions{})
		assert.Less(t, time.Since(start), 2*time.Second)
		require.Len(t, diags, 1)
		assert.Contains(t, diags[0].Message, "once aliases (*name) are expanded")
		// The same bomb hidden in an output schema.
		bomb, err := os.ReadFile(filepath.Join(fixtures, "bad", "alias-bomb.yaml"))
		require.NoError(t, err)
		text := "name: x\ndescription: d\noutput:\n  format: json\n  schema:\n" + indent(string(bomb), "    ") + "\n"
		_, diags = agenttypes.ParseDefinition("x.yaml", []byte(text), agenttypes.LoadOptions{})
		assert.Contains(t, diags.String(), "once aliases (*name) are expanded")
	})
	t.Run("deep nesting", func(t *testing.T) {
		text := "name: x\ndescription: d\noutput:\n  schema: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"
		_, diags := agenttypes.ParseDefinition("x.yaml", []byte(text), agenttypes.LoadOptions{})
		require.Len(t, diags, 1)
		assert.Equal(t, "x.yaml:1:1: the YAML is nested more than 100 levels deep; a definition needs a few", diags[0].String())
	})
	t.Run("not a regular file", func(t *testing.T) {
		_, diags := agenttypes.LoadFile(dir, agenttypes.LoadOptions{})
		assert.Contains(t, diags.String(), "not a regular file")
		_, diags = agenttypes.LoadFile(filepath.Join(dir, "missing.yaml"), agenttypes.LoadOptions{})
		assert.Contains(t, diags.String(), "cannot read: no such file or directory")
	})
	t.Run("cycles and self-extension", func(t *testing.T) {
		_, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{},
			filepath.Join(fixtures, "bad", "cycle-a.yaml"), filepath.Join(fixtures, "bad", "cycle-b.yaml"), filepath.Join(fixtures, "bad", "self-extends.yaml"))
		require.Len(t, diags, 3, "%s", diags)
		assert.Contains(t, diags[0].String(), "cycle-a.yaml:3:10: extends cycle: cycle-a → cycle-b → cycle-a")
		assert.Contains(t, diags[1].String(), "cycle-b.yaml:3:10: extends cycle: cycle-a → cycle-b → cycle-a")
		assert.Contains(t, diags[2].String(), `self-extends.yaml:3:10: type "narcissus" extends itself`)
	})
	t.Run("a longer cycle and a type that extends into it", func(t *testing.T) {
		d := t.TempDir()
		write(t, d, "a.yaml", "name: a\ndescription: d\nextends: b\n")
		write(t, d, "b.yaml", "name: b\ndescription: d\nextends: c\n")
		write(t, d, "c.yaml", "name: c\ndescription: d\nextends: a\n")
		write(t, d, "z.yaml", "name: z\ndescription: d\nextends: a\n")
		types, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{}, filepath.Join(d, "a.yaml"), filepath.Join(d, "b.yaml"), filepath.Join(d, "c.yaml"), filepath.Join(d, "z.yaml"))
		assert.Empty(t, types)
		require.Len(t, diags, 4, "%s", diags)
		for _, dg := range diags[:3] {
			assert.Contains(t, dg.Message, "extends cycle: a → b → c → a")
		}
		assert.Contains(t, diags[3].Message, `extends "a", which has errors`)
	})
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

func write(t testing.TB, dir, rel, text string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

func TestExampleDefinitions(t *testing.T) {
	// The scripted examples need a script compiler; builtin/script and the
	// CLI's tests load them.
	files := []string{filepath.Join("..", "examples", "agents", "security-review.md"), filepath.Join("..", "examples", "agents", "todo-finder.yaml")}
	types, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: testRegistry(t)}, files...)
	require.Empty(t, diags, "the examples load without a warning")
	require.Len(t, types, 2)

	review, todo := types[0], types[1]
	assert.Equal(t, "security-review", review.Name)
	assert.Equal(t, []string{"read", "grep", "glob"}, review.Tools)
	assert.True(t, review.NeedsLanguageModel)
	assert.Equal(t, modelname.Inherit, review.Model)

	assert.Equal(t, "todo-finder", todo.Name)
	assert.Equal(t, []string{"read", "grep", "glob"}, todo.Tools)
	assert.False(t, todo.NeedsLanguageModel, "extends explore, so it runs on the offline model")
	assert.NotNil(t, todo.ParseOutput, "and reports findings as explore does")
	assert.Len(t, todo.Examples, 2)
}

func TestScriptWithoutCompilerIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "s.yaml", "name: s\ndescription: scripted.\nscript: |\n  package hooks\n")
	_, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{TrustScripts: agenttypes.TrustAll}, p)
	require.True(t, diags.HasErrors())
	assert.Contains(t, diags.String(), "s.yaml:3:1: this program runs no scripts")
}
