package agenttypes_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// The issue's own example loads as written.
func TestTheFixerExampleLoads(t *testing.T) {
	text := `name: fixer
description: Fixes what fails.
tools: [read, grep, glob, write, edit, run]
workspace: worktree
run:
  allow: ["go test", "go vet", "make test"]
  timeout: 2m
  network: false
`
	typ, diags := agenttypes.ParseDefinition("agents/fixer.yaml", []byte(text), agenttypes.LoadOptions{Registry: testRegistry(t)})
	require.Empty(t, diags)
	assert.Equal(t, []string{"read", "grep", "glob", "write", "edit", "run"}, typ.Tools)
	assert.Equal(t, agenttypes.WorkspaceWorktree, typ.Workspace)
	assert.Equal(t, agenttypes.RunPolicy{Allow: []string{"go test", "go vet", "make test"}, Timeout: 2 * time.Minute}, typ.Run)
	assert.True(t, typ.NeedsWorkspace())
	assert.NoError(t, typ.Validate())
}

// Every problem of workspace:, run: and setup: is reported at its line and
// column, and says what to write instead; a lenient file's unknown key is
// a warning.
func TestWorkspaceFieldDiagnostics(t *testing.T) {
	long := strings.Repeat("x", agenttypes.MaxCommandLength+1)
	many := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf("\"cmd%d\"", i)
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	tooMany := many(agenttypes.MaxRunAllow + 2)
	firstTooMany := len("run: {allow: ") + strings.Index(tooMany, fmt.Sprintf("\"cmd%d\"", agenttypes.MaxRunAllow)) + 1 // the column of the first item past the limit
	const head = "name: x\ndescription: d\n"
	tests := []struct {
		name, path, text string
		want             []string // each diagnostic's start, in order
	}{
		{"workspace none with a changing tool", "x.yaml", head + "tools: [read, write]\nworkspace: none\n",
			[]string{`x.yaml:4:12: workspace is none, and the type lists write, which changes files and so works only in a workspace of its own; remove workspace: none (a worktree is the default for such a type), or take write out of tools`}},
		{"an unknown workspace", "x.yaml", head + "workspace: sandbox\n",
			[]string{`x.yaml:3:12: workspace "sandbox": write worktree (a workspace of its own, the default for a type that changes files) or none (the directory it is given, to read only)`}},
		{"a workspace that is a list", "x.yaml", head + "workspace: [worktree]\n",
			[]string{`x.yaml:3:12: workspace must be a single value, not a list`}},
		{"workspace none with setup", "x.yaml", head + "workspace: none\nrun: {allow: [make]}\nsetup: [make]\n",
			[]string{`x.yaml:3:12: workspace is none, and the type names setup commands`}},
		{"run that is not a mapping", "x.yaml", head + "run: go test\n",
			[]string{`x.yaml:3:6: run is a mapping, such as run: {allow: ["go test", "make"], timeout: 2m, network: false}`}},
		{"allow that is not a list", "x.yaml", head + "run:\n  allow: go test\n",
			[]string{`x.yaml:4:10: run.allow is a list of commands, each one quoted string, as in run: {allow:`}},
		{"an allow entry with a pipe", "x.yaml", head + "run:\n  allow: [\"go test\", \"go test | tee x\"]\n",
			[]string{`x.yaml:4:22: run.allow: "go test | tee x": command syntax: '|' is a shell operator`}},
		{"an empty allow entry", "x.yaml", head + "run:\n  allow:\n    - go test\n    - \"\"\n",
			[]string{`x.yaml:6:7: run.allow: each item is a command, such as "go test"`}},
		{"an allow entry that is a mapping", "x.yaml", head + "run:\n  allow:\n    - {go: test}\n",
			[]string{`x.yaml:5:7: run.allow: each item is a command`}},
		{"an allow entry too long", "x.yaml", head + "run: {allow: [" + long + "]}\n",
			[]string{fmt.Sprintf(`x.yaml:3:15: run.allow: this command is %d bytes long; keep each to %d`, len(long), agenttypes.MaxCommandLength)}},
		{"too many allow entries", "x.yaml", head + "run: {allow: " + tooMany + "}\n",
			[]string{fmt.Sprintf(`x.yaml:3:%d: run.allow has %d commands; keep it to %d`, firstTooMany, agenttypes.MaxRunAllow+2, agenttypes.MaxRunAllow)}},
		{"too many setup commands", "x.yaml", head + "run: {allow: [cmd]}\nsetup:\n" + strings.Repeat("  - cmd\n", agenttypes.MaxSetupCommands+1),
			[]string{fmt.Sprintf(`x.yaml:%d:5: setup has %d commands; keep it to %d`, 5+agenttypes.MaxSetupCommands, agenttypes.MaxSetupCommands+1, agenttypes.MaxSetupCommands)}},
		{"a timeout of zero", "x.yaml", head + "run:\n  allow: [make]\n  timeout: 0s\n",
			[]string{`x.yaml:5:12: timeout is 0s: give a positive duration, or leave timeout out for the default of 2m`}},
		{"a timeout without a unit", "x.yaml", head + "run:\n  allow: [make]\n  timeout: 90\n",
			[]string{`x.yaml:5:12: timeout 90 has no unit; write 90s for seconds or 90m for minutes`}},
		{"a timeout too long", "x.yaml", head + "run:\n  allow: [make]\n  timeout: 2h\n",
			[]string{`x.yaml:5:12: run.timeout is 2h; a command may run for 30m at most`}},
		{"network that is not a boolean", "x.yaml", head + "run:\n  allow: [make]\n  network: sometimes\n",
			[]string{`x.yaml:5:12: network must be true or false`}},
		{"an unknown run field", "x.yaml", head + "run:\n  allow: [make]\n  alow: [go]\n",
			[]string{`x.yaml:5:3: unknown run field "alow"; did you mean "allow"?`}},
		{"a run field given twice", "x.yaml", head + "run:\n  allow: [make]\n  allow: [go]\n",
			[]string{`x.yaml:5:3: run.allow is given twice; keep one`}},
		{"a setup command not allowed", "x.yaml", head + "run:\n  allow: [\"go test\"]\nsetup:\n  - go test ./...\n  - go mod download\n",
			[]string{`x.yaml:7:5: setup command "go mod download" is not allowed by run.allow; add it, or a prefix of it such as "go", to run.allow`}},
		{"setup with no allow-list", "x.yaml", head + "setup: [make]\n",
			[]string{`x.yaml:3:9: setup command "make" is not allowed by run.allow`}},
		{"isolation in troupe's own file", "x.yaml", head + "isolation: worktree\n",
			[]string{`x.yaml:3:1: unknown field "isolation"; write workspace: worktree (the default for a type that changes files)`}},
		{"an unknown run field in a Claude file is a warning", ".claude/agents/x.md", "---\n" + head + "tools: Bash\nrun:\n  allow: [make]\n  shell: bash\n---\nbody\n",
			[]string{`x.md:7:3: warning: unknown run field "shell"; the run fields are allow, timeout and network`}},
		{"an isolation troupe does not know", ".claude/agents/x.md", "---\n" + head + "isolation: container\n---\nbody\n",
			[]string{`x.md:4:12: warning: isolation "container": troupe knows isolation: worktree`}},
	}
	reg := testRegistry(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := agenttypes.ParseDefinition(tt.path, []byte(tt.text), agenttypes.LoadOptions{Registry: reg})
			require.Len(t, diags, len(tt.want), "%s", diags)
			for i, w := range tt.want {
				assert.True(t, strings.HasPrefix(diags[i].String(), w) || strings.HasPrefix(diags[i].String(), ".claude/agents/"+w), "got  %s\nwant %s", diags[i], w)
			}
		})
	}
}

