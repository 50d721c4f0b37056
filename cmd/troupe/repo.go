package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Why repoDir chose its directory, as the line that names it says.
const (
	whyRepoFlag   = "--repo"
	whyCurrentDir = "the current directory"
	whyRootAbove  = "the root of the project holding the current directory"
)

// addRepoFlag gives cmd, and the commands below it, --repo; what says
// what the directory is for. Its default is worked out by repoDir, so the
// flag's own default is empty and the help says what it is.
func addRepoFlag(cmd *cobra.Command, what string) {
	cmd.PersistentFlags().String("repo", "", what+"\n(default: the root of the project holding the current directory,\nthe nearest directory up with .git or .troupe)")
}

// repoDir is the directory a command works in, as an absolute path, and
// why it is that one. --repo, when given, must name a directory that
// exists, and is used as given. Without it the directory is the root of
// the project holding the current directory, found as the project's
// agent types and configuration are (agenttypes.FindProjectRoot), so that
// from a subdirectory the whole project is worked in. That default is
// refused when it is the filesystem root or the home directory: a search
// there reads everything below, and only --repo may ask for that.
func repoDir(cmd *cobra.Command) (dir, why string, err error) {
	return workDir(cmd, true)
}

// projectDir is repoDir for the commands that only read the project's
// definitions and configuration (types, tools list, plugins list): they
// search nothing, so they may work in the home directory, whose user
// types and plugins they then show.
func projectDir(cmd *cobra.Command) (string, error) {
	dir, _, err := workDir(cmd, false)
	return dir, err
}

func workDir(cmd *cobra.Command, refuseWide bool) (dir, why string, err error) {
	if f := cmd.Flags().Lookup("repo"); f != nil && f.Changed {
		dir, err = explicitRepo(f.Value.String())
		return dir, whyRepoFlag, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", usagef("cannot tell the current directory (%v); pass --repo DIR", unwrapPath(err))
	}
	root := agenttypes.FindProjectRoot(wd)
	if what := tooWide(root); refuseWide && what != "" {
		return "", "", refuseDefault(wd, root, what)
	}
	if root == wd {
		return root, whyCurrentDir, nil
	}
	return root, whyRootAbove, nil
}

// workingIn is the line that says where a command works.
func workingIn(dir, why string) string {
	return fmt.Sprintf("working in %s (%s)", dir, why)
}

// explicitRepo checks a --repo given on the command line before anything
// reads it: it must name a directory that exists.
func explicitRepo(flag string) (string, error) {
	if strings.TrimSpace(flag) == "" {
		return "", usagef("--repo is empty; give a directory, or leave the flag out to work in the project holding the current directory")
	}
	dir, err := filepath.Abs(flag)
	if err != nil {
		return "", usagef("--repo %s: %v", flag, err)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", usagef("--repo %s: no such directory; give the directory of the project to work in", flag)
	case err != nil:
		return "", usagef("--repo %s: %v", flag, unwrapPath(err))
	case !fi.IsDir():
		return "", usagef("--repo %s is a %s, not a directory; give the directory of the project to work in", flag, fsroot.Kind(fi.Mode()))
	}
	return dir, nil
}

// tooWide says what dir is when it is too wide to work in unasked: the
// filesystem root or the home directory; "" otherwise.
func tooWide(dir string) string {
	// Compared as directories, not paths: a symbolic link to either is
	// as wide.
	if filepath.Dir(dir) == dir || sameDir(dir, string(filepath.Separator)) {
		return "the filesystem root"
	}
	if home := homeDir(); home != "" && sameDir(dir, home) {
		return "your home directory"
	}
	return ""
}

// homeDir is the user's home directory: $HOME, or the account's when
// HOME is unset.
func homeDir() string {
	if home, err := os.UserHomeDir(); err == nil {
		return home
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// refuseDefault is the error for a default directory that is too wide:
// the current directory wd, or the project root above it.
func refuseDefault(wd, root, what string) error {
	if wd == root {
		return usagef("no --repo given, and the current directory %s is %s: troupe works there only when asked; pass --repo DIR to choose the project to work in (--repo %s to work in all of it on purpose)", wd, what, root)
	}
	return usagef("no --repo given, and the project holding the current directory is %s, %s (the nearest directory up with .git or .troupe): troupe works there only when asked; pass --repo . to work in the current directory, --repo DIR for another, or --repo %s to work in all of it on purpose", root, what, root)
}
