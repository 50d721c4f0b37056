package agenttypes_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// corpus holds real Claude Code agent files, beside the repository (see
// its README); the test is skipped where it is absent.
var corpus = filepath.Join("..", "..", "shared", "corpora")

// frontLine finds a top-level "key: value" line in the front matter.
func frontLine(front, key string) (string, bool) {
	m := regexp.MustCompile(`(?m)^` + key + `:[ \t]*(.*?)[ \t]*$`).FindStringSubmatch(front)
	if m == nil {
		return "", false
	}
	return strings.Trim(m[1], `"'`), true
}

// expectTools is what troupe should make of a Claude tools line, worked
// out apart from the loader: the names that map onto the read-only tools
// troupe has, in order, without repeats.
func expectTools(line string) []string {
	mapping := map[string]string{"Read": "read", "Grep": "grep", "Glob": "glob", "LS": "ls", "TodoWrite": "note"}
	out := []string{}
	for _, raw := range strings.Split(strings.Trim(line, "[]"), ",") {
		name := strings.TrimSpace(raw)
		if to, ok := mapping[name]; ok && !slices.Contains(out, to) {
			out = append(out, to)
		}
		if slices.Contains(agenttypes.DefaultTools, name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func TestCorpus(t *testing.T) {
	if _, err := os.Stat(corpus); err != nil {
		t.Skipf("no corpus at %s: %v", corpus, err)
	}
	var files []string
	require.NoError(t, filepath.WalkDir(corpus, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	}))
	if len(files) == 0 {
		t.Skip("the corpus holds no Markdown files")
	}
	var loaded, fellBack, warned int
	var failures []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		// The corpus files live in .claude/agents directories where they
		// come from, so they are read as Claude Code reads them.
		typ, diags := agenttypes.LoadFile(f, agenttypes.LoadOptions{Mode: agenttypes.ModeLenient})
		if diags.HasErrors() {
			failures = append(failures, diags.Errors().String())
			continue
		}
		parts := strings.SplitN(string(data), "\n---", 2)
		front := parts[0]
		wantName, ok := frontLine(front, "name")
		if !ok {
			wantName = strings.TrimSuffix(filepath.Base(f), ".md")
		}
		wantTools := agenttypes.DefaultTools
		if line, ok := frontLine(front, "tools"); ok {
			wantTools = expectTools(line)
		}
		switch {
		case typ.Name != wantName:
			failures = append(failures, f+": name "+typ.Name+", want "+wantName)
		case strings.TrimSpace(typ.Description) == "":
			failures = append(failures, f+": empty description")
		case !slices.Equal(typ.Tools, wantTools):
			failures = append(failures, f+": tools "+strings.Join(typ.Tools, ",")+", want "+strings.Join(wantTools, ","))
		case strings.TrimSpace(typ.Prompt) == "":
			failures = append(failures, f+": empty prompt")
		default:
			loaded++
		}
		for _, d := range diags {
			if strings.Contains(d.Message, "not valid YAML") {
				fellBack++
			}
		}
		if len(diags) > 0 {
			warned++
		}
	}
	t.Logf("corpus: %d files, %d loaded with the right name, description, tools and prompt (%d with warnings, %d through the line-by-line fallback), %d failed",
		len(files), loaded, warned, fellBack, len(failures))
	for _, f := range failures {
		t.Logf("not loaded: %s", f)
	}
	assert.GreaterOrEqual(t, loaded*100, len(files)*99, "at least 99%% load")

	// Dropped into .troupe/agents instead, the files are read in auto
	// mode: strict unless they look like Claude Code's.
	var auto int
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if _, diags := agenttypes.ParseDefinition(filepath.Join(".troupe", "agents", filepath.Base(f)), data, agenttypes.LoadOptions{}); !diags.HasErrors() {
			auto++
		}
	}
	t.Logf("corpus in auto mode: %d of %d load", auto, len(files))
	assert.GreaterOrEqual(t, auto*100, len(files)*99)

	// Discovered as a project's .claude/agents, one collection at a time.
	entries, err := os.ReadDir(corpus)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run("discover "+e.Name(), func(t *testing.T) {
			abs, err := filepath.Abs(filepath.Join(corpus, e.Name()))
			require.NoError(t, err)
			repo := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(repo, ".claude"), 0o755))
			if err := os.Symlink(abs, filepath.Join(repo, ".claude", "agents")); err != nil {
				t.Skipf("no symlinks here: %v", err)
			}
			reg := testRegistry(t)
			diags := reg.Reload(agenttypes.Sources{ProjectDir: repo})
			var inDir int
			for _, f := range files {
				if strings.HasPrefix(f, filepath.Join(corpus, e.Name())+string(filepath.Separator)) {
					inDir++
				}
			}
			t.Logf("%s: %d files, %d types discovered, %d errors, %d warnings", e.Name(), inDir, len(reg.Types())-1, len(diags.Errors()), len(diags.Warnings()))
			assert.Empty(t, diags.Errors())
			assert.GreaterOrEqual(t, (len(reg.Types())-1)*100, inDir*99)
		})
	}

	// All collections in one project's .claude/agents: they share some
	// names, and of each such pair the first by path is kept with a warning
	// on the other, so every name loads and no file is an error.
	t.Run("discover all in one layer", func(t *testing.T) {
		repo := t.TempDir()
		agents := filepath.Join(repo, ".claude", "agents")
		require.NoError(t, os.MkdirAll(agents, 0o755))
		var names []string
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			abs, err := filepath.Abs(filepath.Join(corpus, e.Name()))
			require.NoError(t, err)
			// Each file is linked, not copied: the corpus stays outside the
			// repository, and a symlinked directory would not be followed.
			require.NoError(t, os.MkdirAll(filepath.Join(agents, e.Name()), 0o755))
			require.NoError(t, filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
					return err
				}
				rel, _ := filepath.Rel(abs, p)
				dst := filepath.Join(agents, e.Name(), rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
				if err := os.Symlink(p, dst); err != nil {
					t.Skipf("no symlinks here: %v", err)
				}
				data, err := os.ReadFile(p)
				require.NoError(t, err)
				name, ok := frontLine(strings.SplitN(string(data), "\n---", 2)[0], "name")
				if !ok {
					name = strings.TrimSuffix(filepath.Base(p), ".md")
				}
				names = append(names, name)
				return nil
			}))
		}
		unique := len(slices.Compact(slices.Sorted(slices.Values(names))))
		reg := testRegistry(t)
		diags := reg.Reload(agenttypes.Sources{ProjectDir: repo})
		var dups int
		for _, d := range diags.Warnings() {
			if strings.Contains(d.Message, "is also defined in") {
				dups++
			}
		}
		t.Logf("all collections: %d files, %d names, %d types discovered, %d kept the first of a shared name, %d errors", len(names), unique, len(reg.Types())-1, dups, len(diags.Errors()))
		assert.Empty(t, diags.Errors())
		assert.Equal(t, len(names)-unique, dups, "one warning for each file given way")
		assert.GreaterOrEqual(t, (len(reg.Types())-1)*100, unique*99)
	})
}

