package agenttypes_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// layout writes files under root, relative path → contents.
func layout(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		write(t, root, rel, text)
	}
}

func def(name, desc string) string {
	return fmt.Sprintf("name: %s\ndescription: %s\n", name, desc)
}

// testSources are the layers of a trusted project and a user, under a
// fresh directory.
func testSources(t *testing.T) (agenttypes.Sources, string) {
	root := t.TempDir()
	src := agenttypes.Sources{
		ProjectDir:    filepath.Join(root, "repo"),
		UserConfigDir: filepath.Join(root, "config"),
		HomeDir:       filepath.Join(root, "home"),
		TrustProject:  agenttypes.TrustAll,
	}
	return src, root
}

func TestLayers(t *testing.T) {
	src, root := testSources(t)
	layers := src.Layers()
	require.Len(t, layers, 2)
	assert.Equal(t, "project", layers[0].Name)
	assert.Equal(t, []string{filepath.Join(root, "repo", ".troupe", "agents"), filepath.Join(root, "repo", ".claude", "agents")}, layers[0].Dirs)
	assert.Equal(t, "user", layers[1].Name)
	assert.Equal(t, []string{filepath.Join(root, "config", "troupe", "agents"), filepath.Join(root, "home", ".claude", "agents")}, layers[1].Dirs)

	// Working in the home directory: ~/.claude/agents stays the user's,
	// whose definitions need no trust; ~/.troupe/agents is the project's.
	same := agenttypes.Sources{ProjectDir: src.HomeDir, HomeDir: src.HomeDir}
	layers = same.Layers()
	assert.Equal(t, []string{filepath.Join(src.HomeDir, ".troupe", "agents")}, layers[0].Dirs)
	assert.Equal(t, []string{filepath.Join(src.HomeDir, ".claude", "agents")}, layers[1].Dirs)

	assert.Empty(t, agenttypes.Sources{}.Layers()[0].Dirs)
}

func TestSourcesFromEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	src := agenttypes.SourcesFromEnv("repo")
	assert.Equal(t, agenttypes.Sources{ProjectDir: "repo", UserConfigDir: filepath.Join(home, ".config"), HomeDir: home}, src)
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	assert.Equal(t, xdg, agenttypes.SourcesFromEnv("repo").UserConfigDir)
	t.Setenv("XDG_CONFIG_HOME", "relative/path") // ignored, as the XDG spec says
	assert.Equal(t, filepath.Join(home, ".config"), agenttypes.SourcesFromEnv("repo").UserConfigDir)
}

func TestFindProjectRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, ".git"), 0o755))
	deep := filepath.Join(root, "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	assert.Equal(t, root, agenttypes.FindProjectRoot(deep))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "a", ".troupe"), 0o755))
	assert.Equal(t, filepath.Join(root, "a"), agenttypes.FindProjectRoot(deep))
}

func TestDiscoveryPrecedence(t *testing.T) {
	src, root := testSources(t)
	layout(t, root, map[string]string{
		"repo/.troupe/agents/explore.yaml":      def("explore", "The project's explore.") + "prompt: Project prompt.\n",
		"repo/.troupe/agents/nested/deep.yml":   def("deep", "Found by a recursive walk."),
		"repo/.claude/agents/reviewer.md":       "---\nname: reviewer\ndescription: The project's reviewer.\ntools: Read, Grep\n---\nReview.\n",
		"repo/.claude/agents/README.md":         "# My agents\n\nNot a definition.\n",
		"repo/.claude/agents/.hidden/secret.md": "---\nname: secret\ndescription: hidden\n---\n",
		"repo/.claude/agents/notes.txt":         "ignored",
		"config/troupe/agents/reviewer.yaml":    def("reviewer", "The user's reviewer."),
		"config/troupe/agents/mine.yaml":        def("mine", "Only the user has it.") + "extends: explore\n",
		"home/.claude/agents/explore.md":        "---\nname: explore\ndescription: The user's Claude explore.\n---\n",
	})
	reg := testRegistry(t)
	types, diags := agenttypes.Load(reg, src)
	require.False(t, diags.HasErrors(), "%s", diags)
	require.Len(t, diags, 1, "%s", diags)
	assert.Contains(t, diags[0].String(), "README.md: warning: skipped: no front matter")

	byName := map[string]agenttypes.Type{}
	for _, ty := range types {
		byName[ty.Name] = ty
	}
	require.Len(t, byName, 4)
	assert.Equal(t, "The project's explore.", byName["explore"].Description)
	assert.Equal(t, filepath.Join(src.ProjectDir, ".troupe", "agents", "explore.yaml"), byName["explore"].Source)
	assert.Equal(t, []string{filepath.Join(src.HomeDir, ".claude", "agents", "explore.md"), "builtin"}, byName["explore"].Shadows)
	assert.Equal(t, "The project's reviewer.", byName["reviewer"].Description)
	assert.Equal(t, []string{filepath.Join(src.UserConfigDir, "troupe", "agents", "reviewer.yaml")}, byName["reviewer"].Shadows)
	assert.Equal(t, filepath.Join(src.ProjectDir, ".troupe", "agents", "nested", "deep.yml"), byName["deep"].Source)
	assert.Empty(t, byName["deep"].Shadows)
	// extends names a type as it is listed: the user's type extends the
	// project's explore, which hides the registered one.
	assert.Equal(t, "explore", byName["mine"].Extends)
	assert.Equal(t, "Project prompt.", byName["mine"].Prompt)

	// Reload installs them: files first, registered types after.
	require.False(t, reg.Reload(src).HasErrors())
	got, err := reg.Type("explore")
	require.NoError(t, err)
	assert.Equal(t, "The project's explore.", got.Description)
	names := []string{}
	for _, ty := range reg.Types() {
		names = append(names, ty.Name)
	}
	assert.Equal(t, []string{"deep", "explore", "mine", "reviewer"}, names)
}

