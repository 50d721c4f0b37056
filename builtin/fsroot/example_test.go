package fsroot_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

func ExampleRoot_Resolve() {
	dir, _ := os.MkdirTemp("", "fsroot-example")
	defer os.RemoveAll(dir)
	root, err := fsroot.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer root.Close()

	for _, p := range []string{"", "src/./main.go", "src/../README.md", filepath.Join(dir, "docs")} {
		rel, _ := root.Resolve(p)
		fmt.Println(rel)
	}
	_, err = root.Resolve("../etc/passwd")
	fmt.Println(err)
	// Output:
	// .
	// src/main.go
	// README.md
	// docs
	// "../etc/passwd": path is outside the root; pass a path inside it, relative to the root
}

func ExampleRoot_ReadFile() {
	dir, _ := os.MkdirTemp("", "fsroot-example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello, world\n"), 0o644)
	root, _ := fsroot.Open(dir)
	defer root.Close()

	data, truncated, err := root.ReadFile("notes.txt", 5)
	fmt.Printf("%q %v %v\n", data, truncated, err)
	_, _, err = root.ReadFile(".", 5)
	fmt.Println(err)
	// Output:
	// "hello" true <nil>
	// . is a directory (not a regular file); use ls, glob or grep on it
}

func ExampleOpenRegular() {
	dir, _ := os.MkdirTemp("", "fsroot-example")
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "config.yaml")
	_ = os.WriteFile(config, []byte("aliases: {}\n"), 0o644)

	f, fi, err := fsroot.OpenRegular(nil, config)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fi.Size(), "bytes")
	f.Close()

	// A directory (or a named pipe, a socket, a device) in a file's place
	// is refused, and its FileInfo says what it is.
	_, fi, err = fsroot.OpenRegular(nil, dir)
	fmt.Println(errors.Is(err, fsroot.ErrNotRegular), fsroot.Kind(fi.Mode()))
	// Output:
	// 12 bytes
	// true directory
}

// An agent works in a subdirectory of its workspace. Its root is opened
// from the workspace's top, so that the subdirectory swapped for a
// symlink (by a command run in the workspace) is refused rather than
// followed.
func ExampleOpenBeneath() {
	top, _ := os.MkdirTemp("", "fsroot-example")
	defer os.RemoveAll(top)
	_ = os.MkdirAll(filepath.Join(top, "server"), 0o755)
	root, err := fsroot.OpenBeneath(top, "server")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(root.Dir() == filepath.Join(top, "server"))
	root.Close()

	_ = os.Remove(filepath.Join(top, "server"))
	_ = os.Symlink(os.TempDir(), filepath.Join(top, "server"))
	_, err = fsroot.OpenBeneath(top, "server")
	fmt.Println(errors.Is(err, fsroot.ErrNotDir))
	// Output:
	// true
	// true
}
