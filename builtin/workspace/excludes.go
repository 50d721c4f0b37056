package workspace

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/builtin/process"
)

// userExcludesTime bounds reading the user's global git configuration.
const userExcludesTime = 10 * time.Second

// userExcludesFile returns the user's global excludes file, as git
// itself would find it: core.excludesFile of the user's global
// configuration, else $XDG_CONFIG_HOME/git/ignore (~/.config/git/ignore);
// "" when there is none. Snapshots run git without the global
// configuration, so that nothing in it runs, and apply this one file of
// patterns by name: it can only keep more out of a workspace.
func userExcludesFile() string {
	if p := globalExcludesSetting(); p != "" {
		return existing(p)
	}
	if xdg := os.Getenv("XDG_CONFIG_HOME"); xdg != "" {
		return existing(filepath.Join(xdg, "git", "ignore"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		return existing(filepath.Join(home, ".config", "git", "ignore"))
	}
	return ""
}

// globalExcludesSetting reads core.excludesFile from the user's global
// git configuration, which runs nothing.
func globalExcludesSetting() string {
	bin, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), userExcludesTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "config", "--global", "--type=path", "--get", "core.excludesFile")
	process.Contain(cmd)
	cmd.Cancel = func() error { return process.KillGroup(cmd.Process.Pid) }
	env := []string{"GIT_CONFIG_NOSYSTEM=1"}
	if xdg := os.Getenv("XDG_CONFIG_HOME"); xdg != "" {
		env = append(env, "XDG_CONFIG_HOME="+xdg)
	}
	cmd.Env = process.Env(os.Environ(), env...)
	cmd.Dir = os.TempDir()
	cmd.WaitDelay = time.Second
	out := &smallBuffer{max: 4 << 10}
	cmd.Stdout = out
	if err := cmd.Run(); err != nil || out.full {
		return ""
	}
	return strings.TrimSpace(out.buf.String())
}

func existing(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return path
	}
	return ""
}

// smallBuffer keeps up to max bytes, and fails past them.
type smallBuffer struct {
	buf  bytes.Buffer
	max  int
	full bool
}

func (b *smallBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		b.full = true
		return 0, os.ErrInvalid
	}
	return b.buf.Write(p)
}
