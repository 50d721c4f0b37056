package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// walkEntry is a file (or a symlink, which may name one) found by walk.
type walkEntry struct {
	dir  *fsroot.Dir // open directory holding the entry
	name string      // entry name in dir
	rel  string      // slash path relative to the root
	typ  fs.FileMode // type bits from the directory: 0 or fs.ModeSymlink
}

type walkOptions struct {
	workers int
	// descend, when set, says whether to enter the directory at rel.
	descend func(rel string) bool
}

const (
	// walkBatch files of one directory make one task, so a huge directory
	// is shared among workers.
	walkBatch = 32
	// walkMaxDepth stops a walk that something (a directory swapped for a
	// symlink mid-walk) has sent in circles. Directories more levels
	// below the start are not entered, and counted in walkResult.
	walkMaxDepth = 256
	// maxIgnoreFile caps the size of a .gitignore that is read.
	maxIgnoreFile = 1 << 20
)

// walkResult says what a walk left out.
type walkResult struct {
	// tooDeep counts directories not entered because they are more than
	// walkMaxDepth levels below the start.
	tooDeep int
}

// depthNote is the note line (with its leading newline) that says how
// many directories a walk did not enter for depth, or "".
func depthNote(res walkResult, verb string) string {
	switch res.tooDeep {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("\n... 1 directory more than %d levels below the path was not %s", walkMaxDepth, verb)
	}
	return fmt.Sprintf("\n... %d directories more than %d levels below the path were not %s", res.tooDeep, walkMaxDepth, verb)
}

// errWalkPanic is wrapped by walk's error when a worker panicked.
var errWalkPanic = errors.New("internal error: a directory walk worker panicked (a bug in troupe; the stack is logged)")

// walkDirHook, when set by a test, is called by a worker before it reads
// the directory rel.
var walkDirHook func(rel string)

// walk visits the files under the directory start (relative to the root)
// in parallel, from opt.workers goroutines, in no particular order. It
// never enters .git or symlinked directories, nor directories more than
// walkMaxDepth levels below start, and skips what .gitignore files (the
// root's, start's ancestors' and nested ones) and .git/info/exclude
// ignore. start itself is walked even when ignored: it was asked for.
// Unreadable directories are skipped. walk returns when every visit has
// returned; it returns ctx's error if ctx ended first. A panic in a
// worker (in visit or in the walk itself) stops the walk and is returned
// as an error wrapping errWalkPanic, its stack logged: a goroutine the
// tool started must not take the process down.
func walk(ctx context.Context, root *fsroot.Root, start string, opt walkOptions, visit func(worker int, e walkEntry)) (walkResult, error) {
	q := &walkQueue{}
	q.cond.L = &q.mu
	stop := context.AfterFunc(ctx, q.stop)
	defer stop()

	q.push(walkTask{rel: start, ign: loadAncestorIgnores(root, start)})
	var wg sync.WaitGroup
	for w := range max(opt.workers, 1) {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					slog.Error("walk: worker panicked", "start", start, "panic", r, "stack", string(debug.Stack()))
					q.fail(fmt.Errorf("%w: %v", errWalkPanic, r))
				}
			}()
			for {
				t, ok := q.pop()
				if !ok {
					return
				}
				if t.files != nil {
					q.visitFiles(ctx, t.dir, t.files, w, visit)
				} else {
					q.readDir(ctx, root, t, opt, w, visit)
				}
				q.done()
			}
		})
	}
	wg.Wait()
	for _, t := range q.tasks { // left over when stopped early
		t.release()
	}
	res := walkResult{tooDeep: int(q.tooDeep.Load())}
	if q.err != nil {
		return res, q.err
	}
	return res, ctx.Err()
}

type walkTask struct {
	// A directory to read: opened from parent by name, or from the root
	// by rel when parent is nil.
	parent *sharedDir
	name   string
	rel    string
	ign    *ignoreRules
	depth  int
	// Or a batch of files in dir.
	dir   *sharedDir
	files []walkEntry
}

func (t *walkTask) release() {
	if t.parent != nil {
		t.parent.release()
	}
	if t.dir != nil {
		t.dir.release()
	}
}

// sharedDir is an open directory used by several tasks; the last to
// finish closes it.
type sharedDir struct {
	d    *fsroot.Dir
	refs atomic.Int32
}

func (s *sharedDir) acquire() *sharedDir { s.refs.Add(1); return s }

func (s *sharedDir) release() {
	if s.refs.Add(-1) == 0 {
		s.d.Close()
	}
}

