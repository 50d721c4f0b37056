package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommandLineErrorsExitTwo(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown command", []string{"nosuch"}, `unknown command "nosuch" for "troupe"`},
		{"misspelt command", []string{"rnu", "explore", "x"}, `did you mean "run"?`},
		{"unknown subcommand", []string{"types", "nosuch"}, `unknown command "nosuch" for "troupe types"`},
		{"unknown runs subcommand", []string{"runs", "lst"}, `did you mean "list"?`},
		{"unknown flag", []string{"types", "list", "--nope"}, "unknown flag --nope"},
		{"unknown shorthand", []string{"run", "-z", "explore", "x"}, `unknown shorthand flag "z" in -z`},
		{"flag needs an argument", []string{"types", "list", "--repo"}, "flag needs an argument: --repo"},
		{"bad flag value", []string{"run", "explore", "--max-turns", "many", "x"}, `--max-turns "many" is not a whole number`},
		{"extra argument", []string{"version", "x"}, `unexpected argument "x": troupe version takes no arguments`},
		{"too many arguments", []string{"runs", "show", "a", "b"}, `unexpected argument "b": troupe runs show ID`},
		{"missing argument", []string{"types", "show"}, "missing NAME: troupe types show NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := troupe(t, tt.args...)
			assert.Equal(t, 2, o.code, o.stderr)
			assert.Contains(t, o.stderr, tt.msg)
			assert.Empty(t, o.stdout, "no help text instead of the error")
		})
	}
}

func TestErrorTextAloneIsNotUsage(t *testing.T) {
	assert.Equal(t, exitFailed, exitCode(context.Background(), errors.New("tool failed: unknown flag: --x")))
	assert.Equal(t, exitUsage, exitCode(context.Background(), usagef("unknown flag: --x")))

	// A tool failing on its input is a failed command, whatever its
	// message happens to say.
	o := troupe(t, "tools", "call", "grep", `{"pattern":"unknown flag ["}`, "--repo", shop)
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, "bad pattern")
}

func TestRepoMustBeADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	missing := filepath.Join(t.TempDir(), "nosuch")
	repos := []struct {
		name, repo, msg string
	}{
		{"file", file, "is a regular file, not a directory"},
		{"empty", "", "--repo is empty"},
		{"missing", missing, "no such directory"},
	}
	commands := [][]string{
		{"run", "explore", "task"},
		{"types", "list"},
		{"types", "show", "explore"},
		{"types", "validate", filepath.Join("..", "..", "examples", "agents")},
		{"tools", "list"},
		{"tools", "call", "ls", "{}"},
	}
	for _, r := range repos {
		for _, c := range commands {
			t.Run(r.name+"/"+c[0]+" "+c[1], func(t *testing.T) {
				o := troupe(t, append(c, "--repo="+r.repo)...)
				runs := os.Getenv("TROUPE_RUNS_DIR") // the one troupe ran with
				assert.Equal(t, 2, o.code, o.stderr)
				assert.Contains(t, o.stderr, r.msg)
				assert.NotContains(t, o.stderr, "config.yaml", "the directory is checked before anything is read from it")
				assert.Empty(t, o.stdout)
				assert.NoDirExists(t, runs)
			})
		}
	}
}

func TestUnknownNamesGetSuggestions(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"run", "explor", "--repo", shop, "task"}, []string{`did you mean "explore"?`, "troupe types list"}},
		{[]string{"types", "show", "plna"}, []string{`did you mean "plan"?`, "troupe types list"}},
		{[]string{"tools", "list", "--type", "reveiw"}, []string{`did you mean "review"?`, "troupe types list"}},
		{[]string{"tools", "call", "gerp", "{}"}, []string{`did you mean "grep"?`, "troupe tools list"}},
		{[]string{"run", "zzzzzzzz", "task"}, []string{"troupe types list"}},
	}
	for _, tt := range tests {
		t.Run(tt.args[0]+" "+tt.args[1], func(t *testing.T) {
			o := troupe(t, tt.args...)
			assert.Equal(t, 2, o.code, o.stderr)
			for _, w := range tt.want {
				assert.Contains(t, o.stderr, w)
			}
		})
	}
}

func TestModelRefusalSaysHowToChooseOnTheCommandLine(t *testing.T) {
	o := troupe(t, "run", "plan", "--repo", shop, "add a flag")
	assert.Equal(t, 2, o.code)
	assert.Contains(t, o.stderr, "--model provider:model")
	assert.Contains(t, o.stderr, "TROUPE_MODEL")

	o = troupe(t, "run", "explore", "--repo", shop, "--model", "acme:x", "task")
	assert.Equal(t, 2, o.code)
	assert.NotContains(t, o.stderr, "pass --model", "the flag was given; the error says what is wrong with it")
}

// A type the offline model cannot serve (no grep to search with) fails
// with the library's reason, and the command says how to fix it here.
func TestOfflineModelWithoutGrepSaysHowToFixIt(t *testing.T) {
	repo := scriptRepo(t, map[string]string{"reader.yaml": "name: reader\ndescription: Reads only.\nneeds_language_model: false\ntools: [read]\n"})
	o := runWith(t, map[string]string{"HOME": t.TempDir()}, "", "run", "reader", "--repo", repo, "--model", "offline", "--progress", "none", "where is the shop?")
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, "which this call does not offer")
	assert.Contains(t, o.stderr, "give this type the grep tool, or pass --model provider:model")
}