func TestDiscoveryDuplicatesAndBroken(t *testing.T) {
	src, root := testSources(t)
	layout(t, root, map[string]string{
		"repo/.troupe/agents/a.yaml":      def("twin", "One."),
		"repo/.claude/agents/b.md":        "---\nname: twin\ndescription: Two.\n---\n",
		"config/troupe/agents/twin.yaml":  def("twin", "The user's, hidden by the broken project pair."),
		"repo/.troupe/agents/broken.yaml": "name: explore\ndescription: Broken.\nbudget: {max_turns: -1}\n",
		"repo/.troupe/agents/fine.yaml":   def("fine", "Fine."),
		"config/troupe/agents/child.yaml": def("child", "Extends a broken name.") + "extends: twin\n",
	})
	reg := testRegistry(t)
	diags := reg.Reload(src)
	errs := diags.Errors()
	require.Len(t, errs, 4, "%s", diags)
	a := filepath.Join(src.ProjectDir, ".troupe", "agents", "a.yaml")
	b := filepath.Join(src.ProjectDir, ".claude", "agents", "b.md")
	assert.Contains(t, errs[0].String(), `child.yaml:3:10: extends "twin", which has errors (see `)
	assert.Equal(t, fmt.Sprintf(`%s:2:1: type "twin" is defined twice in the project layer, here and in %s; rename or delete one of them`, b, a), errs[1].String())
	assert.Equal(t, fmt.Sprintf(`%s:1:1: type "twin" is defined twice in the project layer, here and in %s; rename or delete one of them`, a, b), errs[2].String())
	assert.Contains(t, errs[3].String(), "broken.yaml:3:21: max_turns is -1")
	_, err := reg.Type("child")
	assert.ErrorIs(t, err, agenttypes.ErrInvalid)

	_, err = reg.Type("twin")
	require.ErrorIs(t, err, agenttypes.ErrInvalid, "a broken name does not fall back to a lower layer")
	assert.Equal(t, fmt.Sprintf(`invalid definition: type "twin" is not loaded: it is defined in both %s and %s; rename or delete one of them`, a, b), err.Error())
	_, err = reg.Type("explore")
	require.ErrorIs(t, err, agenttypes.ErrInvalid, "nor to a registered type")
	assert.Equal(t, fmt.Sprintf(`invalid definition: type "explore" is not loaded: %s has errors; fix them to load it`, filepath.Join(src.ProjectDir, ".troupe", "agents", "broken.yaml")), err.Error())
	_, err = reg.Type("fine")
	assert.NoError(t, err)
	for _, ty := range reg.Types() {
		assert.NotEqual(t, "explore", ty.Name)
	}
}

