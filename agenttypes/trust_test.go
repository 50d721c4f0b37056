package agenttypes_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// countingScripts compiles as fakeScripts does and counts what it was
// asked to compile and to check, by type.
type countingScripts struct {
	mu       sync.Mutex
	compiled []string
	checked  []string
}

func (c *countingScripts) Compile(ctx context.Context, name string, s *agenttypes.Scripts) (*agenttypes.Hooks, agenttypes.Diagnostics) {
	c.mu.Lock()
	c.compiled = append(c.compiled, name)
	c.mu.Unlock()
	return fakeScripts{}.Compile(ctx, name, s)
}

func (c *countingScripts) Check(name string, s *agenttypes.Scripts) agenttypes.Diagnostics {
	c.mu.Lock()
	c.checked = append(c.checked, name)
	c.mu.Unlock()
	return nil
}

const scripted = "name: hooked\ndescription: d.\nscript: |\n  package hooks\n  from the project\n"

// untrustedSources are the layers of a project nobody trusted, and a user.
func untrustedSources(t *testing.T) agenttypes.Sources {
	src, _ := testSources(t)
	src.TrustProject = nil
	return src
}

func TestAnUntrustedProjectsScriptsAreNeverCompiled(t *testing.T) {
	src := untrustedSources(t)
	layout(t, src.ProjectDir, map[string]string{
		".troupe/agents/hooked.yaml": scripted,
		".troupe/agents/child.yaml":  "name: child\ndescription: d.\nextends: hooked\n",
		".troupe/agents/plain.yaml":  def("plain", "No scripts."),
	})
	reg := testRegistry(t)
	scripts := &countingScripts{}
	reg.SetScriptCompiler(scripts)
	diags := reg.Reload(src)
	require.False(t, diags.HasErrors(), diags.String())

	assert.Empty(t, scripts.compiled, "compiling runs a script's top-level declarations")
	_, err := reg.Type("plain")
	assert.NoError(t, err, "a definition without scripts loads untrusted")

	_, err = reg.Type("hooked")
	require.ErrorIs(t, err, agenttypes.ErrUntrusted)
	assert.Contains(t, err.Error(), filepath.Join(".troupe", "agents", "hooked.yaml"))
	assert.Contains(t, err.Error(), "its scripts run")
	_, err = reg.Type("child")
	require.ErrorIs(t, err, agenttypes.ErrUntrusted, "a type extending a withheld one is withheld with it")
	assert.Contains(t, err.Error(), "it extends hooked, for which its scripts run")

	var names []string
	for _, w := range reg.Withheld() {
		names = append(names, w.Name)
	}
	assert.Equal(t, []string{"child", "hooked"}, names)
	for _, tp := range reg.Types() {
		assert.NotContains(t, []string{"hooked", "child"}, tp.Name, "withheld types are not listed as types")
	}
}

func TestTheUsersOwnScriptsNeedNoTrust(t *testing.T) {
	src := untrustedSources(t)
	layout(t, src.UserConfigDir, map[string]string{"troupe/agents/hooked.yaml": scripted})
	reg := testRegistry(t)
	scripts := &countingScripts{}
	reg.SetScriptCompiler(scripts)
	require.False(t, reg.Reload(src).HasErrors())
	assert.Equal(t, []string{"hooked"}, scripts.compiled)
	_, err := reg.Type("hooked")
	assert.NoError(t, err)
}

func TestAnUntrustedProjectTypeNeverHidesABuiltinOrUserType(t *testing.T) {
	src := untrustedSources(t)
	layout(t, src.ProjectDir, map[string]string{
		".troupe/agents/explore.yaml": def("explore", "The project's explore."),
		".claude/agents/mine.md":      "---\nname: mine\ndescription: The project's mine.\n---\nproject prompt\n",
	})
	layout(t, src.UserConfigDir, map[string]string{"troupe/agents/mine.yaml": def("mine", "The user's mine.")})
	reg := testRegistry(t)
	require.False(t, reg.Reload(src).HasErrors())

	explore, err := reg.Type("explore")
	require.NoError(t, err)
	assert.Equal(t, "builtin", explore.Source, "the builtin stays")
	mine, err := reg.Type("mine")
	require.NoError(t, err)
	assert.Equal(t, "The user's mine.", mine.Description)

	held := reg.Withheld()
	require.Len(t, held, 2)
	assert.Equal(t, "explore", held[0].Name)
	require.Len(t, held[0].Grants, 1)
	assert.Equal(t, agenttypes.GrantShadow, held[0].Grants[0].Kind)
	assert.Contains(t, held[0].Grants[0].Detail, "the builtin type explore")
	assert.Contains(t, held[1].Grants[0].Detail, "the user's type mine")

	// Trusted, both take their names, and say whom they hide.
	src.TrustProject = agenttypes.TrustAll
	require.False(t, reg.Reload(src).HasErrors())
	explore, err = reg.Type("explore")
	require.NoError(t, err)
	assert.Equal(t, "The project's explore.", explore.Description)
	assert.Contains(t, explore.Shadows, "builtin")
	assert.Empty(t, reg.Withheld())
}

