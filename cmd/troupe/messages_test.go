package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileStates lists every path below dir with its size and modification
// time, to tell whether a command changed anything there.
func fileStates(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprint(fi.Mode(), fi.ModTime(), fi.Size())
		return nil
	})
	if os.IsNotExist(err) {
		return out
	}
	require.NoError(t, err)
	return out
}

// refused runs troupe in repo, expects it to refuse the command line
// (exit 2, nothing on stdout) and to change nothing on disk: not the
// project, not the user's directories, and no transcript. It returns
// what it printed on stderr.
func refused(t *testing.T, repo string, args ...string) string {
	t.Helper()
	isolate(t)
	home := os.Getenv("HOME")
	beforeHome, beforeRepo := fileStates(t, home), fileStates(t, repo)
	t.Chdir(repo)
	o := troupe(t, args...)
	assert.Equal(t, exitUsage, o.code, "stderr: %s", o.stderr)
	assert.Empty(t, o.stdout)
	assert.NoDirExists(t, os.Getenv("TROUPE_RUNS_DIR"), "no transcript was written")
	assert.Equal(t, beforeHome, fileStates(t, home), "the user's directories are unchanged")
	assert.Equal(t, beforeRepo, fileStates(t, repo), "the project is unchanged")
	assert.NotRegexp(t, goName, o.stderr, "the command line speaks of flags and commands, not Go")
	return o.stderr
}

// goName matches the Go names a message for the command line must not
// use: a type's field or method (Config.DefaultModel), a function of the
// library.
var goName = regexp.MustCompile(`\b[A-Z][a-z]+\.[A-Z][A-Za-z]+|\bWriteLock\b|\bSpawnRequest\b|\bNew\(`)

func TestMessagesNameMissingAndExtraArguments(t *testing.T) {
	repo := shopCopy(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "explore"}, "troupe: missing TASK: troupe run TYPE TASK...\n"},
		{[]string{"run"}, "troupe: missing TYPE and TASK: troupe run TYPE TASK...\n"},
		{[]string{"tools", "call", "grep"}, "troupe: missing JSON_ARGS: troupe tools call NAME JSON_ARGS\n"},
		{[]string{"types", "show"}, "troupe: missing NAME: troupe types show NAME\n"},
		{[]string{"types", "validate"}, "troupe: missing PATH: troupe types validate PATH...\n"},
		{[]string{"runs", "show", "a", "b"}, "troupe: unexpected argument \"b\": troupe runs show ID\n"},
		{[]string{"types", "list", "x", "y"}, "troupe: unexpected arguments \"x\" \"y\": troupe types list takes no arguments\n"},
		{[]string{"version", "x"}, "troupe: unexpected argument \"x\": troupe version takes no arguments\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			assert.Equal(t, tt.want, refused(t, repo, tt.args...))
		})
	}
}

// Every command's argument errors name what is missing or too many, in
// the words of its usage line: none falls back to cobra's own message.
func TestMessagesOfEveryCommandsArguments(t *testing.T) {
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.HasSubCommands() || c.Name() == "help" || c.HasParent() && c.Parent().Name() == "completion" {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		p := positionals(c)
		t.Run(c.CommandPath(), func(t *testing.T) {
			checked++
			if p.required > 0 {
				o := troupe(t, path...)
				assert.Equal(t, exitUsage, o.code, o.stderr)
				assert.Contains(t, o.stderr, "troupe: missing "+strings.TrimSuffix(p.names[0], "..."))
				assert.Contains(t, o.stderr, ": "+c.CommandPath())
			}
			if !p.variadic {
				args := append(path, make([]string, len(p.names)+1)...)
				for i := len(path); i < len(args); i++ {
					args[i] = "arg"
				}
				o := troupe(t, args...)
				assert.Equal(t, exitUsage, o.code, o.stderr)
				assert.Contains(t, o.stderr, `troupe: unexpected argument "arg": `+c.CommandPath())
			}
		})
	}
	walk(newApp(nil, nil).rootCommand())
	assert.Greater(t, checked, 10, "the walk found the commands")
}

func TestMessagesSuggestTheFlagMeant(t *testing.T) {
	repo := shopCopy(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "explore", "--max-turn", "3", "x"}, "troupe: unknown flag --max-turn; did you mean --max-turns?\n"},
		{[]string{"run", "explore", "--modle", "offline", "x"}, "troupe: unknown flag --modle; did you mean --model?\n"},
		{[]string{"types", "list", "--jsno"}, "troupe: unknown flag --jsno; did you mean --json?\n"},
		{[]string{"run", "explore", "-max-turns", "3", "x"}, "troupe: unknown shorthand flag \"m\" in -max-turns; did you mean --max-turns? (a long flag takes two dashes)\n"},
		{[]string{"run", "explore", "--nope", "x"}, "troupe: unknown flag --nope; 'troupe run --help' lists the flags\n"},
		{[]string{"run", "explore", "--max-turns", "many", "x"}, "troupe: --max-turns \"many\" is not a whole number; give one such as 10\n"},
		{[]string{"run", "explore", "--max-cost", "cheap", "x"}, "troupe: --max-cost \"cheap\" is not a number; give one such as 0.50\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			assert.Equal(t, tt.want, refused(t, repo, tt.args...))
		})
	}
}

