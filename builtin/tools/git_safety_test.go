package tools_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/tools"
)

// gitIn runs the real git in dir with a clean configuration, for setting
// up test repositories, and returns its trimmed output.
func gitIn(t *testing.T, dir string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

// safetyCalls are the tool calls each hostile repository is put through:
// every subcommand, in the forms that consult drivers, filters, pagers,
// signatures and submodules.
var safetyCalls = []string{
	`["status"]`, `["status","--short"]`, `["status","-v"]`, `["status","-vv","-u"]`,
	`["diff"]`, `["diff","--stat"]`, `["diff","HEAD"]`, `["diff","HEAD~1","HEAD","-p"]`,
	`["log","-p"]`, `["log","--stat"]`, `["log","--format=%H %G? %GS %aN"]`, `["log","-L","1,3:main.go"]`,
	`["show"]`, `["show","--stat"]`, `["show","HEAD:main.go"]`, `["show","1111111111111111111111111111111111111111"]`,
	`["blame","main.go"]`, `["blame","docs/a.md"]`, `["blame","HEAD~1","--","main.go"]`,
}

// TestGitRunsNoProgramTheRepositoryNames gives the tool repositories whose
// own configuration (and .gitattributes) name a program that would leave
// a marker file, runs every kind of call, and checks that no marker
// appears. A call may fail (git refusing a neutralised driver is fine);
// it must never run the program.
func TestGitRunsNoProgramTheRepositoryNames(t *testing.T) {
	// Each case sets up the repository at dir; pwn(name) is a shell
	// command that creates the marker name.
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string, pwn func(string) string)
	}{
		{"filter clean", func(t *testing.T, dir string, pwn func(string) string) {
			writeFile(t, dir, ".gitattributes", "* filter=evil\n")
			gitIn(t, dir, "", "config", "filter.evil.clean", pwn("clean")+"; cat")
		}},
		{"filter clean required", func(t *testing.T, dir string, pwn func(string) string) {
			writeFile(t, dir, ".gitattributes", "* filter=evil\n")
			gitIn(t, dir, "", "config", "filter.evil.clean", pwn("clean")+"; cat")
			gitIn(t, dir, "", "config", "filter.evil.required", "true")
		}},
		{"filter smudge", func(t *testing.T, dir string, pwn func(string) string) {
			writeFile(t, dir, ".gitattributes", "* filter=evil\n")
			gitIn(t, dir, "", "config", "filter.evil.smudge", pwn("smudge")+"; cat")
		}},
		{"filter process", func(t *testing.T, dir string, pwn func(string) string) {
			writeFile(t, dir, ".gitattributes", "* filter=evil\n")
			gitIn(t, dir, "", "config", "filter.evil.process", pwn("process"))
		}},
		{"filter named with a dot and an equals sign", func(t *testing.T, dir string, pwn func(string) string) {
			// -c would split "filter.a=b.clean=" at the first '='.
			writeFile(t, dir, ".gitattributes", "* filter=a=b.c\n")
			gitIn(t, dir, "", "config", "filter.a=b.c.clean", pwn("odd-name")+"; cat")
		}},
		{"filter from an included config", func(t *testing.T, dir string, pwn func(string) string) {
			inc := filepath.Join(t.TempDir(), "included.cfg")
			require.NoError(t, os.WriteFile(inc, fmt.Appendf(nil, "[filter \"inc\"]\n\tclean = %s; cat\n", pwn("include")), 0o644))
			writeFile(t, dir, ".gitattributes", "* filter=inc\n")
			gitIn(t, dir, "", "config", "include.path", inc)
		}},
		{"filter from a conditionally included config", func(t *testing.T, dir string, pwn func(string) string) {
			inc := filepath.Join(t.TempDir(), "included.cfg")
			require.NoError(t, os.WriteFile(inc, fmt.Appendf(nil, "[filter \"inc\"]\n\tprocess = %s\n", pwn("includeif")), 0o644))
			writeFile(t, dir, ".gitattributes", "* filter=inc\n")
			gitIn(t, dir, "", "config", "includeIf.onbranch:main.path", inc)
		}},
		{"core.fsmonitor", func(t *testing.T, dir string, pwn func(string) string) {
			gitIn(t, dir, "", "config", "core.fsmonitor", pwnScript(t, pwn("fsmonitor")))
		}},
		{"diff.external", func(t *testing.T, dir string, pwn func(string) string) {
			gitIn(t, dir, "", "config", "diff.external", pwnScript(t, pwn("external")))
		}},
		{"diff driver command", func(t *testing.T, dir string, pwn func(string) string) {
			writeFile(t, dir, ".gitattributes", "* diff=drv\n")
			gitIn(t, dir, "", "config", "diff.drv.command", pwn("diff-command"))
		}},
		{"diff driver textconv", func(t *testing.T, dir string, pwn func(string) string) {
			writeFile(t, dir, ".gitattributes", "* diff=drv\n")
			gitIn(t, dir, "", "config", "diff.drv.textconv", pwnScript(t, pwn("textconv")))
		}},
		{"pager", func(t *testing.T, dir string, pwn func(string) string) {
			gitIn(t, dir, "", "config", "core.pager", pwn("core-pager"))
			for _, sub := range []string{"log", "diff", "show", "status", "blame"} {
				gitIn(t, dir, "", "config", "pager."+sub, pwn("pager-"+sub))
			}
		}},
		{"hooks", func(t *testing.T, dir string, pwn func(string) string) {
			hooks := t.TempDir()
			for _, h := range []string{"post-index-change", "post-checkout", "reference-transaction", "pre-auto-gc", "fsmonitor-watchman"} {
				require.NoError(t, os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\n"+pwn("hook-"+h)+"\n"), 0o755))
			}
			gitIn(t, dir, "", "config", "core.hooksPath", hooks)
		}},
		{"gpg program on a signed commit", func(t *testing.T, dir string, pwn func(string) string) {
			signedCommit(t, dir)
			for _, key := range []string{"gpg.program", "gpg.openpgp.program", "gpg.x509.program", "gpg.ssh.program"} {
				gitIn(t, dir, "", "config", key, pwnScript(t, pwn(key)))
			}
		}},
		{"lazy fetch from a promisor remote", func(t *testing.T, dir string, pwn func(string) string) {
			gitIn(t, dir, "", "config", "core.repositoryformatversion", "1")
			gitIn(t, dir, "", "config", "extensions.partialClone", "origin")
			gitIn(t, dir, "", "config", "remote.origin.promisor", "true")
			// ext:: runs its command without a shell: "% " is a space.
			marker := strings.ReplaceAll(pwn("lazy-fetch"), "'", "")
			gitIn(t, dir, "", "config", "remote.origin.url", "ext::sh -c "+strings.ReplaceAll(marker, " ", "% "))
			gitIn(t, dir, "", "config", "remote.origin.uploadpack", pwn("uploadpack"))
			gitIn(t, dir, "", "config", "protocol.ext.allow", "always")
		}},
		{"filter in a submodule", func(t *testing.T, dir string, pwn func(string) string) {
			sub := filepath.Join(dir, "sub")
			require.NoError(t, os.Mkdir(sub, 0o755))
			gitIn(t, sub, "", "init", "-q", "-b", "main")
			writeFile(t, sub, "s.txt", "s\n")
			gitIn(t, sub, "", "add", ".")
			gitIn(t, sub, "", "commit", "-q", "-m", "s")
			writeFile(t, sub, ".gitattributes", "* filter=evil\n")
			gitIn(t, sub, "", "config", "filter.evil.clean", pwn("submodule")+"; cat")
			gitIn(t, dir, "", "update-index", "--add", "--cacheinfo", "160000,"+gitIn(t, sub, "", "rev-parse", "HEAD")+",sub")
			gitIn(t, dir, "", "commit", "-q", "-m", "add sub")
			writeFile(t, sub, "s.txt", "t\n") // same size: git must run the filter to compare
		}},
		{"programs git uses for remotes, editors and credentials", func(t *testing.T, dir string, pwn func(string) string) {
			// Read-only commands do not reach these today; they are
			// neutralised all the same.
			for _, key := range []string{"core.sshCommand", "core.gitProxy", "core.askPass", "core.editor", "sequence.editor",
				"credential.helper", "credential.https://example.com.helper", "core.alternateRefsCommand",
				"merge.drv.driver", "mergetool.t.cmd", "difftool.t.cmd", "uploadpack.packObjectsHook"} {
				gitIn(t, dir, "", "config", key, pwn(key))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := gitRepo(t)
			markers := t.TempDir()
			pwn := func(name string) string {
				return "touch '" + filepath.Join(markers, strings.NewReplacer("/", "_", ":", "_").Replace(name)) + "'"
			}
			tt.setup(t, dir, pwn)
			// The work tree must look changed to git so that it compares
			// file contents: same size, new content.
			writeFile(t, dir, "main.go", "package main\n\nfunc main() { println(2) }\n")
			for _, args := range safetyCalls {
				_, _ = call(t, tools.Git(), dir, `{"args":`+args+`}`)
			}
			ran, err := os.ReadDir(markers)
			require.NoError(t, err)
			for _, m := range ran {
				t.Errorf("git ran a program the repository configures: marker %s exists", m.Name())
			}
		})
	}
}

// An ordinary repository with the neutralised keys set still answers:
// the overrides do not break the tool's normal output.
func TestGitUsefulWithHostileConfig(t *testing.T) {
	dir := gitRepo(t)
	markers := t.TempDir()
	pwn := "touch '" + filepath.Join(markers, "x") + "'"
	writeFile(t, dir, ".gitattributes", "*.md filter=evil diff=drv\n")
	gitIn(t, dir, "", "config", "filter.evil.clean", pwn)
	gitIn(t, dir, "", "config", "filter.evil.required", "true")
	gitIn(t, dir, "", "config", "diff.drv.textconv", pwn)
	gitIn(t, dir, "", "config", "core.pager", pwn)

	assert.Equal(t, " M docs/a.md\n?? .gitattributes", mustCall(t, tools.Git(), dir, `{"args":["status","--short"]}`))
	assert.Contains(t, mustCall(t, tools.Git(), dir, `{"args":["diff"]}`), "+# A changed")
	assert.Contains(t, mustCall(t, tools.Git(), dir, `{"args":["log","-p","-n","1"]}`), "+func main() { println(1) }")
	assert.Contains(t, mustCall(t, tools.Git(), dir, `{"args":["show","--stat"]}`), "main.go | 2 +-")
	assert.Contains(t, mustCall(t, tools.Git(), dir, `{"args":["blame","docs/a.md"]}`), "# A changed")
	ran, err := os.ReadDir(markers)
	require.NoError(t, err)
	assert.Empty(t, ran)
}

// Configuration that makes git read files outside the repository, or use
// another work tree, is neutralised too: nothing outside the root reaches
// the output.
func TestGitReadsNothingOutsideTheRepository(t *testing.T) {
	tests := []struct {
		name  string
		args  string
		setup func(t *testing.T, dir, outside string)
	}{
		{"blame.ignoreRevsFile", `["blame","main.go"]`, func(t *testing.T, dir, outside string) {
			gitIn(t, dir, "", "config", "blame.ignoreRevsFile", filepath.Join(outside, "secret.txt"))
		}},
		{"mailmap.file", `["log","--format=%aN"]`, func(t *testing.T, dir, outside string) {
			writeFile(t, outside, "mailmap", "SECRET-CONTENT <ada@example.com>\n")
			gitIn(t, dir, "", "config", "mailmap.file", filepath.Join(outside, "mailmap"))
		}},
		{"core.worktree", `["status","--short","--untracked-files=all"]`, func(t *testing.T, dir, outside string) {
			writeFile(t, outside, "SECRET-CONTENT.txt", "x\n")
			gitIn(t, dir, "", "config", "core.worktree", outside)
		}},
		{"core.excludesFile", `["status","--short","--ignored"]`, func(t *testing.T, dir, outside string) {
			writeFile(t, outside, "excludes", "SECRET-CONTENT\n")
			writeFile(t, dir, "SECRET-CONTENT", "x\n")
			gitIn(t, dir, "", "config", "core.excludesFile", filepath.Join(outside, "excludes"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := gitRepo(t)
			outside := t.TempDir()
			writeFile(t, outside, "secret.txt", "SECRET-CONTENT\n")
			tt.setup(t, dir, outside)
			out, err := call(t, tools.Git(), dir, `{"args":`+tt.args+`}`)
			if tt.name == "core.excludesFile" {
				// Without the outside excludes file the name is untracked, not ignored.
				require.NoError(t, err)
				assert.Contains(t, out, "?? SECRET-CONTENT")
				return
			}
			if err != nil {
				out = err.Error()
			}
			assert.NotContains(t, out, "SECRET-CONTENT")
		})
	}
}

func TestGitShowSignatureRefused(t *testing.T) {
	dir := gitRepo(t)
	_, err := call(t, tools.Git(), dir, `{"args":["log","--show-signature"]}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--show-signature is not allowed")
}

// signedCommit adds a commit with a (bogus) PGP signature on top of HEAD,
// so that signature placeholders make git call its gpg program.
func signedCommit(t *testing.T, dir string) {
	t.Helper()
	tree := gitIn(t, dir, "", "rev-parse", "HEAD^{tree}")
	parent := gitIn(t, dir, "", "rev-parse", "HEAD")
	body := fmt.Sprintf("tree %s\nparent %s\nauthor Ada <ada@example.com> 1700000000 +0000\n"+
		"committer Ada <ada@example.com> 1700000000 +0000\n"+
		"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n", tree, parent)
	c := gitIn(t, dir, body, "hash-object", "-t", "commit", "-w", "--stdin")
	gitIn(t, dir, "", "update-ref", "refs/heads/main", c)
}

// pwnScript writes cmd as an executable script and returns its path, for
// keys git runs without a shell.
func pwnScript(t *testing.T, cmd string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pwn.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+cmd+"\ncat \"$1\" 2>/dev/null\nexit 0\n"), 0o755))
	return p
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}