func TestDiscoverySymlinks(t *testing.T) {
	src, root := testSources(t)
	agents := filepath.Join(src.ProjectDir, ".troupe", "agents")
	layout(t, root, map[string]string{
		"elsewhere/loop.yaml":  def("outside", "Reached only through a symlinked directory."),
		"shared/linked.yaml":   def("linked", "A symlinked file is read."),
		"dotfiles/agents/u.md": "---\nname: u\ndescription: The user's agents dir is a symlink.\n---\n",
	})
	require.NoError(t, os.MkdirAll(agents, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(agents, "linkdir")))
	require.NoError(t, os.Symlink(agents, filepath.Join(agents, "self"))) // a loop, were it followed
	require.NoError(t, os.Symlink(filepath.Join(root, "shared", "linked.yaml"), filepath.Join(agents, "linked.yaml")))
	require.NoError(t, os.MkdirAll(filepath.Join(src.HomeDir, ".claude"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(root, "dotfiles", "agents"), filepath.Join(src.HomeDir, ".claude", "agents")))

	types, diags := agenttypes.Load(nil, src)
	require.False(t, diags.HasErrors(), "%s", diags)
	var names []string
	for _, ty := range types {
		names = append(names, ty.Name)
	}
	assert.Equal(t, []string{"linked", "u"}, names)
	assert.Equal(t, filepath.Join(src.HomeDir, ".claude", "agents", "u.md"), types[1].Source, "sources keep the path as configured")
}

func TestReloadKeepsRunningAgentsTypes(t *testing.T) {
	src, root := testSources(t)
	p := write(t, root, "repo/.troupe/agents/worker.yaml", def("worker", "Version one.")+"tools: [read]\n")
	reg := testRegistry(t)
	require.False(t, reg.Reload(src).HasErrors())
	running, err := reg.Type("worker")
	require.NoError(t, err)

	write(t, root, "repo/.troupe/agents/worker.yaml", def("worker", "Version two.")+"tools: [grep]\n")
	require.False(t, reg.Reload(src).HasErrors())
	fresh, err := reg.Type("worker")
	require.NoError(t, err)
	assert.Equal(t, "Version two.", fresh.Description)
	assert.Equal(t, "Version one.", running.Description, "the pointer an agent holds does not change")
	assert.Equal(t, []string{"read"}, running.Tools)

	require.NoError(t, os.Remove(p))
	require.False(t, reg.Reload(src).HasErrors())
	_, err = reg.Type("worker")
	assert.ErrorIs(t, err, agenttypes.ErrUnknownType, "a deleted file's type is gone after a reload")
	_, err = reg.Type("explore")
	assert.NoError(t, err, "registered types stay")
}

func TestRegistryFileTypes(t *testing.T) {
	reg := testRegistry(t)
	require.NoError(t, reg.SetFileTypes([]agenttypes.Type{{Name: "explore", Description: "mine", Source: "x.yaml"}}))
	got, err := reg.Type("explore")
	require.NoError(t, err)
	assert.Equal(t, "mine", got.Description, "a file type hides a registered one")
	assert.NoError(t, reg.RegisterType(agenttypes.Type{Name: "late", Description: "registered after a reload"}))
	assert.ErrorIs(t, reg.RegisterType(agenttypes.Type{Name: "late", Description: "again"}), agenttypes.ErrDuplicate)

	err = reg.SetFileTypes([]agenttypes.Type{{Name: "a", Description: "d", Source: "1"}, {Name: "a", Description: "d", Source: "2"}})
	assert.ErrorIs(t, err, agenttypes.ErrDuplicate)
	assert.ErrorIs(t, reg.SetFileTypes([]agenttypes.Type{{Name: "a b", Description: "d"}}), agenttypes.ErrInvalid)
	got, err = reg.Type("explore")
	require.NoError(t, err)
	assert.Equal(t, "mine", got.Description, "a refused swap changes nothing")
}

func TestReloadConcurrentWithLookups(t *testing.T) {
	src, root := testSources(t)
	for i := range 20 {
		write(t, root, fmt.Sprintf("repo/.troupe/agents/t%02d.yaml", i), def(fmt.Sprintf("t%02d", i), "d")+"extends: explore\n")
	}
	reg := testRegistry(t)
	require.False(t, reg.Reload(src).HasErrors())
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, ty := range reg.Types() {
					got, err := reg.Type(ty.Name)
					if err != nil && !errors.Is(err, agenttypes.ErrUnknownType) {
						t.Error(err)
					}
					if got != nil {
						_ = strings.Join(got.Tools, ",")
					}
				}
			}
		})
	}
	for range 10 {
		assert.False(t, reg.Reload(src).HasErrors())
	}
	close(stop)
	wg.Wait()
	assert.Len(t, reg.Types(), 21)
}

