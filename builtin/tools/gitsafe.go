package tools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/builtin/process"
)

// How the git tool keeps git from running anything the repository names.
//
// A repository's own configuration (.git/config, config.worktree and any
// file they include) can name programs that read-only commands run:
// filter drivers (clean, smudge, process) chosen by .gitattributes, diff
// drivers and textconv, gpg for signature placeholders such as %G?, the
// transport of a promisor remote that git fetches missing objects from,
// and the configuration of a submodule that status recurses into. git
// 2.39 has no switch to ignore repository configuration or in-tree
// .gitattributes (--attr-source arrived later), and pointing GIT_DIR at
// a sanitised copy would mean copying refs, index and worktree metadata.
// So, in layers:
//
//  1. No system or global configuration, and no caller environment
//     (gitEnv); GIT_WORK_TREE pins the work tree to the root whatever
//     core.worktree says, and GIT_DIR names the git directory that
//     gitRepoDir resolved and checked to read nothing outside the root
//     (gitrepo.go).
//  2. Fixed overrides for every top-level key that names a program or a
//     file outside the repository, set whether or not the repository
//     sets them (gitFixedConfig).
//  3. The repository's configuration is listed first with
//     `git config --list --name-only --includes -z`, which runs nothing
//     and follows include.path and includeIf exactly as the real command
//     will; every listed key that names a program under a per-driver
//     name (filter.<driver>.clean, diff.<driver>.textconv,
//     protocol.<name>.allow, ...) gets an override (gitDriverKeys). An
//     include itself cannot be overridden, but whatever it pulls in is
//     listed and neutralised.
//  4. Per-subcommand flags: --no-ext-diff, --no-textconv,
//     --ignore-submodules=all (a submodule's own configuration is not
//     listed, so git must not recurse into it) and, for blame,
//     --no-ignore-revs-file.
//
// Overrides go through GIT_CONFIG_COUNT/KEY/VALUE rather than -c, which
// splits "key=value" at the first '=' and so cannot name a driver whose
// name holds one. They have command scope, above the repository's. An
// empty program is checked empirically to disable clean, smudge and
// process filters; an empty textconv or external diff makes git fail
// rather than run anything, so a call that would need one fails closed.

// gitFixedConfig is set on every call.
var gitFixedConfig = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", os.DevNull},
	{"core.pager", "cat"}, // git treats "cat" as no pager
	{"core.editor", ""},
	{"sequence.editor", ""},
	{"core.askPass", ""},
	{"core.sshCommand", ""},
	{"core.gitProxy", ""},
	{"core.alternateRefsCommand", ""},
	{"core.attributesFile", os.DevNull},
	{"core.excludesFile", ""},
	{"core.quotePath", "false"},
	{"color.ui", "false"},
	{"diff.external", ""},
	{"diff.ignoreSubmodules", "all"},
	{"status.submoduleSummary", "false"},
	{"submodule.recurse", "false"},
	{"credential.helper", ""},
	{"gpg.program", ""},
	{"gpg.openpgp.program", ""},
	{"gpg.x509.program", ""},
	{"gpg.ssh.program", ""},
	{"gpg.ssh.defaultKeyCommand", ""},
	{"gpg.ssh.allowedSignersFile", ""},
	{"log.showSignature", "false"},
	{"protocol.allow", "never"}, // no lazy fetch from a promisor remote
	{"uploadpack.packObjectsHook", ""},
	{"blame.ignoreRevsFile", ""}, // and blame gets --no-ignore-revs-file
	{"mailmap.file", ""},
	{"safe.bareRepository", "explicit"},
}