// A duration flag gets the words a definition's max_time gets.
func TestMessagesGiveTheUnitOfADuration(t *testing.T) {
	repo := shopCopy(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "explore", "--max-time", "5", "x"}, "troupe: --max-time 5 has no unit; write 5s for seconds or 5m for minutes\n"},
		{[]string{"run", "explore", "--max-time", "soon", "x"}, "troupe: --max-time \"soon\" is not a duration; write it like 90s, 5m or 1h30m\n"},
		{[]string{"run", "explore", "--max-time", "-5", "x"}, "troupe: --max-time -5: a budget must be positive; leave the flag out to use the type's default\n"},
		{[]string{"mcp", "serve", "--max-time", "90"}, "troupe: --max-time 90 has no unit; write 90s for seconds or 90m for minutes\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			assert.Equal(t, tt.want, refused(t, repo, tt.args...))
		})
	}

	// The same words as the definition's own check.
	dir := filepath.Join(repo, ".troupe", "agents")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	def := filepath.Join(dir, "slow.yaml")
	require.NoError(t, os.WriteFile(def, []byte("name: slow\ndescription: Slow.\ntools: [read]\nbudget: {max_time: 5}\n"), 0o644))
	o := troupe(t, "types", "validate", def)
	assert.Equal(t, exitFailed, o.code, o.stderr)
	assert.Contains(t, o.stdout, "max_time 5 has no unit; write 5s for seconds or 5m for minutes")
}

// types validate reports each problem of the files it checks once, and
// never tells the user to run the command they are running.
func TestMessagesTypesValidatePrintsEachErrorOnce(t *testing.T) {
	repo := t.TempDir()
	dir := filepath.Join(repo, ".troupe", "agents")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "typo.yaml"), []byte("name: typo\ndescripton: oops\n"), 0o644))
	o := troupe(t, "types", "validate", "--repo", repo, dir)
	assert.Equal(t, exitFailed, o.code, o.stderr)
	all := o.stdout + o.stderr
	assert.Equal(t, 1, strings.Count(all, `unknown field "descripton"`), all)
	assert.Equal(t, 1, strings.Count(all, "no description"), all)
	assert.NotContains(t, all, "'troupe types validate' checks a file")
	assert.Contains(t, o.stderr, "1 files, 0 types, 2 errors, 0 warnings")

	// Other commands still say the type is left out, and how to check it.
	o = troupe(t, "types", "list", "--repo", repo)
	assert.Equal(t, exitOK, o.code, o.stderr)
	assert.Contains(t, o.stderr, `unknown field "descripton"; did you mean "description"? (left out; 'troupe types validate' checks a file)`)
}

// types show says "unlimited" for each limit a type leaves unset, never
// 0 of it.
func TestMessagesTypesShowSaysUnlimited(t *testing.T) {
	repo := scriptRepo(t, map[string]string{
		"free.yaml":    "name: free\ndescription: No limits.\ntools: [read]\n",
		"partial.yaml": "name: partial\ndescription: Some limits.\ntools: [read]\nbudget: {max_turns: 5, max_cost_usd: 0.5}\n",
	})
	o := troupe(t, "types", "show", "free", "--repo", repo)
	require.Equal(t, exitOK, o.code, o.stderr)
	assert.Contains(t, o.stdout, "budget:      unlimited\n")

	o = troupe(t, "types", "show", "partial", "--repo", repo)
	require.Equal(t, exitOK, o.code, o.stderr)
	assert.Contains(t, o.stdout, "budget:      unlimited tokens, unlimited time, unlimited tool calls, 5 turns, $0.50\n")

	o = troupe(t, "types", "show", "explore", "--repo", repo)
	require.Equal(t, exitOK, o.code, o.stderr)
	assert.Contains(t, o.stdout, "budget:      200000 tokens, 5m0s, 60 tool calls, 25 turns, unlimited cost\n")
}

// plugins lock with no plugin to lock writes nothing, says so, and
// leaves a lock file there is as it is.
func TestMessagesPluginsLockWithNoPlugins(t *testing.T) {
	isolate(t)
	t.Setenv("TROUPE_PLUGIN_PATH", "")
	project := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(project, ".git"), 0o755))
	before := fileStates(t, project)
	o := troupe(t, "plugins", "lock", "--repo", project)
	assert.Equal(t, exitOK, o.code, o.stderr)
	assert.Empty(t, o.stdout)
	assert.Equal(t, "no plugins found, so there is nothing to lock: no lock file was written (a plugin is an executable named troupe-plugin-NAME in .troupe/plugins/)\n", o.stderr)
	assert.Equal(t, before, fileStates(t, project), "nothing was written")
	assert.NoFileExists(t, filepath.Join(project, ".troupe", "plugins.lock"))

	lock := filepath.Join(project, ".troupe", "plugins.lock")
	require.NoError(t, os.MkdirAll(filepath.Dir(lock), 0o755))
	require.NoError(t, os.WriteFile(lock, []byte(`{"version":1,"plugins":{}}`), 0o644))
	before = fileStates(t, project)
	o = troupe(t, "plugins", "lock", "--repo", project, "--json")
	assert.Equal(t, exitOK, o.code, o.stderr)
	assert.Empty(t, o.stdout)
	assert.Contains(t, o.stderr, "nothing to lock: "+filepath.Join(".troupe", "plugins.lock")+" is left as it is")
	assert.Equal(t, before, fileStates(t, project))
}

