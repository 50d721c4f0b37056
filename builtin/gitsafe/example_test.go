package gitsafe_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// A repository whose configuration names a hook that would run on
// commit: the commit is made, as troupe, and the hook never runs.
func ExampleNew() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "gitsafe-example")
	defer os.RemoveAll(dir)

	g, err := gitsafe.New(ctx, dir, gitsafe.Options{})
	fmt.Println(errors.Is(err, gitsafe.ErrNotRepository))

	// A new repository: its git directory is named, as there is none
	// to find yet.
	top := filepath.Join(dir, "project")
	_ = os.MkdirAll(filepath.Join(top, ".git"), 0o755)
	g, err = gitsafe.New(ctx, top, gitsafe.Options{GitDir: filepath.Join(top, ".git")})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = g.Output(ctx, "init", "-q")
	_, _ = g.Output(ctx, "config", "core.hooksPath", filepath.Join(top, "hooks"))
	_ = os.MkdirAll(filepath.Join(top, "hooks"), 0o755)
	_ = os.WriteFile(filepath.Join(top, "hooks", "post-commit"), []byte("#!/bin/sh\ntouch ran\n"), 0o755)
	_ = os.WriteFile(filepath.Join(top, "README"), []byte("hello\n"), 0o644)

	g, _ = gitsafe.New(ctx, top, gitsafe.Options{}) // the repository as it is now
	_, _ = g.Output(ctx, "add", "README")
	_, _ = g.Output(ctx, "commit", "-q", "-m", "first")
	who, _ := g.Output(ctx, "log", "-1", "--format=%an <%ae> %s")
	fmt.Println(strings.TrimSpace(string(who)))
	_, err = os.Stat(filepath.Join(top, "ran"))
	fmt.Println("hook ran:", err == nil)
	// Output:
	// true
	// troupe <troupe@localhost> first
	// hook ran: false
}