// corpusFiles lists the corpus's Markdown files, skipping the test where
// the corpus is absent.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(corpus); err != nil {
		t.Skipf("no corpus at %s: %v", corpus, err)
	}
	var files []string
	require.NoError(t, filepath.WalkDir(corpus, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	}))
	if len(files) == 0 {
		t.Skip("the corpus holds no Markdown files")
	}
	return files
}

// The corpus's Write, Edit and MultiEdit become write and edit; its Bash
// becomes run when the project gives a list of commands, and is dropped,
// with one warning saying how to allow it, when nothing does.
func TestCorpusToolsThatChangeFiles(t *testing.T) {
	files := corpusFiles(t)
	reg := testRegistry(t)
	project := &agenttypes.RunPolicy{Allow: []string{"go test", "npm test"}}
	var withWrite, withEdit, withBash, wrote, edited, dropped, ran int
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		line, ok := frontLine(strings.SplitN(string(data), "\n---", 2)[0], "tools")
		if !ok {
			continue
		}
		names := map[string]bool{}
		for _, raw := range strings.Split(strings.Trim(line, "[]"), ",") {
			names[strings.TrimSpace(raw)] = true
		}
		wantWrite, wantEdit, wantBash := names["Write"], names["Edit"] || names["MultiEdit"], names["Bash"]
		withWrite, withEdit, withBash = withWrite+btoi(wantWrite), withEdit+btoi(wantEdit), withBash+btoi(wantBash)

		typ, diags := agenttypes.LoadFile(f, agenttypes.LoadOptions{Registry: reg, Mode: agenttypes.ModeLenient})
		require.False(t, diags.HasErrors(), "%s", diags)
		assert.Equal(t, wantWrite, typ.Allows("write"), f)
		assert.Equal(t, wantEdit, typ.Allows("edit"), f)
		assert.False(t, typ.Allows("run"), "%s: no list, no run", f)
		wrote, edited = wrote+btoi(typ.Allows("write")), edited+btoi(typ.Allows("edit"))
		var warned int
		for _, d := range diags {
			if strings.Contains(d.Message, `tool "Bash" is troupe's run`) && strings.Contains(d.Message, "run: {allow:") && strings.Contains(d.Message, ".troupe/config.yaml") {
				warned++
			}
		}
		assert.Equal(t, btoi(wantBash), warned, "%s: one warning for Bash, saying how to allow it", f)
		dropped += warned
		assert.Equal(t, wantWrite || wantEdit, typ.NeedsWorkspace(), "%s: a type that changes files gets a workspace", f)

		typ, diags = agenttypes.LoadFile(f, agenttypes.LoadOptions{Registry: reg, Mode: agenttypes.ModeLenient, ProjectRun: project})
		require.False(t, diags.HasErrors(), "%s", diags)
		assert.Equal(t, wantBash, typ.Allows("run"), "%s: with the project's list, Bash is run", f)
		if wantBash {
			ran++
			assert.Equal(t, project.Allow, typ.Run.Allow, f)
			assert.NoError(t, typ.Validate())
		}
		for _, d := range diags {
			assert.NotContains(t, d.Message, `"Bash"`, f)
		}
	}
	t.Logf("corpus: %d files; Write in %d, write in %d; Edit or MultiEdit in %d, edit in %d; Bash in %d: dropped with a warning in %d, run with the project's list in %d",
		len(files), withWrite, wrote, withEdit, edited, withBash, dropped, ran)
	assert.Positive(t, withBash, "the corpus has Bash to map")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
