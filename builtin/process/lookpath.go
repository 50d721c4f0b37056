package process

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// lookPath finds the program name names: a path holding a separator
// (relative ones from dir), or else a file in one of the absolute
// directories of env's PATH. A relative PATH entry ("." or "") is
// skipped: it would run a program the directory holds in place of the
// one meant.
func lookPath(name string, env []string, dir string) (string, error) {
	if strings.ContainsRune(name, '/') || strings.ContainsRune(name, filepath.Separator) {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if found, ok := executable(path); ok {
			return found, nil
		}
		return "", fmt.Errorf("%s: %w: no executable file there", name, exec.ErrNotFound)
	}
	pathVar := envValue(env, "PATH")
	for _, d := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(d) {
			continue
		}
		if found, ok := executable(filepath.Join(d, name)); ok {
			return found, nil
		}
	}
	return "", fmt.Errorf("%s: %w: not in the command's PATH (%s); install it or name it by its path", name, exec.ErrNotFound, pathVar)
}

// envValue is the value of the variable name in env, the last entry
// winning as it does for exec.Cmd.
func envValue(env []string, name string) string {
	value := ""
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (k == name || runtime.GOOS == "windows" && strings.EqualFold(k, name)) {
			value = v
		}
	}
	return value
}

// isExecutableFile reports whether path names a regular file that some
// execute bit allows running.
func isExecutableFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0)
}
