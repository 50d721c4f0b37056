package workspace_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// Size of the benchmark's repository, as the workspace issue gives it.
const (
	benchFiles = 10_000
	benchBytes = 200 << 20
)

// BenchmarkWorkspace makes a workspace on a repository of 10,000 files
// and 200 MB (with a few uncommitted changes), changes two files in it
// and collects its changes, side by side with plain git doing the same
// work: `git worktree add`, the same edits, `git add -A` and `git diff
// --cached --binary`, `git worktree remove`.
//
//	go test -run x -bench Workspace -benchtime 5x ./builtin/workspace
func BenchmarkWorkspace(b *testing.B) {
	repo := b.TempDir()
	buildBenchRepo(b, repo)
	write(b, repo, "d0/f0.txt", "uncommitted\n")
	write(b, repo, "untracked.txt", "u\n")
	edit := func(dir string) {
		write(b, dir, "d1/f1.txt", "changed\n")
		write(b, dir, "new.txt", "new\n")
	}

	n := 0 // b.N loops run more than once: names stay unique across them
	b.Run("git", func(b *testing.B) {
		for range b.N {
			n++
			wt := filepath.Join(b.TempDir(), "wt")
			gitB(b, repo, "worktree", "add", "-q", "-b", "plain-"+strconv.Itoa(n), wt, "HEAD")
			edit(wt)
			gitB(b, wt, "add", "-A")
			gitB(b, wt, "diff", "--cached", "--binary", "HEAD")
			gitB(b, repo, "worktree", "remove", "--force", wt)
		}
	})
	b.Run("workspace", func(b *testing.B) {
		p, err := workspace.New(workspace.Config{StateDir: b.TempDir(), ExcludesFile: os.DevNull})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		ctx := context.Background()
		for range b.N {
			n++
			ws, err := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "bench", Agent: "a" + strconv.Itoa(n), Dir: repo})
			if err != nil {
				b.Fatal(err)
			}
			edit(ws.Dir())
			ch, err := ws.Close(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if ch.Files() != 2 {
				b.Fatalf("changes: %+v", ch)
			}
		}
	})
}

// buildBenchRepo fills dir with benchFiles files of benchBytes in all,
// in 100 directories, committed.
func buildBenchRepo(b *testing.B, dir string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, benchBytes/benchFiles)
	for i := range benchFiles {
		for j := range buf {
			buf[j] = byte('a' + rng.IntN(26))
			if j%80 == 79 {
				buf[j] = '\n'
			}
		}
		write(b, dir, fmt.Sprintf("d%d/f%d.txt", i%100, i), string(buf))
	}
	gitB(b, dir, "init", "-q", "-b", "main")
	gitB(b, dir, "add", ".")
	gitB(b, dir, "commit", "-q", "-m", "bench")
}

func gitB(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// BenchmarkApply applies a run's changes (two files) to a repository of
// 10,000 files and 200 MB that has uncommitted changes of its own, side
// by side with plain `git apply` of the run's patch, which merges
// nothing. Each iteration starts from the tree as it was.
//
//	go test -run x -bench Apply -benchtime 5x ./builtin/workspace
func BenchmarkApply(b *testing.B) {
	repo := b.TempDir()
	buildBenchRepo(b, repo)
	write(b, repo, "d0/f0.txt", "uncommitted\n")
	p, err := workspace.New(workspace.Config{StateDir: b.TempDir(), ExcludesFile: os.DevNull})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	ws, err := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "bench", Agent: "a", Dir: repo})
	if err != nil {
		b.Fatal(err)
	}
	write(b, ws.Dir(), "d1/f1.txt", "changed\n")
	write(b, ws.Dir(), "new.txt", "new\n")
	ch, err := ws.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	undo := func(b *testing.B) {
		b.StopTimer()
		gitB(b, repo, "checkout", "--", "d1/f1.txt")
		if err := os.Remove(filepath.Join(repo, "new.txt")); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.Run("git", func(b *testing.B) {
		for range b.N {
			gitB(b, repo, "apply", ch.Patch)
			undo(b)
		}
	})
	b.Run("workspace", func(b *testing.B) {
		for range b.N {
			res, err := p.Apply(ctx, ch, workspace.ApplyOptions{})
			if err != nil || len(res.Written) != 2 {
				b.Fatalf("%+v %v", res, err)
			}
			undo(b)
		}
	})
}

// BenchmarkChildRound starts a child from its parent's workspace, which
// holds uncommitted work, changes a file in the child, closes it and
// merges it back, with workspaces plain and durable: what durable ones
// add (the search for one open already at Open, the changes kept at
// Close) beside the git commands every round runs. Both kinds take the
// workspace's lock and read its record.
//
//	go test -run x -bench ChildRound -benchtime 20x ./builtin/workspace
func BenchmarkChildRound(b *testing.B) {
	repo := b.TempDir()
	gitB(b, repo, "init", "-q", "-b", "main")
	write(b, repo, "f.txt", "f\n")
	gitB(b, repo, "add", ".")
	gitB(b, repo, "commit", "-q", "-m", "first")
	for _, durable := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "durable"}[durable], func(b *testing.B) {
			p, err := workspace.New(workspace.Config{StateDir: b.TempDir(), ExcludesFile: os.DevNull})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			parent, err := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "bench", Agent: "parent", Dir: repo, Durable: durable})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				n++
				write(b, parent.Dir(), "p"+strconv.Itoa(n)+".txt", "p\n")
				if err := benchChild(ctx, p, parent, "c"+strconv.Itoa(n), durable); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := parent.Close(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// benchChild is one round of BenchmarkChildRound.
func benchChild(ctx context.Context, p *workspace.Provider, parent agenttypes.Workspace, agent string, durable bool) error {
	child, err := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "bench", Agent: agent, Dir: parent.Dir(), Parent: parent, Durable: durable})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(child.Dir(), agent+".txt"), []byte(agent+"\n"), 0o644); err != nil {
		return err
	}
	ch, err := child.Close(ctx)
	if err != nil {
		return err
	}
	res, err := parent.Merge(ctx, ch)
	if err == nil && len(res.Files) != 1 {
		err = fmt.Errorf("the merge brought %v", res.Files)
	}
	return err
}