func TestDefinitionExtendsTheTypeItShadows(t *testing.T) {
	src, _ := testSources(t)
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{
		Name: "explore", Description: "builtin explore", Prompt: "builtin prompt",
		Tools: []string{"read"}, Source: "builtin",
	}))
	layout(t, src.ProjectDir, map[string]string{
		".troupe/agents/explore.yaml": "name: explore\ndescription: my explore\nextends: explore\n",
	})
	diags := reg.Reload(src)
	require.False(t, diags.HasErrors(), diags.String())
	got, err := reg.Type("explore")
	require.NoError(t, err)
	assert.Equal(t, "my explore", got.Description)
	assert.Equal(t, "builtin prompt", got.Prompt, "the rest comes from the explore it shadows")
	assert.Equal(t, []string{"read"}, got.Tools)
	assert.Equal(t, []string{"builtin"}, got.Shadows)
}

func TestDiscoveryClaudeDuplicatesKeepTheFirstByPath(t *testing.T) {
	src, root := testSources(t)
	claude := func(name, desc string) string {
		return "---\nname: " + name + "\ndescription: " + desc + "\ntools: Read, Grep\n---\nBody.\n"
	}
	layout(t, root, map[string]string{
		"repo/.claude/agents/b.md":       claude("twin", "Second by path."),
		"repo/.claude/agents/a.md":       claude("twin", "First by path."),
		"repo/.claude/agents/team/c.md":  claude("twin", "Third by path."),
		"config/troupe/agents/twin.yaml": def("twin", "The user's, in the layer below."),
		// The first by path has errors, so the next one is kept.
		"home/.claude/agents/a-broken.md": "---\nname: pair\ndescription: d\nmaxTurns: 0\n---\n",
		"home/.claude/agents/b-fine.md":   claude("pair", "Fine."),
	})
	proj := func(rel string) string { return filepath.Join(src.ProjectDir, ".claude", "agents", rel) }
	home := func(rel string) string { return filepath.Join(src.HomeDir, ".claude", "agents", rel) }
	reg := testRegistry(t)
	diags := reg.Reload(src)

	require.Len(t, diags.Errors(), 1, "%s", diags)
	assert.Equal(t, home("a-broken.md")+":4:11: maxTurns is 0: a budget must be positive; leave maxTurns out to inherit the default", diags.Errors()[0].String())
	want := []string{
		home("a-broken.md") + `:2:1: warning: type "pair" is also defined in ` + home("b-fine.md") + ", which is kept; this file is ignored: rename or delete one of them",
		proj("b.md") + `:2:1: warning: type "twin" is also defined in ` + proj("a.md") + ", which is kept; this file is ignored: rename or delete one of them",
		proj("team/c.md") + `:2:1: warning: type "twin" is also defined in ` + proj("a.md") + ", which is kept; this file is ignored: rename or delete one of them",
	}
	var got []string
	for _, d := range diags.Warnings() {
		if strings.Contains(d.Message, "also defined") {
			got = append(got, d.String())
		}
	}
	assert.Equal(t, want, got, "a warning on each ignored file, naming the one kept")

	twin, err := reg.Type("twin")
	require.NoError(t, err, "never both dropped")
	assert.Equal(t, "First by path.", twin.Description)
	assert.Equal(t, proj("a.md"), twin.Source)
	assert.Equal(t, []string{proj("b.md"), proj("team/c.md"), filepath.Join(src.UserConfigDir, "troupe", "agents", "twin.yaml")}, twin.Shadows)
	pair, err := reg.Type("pair")
	require.NoError(t, err)
	assert.Equal(t, "Fine.", pair.Description)

	// LoadFiles reads its files as one layer, by the same rule.
	types, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{}, proj("b.md"), proj("a.md"))
	require.False(t, diags.HasErrors(), "%s", diags)
	require.Len(t, types, 1)
	assert.Equal(t, "First by path.", types[0].Description)
	assert.Contains(t, diags.String(), proj("b.md")+`:2:1: warning: type "twin" is also defined in `+proj("a.md"))

	// Troupe's own files keep the error, and neither loads.
	dir := t.TempDir()
	x := write(t, dir, "x.yaml", def("same", "One."))
	y := write(t, dir, "y.yaml", def("same", "Two."))
	types, diags = agenttypes.LoadFiles(agenttypes.LoadOptions{}, x, y)
	assert.Empty(t, types)
	require.Len(t, diags, 2, "%s", diags)
	assert.Equal(t, x+`:1:1: type "same" is also defined in `+y+"; rename or delete one of them", diags[0].String())
	assert.Equal(t, y+`:1:1: type "same" is also defined in `+x+"; rename or delete one of them", diags[1].String())
}