func TestTrustIsAskedForEveryGrantAndPinnedToContent(t *testing.T) {
	src := untrustedSources(t)
	layout(t, src.ProjectDir, map[string]string{
		// Both hides the builtin and has scripts: two grants.
		".troupe/agents/explore.yaml": "name: explore\ndescription: d.\nscript: |\n  package hooks\n  mine\n",
		".troupe/agents/hooked.yaml":  scripted,
	})
	var mu sync.Mutex
	var asked []agenttypes.Grant
	src.TrustProject = func(g agenttypes.Grant) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, g)
		return false
	}
	reg := testRegistry(t)
	scripts := &countingScripts{}
	reg.SetScriptCompiler(scripts)
	require.False(t, reg.Reload(src).HasErrors())
	kinds := map[string][]string{}
	for _, g := range asked {
		kinds[g.Type] = append(kinds[g.Type], g.Kind)
		assert.Len(t, g.Digest, 64)
	}
	assert.ElementsMatch(t, []string{agenttypes.GrantShadow, agenttypes.GrantScripts}, kinds["explore"], "a caller recording grants sees them all")
	assert.Equal(t, []string{agenttypes.GrantScripts}, kinds["hooked"])

	// Trust exactly what was asked: everything loads.
	given := slices.Clone(asked)
	src.TrustProject = func(g agenttypes.Grant) bool { return slices.Contains(given, g) }
	require.False(t, reg.Reload(src).HasErrors())
	_, err := reg.Type("hooked")
	require.NoError(t, err)
	assert.Contains(t, scripts.compiled, "hooked")

	// A changed script has another digest: withheld again, not compiled.
	layout(t, src.ProjectDir, map[string]string{".troupe/agents/hooked.yaml": scripted + "  and more\n"})
	scripts.compiled = nil
	require.False(t, reg.Reload(src).HasErrors())
	_, err = reg.Type("hooked")
	require.ErrorIs(t, err, agenttypes.ErrUntrusted)
	assert.NotContains(t, scripts.compiled, "hooked")
}

// Files loaded on their own compile only the scripts the caller trusts:
// the zero LoadOptions compiles none.
func TestUntrustedFilesAreCheckedNotCompiled(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "hooked.yaml", scripted)
	reg := testRegistry(t)
	scripts := &countingScripts{}
	reg.SetScriptCompiler(scripts)
	types, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: reg}, path)
	require.False(t, diags.HasErrors(), diags.String())
	assert.Empty(t, types)
	assert.Empty(t, scripts.compiled)
	assert.Equal(t, []string{"hooked"}, scripts.checked)
	require.Len(t, diags.Warnings(), 1)
	assert.Contains(t, diags.Warnings()[0].Message, "not compiled")

	types, diags = agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: reg, TrustScripts: func(g agenttypes.Grant) bool {
		return g.Kind == agenttypes.GrantScripts && g.Type == "hooked" && g.File == path
	}}, path)
	require.False(t, diags.HasErrors(), diags.String())
	assert.Len(t, types, 1)
	assert.Equal(t, []string{"hooked"}, scripts.compiled)
}

func TestWithheldErrorSaysWhy(t *testing.T) {
	w := agenttypes.Withheld{Name: "x", Source: "x.yaml", Grants: []agenttypes.Grant{{Detail: "its scripts run"}}}
	err := w.Error()
	assert.True(t, errors.Is(err, agenttypes.ErrUntrusted))
	assert.Equal(t, `type "x" (x.yaml) is withheld until the project is trusted: its scripts run`, err.Error())
}

