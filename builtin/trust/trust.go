package trust

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Kinds of Item.
const (
	// KindPlugin: a plugin binary in the project; its digest is the
	// binary's SHA-256.
	KindPlugin = "plugin"
	// KindScripts: a definition's scripts (agenttypes.GrantScripts).
	KindScripts = agenttypes.GrantScripts
	// KindShadow: a definition hiding a builtin or user type
	// (agenttypes.GrantShadow).
	KindShadow = agenttypes.GrantShadow
	// KindRun: commands the project's config or a project definition
	// lets agents run (agenttypes.GrantRun); its digest is of the
	// commands.
	KindRun = agenttypes.GrantRun
	// KindMCP: an MCP server the project's .mcp.json, config or
	// definitions name (agenttypes.GrantMCP); its digest is the entry's
	// (agenttypes.MCPServer.Digest).
	KindMCP = agenttypes.GrantMCP
	// KindEndpoint: a provider's base URL or host in the project's config,
	// where requests and the user's key would go.
	KindEndpoint = "endpoint"
	// KindKeyEnv: a variable the project's config names as a provider's
	// key.
	KindKeyEnv = "key_env"
)

// An Item is one thing a project names that needs trust.
type Item struct {
	Kind string `json:"kind"`
	// Name is the plugin's or type's name, or the setting's key.
	Name string `json:"name"`
	// Path is the file it comes from.
	Path string `json:"path,omitempty"`
	// Digest is the hex SHA-256 of what is trusted.
	Digest string `json:"digest"`
	// Detail says what trusting it allows, for people.
	Detail string `json:"detail,omitempty"`
}

func (it Item) same(o Item) bool { return it.Kind == o.Kind && it.Name == o.Name }

// A Record is the consent given to one project.
type Record struct {
	// Project is the project's directory, absolute, links resolved.
	Project string    `json:"project"`
	At      time.Time `json:"trusted_at"`
	Items   []Item    `json:"items"`
}

// Allows reports whether the record trusts the item of that kind and
// name with that digest. A nil record allows nothing.
func (r *Record) Allows(kind, name, digest string) bool {
	if r == nil {
		return false
	}
	return slices.ContainsFunc(r.Items, func(it Item) bool {
		return it.Kind == kind && it.Name == name && it.Digest == digest
	})
}

// Verdict compares what a project names now with what the user trusted.
type Verdict struct {
	// Trusted: every item is trusted as it is. A project that names
	// nothing needing trust is trusted.
	Trusted bool
	// New are items the record does not have; Changed those it has with
	// another digest.
	New, Changed []Item
}

// Check compares items with rec, which may be nil.
func Check(rec *Record, items []Item) Verdict {
	var v Verdict
	for _, it := range items {
		if rec.Allows(it.Kind, it.Name, it.Digest) {
			continue
		}
		if rec != nil && slices.ContainsFunc(rec.Items, it.same) {
			v.Changed = append(v.Changed, it)
		} else {
			v.New = append(v.New, it)
		}
	}
	v.Trusted = len(v.New) == 0 && len(v.Changed) == 0
	return v
}

// ProjectKey is the key a project's consent is kept under: its directory,
// absolute, with links resolved, so that two ways of naming it are one.
func ProjectKey(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return filepath.Clean(abs), nil
}

// DefaultPath is where the user's consent is kept:
// $XDG_STATE_HOME/troupe/trusted.json, else
// ~/.local/state/troupe/trusted.json.
func DefaultPath(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	state := getenv("XDG_STATE_HOME")
	if state == "" || !filepath.IsAbs(state) {
		home := getenv("HOME")
		if home == "" {
			var err error
			if home, err = os.UserHomeDir(); err != nil {
				return "", fmt.Errorf("no home directory to keep trusted projects in: %w", err)
			}
		}
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "troupe", "trusted.json"), nil
}

// Store is the file of the user's consent. Its methods are safe to call
// from several processes at once (where the platform has file locks).
type Store struct {
	// Path is the file; see DefaultPath.
	Path string
}

// MaxStoreSize bounds what is read of the file.
const MaxStoreSize = 16 << 20

// ErrStore is wrapped by the errors of a store file that cannot be used.
var ErrStore = errors.New("unusable trust store")

type file struct {
	Version  int      `json:"version"`
	Projects []Record `json:"projects"`
}

// Get returns the record of the project at dir, or nil when the user has
// not trusted it.
func (s Store) Get(dir string) (*Record, error) {
	key, err := ProjectKey(dir)
	if err != nil {
		return nil, err
	}
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	for _, r := range f.Projects {
		if r.Project == key {
			return &r, nil
		}
	}
	return nil, nil
}

// List returns every trusted project's record, sorted by directory.
func (s Store) List() ([]Record, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	return f.Projects, nil
}

// Trust records consent to items for the project at dir, replacing what
// was trusted there before.
func (s Store) Trust(dir string, items []Item) (Record, error) {
	key, err := ProjectKey(dir)
	if err != nil {
		return Record{}, err
	}
	rec := Record{Project: key, At: time.Now().UTC().Truncate(time.Second), Items: slices.Clone(items)}
	if rec.Items == nil {
		rec.Items = []Item{}
	}
	err = s.update(func(f *file) {
		f.Projects = slices.DeleteFunc(f.Projects, func(r Record) bool { return r.Project == key })
		f.Projects = append(f.Projects, rec)
	})
	return rec, err
}

// Revoke removes the consent given to the project at dir. It reports
// whether there was any.
func (s Store) Revoke(dir string) (bool, error) {
	key, err := ProjectKey(dir)
	if err != nil {
		return false, err
	}
	found := false
	err = s.update(func(f *file) {
		n := len(f.Projects)
		f.Projects = slices.DeleteFunc(f.Projects, func(r Record) bool { return r.Project == key })
		found = len(f.Projects) < n
	})
	return found, err
}

func (s Store) read() (*file, error) {
	if s.Path == "" {
		return nil, fmt.Errorf("%w: no file given", ErrStore)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s; move it away to start again (every project then asks for trust again)", ErrStore, s.Path, fmt.Sprintf(format, args...))
	}
	fh, fi, err := fsroot.OpenRegular(nil, s.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &file{Version: 1}, nil
	case errors.Is(err, fsroot.ErrNotRegular):
		return nil, bad("is a %s, not a file", fsroot.Kind(fi.Mode()))
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxStoreSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrStore, s.Path, err)
	}
	if len(data) > MaxStoreSize {
		return nil, bad("is over %d MiB", MaxStoreSize>>20)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, bad("not valid JSON: %v", err)
	}
	if f.Version != 1 {
		return nil, bad("version %d; this troupe reads version 1", f.Version)
	}
	return &f, nil
}

// update changes the file under its lock and replaces it whole, so that
// a reader sees the old file or the new one.
func (s Store) update(change func(*file)) error {
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	unlock, err := lockFile(s.Path + ".lock")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	defer unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	change(f)
	slices.SortFunc(f.Projects, func(a, b Record) int { return cmp.Compare(a.Project, b.Project) })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".trusted.*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	if err := os.Rename(tmp.Name(), s.Path); err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	return nil
}