func TestWorkspaceFieldValues(t *testing.T) {
	const head = "name: x\ndescription: d\n"
	tests := []struct {
		name, path, text string
		workspace        string
		run              agenttypes.RunPolicy
		setup            []string
	}{
		{name: "none without changing tools", path: "x.yaml", text: head + "workspace: None\n", workspace: agenttypes.WorkspaceNone},
		{name: "an empty workspace is the default", path: "x.yaml", text: head + "workspace:\n"},
		{name: "a worktree without changing tools", path: "x.yaml", text: head + "workspace: worktree\n", workspace: agenttypes.WorkspaceWorktree},
		{name: "network on", path: "x.yaml", text: head + "run: {allow: [make], network: yes}\n", run: agenttypes.RunPolicy{Allow: []string{"make"}, Network: true}},
		{name: "quoted words", path: "x.yaml", text: head + "run: {allow: [\"npm run 'build all'\"]}\n", run: agenttypes.RunPolicy{Allow: []string{"npm run 'build all'"}}},
		{name: "an empty allow-list", path: "x.yaml", text: head + "run: {allow: []}\n", run: agenttypes.RunPolicy{Allow: []string{}}},
		{name: "setup", path: "x.yaml", text: head + "run: {allow: [go]}\nsetup: [\"go mod download\"]\n", run: agenttypes.RunPolicy{Allow: []string{"go"}}, setup: []string{"go mod download"}},
		{name: "Claude's isolation is a worktree", path: ".claude/agents/x.md", text: "---\n" + head + "isolation: worktree\n---\nbody\n", workspace: agenttypes.WorkspaceWorktree},
		{name: "a run block in front matter read line by line", path: ".claude/agents/x.md",
			text: "---\nname: x\ndescription: this: is not YAML\ntools: Read, Bash\nrun:\n  allow: [\"go test\"]\n  timeout: 3m\n---\nbody\n",
			run:  agenttypes.RunPolicy{Allow: []string{"go test"}, Timeout: 3 * time.Minute}},
		{name: "a flow run in front matter read line by line", path: ".claude/agents/x.md",
			text: "---\nname: x\ndescription: this: is not YAML\ntools: Read, Bash\nrun: {allow: [make], network: true}\n---\nbody\n",
			run:  agenttypes.RunPolicy{Allow: []string{"make"}, Network: true}},
	}
	reg := testRegistry(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, diags := agenttypes.ParseDefinition(tt.path, []byte(tt.text), agenttypes.LoadOptions{Registry: reg})
			require.False(t, diags.HasErrors(), "%s", diags)
			for _, d := range diags {
				assert.NotContains(t, d.Message, "run", "no warning about run")
				assert.NotContains(t, d.Message, "isolation")
			}
			assert.Equal(t, tt.workspace, typ.Workspace)
			assert.Equal(t, tt.run, typ.Run)
			assert.Equal(t, tt.setup, typ.Setup)
		})
	}
}