// A user's type that extends a builtin type keeps extending it when the
// project defines a withheld type of that name: an untrusted project
// takes nothing of the user's away.
func TestAWithheldNameFallsToTheTypeBelowForExtendsToo(t *testing.T) {
	src := untrustedSources(t)
	layout(t, src.ProjectDir, map[string]string{".troupe/agents/explore.yaml": "name: explore\ndescription: d.\nscript: |\n  package hooks\n  x\n"})
	layout(t, src.UserConfigDir, map[string]string{"troupe/agents/mine.yaml": "name: mine\ndescription: Mine.\nextends: explore\n"})
	reg := testRegistry(t)
	reg.SetScriptCompiler(&countingScripts{})
	require.False(t, reg.Reload(src).HasErrors())
	mine, err := reg.Type("mine")
	require.NoError(t, err)
	assert.Equal(t, "explore", mine.Extends)
	assert.Equal(t, "You explore {{.Dir}}.", mine.Prompt, "the builtin explore's")
}

func TestAProjectTypeHidingAPluginsTypeNeedsTrustUnlessThePluginIsTheProjects(t *testing.T) {
	src := untrustedSources(t)
	layout(t, src.ProjectDir, map[string]string{".troupe/agents/looper.yaml": def("looper", "The project's looper.")})
	reg := testRegistry(t)
	require.NoError(t, reg.SetPlugins([]agenttypes.Type{{Name: "looper", Description: "The plugin's looper.", Source: "plugin:users"}}, nil))
	require.False(t, reg.Reload(src).HasErrors())
	looper, err := reg.Type("looper")
	require.NoError(t, err)
	assert.Equal(t, "plugin:users", looper.Source, "the user's plugin's type stays")
	held := reg.Withheld()
	require.Len(t, held, 1)
	assert.Contains(t, held[0].Grants[0].Detail, "the type looper of plugin:users")
	assert.Equal(t, held[0].Grants, agenttypes.Grants(reg, src), "Grants lists what Reload asks")

	// The project's own plugin's type is the project's to hide.
	src.ProjectSource = func(source string) bool { return source == "plugin:users" }
	require.False(t, reg.Reload(src).HasErrors())
	looper, err = reg.Type("looper")
	require.NoError(t, err)
	assert.Equal(t, "The project's looper.", looper.Description)
	assert.Empty(t, agenttypes.Grants(reg, src))
}

func TestGrantsCompilesNothing(t *testing.T) {
	src := untrustedSources(t)
	layout(t, src.ProjectDir, map[string]string{".troupe/agents/hooked.yaml": scripted})
	layout(t, src.UserConfigDir, map[string]string{"troupe/agents/own.yaml": "name: own\ndescription: d.\nscript: |\n  package hooks\n  mine\n"})
	reg := testRegistry(t)
	scripts := &countingScripts{}
	reg.SetScriptCompiler(scripts)
	grants := agenttypes.Grants(reg, src)
	require.Len(t, grants, 1)
	assert.Equal(t, "hooked", grants[0].Type)
	assert.Empty(t, scripts.compiled, "not even the user's own scripts")
	assert.Empty(t, scripts.checked)
}

// Working in the home directory, the user's own ~/.claude/agents need no
// trust.
func TestTheHomeDirectoryAsAProjectKeepsTheUsersDefinitionsTheirs(t *testing.T) {
	home := t.TempDir()
	src := agenttypes.Sources{ProjectDir: home, HomeDir: home}
	layout(t, home, map[string]string{".claude/agents/own.md": "---\nname: own\ndescription: d.\n---\nprompt\n", ".claude/agents/explore.md": "---\nname: explore\ndescription: My explore.\n---\nprompt\n"})
	reg := testRegistry(t)
	require.False(t, reg.Reload(src).HasErrors())
	explore, err := reg.Type("explore")
	require.NoError(t, err)
	assert.Equal(t, "My explore.", explore.Description, "the user's own type hides the builtin without trust")
	assert.Empty(t, reg.Withheld())
}

