package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

func walkTree(t *testing.T, n int) *fsroot.Root {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("e%d", i%4), fmt.Sprintf("f%d", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("f1*\n/d2/\n"), 0o644))
	root, err := fsroot.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	return root
}

func TestWalkVisitsEveryFileOnce(t *testing.T) {
	root := walkTree(t, 500)
	for _, workers := range []int{1, 2, 8} {
		var mu sync.Mutex
		var got []string
		err := walk(context.Background(), root, ".", walkOptions{workers: workers}, func(_ int, e walkEntry) {
			mu.Lock()
			got = append(got, e.rel)
			mu.Unlock()
		})
		require.NoError(t, err)
		sort.Strings(got)
		var want []string
		for i := range 500 {
			name := fmt.Sprintf("f%d", i)
			if i%3 == 2 || name[:2] == "f1" {
				continue
			}
			want = append(want, fmt.Sprintf("d%d/e%d/%s", i%3, i%4, name))
		}
		want = append(want, ".gitignore")
		sort.Strings(want)
		assert.Equal(t, want, got, "workers=%d", workers)
	}
}

func TestWalkDescendFilter(t *testing.T) {
	root := walkTree(t, 20)
	var n atomic.Int32
	err := walk(context.Background(), root, ".", walkOptions{workers: 2, descend: func(rel string) bool { return rel == "d0" }},
		func(_ int, e walkEntry) { n.Add(1) })
	require.NoError(t, err)
	assert.Equal(t, int32(1), n.Load(), "only .gitignore: d0's subdirectories are not entered")
}

func TestWalkStopsWhenCancelled(t *testing.T) {
	root := walkTree(t, 2000)
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	err := walk(ctx, root, ".", walkOptions{workers: 4}, func(_ int, e walkEntry) {
		if n.Add(1) == 10 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, n.Load(), int32(200))
}