// A line-by-line front matter's run block keeps the positions of the file.
func TestALineByLineRunBlockKeepsItsPositions(t *testing.T) {
	text := "---\nname: x\ndescription: this: is not YAML\ntools: Bash\nrun:\n  allow: [\"go test | tee\"]\n---\nbody\n"
	_, diags := agenttypes.ParseDefinition(".claude/agents/x.md", []byte(text), agenttypes.LoadOptions{Registry: testRegistry(t)})
	require.Len(t, diags.Errors(), 1, "%s", diags)
	assert.True(t, strings.HasPrefix(diags.Errors()[0].String(), `.claude/agents/x.md:6:11: run.allow: "go test | tee"`), "%s", diags.Errors()[0])
	text = "---\nname: x\ndescription: this: is not YAML\ntools: Bash\nrun: {allow: [\"go test | tee\"]}\n---\nbody\n"
	_, diags = agenttypes.ParseDefinition(".claude/agents/x.md", []byte(text), agenttypes.LoadOptions{Registry: testRegistry(t)})
	require.Len(t, diags.Errors(), 1, "%s", diags)
	assert.True(t, strings.HasPrefix(diags.Errors()[0].String(), `.claude/agents/x.md:5:15: run.allow: "go test | tee"`), "%s", diags.Errors()[0])
}