// A bare model name of a well-known family gets the provider:model it
// likely means, wherever it was given.
func TestMessagesSuggestTheProviderOfAModel(t *testing.T) {
	repo := shopCopy(t)
	stderr := refused(t, repo, "run", "explore", "--model", "gpt-4o", "where is the discount applied?")
	assert.Contains(t, stderr, `troupe: model unavailable: cannot resolve model "gpt-4o": it names no provider; did you mean openai:gpt-4o?`)
	assert.Equal(t, 1, strings.Count(stderr, `"gpt-4o"`), "the model is named once")
	assert.NotContains(t, stderr, "using model", "a model that is refused is not announced first")

	o := runWith(t, map[string]string{"TROUPE_MODEL": "gemini-2.5-flash"}, "", "run", "explore", "--repo", repo, "where is the discount applied?")
	assert.Equal(t, exitUsage, o.code, o.stderr)
	assert.Contains(t, o.stderr, "did you mean googleai:gemini-2.5-flash?")
}

// A type of a plugin the lock file refused is said to come from that
// plugin, with why it was refused, not to be unknown.
func TestMessagesNameTheRefusedPluginOfAType(t *testing.T) {
	plugins := testPluginDir(t) // built before isolate moves the build cache
	isolate(t)
	t.Setenv("TROUPE_PLUGIN_PATH", plugins)
	project := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(project, ".git"), 0o755))
	lock := filepath.Join(project, ".troupe", "plugins.lock")

	// With no lock file the plugin runs, and what it offers is known.
	o := troupe(t, "types", "list", "--repo", project)
	require.Equal(t, exitOK, o.code, o.stderr)
	require.Contains(t, o.stdout, "looper")
	require.NoError(t, os.MkdirAll(filepath.Dir(lock), 0o755))
	require.NoError(t, os.WriteFile(lock, []byte(`{"version":1,"plugins":{}}`), 0o644))

	for _, args := range [][]string{
		{"run", "looper", "--repo", project, "task"},
		{"types", "show", "looper", "--repo", project},
	} {
		// Not in subtests: each would have a home, and a cache, of its own.
		stderr := refused(t, project, args...)
		assert.Contains(t, stderr, `troupe: type "looper" comes from plugin test, which was refused: plugin checksum refused: plugin test (`, args)
		assert.True(t, strings.HasSuffix(stderr, "is not in "+lock+"; if it is trusted, add it to the lock file\n"), "the refusal is the last word: %s", stderr)
		assert.Equal(t, 1, strings.Count(stderr, lockHint), "how to lock the plugins is said once: %s", stderr)
		assert.NotContains(t, stderr, "unknown agent type", args)
		assert.NotContains(t, stderr, "WriteLock", args)
	}
	stderr := refused(t, project, "tools", "call", "shout", "{}", "--repo", project)
	assert.Contains(t, stderr, `troupe: tool "shout" comes from plugin test, which was refused: `)

	// When it never ran here, what it offers is unknown: the error says
	// it may come from the refused plugin.
	require.NoError(t, os.RemoveAll(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "troupe", "plugins")))
	stderr = refused(t, project, "run", "looper", "--repo", project, "task")
	assert.Contains(t, stderr, `troupe: unknown agent type "looper"`)
	assert.Contains(t, stderr, "it may come from plugin test, which was refused, so what it offers is unknown: plugin checksum refused: plugin test (")
}

// The refusal of the offline model for a type that needs a language
// model says what to do with flags and variables: the library's own
// words name its Go fields.
func TestMessagesSpeakOfFlagsNotGoNames(t *testing.T) {
	repo := shopCopy(t)
	stderr := refused(t, repo, "run", "plan", "add a flag")
	assert.Contains(t, stderr, `troupe: model unavailable: type "plan" needs a language model, and the offline model only retrieves`)
	assert.Contains(t, stderr, "pass --model provider:model")
	assert.Contains(t, stderr, "TROUPE_MODEL")

	stderr = refused(t, repo, "run", "plan", "--model", "offline", "add a flag")
	assert.Contains(t, stderr, `type "plan" needs a language model, and the offline model only retrieves`)
	assert.Contains(t, stderr, "pass --model provider:model", "the flag chose a model that cannot serve the type")
}
