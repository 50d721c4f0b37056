package workspace_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// A parent's workspace, a child's started from the parent's uncommitted
// work, the child's changes merged back, and what the parent changed in
// the end. The user's own directory never changes.
func Example() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "workspace-example")
	defer os.RemoveAll(tmp)
	project := filepath.Join(tmp, "project")
	_ = os.MkdirAll(project, 0o755)
	_ = os.WriteFile(filepath.Join(project, "README.md"), []byte("# project\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=Ada",
			"GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Println(string(out))
			return
		}
	}

	p, err := workspace.New(workspace.Config{StateDir: filepath.Join(tmp, "state")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	parent, err := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "run1", Agent: "parent", Dir: project})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = os.WriteFile(filepath.Join(parent.Dir(), "plan.md"), []byte("1. add main.go\n"), 0o644)

	child, _ := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "run1", Agent: "child", Dir: parent.Dir(), Parent: parent})
	_, err = os.Stat(filepath.Join(child.Dir(), "plan.md"))
	fmt.Println("the child sees the parent's plan:", err == nil)
	_ = os.WriteFile(filepath.Join(child.Dir(), "main.go"), []byte("package main\n"), 0o644)
	childChanges, _ := child.Close(ctx)
	fmt.Println("child:", childChanges.Branch, childChanges.Added)

	merged, _ := parent.Merge(ctx, childChanges)
	fmt.Println("merged:", merged.Files)
	changes, _ := parent.Close(ctx)
	fmt.Println("parent:", changes.Branch, changes.Added)
	_, err = os.Stat(filepath.Join(project, "main.go"))
	fmt.Println("the project changed:", err == nil)
	// Output:
	// the child sees the parent's plan: true
	// child: troupe/run1/child [main.go]
	// merged: [main.go]
	// parent: troupe/run1/parent [main.go plan.md]
	// the project changed: false
}

// An agent's changes applied to the user's tree, where they show as
// unstaged changes, and then discarded.
func ExampleProvider_Apply() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "workspace-example")
	defer os.RemoveAll(tmp)
	project := filepath.Join(tmp, "project")
	_ = os.MkdirAll(project, 0o755)
	_ = os.WriteFile(filepath.Join(project, "README.md"), []byte("# project\n"), 0o644)
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=Ada",
			"GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "first")

	p, err := workspace.New(workspace.Config{StateDir: filepath.Join(tmp, "state")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	w, _ := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "run1", Agent: "agent", Dir: project})
	_ = os.WriteFile(filepath.Join(w.Dir(), "main.go"), []byte("package main\n"), 0o644)
	_ = os.WriteFile(filepath.Join(w.Dir(), "README.md"), []byte("# project\n\nIt builds.\n"), 0o644)
	changes, _ := w.Close(ctx)

	applied, err := p.Apply(ctx, changes, workspace.ApplyOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("written:", applied.Written)
	fmt.Print(git("status", "--porcelain"))
	again, _ := p.Apply(ctx, changes, workspace.ApplyOptions{})
	fmt.Println("applied again, up to date:", again.UpToDate)
	fmt.Println("discarded:", p.Discard(ctx, changes) == nil)
	// Output:
	// written: [README.md main.go]
	//  M README.md
	// ?? main.go
	// applied again, up to date: true
	// discarded: true
}

// Two workers of a durable backend share a state directory, each with a
// Provider of its own: one opens an agent's workspace durable, the other
// reopens it by its handle, works in it and closes it. A Close again, as
// a step run twice makes, returns the same changes and records nothing.
func ExampleProvider_Reopen() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "workspace-example")
	defer os.RemoveAll(tmp)
	project := filepath.Join(tmp, "project")
	_ = os.MkdirAll(project, 0o755)
	_ = os.WriteFile(filepath.Join(project, "README.md"), []byte("# project\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=Ada",
			"GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Println(string(out))
			return
		}
	}

	state := filepath.Join(tmp, "state")
	var workers [2]*workspace.Provider
	for i := range workers {
		p, err := workspace.New(workspace.Config{StateDir: state})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer p.Close()
		workers[i] = p
	}
	ws, err := workers[0].Open(ctx, agenttypes.WorkspaceRequest{Run: "run1", Agent: "agent", Dir: project, Durable: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	handle := ws.(agenttypes.DurableWorkspace).Handle()
	_ = os.WriteFile(filepath.Join(ws.Dir(), "main.go"), []byte("package main\n"), 0o644)

	again, err := workers[1].Reopen(ctx, handle)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = os.WriteFile(filepath.Join(again.Dir(), "go.mod"), []byte("module example.com/project\n"), 0o644)
	changes, _ := again.Close(ctx)
	fmt.Println("closed:", changes.Branch, changes.Added)

	twice, err := ws.Close(ctx)
	fmt.Println("closed again:", err == nil && twice.Head == changes.Head)
	// Output:
	// closed: troupe/run1/agent [go.mod main.go]
	// closed again: true
}