// A child definition overrides its parent's workspace, run policy (field
// by field) and setup, and keeps what it does not give.
func TestExtendsCarriesWorkspaceFields(t *testing.T) {
	dir := t.TempDir()
	parent := write(t, dir, "parent.yaml", "name: parent\ndescription: d\ntools: [read, edit, run]\nrun:\n  allow: [\"go test\", \"go mod\"]\n  timeout: 5m\n  network: true\nsetup: [\"go mod download\"]\n")
	tests := []struct {
		name, text string
		want       agenttypes.Type // the fields compared
		err        string          // the one error, when it does not load
	}{
		{name: "inherits everything", text: "extends: parent\n",
			want: agenttypes.Type{Tools: []string{"read", "edit", "run"}, Run: agenttypes.RunPolicy{Allow: []string{"go test", "go mod"}, Timeout: 5 * time.Minute, Network: true}, Setup: []string{"go mod download"}}},
		{name: "overrides the allow-list only", text: "extends: parent\nrun:\n  allow: [\"go\"]\n",
			want: agenttypes.Type{Tools: []string{"read", "edit", "run"}, Run: agenttypes.RunPolicy{Allow: []string{"go"}, Timeout: 5 * time.Minute, Network: true}, Setup: []string{"go mod download"}}},
		{name: "overrides the network and setup", text: "extends: parent\nrun: {network: false}\nsetup: []\n",
			want: agenttypes.Type{Tools: []string{"read", "edit", "run"}, Run: agenttypes.RunPolicy{Allow: []string{"go test", "go mod"}, Timeout: 5 * time.Minute}, Setup: []string{}}},
		{name: "reads only", text: "extends: parent\ntools: [read]\nworkspace: none\nsetup: []\n",
			want: agenttypes.Type{Workspace: agenttypes.WorkspaceNone, Tools: []string{"read"}, Run: agenttypes.RunPolicy{Allow: []string{"go test", "go mod"}, Timeout: 5 * time.Minute, Network: true}, Setup: []string{}}},
		{name: "a list that no longer allows the parent's setup", text: "extends: parent\nrun:\n  allow: [\"go test\"]\n",
			err: `child.yaml:5:3: setup command "go mod download" is not allowed by run.allow`},
		{name: "workspace none under the parent's changing tools", text: "extends: parent\nworkspace: none\nsetup: []\n",
			err: `child.yaml:4:12: workspace is none, and the type lists edit`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			child := write(t, dir, "child.yaml", "name: child\ndescription: d\n"+tt.text)
			types, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: testRegistry(t)}, parent, child)
			if tt.err != "" {
				require.Len(t, diags.Errors(), 1, "%s", diags)
				assert.Contains(t, diags.Errors()[0].String(), tt.err)
				return
			}
			require.Empty(t, diags)
			require.Len(t, types, 2)
			got := types[0]
			assert.Equal(t, "child", got.Name)
			assert.Equal(t, tt.want.Workspace, got.Workspace)
			assert.Equal(t, tt.want.Tools, got.Tools)
			assert.Equal(t, tt.want.Run, got.Run)
			assert.Equal(t, tt.want.Setup, got.Setup)
		})
	}
}

// Claude Code's Write, Edit and MultiEdit are write and edit; Bash is run,
// with the commands the file or the project gives, and dropped, with a
// warning saying how to allow it, when none does.
func TestClaudeToolsThatChangeFiles(t *testing.T) {
	project := &agenttypes.RunPolicy{Allow: []string{"make", "npm test"}, Timeout: 4 * time.Minute}
	tests := []struct {
		name, front string
		project     *agenttypes.RunPolicy
		tools       []string
		allow       []string
		warnings    []string // each warning's start
	}{
		{name: "Write, Edit and MultiEdit", front: "tools: Read, Write, Edit, MultiEdit", tools: []string{"read", "write", "edit"}},
		{name: "Bash with no list is dropped", front: "tools: Read, Bash", tools: []string{"read"},
			warnings: []string{`x.md:4:14: warning: tool "Bash" is troupe's run, which needs a list of the commands it may start; none is given, so the agent runs without it: add run: {allow: ["go test", "make"]} to this file's front matter, or to the project's .troupe/config.yaml`}},
		{name: "Bash with the file's list", front: "tools: Read, Bash\nrun:\n  allow: [\"go test\"]", project: project,
			tools: []string{"read", "run"}, allow: []string{"go test"}},
		{name: "Bash with the project's list", front: "tools: Read, Bash", project: project,
			tools: []string{"read", "run"}, allow: []string{"make", "npm test"}},
		{name: "Bash patterns are prefixes", front: "tools: Read, Bash(go test:*), Bash(go vet *), Bash(git diff:*)", project: project,
			tools: []string{"read", "run", "git"}, allow: []string{"go test", "go vet"},
			warnings: []string{`x.md:4:47: warning: tool "Bash(git diff:*)" is mapped to troupe's read-only git tool`}},
		{name: "a pattern with no wildcard is a prefix too", front: "tools: Bash(make build)",
			tools: []string{"run"}, allow: []string{"make build"},
			warnings: []string{`x.md:4:8: warning: tool "Bash(make build)": run allows "make build" with any arguments after it`}},
		{name: "a pattern that is no prefix allows nothing", front: "tools: Read, Bash(*)", tools: []string{"read"},
			warnings: []string{`x.md:4:14: warning: tool "Bash(*)": the pattern is not a command prefix troupe can allow`, `x.md:4:14: warning: tool "Bash" is troupe's run`}},
		{name: "refusing some commands takes run away", front: "tools: Read, Bash\ndisallowedTools: Bash(rm:*)", project: project, tools: []string{"read"},
			warnings: []string{`x.md:5:18: warning: tool "Bash(rm:*)": troupe cannot refuse some commands only, so the agent runs without run`}},
		{name: "troupe's own run with no list warns and stays", front: "tools: [read, run]", tools: []string{"read", "run"}, allow: nil,
			warnings: []string{`x.md:4:15: warning: run is given no command, so it refuses every one`}},
		{name: "troupe's own run takes the project's list", front: "tools: [read, run]", project: project, tools: []string{"read", "run"}, allow: []string{"make", "npm test"}},
	}
	reg := testRegistry(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "---\nname: x\ndescription: d\n" + tt.front + "\n---\nbody\n"
			typ, diags := agenttypes.ParseDefinition(".claude/agents/x.md", []byte(text), agenttypes.LoadOptions{Registry: reg, ProjectRun: tt.project})
			require.False(t, diags.HasErrors(), "%s", diags)
			assert.Equal(t, tt.tools, typ.Tools)
			assert.Equal(t, tt.allow, typ.Run.Allow)
			require.Len(t, diags, len(tt.warnings), "%s", diags)
			for i, w := range tt.warnings {
				assert.True(t, strings.HasPrefix(diags[i].String(), ".claude/agents/"+w), "got  %s\nwant %s", diags[i], w)
			}
			if tt.project != nil && slices.Equal(tt.allow, tt.project.Allow) {
				assert.Equal(t, tt.project.Timeout, typ.Run.Timeout, "the project's timeout comes with its list")
			}
		})
	}
}

