package plugins

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/troupe-dev/troupe/builtin/process"
)

// Prefix starts the file name of every plugin binary: troupe-plugin-NAME.
const Prefix = "troupe-plugin-"

// Layers of plugin directories, highest precedence first.
const (
	LayerProject = "project"
	LayerPath    = "path"
	LayerUser    = "user"
)

// Dir is a directory plugins are discovered in.
type Dir struct {
	// Layer is LayerProject, LayerPath or LayerUser.
	Layer string
	Path  string
}

// Dirs returns the plugin directories, highest precedence first: the
// project's .troupe/plugins (when projectRoot is set), each directory of
// $TROUPE_PLUGIN_PATH, then the user's $XDG_DATA_HOME/troupe/plugins
// (by default ~/.local/share/troupe/plugins). A relative directory of
// $TROUPE_PLUGIN_PATH is the project's: it names a folder of wherever
// troupe happens to run.
func Dirs(projectRoot string, getenv func(string) string) []Dir {
	var dirs []Dir
	if projectRoot != "" {
		dirs = append(dirs, Dir{LayerProject, filepath.Join(projectRoot, ".troupe", "plugins")})
	}
	for _, p := range filepath.SplitList(getenv("TROUPE_PLUGIN_PATH")) {
		switch {
		case p == "":
		case !filepath.IsAbs(p):
			// Relative to wherever troupe runs, which may be a repository
			// just cloned: its plugins are the project's.
			dirs = append(dirs, Dir{LayerProject, p})
		default:
			dirs = append(dirs, Dir{LayerPath, p})
		}
	}
	data := getenv("XDG_DATA_HOME")
	if data == "" || !filepath.IsAbs(data) {
		if home, err := os.UserHomeDir(); err == nil {
			data = filepath.Join(home, ".local", "share")
		}
	}
	if data != "" {
		dirs = append(dirs, Dir{LayerUser, filepath.Join(data, "troupe", "plugins")})
	}
	return dirs
}

// LockPath is the lock file of the project at projectRoot.
func LockPath(projectRoot string) string {
	return filepath.Join(projectRoot, ".troupe", "plugins.lock")
}

// Binary is a discovered plugin binary.
type Binary struct {
	// Name is the plugin's name, from troupe-plugin-NAME.
	Name string `json:"name"`
	// Path is the binary.
	Path string `json:"path"`
	// Layer is the layer of the directory it was found in.
	Layer string `json:"layer"`
	// Shadows are the paths of binaries of the same name it hides.
	Shadows []string `json:"shadows,omitempty"`
}

// pluginNameChars are the characters of a plugin's name, whose first is a
// letter or digit and which is at most 64 long (see validPluginName).
var pluginNameChars = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// validPluginName reports whether name is a plugin's name. The length is
// checked apart: the pattern {0,63} compiles into 63 copies of its class,
// at every start of the program.
func validPluginName(name string) bool {
	return len(name) <= 64 && pluginNameChars.MatchString(name)
}

// Discover lists the plugin binaries in dirs: executable regular files
// (or links to them) named troupe-plugin-NAME. A name found in more than
// one directory is taken from the first; the others are its Shadows.
// Missing directories are skipped; other problems are returned and the
// binaries they concern left out.
func Discover(dirs []Dir) ([]Binary, []error) {
	var out []Binary
	var problems []error
	index := map[string]int{}
	for _, d := range dirs {
		entries, err := os.ReadDir(d.Path)
		if err != nil {
			if !os.IsNotExist(err) {
				problems = append(problems, fmt.Errorf("plugin directory %s: %w", d.Path, err))
			}
			continue
		}
		for _, e := range entries {
			base := e.Name()
			if !strings.HasPrefix(base, Prefix) {
				continue
			}
			name := strings.TrimPrefix(base, Prefix)
			if runtime.GOOS == "windows" {
				name = strings.TrimSuffix(name, ".exe")
			}
			path := filepath.Join(d.Path, base)
			if !validPluginName(name) {
				problems = append(problems, fmt.Errorf("plugin %s: the name after %q must be 1 to 64 lower-case letters, digits, '_' or '-'; rename the file", path, Prefix))
				continue
			}
			fi, err := os.Stat(path)
			if err != nil {
				problems = append(problems, fmt.Errorf("plugin %s: %w", path, err))
				continue
			}
			if !fi.Mode().IsRegular() || (runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0) {
				problems = append(problems, fmt.Errorf("plugin %s is not an executable file; chmod +x it", path))
				continue
			}
			if i, ok := index[name]; ok {
				out[i].Shadows = append(out[i].Shadows, path)
				continue
			}
			index[name] = len(out)
			out = append(out, Binary{Name: name, Path: path, Layer: d.Layer})
		}
	}
	return out, problems
}

// Checksum returns the hex SHA-256 of the plugin binary at path: a
// regular file of at most process.MaxImageSize bytes, opened without
// blocking on a named pipe in its place.
func Checksum(path string) (string, error) { return process.Checksum(path) }
