package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// maxRecord bounds a record file read back: a run policy may take 64
// KiB, and the children's bases pending add 41 bytes each.
const maxRecord = 1 << 20

// record is what the state directory keeps of a workspace while it is
// open, so that Prune can finish what a killed process left.
type record struct {
	// Owner is the ID of the Provider whose lock says it is alive.
	Owner string `json:"owner"`
	Run   string `json:"run"`
	Agent string `json:"agent"`
	// Dir is the directory the workspace was made from, which its
	// changes apply to.
	Dir string `json:"dir,omitempty"`
	// Name is the workspace's unique name: its record's, its worktree's
	// and its patch's file names.
	Name   string `json:"name"`
	Branch string `json:"branch"`
	// Tree is the worktree's top; Sub the agent's directory inside it,
	// slash form, "" for the top.
	Tree string `json:"tree"`
	Sub  string `json:"sub,omitempty"`
	// Repo is the common git directory; GitDir the worktree's own, once
	// made.
	Repo   string `json:"repo"`
	GitDir string `json:"git_dir,omitempty"`
	// Top is the project's directory: the repository's top, or the plain
	// directory snapshotted.
	Top  string `json:"top"`
	Base string `json:"base"`
	// Opened is set once the worktree is made; a record without it is
	// an Open that did not finish.
	Opened bool `json:"opened"`
	// Ready is set once Open has finished, setup commands included.
	Ready bool `json:"ready,omitempty"`
	// Durable is set for a workspace opened with
	// WorkspaceRequest.Durable: any process sharing the state directory
	// may reopen it, and Prune leaves it alone.
	Durable bool `json:"durable,omitempty"`
	// Policy is the type's run policy, which a reopened workspace runs
	// commands under.
	Policy agenttypes.RunPolicy `json:"policy"`
	// Pending are commits of the workspace's state made as children's
	// bases and not yet in its branch's history. The next commit on the
	// branch takes them as parents too, so that a child's base is the
	// merge base when its changes come back. They are kept here, not in
	// memory, so that a child started in one process is seen by the
	// parent's next commit in another.
	Pending []string `json:"pending,omitempty"`
	// Closing is set by a Close once the work is on the branch, before
	// it removes the worktree.
	Closing *closing `json:"closing,omitempty"`
}

// closing is what a Close keeps in the record before it removes the
// worktree: the commit that holds the work, and what ignore rules kept
// out of it. A Close again (the first one's process killed during the
// removal) finishes from it: what is left of a worktree half removed is
// not the agent's work.
type closing struct {
	Head         string   `json:"head"`
	Ignored      []string `json:"ignored,omitempty"`
	IgnoredCount int      `json:"ignored_count,omitempty"`
}

func (p *Provider) recordPath(name string) string {
	return filepath.Join(p.dirs.records, name+".json")
}

// claimRecord writes rec under its name, failing with fs.ErrExist when
// the name is taken: written aside and linked, so that a record is never
// seen half written.
func (p *Provider) claimRecord(rec record) error {
	tmp, err := p.writeAside(rec)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	return os.Link(tmp, p.recordPath(rec.Name))
}

// saveRecord replaces rec's record.
func (p *Provider) saveRecord(rec record) error {
	tmp, err := p.writeAside(rec)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p.recordPath(rec.Name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func (p *Provider) writeAside(rec record) (string, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	return writeFileAside(p.dirs.records, data)
}

// writeFileAside writes data to a new file in dir and returns its path,
// for the caller to link or rename into place: nobody ever reads it half
// written.
func writeFileAside(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (p *Provider) removeRecord(name string) error {
	err := os.Remove(p.recordPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// readRecords reads every record in the state directory. A record that
// cannot be read is reported in the error and skipped.
func (p *Provider) readRecords() ([]record, error) {
	entries, err := os.ReadDir(p.dirs.records)
	if err != nil {
		return nil, err
	}
	var (
		recs []record
		errs []error
	)
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		rec, err := readRecord(p.recordPath(name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, fmt.Errorf("workspace record %s: %w", e.Name(), err))
		default:
			recs = append(recs, rec)
		}
	}
	return recs, errors.Join(errs...)
}

func readRecord(path string) (record, error) {
	f, _, err := fsroot.OpenRegular(nil, path)
	if err != nil {
		return record{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return record{}, err
	}
	if len(data) > maxRecord {
		return record{}, fmt.Errorf("larger than %d KiB", maxRecord>>10)
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return record{}, err
	}
	if rec.Name == "" || rec.Owner == "" || rec.Repo == "" || rec.Tree == "" {
		return record{}, errors.New("incomplete")
	}
	return rec, nil
}