func TestProjectRunConfig(t *testing.T) {
	root := t.TempDir()
	c, err := agenttypes.ReadRunConfig(root)
	require.NoError(t, err)
	assert.Nil(t, c, "no config file")

	write(t, root, ".troupe/config.yaml", "model: sonnet\n")
	c, err = agenttypes.ReadRunConfig(root)
	require.NoError(t, err)
	assert.Nil(t, c, "no run section")

	file := write(t, root, ".troupe/config.yaml", "model: sonnet\nrun:\n  allow: [\"go test\", make]\n  timeout: 10m\n")
	c, err = agenttypes.ReadRunConfig(root)
	require.NoError(t, err)
	require.NotNil(t, c)
	assert.Equal(t, file, c.File)
	assert.Equal(t, 2, c.Line)
	assert.Equal(t, agenttypes.RunPolicy{Allow: []string{"go test", "make"}, Timeout: 10 * time.Minute}, c.Policy)
	g := c.Grant()
	assert.Equal(t, agenttypes.GrantRun, g.Kind)
	assert.Equal(t, "runs: go test, make", g.Detail)

	p, err := agenttypes.ProjectRunPolicy(root, nil)
	require.NoError(t, err)
	assert.Nil(t, p, "untrusted, the project's list is ignored")
	p, err = agenttypes.ProjectRunPolicy(root, func(h agenttypes.Grant) bool { return h == g })
	require.NoError(t, err)
	require.NotNil(t, p, "trusted as it is, it applies")
	assert.Equal(t, c.Policy, *p)

	write(t, root, ".troupe/config.yaml", "model: sonnet\nrun:\n  allow: [\"go test\", make, \"rm -rf\"]\n  timeout: 10m\n")
	p, err = agenttypes.ProjectRunPolicy(root, func(h agenttypes.Grant) bool { return h == g })
	require.NoError(t, err)
	assert.Nil(t, p, "a changed list needs trust again")

	for text, want := range map[string]string{
		"run:\n  allow: [\"go test | tee\"]\n": "config.yaml:2:11: run.allow: \"go test | tee\": command syntax",
		"run:\n  timeout: 5m\n":                "config.yaml:1:1: run: here names the commands the project's agents may run; give them",
		"run: [make]\n":                        "config.yaml:1:6: run is a mapping",
		"run:\n  allow: [make]\n  nework: x\n": "config.yaml:3:3: unknown run field \"nework\"; did you mean \"network\"?",
		"run: {allow: [make]\nx":               "config.yaml:1:1: not valid YAML",
	} {
		write(t, root, ".troupe/config.yaml", text)
		_, err := agenttypes.ReadRunConfig(root)
		require.Error(t, err, text)
		assert.ErrorIs(t, err, agenttypes.ErrInvalid)
		assert.Contains(t, err.Error(), filepath.Join(root, ".troupe", want), text)
		_, err = agenttypes.ProjectRunPolicy(root, agenttypes.TrustAll)
		assert.Error(t, err, "a section that does not parse is an error, trusted or not")
	}
}