// Scripts are compiled by the compiler of the registry they are loaded
// with, whichever way they are loaded, and by no other: two programs (or
// two managers in one) with registries of their own never share one.
func TestEachRegistryCompilesWithItsOwnCompiler(t *testing.T) {
	src, _ := testSources(t)
	layout(t, src.UserConfigDir, map[string]string{"troupe/agents/hooked.yaml": scripted})
	file := write(t, t.TempDir(), "hooked.yaml", scripted)
	mine, theirs := &countingScripts{}, &countingScripts{}
	reg, other := testRegistry(t), testRegistry(t)
	reg.SetScriptCompiler(mine)
	other.SetScriptCompiler(theirs)
	bare := testRegistry(t)

	require.False(t, reg.Reload(src).HasErrors())
	_, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: reg, TrustScripts: agenttypes.TrustAll}, file)
	require.False(t, diags.HasErrors(), diags.String())
	_, diags = agenttypes.ParseDefinition(file, []byte(scripted), agenttypes.LoadOptions{Registry: reg, TrustScripts: agenttypes.TrustAll})
	require.False(t, diags.HasErrors(), diags.String())
	_, diags = agenttypes.Load(reg, src)
	require.False(t, diags.HasErrors(), diags.String())
	assert.Equal(t, []string{"hooked", "hooked", "hooked", "hooked"}, mine.compiled)
	assert.Empty(t, theirs.compiled)

	for name, opts := range map[string]agenttypes.LoadOptions{
		"a registry without a compiler": {Registry: bare, TrustScripts: agenttypes.TrustAll},
		"no registry":                   {TrustScripts: agenttypes.TrustAll},
	} {
		_, diags = agenttypes.LoadFiles(opts, file)
		assert.Contains(t, diags.String(), "this program runs no scripts", name)
		assert.Contains(t, diags.String(), "see Registry.SetScriptCompiler", name)
	}
	assert.Len(t, mine.compiled, 4, "no other load used this registry's compiler")
	assert.Empty(t, theirs.compiled)
}

// A project definition that names commands is listed by Grants, pinned to
// its commands, and loads untrusted all the same: what refuses its
// commands is the run tool, in a project that is not trusted. The user's
// own definitions need no such grant.
func TestAProjectDefinitionsCommandsAreAGrantThatWithholdsNothing(t *testing.T) {
	src := untrustedSources(t)
	fixer := "name: fixer\ndescription: Fixes.\ntools: [read, edit, run]\nrun:\n  allow: [\"go test\", \"make test\"]\n"
	layout(t, src.ProjectDir, map[string]string{
		".troupe/agents/fixer.yaml":  fixer,
		".troupe/agents/setup.yaml":  "name: setup\ndescription: Sets up.\nextends: fixer\nsetup: [\"make test\"]\nrun: {network: true}\n",
		".troupe/agents/reader.yaml": "name: reader\ndescription: Reads.\ntools: [read, run]\n",
		".claude/agents/tester.md":   "---\nname: tester\ndescription: Tests.\ntools: Read, Bash(go test:*), Bash\n---\nTest.\n",
	})
	layout(t, src.UserConfigDir, map[string]string{"troupe/agents/mine.yaml": "name: mine\ndescription: Mine.\nrun: {allow: [make]}\n"})
	reg := testRegistry(t)
	grants := agenttypes.Grants(reg, src)
	details := map[string]string{}
	for _, g := range grants {
		require.Equal(t, agenttypes.GrantRun, g.Kind, "%+v", g)
		assert.Len(t, g.Digest, 64)
		details[g.Type] = g.Detail
	}
	assert.Equal(t, map[string]string{
		"fixer":  "runs: go test, make test",
		"setup":  "sets up with: make test; with the network",
		"tester": "runs: go test",
	}, details, "reader names no command of its own, and mine is the user's")

	var asked []agenttypes.Grant
	src.TrustProject = func(g agenttypes.Grant) bool { asked = append(asked, g); return false }
	diags := reg.Reload(src)
	require.False(t, diags.HasErrors(), "%s", diags)
	assert.Empty(t, asked, "loading asks for no command")
	assert.Empty(t, reg.Withheld())
	typ, err := reg.Type("fixer")
	require.NoError(t, err)
	assert.Equal(t, []string{"go test", "make test"}, typ.Run.Allow)
	typ, err = reg.Type("setup")
	require.NoError(t, err)
	assert.Equal(t, agenttypes.RunPolicy{Allow: []string{"go test", "make test"}, Network: true}, typ.Run)

	// The digest is of the commands: another prompt keeps it, another
	// command changes it.
	digest := func() string {
		for _, g := range agenttypes.Grants(reg, src) {
			if g.Type == "fixer" {
				return g.Digest
			}
		}
		return ""
	}
	before := digest()
	layout(t, src.ProjectDir, map[string]string{".troupe/agents/fixer.yaml": fixer + "prompt: Fix {{.Dir}}.\n"})
	assert.Equal(t, before, digest())
	layout(t, src.ProjectDir, map[string]string{".troupe/agents/fixer.yaml": strings.Replace(fixer, "make test", "make", 1)})
	assert.NotEqual(t, before, digest())
}

