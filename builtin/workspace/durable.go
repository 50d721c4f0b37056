package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

const (
	// stateIDFile, at the state directory's root, holds its ID, which
	// every handle names.
	stateIDFile = "state-id"
	// maxHandle bounds a handle given to Reopen.
	maxHandle = 256
	// maxKept bounds the changes of a closed durable workspace read back.
	maxKept = 64 << 20
)

var (
	_ agenttypes.WorkspaceReopener = (*Provider)(nil)
	_ agenttypes.DurableWorkspace  = (*Workspace)(nil)
)

var stateIDForm = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{32}$`) })

// loadStateID returns the ID of the state directory at root, made the
// first time: written aside and linked into place, so that of Providers
// starting together one ID wins and all read it.
func loadStateID(root string) (string, error) {
	path := filepath.Join(root, stateIDFile)
	id, err := readStateID(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	tmp, err := writeFileAside(root, []byte(randomID()+randomID()+"\n"))
	if err == nil {
		err = os.Link(tmp, path)
		os.Remove(tmp)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("writing the state directory's ID: %w", err)
	}
	return readStateID(path)
}

func readStateID(path string) (string, error) {
	f, _, err := fsroot.OpenRegular(nil, path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 128))
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(data))
	if !stateIDForm().MatchString(id) {
		return "", fmt.Errorf("the state directory's ID file %s does not hold an ID; remove it while no durable workspace is open (their handles name the ID it held), and a new one is made", path)
	}
	return id, nil
}

// Handle names a durable workspace for Reopen, in any process whose
// Provider has the same state directory: STATEID/NAME. It is empty for a
// workspace not opened durable, which only its own process uses.
func (w *Workspace) Handle() string {
	if !w.rec.Durable {
		return ""
	}
	return w.p.stateID + "/" + w.rec.Name
}

// Reopen returns the durable workspace named by handle, which a Provider
// on this state directory opened, in this process or another. One that
// is closed comes back closed: its Close returns the changes it recorded
// then. A handle made on another state directory, or not made by Handle,
// is refused before anything is read.
func (p *Provider) Reopen(_ context.Context, handle string) (agenttypes.Workspace, error) {
	name, err := p.handleName(handle)
	if err == nil {
		var w *Workspace
		if w, err = p.reopen(name); err == nil {
			return w, nil
		}
	}
	return nil, fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
}

// handleName returns the workspace name in handle, which must be one of
// this state directory's.
func (p *Provider) handleName(handle string) (string, error) {
	id, name, ok := strings.Cut(handle, "/")
	if len(handle) > maxHandle || !ok || !stateIDForm().MatchString(id) || !validName(name) {
		if len(handle) > maxHandle {
			handle = handle[:maxHandle] + "..."
		}
		return "", fmt.Errorf("%q is not a workspace handle: a handle is STATE-ID/NAME, as a durable workspace's Handle gives it; pass that unchanged", handle)
	}
	if id != p.stateID {
		return "", fmt.Errorf("the workspace %s was opened in another state directory (ID %s; this one, %s, is %s): every worker that runs types that change files must share one state directory, on one machine or a shared filesystem; give them all the same one", name, id, p.dirs.root, p.stateID)
	}
	return name, nil
}

// reopen returns the durable workspace name: open while its record is
// there, else closed, with the changes it kept.
func (p *Provider) reopen(name string) (*Workspace, error) {
	rec, err := readRecord(p.recordPath(name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		k, err := p.readKept(name)
		if err != nil {
			return nil, err
		}
		return &Workspace{p: p, rec: k.Record, policy: k.Record.Policy, closed: true, kept: k.Changes}, nil
	case err != nil:
		return nil, fmt.Errorf("reading the record of workspace %s: %w", name, err)
	case !rec.Durable:
		return nil, fmt.Errorf("the workspace %s was not opened durable, so only the process that opened it uses it; open workspaces that other processes reopen with WorkspaceRequest.Durable", name)
	case !rec.Ready:
		return nil, fmt.Errorf("the workspace %s has not finished opening: its Open is running still, or its process was killed; open it again for the same run and agent", name)
	}
	return &Workspace{p: p, rec: rec, policy: rec.Policy}, nil
}

// openDurable opens req's durable workspace, or returns the one open
// already for its run and agent (closed, if it is): under a lock of the
// run's agent's own, so that of two Opens of it, in any processes, one
// makes it and the other finds it.
func (p *Provider) openDurable(ctx context.Context, req agenttypes.WorkspaceRequest) (*Workspace, error) {
	release, err := p.holdOpen(ctx, req.Run, req.Agent)
	if err != nil {
		return nil, err
	}
	defer release()
	w, err := p.findDurable(ctx, req.Run, req.Agent)
	if err != nil || w != nil {
		return w, err
	}
	return p.openNew(ctx, req)
}

// holdOpen takes the lock every Open of run's agent's durable workspace
// takes, and returns its release.
func (p *Provider) holdOpen(ctx context.Context, run, agent string) (release func(), err error) {
	key, err := waitLock(ctx, p.openLock(run, agent), true)
	if err != nil {
		return nil, fmt.Errorf("waiting for another Open of agent %s's workspace: %w", agent, err)
	}
	return func() {
		os.Remove(key.Name()) // while held: a waiter then locks a new file
		key.Close()
	}, nil
}

// openLock is the lock file of run's agent's durable Opens, which exists
// while one holds it.
func (p *Provider) openLock(run, agent string) string {
	sum := sha256.Sum256([]byte(run + "\x00" + agent))
	return filepath.Join(p.dirs.locks, "open-"+hex.EncodeToString(sum[:16])+".lock")
}

// Find returns the durable workspace opened for run's agent, open or
// closed, or nil when there is none, once any Open of it under way has
// ended.
func (p *Provider) Find(ctx context.Context, run, agent string) (agenttypes.Workspace, error) {
	release, err := p.holdOpen(ctx, run, agent)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
	}
	defer release()
	w, err := p.findDurable(ctx, run, agent)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
	case w == nil:
		return nil, nil
	}
	return w, nil
}

// Owner is the run and agent the workspace was opened for.
func (w *Workspace) Owner() (run, agent string) { return w.rec.Run, w.rec.Agent }

// findDurable returns the durable workspace of run's agent, open or
// closed, or nil. The caller holds the lock every Open of it takes, so a
// record of it whose Open did not finish is one a killed process left:
// it is removed.
func (p *Provider) findDurable(ctx context.Context, run, agent string) (*Workspace, error) {
	stem, _ := nameStems(run, agent)
	names, err := namesIn(stem, p.dirs.records, p.dirs.closed)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		rec, err := readRecord(p.recordPath(name))
		switch {
		case err == nil && rec.Durable && rec.Run == run && rec.Agent == agent:
			if rec.Ready {
				return &Workspace{p: p, rec: rec, policy: rec.Policy}, nil
			}
			if err := (&Workspace{p: p, rec: rec}).discard(ctx); err != nil {
				return nil, fmt.Errorf("removing an Open of agent %s's workspace that did not finish: %w", agent, err)
			}
		case errors.Is(err, fs.ErrNotExist):
			k, err := p.readKept(name)
			if err == nil && k.Record.Run == run && k.Record.Agent == agent {
				return &Workspace{p: p, rec: k.Record, policy: k.Record.Policy, closed: true, kept: k.Changes}, nil
			}
		}
	}
	return nil, nil
}

// namesIn lists the workspace names, stem or stem-N, that have a
// NAME.json in any of dirs.
func namesIn(stem string, dirs ...string) ([]string, error) {
	var names []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), ".json")
			if ok && isNameOf(name, stem) && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names, nil
}

// isNameOf says whether name is stem, or stem with claim's "-N" suffix.
func isNameOf(name, stem string) bool {
	rest, ok := strings.CutPrefix(name, stem)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	n, ok := strings.CutPrefix(rest, "-")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// hold takes the workspace's lock, which the caller lets go with
// release, and reloads the children's bases pending from its record,
// the truth among the processes that have it open, and whether a Close
// began. A workspace closed meanwhile, in this process or another, is
// found closed. Every workspace takes it, durable or not: one path, and
// its cost (a lock and a small file read) is lost among the git
// commands it guards. The caller holds w.mu.
func (w *Workspace) hold(ctx context.Context) (release func(), err error) {
	release = func() {}
	if w.closed {
		return release, nil
	}
	lock, err := waitLock(ctx, w.p.workspaceLock(w.rec.Name), false)
	if errors.Is(err, fs.ErrNotExist) {
		return release, w.foundClosed()
	}
	if err != nil {
		return release, fmt.Errorf("taking the lock of workspace %s: %w", w.rec.Name, err)
	}
	rec, err := readRecord(w.p.recordPath(w.rec.Name))
	if err != nil {
		lock.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return release, w.foundClosed()
		}
		return release, fmt.Errorf("reading the record of workspace %s: %w", w.rec.Name, err)
	}
	w.rec.Pending, w.rec.Closing = rec.Pending, rec.Closing
	return func() { lock.Close() }, nil
}

// foundClosed marks w closed, as another Close left it.
func (w *Workspace) foundClosed() error {
	k, err := w.p.readKept(w.rec.Name)
	if err != nil {
		return err
	}
	w.closed, w.kept = true, k.Changes
	return nil
}

// workspaceLock is the lock file of the workspace name, which exists
// from its Open to its Close.
func (p *Provider) workspaceLock(name string) string {
	return filepath.Join(p.dirs.locks, name+".lock")
}

// kept is what a durable workspace leaves when it closes, for a Close
// again (a step run twice) to return.
type kept struct {
	Record  record              `json:"record"`
	Changes *agenttypes.Changes `json:"changes"`
}

func (p *Provider) keptPath(name string) string {
	return filepath.Join(p.dirs.closed, name+".json")
}

// keep writes k, aside and renamed into place.
func (p *Provider) keep(k kept) error {
	data, err := json.Marshal(k)
	if err != nil {
		return err
	}
	if len(data) > maxKept {
		return fmt.Errorf("the changes take %d MiB, more than the %d MiB a closed workspace keeps", len(data)>>20, maxKept>>20)
	}
	tmp, err := writeFileAside(p.dirs.closed, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p.keptPath(k.Record.Name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// readKept reads what the closed durable workspace name kept.
func (p *Provider) readKept(name string) (kept, error) {
	f, _, err := fsroot.OpenRegular(nil, p.keptPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return kept{}, fmt.Errorf("no workspace %s is open or closed in the state directory %s: its run was discarded (troupe runs discard), or the handle is not one of its: %w", name, p.dirs.root, err)
	}
	if err != nil {
		return kept{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKept+1))
	if err != nil {
		return kept{}, err
	}
	if len(data) > maxKept {
		return kept{}, fmt.Errorf("the changes kept by the closed workspace %s are larger than %d MiB", name, maxKept>>20)
	}
	var k kept
	if err := json.Unmarshal(data, &k); err != nil || k.Changes == nil || k.Record.Name != name {
		return kept{}, fmt.Errorf("the changes kept by the closed workspace %s are damaged; its branch holds its work, and a Close again cannot return them: remove %s", name, p.keptPath(name))
	}
	return k, nil
}