// gitDriverKeys are keys under a name the repository chooses ("*"),
// given as section, variable and the neutral value. A listed key in the
// section with any subsection, or none, and the variable is overridden.
var gitDriverKeys = []struct{ section, variable, value string }{
	{"filter", "clean", ""},
	{"filter", "smudge", ""},
	{"filter", "process", ""},
	{"filter", "required", "false"}, // else git refuses the emptied filter
	{"diff", "command", ""},
	{"diff", "textconv", ""},
	{"diff", "external", ""},
	{"merge", "driver", ""},
	{"mergetool", "cmd", ""},
	{"difftool", "cmd", ""},
	{"credential", "helper", ""},
	{"gpg", "program", ""},
	{"protocol", "allow", "never"},
	{"remote", "uploadpack", ""},
	{"remote", "receivepack", ""},
	{"remote", "proxy", ""},
	{"man", "cmd", ""},
	{"man", "path", ""},
	{"browser", "cmd", ""},
	{"browser", "path", ""},
	{"core", "fsmonitor", "false"},
}

// gitConfigListMax caps the listing of the repository's config keys.
const gitConfigListMax = 1 << 20

// gitSafeEnv returns git's environment for a call in dir: gitEnv, with
// the git directory gitRepoDir checked, plus the overrides for every
// program-naming key of the repository's configuration. It runs `git
// config --list` in that same environment, which reads configuration and
// nothing else.
func gitSafeEnv(ctx context.Context, bin, dir string) ([]string, error) {
	gitDir, err := gitRepoDir(dir)
	if err != nil {
		return nil, err
	}
	env := gitEnv(dir, gitDir)
	out := &capWriter{max: gitConfigListMax}
	stderr := &capWriter{max: gitMaxStderr}
	cmd := exec.CommandContext(ctx, bin, "config", "--list", "--name-only", "--includes", "-z")
	contain(cmd)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = out, stderr
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		msg := strings.TrimSpace(stderr.buf.String())
		if msg == "" {
			msg = err.Error()
		}
		// Fail closed: without the list, git would run with whatever the
		// repository configures.
		return nil, fmt.Errorf("reading the repository's git configuration failed: %s", msg)
	}
	overrides := append([][2]string(nil), gitFixedConfig...)
	for _, key := range strings.Split(out.buf.String(), "\x00") {
		if v, ok := gitNeutralValue(key); ok {
			overrides = append(overrides, [2]string{key, v})
		}
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(overrides)))
	for i, kv := range overrides {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env, nil
}

// gitNeutralValue says whether a key as `git config --name-only` prints
// it (section and variable in lower case) names a program under a
// driver's name, and the value that neutralises it.
func gitNeutralValue(key string) (string, bool) {
	section, rest, ok := strings.Cut(key, ".")
	if !ok {
		return "", false
	}
	variable := rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		variable = rest[i+1:]
	}
	for _, k := range gitDriverKeys {
		if section == k.section && variable == k.variable {
			return k.value, true
		}
	}
	if section == "pager" {
		return "false", true // pager.<command> may name a program
	}
	return "", false
}

// contain makes git die with troupe, and a cancelled call end git and
// anything it started.
func contain(cmd *exec.Cmd) {
	process.Contain(cmd)
	cmd.Cancel = func() error { return process.KillGroup(cmd.Process.Pid) }
}

// gitEnv is git's base environment for the work tree dir and the git
// directory gitDir: nothing from the caller but PATH, so that no GIT_DIR,
// GIT_COMMON_DIR, GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES,
// GIT_INDEX_FILE, pager, askpass or config leaks in.
func gitEnv(dir, gitDir string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_OPTIONAL_LOCKS=0", // status must not write the index
		"GIT_NO_LAZY_FETCH=1",  // newer git: never fetch missing objects
		"GIT_PROTOCOL_FROM_USER=0",
		// The work tree is the root, whatever core.worktree says.
		"GIT_WORK_TREE=" + dir,
		// The repository is the one gitRepoDir checked: git does not look
		// for one, nor follow a .git file itself.
		"GIT_DIR=" + gitDir,
		// Only a repository at the root itself: never one above it, whose
		// files are outside the root.
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir),
		"LC_ALL=C",
	}
}