// The project's run list, given to Reload once trusted, is the list of
// every type that lists run or Bash and names none of its own.
func TestTheProjectsRunListGoesToTypesWithoutOne(t *testing.T) {
	src, _ := testSources(t)
	layout(t, src.ProjectDir, map[string]string{
		".claude/agents/tester.md": "---\nname: tester\ndescription: Tests.\ntools: Read, Bash\n---\nTest.\n",
		".troupe/agents/own.yaml":  "name: own\ndescription: Own.\ntools: [read, run]\nrun: {allow: [make]}\n",
	})
	reg := testRegistry(t)
	diags := reg.Reload(src)
	require.False(t, diags.HasErrors(), "%s", diags)
	tester, err := reg.Type("tester")
	require.NoError(t, err)
	assert.Equal(t, []string{"read"}, tester.Tools, "no list: Bash is dropped")
	require.Len(t, diags.Warnings(), 1)
	assert.Contains(t, diags.Warnings()[0].Message, `add run: {allow: ["go test", "make"]} to this file's front matter, or to the project's .troupe/config.yaml`)

	src.ProjectRun = &agenttypes.RunPolicy{Allow: []string{"go test"}}
	diags = reg.Reload(src)
	require.Empty(t, diags)
	tester, err = reg.Type("tester")
	require.NoError(t, err)
	assert.Equal(t, []string{"read", "run"}, tester.Tools)
	assert.Equal(t, []string{"go test"}, tester.Run.Allow)
	own, err := reg.Type("own")
	require.NoError(t, err)
	assert.Equal(t, []string{"make"}, own.Run.Allow, "a type's own list stays")
}

func TestTheProjectsRunListReplacesARegisteredTypesDefault(t *testing.T) {
	src, _ := testSources(t)
	layout(t, src.ProjectDir, map[string]string{
		".troupe/agents/hidden.yaml": "name: hidden\ndescription: Mine.\ntools: [read, run]\nrun: {allow: [make]}\n",
	})
	reg := testRegistry(t)
	for _, typ := range []agenttypes.Type{
		{Name: "doer", Description: "Does.", Tools: []string{"read", "run"}, Run: agenttypes.RunPolicy{Allow: []string{"go test", "go vet"}, Timeout: time.Minute}},
		{Name: "hidden", Description: "Hidden by a file.", Tools: []string{"read", "run"}, Run: agenttypes.RunPolicy{Allow: []string{"go test"}}},
		{Name: "looker", Description: "Looks.", Tools: []string{"read"}},
	} {
		require.NoError(t, reg.RegisterType(typ))
	}
	require.False(t, reg.Reload(src).HasErrors())
	doer, err := reg.Type("doer")
	require.NoError(t, err)
	assert.Equal(t, []string{"go test", "go vet"}, doer.Run.Allow, "untrusted or absent: the default stays")

	src.ProjectRun = &agenttypes.RunPolicy{Allow: []string{"make check"}, Network: true}
	require.False(t, reg.Reload(src).HasErrors())
	doer, err = reg.Type("doer")
	require.NoError(t, err)
	assert.Equal(t, []string{"make check"}, doer.Run.Allow, "the project's list replaces the default")
	assert.True(t, doer.Run.Network)
	assert.Equal(t, time.Minute, doer.Run.Timeout, "a timeout the project does not give stays")
	hidden, err := reg.Type("hidden")
	require.NoError(t, err)
	assert.Equal(t, []string{"make"}, hidden.Run.Allow, "a definition file's own list wins")
	looker, err := reg.Type("looker")
	require.NoError(t, err)
	assert.Zero(t, looker.Run, "a type that runs nothing gets nothing")

	src.ProjectRun = nil
	require.False(t, reg.Reload(src).HasErrors())
	doer, err = reg.Type("doer")
	require.NoError(t, err)
	assert.Equal(t, []string{"go test", "go vet"}, doer.Run.Allow, "trust revoked: the default is back")
}
