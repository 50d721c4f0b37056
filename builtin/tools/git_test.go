package tools_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/tools"
)

// gitRepo makes a repository with two commits and an uncommitted change.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
			"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
			"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com",
			"GIT_AUTHOR_DATE=2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	run("init", "-q", "-b", "main")
	write("main.go", "package main\n\nfunc main() {}\n")
	write("docs/a.md", "# A\n")
	run("add", ".")
	run("commit", "-q", "-m", "first")
	write("main.go", "package main\n\nfunc main() { println(1) }\n")
	run("commit", "-q", "-am", "second")
	write("docs/a.md", "# A changed\n")
	return dir
}

func TestGit(t *testing.T) {
	dir := gitRepo(t)
	tests := []struct {
		name, args string
		check      func(t *testing.T, out string)
	}{
		{"log oneline", `{"args":["log","--oneline"]}`, func(t *testing.T, out string) {
			lines := strings.Split(out, "\n")
			require.Len(t, lines, 2)
			assert.True(t, strings.HasSuffix(lines[0], " second"), out)
		}},
		{"log -n separate", `{"args":["log","-n","1","--format=%s %an"]}`, func(t *testing.T, out string) {
			assert.Equal(t, "second Ada", out)
		}},
		{"log -1 and path", `{"args":["log","-1","--format=%s","--","docs"]}`, func(t *testing.T, out string) {
			assert.Equal(t, "first", out)
		}},
		{"log with existing path and no dashes", `{"args":["log","--format=%s","docs/a.md"]}`, func(t *testing.T, out string) {
			assert.Equal(t, "first", out)
		}},
		{"status short", `{"args":["status","--short"]}`, func(t *testing.T, out string) {
			assert.Equal(t, " M docs/a.md", out)
		}},
		{"status bundled flags", `{"args":["status","-sb"]}`, func(t *testing.T, out string) {
			assert.Equal(t, "## main\n M docs/a.md", out)
		}},
		{"diff", `{"args":["diff","--stat"]}`, func(t *testing.T, out string) {
			assert.Contains(t, out, "docs/a.md | 2 +-")
		}},
		{"diff revs", `{"args":["diff","HEAD~1","HEAD","--name-only"]}`, func(t *testing.T, out string) {
			assert.Equal(t, "main.go", out)
		}},
		{"show blob", `{"args":["show","HEAD~1:main.go"]}`, func(t *testing.T, out string) {
			assert.Equal(t, "package main\n\nfunc main() {}", out)
		}},
		{"blame", `{"args":["blame","-L","3,3","-s","main.go"]}`, func(t *testing.T, out string) {
			assert.Contains(t, out, "3) func main() { println(1) }")
		}},
		{"blame rev", `{"args":["blame","HEAD~1","--","main.go"]}`, func(t *testing.T, out string) {
			assert.Contains(t, out, "func main() {}")
		}},
		{"no output", `{"args":["diff","--cached"]}`, func(t *testing.T, out string) {
			assert.Equal(t, "(no output)", out)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustCall(t, tools.Git(), dir, tt.args))
		})
	}
}

func TestGitRefuses(t *testing.T) {
	dir := gitRepo(t)
	tests := []struct{ args, want string }{
		{`["commit","-m","x"]`, `subcommand "commit" is not allowed`},
		{`["push"]`, `subcommand "push" is not allowed`},
		{`["config","user.name"]`, `not allowed`},
		{`["-c","core.pager=evil","log"]`, `subcommand "-c" is not allowed`},
		{`["diff","--output=/tmp/x"]`, "--output is not allowed: it writes a file"},
		{`["log","--output","/tmp/x"]`, "--output is not allowed"},
		{`["diff","--no-index","/etc/passwd","main.go"]`, "--no-index is not allowed"},
		{`["diff","--ext-diff"]`, "--ext-diff is not allowed"},
		{`["log","-c","x=y"]`, "-c is not allowed"},
		{`["log","--git-dir=/"]`, "--git-dir is not allowed"},
		{`["status","--work-tree=/"]`, "--work-tree is not allowed"},
		{`["log","--exec-path=/tmp"]`, "--exec-path is not allowed"},
		{`["blame","--contents","/etc/passwd","main.go"]`, "--contents is not allowed"},
		{`["log","--outp=x"]`, "flag --outp=x is not allowed for git log; allowed flags:"},
		{`["log","-n"]`, "-n needs a value"},
		{`["log","-n","--output=x"]`, "-n needs a value"},
		{`["log","--oneline=yes"]`, "--oneline takes no value"},
		{`["show","--","../secret"]`, "outside the root"},
		{`["log","--","/etc/passwd"]`, "outside the root"},
		{`["blame","a.go","b.go","c.go"]`, "blame takes one file"},
		{`["log","\u0000x"]`, "control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			_, err := call(t, tools.Git(), dir, `{"args":`+tt.args+`}`)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestGitErrorsComeFromGit(t *testing.T) {
	dir := gitRepo(t)
	_, err := call(t, tools.Git(), dir, `{"args":["show","no-such-rev"]}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "git show failed:")
	assert.Contains(t, err.Error(), "no-such-rev")
}

// A root inside a repository does not see the repository above it: its
// files are outside the root.
func TestGitOnlyAtRoot(t *testing.T) {
	dir := gitRepo(t)
	_, err := call(t, tools.Git(), filepath.Join(dir, "docs"), `{"args":["log"]}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a git repository")
}

func TestGitOutputCapped(t *testing.T) {
	dir := gitRepo(t)
	big := strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", 8000) // 512 KiB
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(big), 0o644))
	out := mustCall(t, tools.Git(), dir, `{"args":["diff"]}`)
	assert.LessOrEqual(t, len(out), 256<<10+200)
	assert.True(t, strings.HasSuffix(out, "\n... output truncated at 256 KiB; narrow with paths, -n, --stat or -L"), out[len(out)-200:])
}