// walkQueue is a LIFO of tasks (depth first keeps few directories open)
// with a count of tasks not yet done, so idle workers know when to quit.
type walkQueue struct {
	mu      sync.Mutex
	cond    sync.Cond
	tasks   []walkTask
	pending int
	stopped bool
	err     error // the first worker panic
	tooDeep atomic.Int64
}

func (q *walkQueue) push(t walkTask) {
	q.mu.Lock()
	q.tasks = append(q.tasks, t)
	q.pending++
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *walkQueue) pop() (walkTask, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.tasks) == 0 && q.pending > 0 && !q.stopped {
		q.cond.Wait()
	}
	if q.stopped || len(q.tasks) == 0 {
		return walkTask{}, false
	}
	t := q.tasks[len(q.tasks)-1]
	q.tasks[len(q.tasks)-1] = walkTask{}
	q.tasks = q.tasks[:len(q.tasks)-1]
	return t, true
}

func (q *walkQueue) done() {
	q.mu.Lock()
	q.pending--
	last := q.pending == 0
	q.mu.Unlock()
	if last {
		q.cond.Broadcast()
	}
}

// fail stops the walk with err, unless it already failed.
func (q *walkQueue) fail(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.mu.Unlock()
	q.stop()
}

func (q *walkQueue) stop() {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

func (q *walkQueue) readDir(ctx context.Context, root *fsroot.Root, t walkTask, opt walkOptions, w int, visit func(int, walkEntry)) {
	if walkDirHook != nil {
		walkDirHook(t.rel)
	}
	var d *fsroot.Dir
	var err error
	if t.parent == nil {
		d, err = root.OpenDir(t.rel)
	} else {
		d, err = t.parent.d.OpenDir(t.name)
		t.parent.release()
	}
	if err != nil {
		slog.Debug("walk: skipping directory", "dir", t.rel, "err", err)
		return
	}
	sd := &sharedDir{d: d}
	sd.refs.Store(1)
	defer sd.release()
	ents, err := d.ReadDir()
	if err != nil {
		slog.Debug("walk: skipping directory", "dir", t.rel, "err", err)
		return
	}
	ign := t.ign
	for _, e := range ents {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			if data, _, err := d.ReadFile(".gitignore", maxIgnoreFile, nil); err == nil {
				ign = parseIgnore(ign, t.rel, data)
			}
			break
		}
	}
	var batch []walkEntry
	for _, e := range ents {
		name, typ := e.Name(), e.Type()
		isDir := typ.IsDir()
		if name == ".git" || (!isDir && !typ.IsRegular() && typ&fs.ModeSymlink == 0) {
			continue // git's own data; pipes, sockets, devices
		}
		rel := relJoin(t.rel, name)
		if ign != nil && ign.ignored(rel, name, isDir) {
			continue
		}
		if isDir {
			switch {
			case opt.descend != nil && !opt.descend(rel):
			case t.depth >= walkMaxDepth:
				q.tooDeep.Add(1)
			default:
				q.push(walkTask{parent: sd.acquire(), name: name, rel: rel, ign: ign, depth: t.depth + 1})
			}
			continue
		}
		batch = append(batch, walkEntry{dir: d, name: name, rel: rel, typ: typ})
		if len(batch) == walkBatch {
			q.push(walkTask{dir: sd.acquire(), files: batch})
			batch = nil
		}
	}
	q.visitFiles(ctx, nil, batch, w, visit) // the rest: no need to queue
}

func (q *walkQueue) visitFiles(ctx context.Context, sd *sharedDir, files []walkEntry, w int, visit func(int, walkEntry)) {
	if sd != nil {
		defer sd.release()
	}
	for _, f := range files {
		if ctx.Err() != nil {
			return
		}
		visit(w, f)
	}
}

// loadAncestorIgnores reads .git/info/exclude and the .gitignore files of
// the directories above start, so a walk that starts below the root
// honours them too.
func loadAncestorIgnores(root *fsroot.Root, start string) *ignoreRules {
	var ign *ignoreRules
	if data, _, err := root.ReadFile(".git/info/exclude", maxIgnoreFile); err == nil {
		ign = parseIgnore(ign, ".", data)
	}
	for _, dir := range ancestors(start) {
		if data, _, err := root.ReadFile(relJoin(dir, ".gitignore"), maxIgnoreFile); err == nil {
			ign = parseIgnore(ign, dir, data)
		}
	}
	return ign
}
