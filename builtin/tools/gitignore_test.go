package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIgnoreRules(t *testing.T) {
	root := parseIgnore(nil, ".", []byte(`
# comment
*.log
!keep.log
build/
/only-top.txt
docs/*.tmp
**/gen/**
!gen/keep.go
trailing.txt   
escaped\ 
\#hash
\!bang
a/**/z.txt
[Tt]emp
`))
	sub := parseIgnore(root, "sub", []byte("local.txt\n!*.log\n/anchored\n"))

	tests := []struct {
		node    *ignoreRules
		rel     string
		isDir   bool
		ignored bool
	}{
		{root, "x.log", false, true},
		{root, "deep/down/x.log", false, true},
		{root, "keep.log", false, false},
		{root, "build", true, true},
		{root, "build", false, false}, // dir-only pattern, a file
		{root, "src/build", true, true},
		{root, "only-top.txt", false, true},
		{root, "src/only-top.txt", false, false},
		{root, "docs/a.tmp", false, true},
		{root, "docs/sub/a.tmp", false, false},
		{root, "x/gen/y.go", false, true},
		{root, "gen/y/z.go", false, true},
		{root, "gen", true, false}, // "dir/**" matches inside, not dir itself
		{root, "gen/keep.go", false, false},
		{root, "trailing.txt", false, true},
		{root, "escaped ", false, true},
		{root, "#hash", false, true},
		{root, "!bang", false, true},
		{root, "a/z.txt", false, true},
		{root, "a/b/c/z.txt", false, true},
		{root, "b/a/z.txt", false, false},
		{root, "Temp", true, true},
		{root, "temp", false, true},
		{root, "main.go", false, false},
		{sub, "sub/local.txt", false, true},
		{sub, "sub/x.log", false, false},   // re-included by the deeper file
		{sub, "sub/anchored", false, true}, // relative to sub
		{sub, "sub/a/anchored", false, false},
		{sub, "sub/x.txt", false, false},
		{sub, "sub/build", true, true}, // parent rules still apply
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			name := tt.rel[len(dirOf(tt.rel)):]
			assert.Equal(t, tt.ignored, tt.node.ignored(tt.rel, name, tt.isDir))
		})
	}
}

func dirOf(rel string) string {
	for i := len(rel) - 1; i >= 0; i-- {
		if rel[i] == '/' {
			return rel[:i+1]
		}
	}
	return ""
}

func TestIgnoreEmptyFileAddsNoNode(t *testing.T) {
	assert.Nil(t, parseIgnore(nil, ".", []byte("# only comments\n\n")))
}

func TestAncestors(t *testing.T) {
	assert.Nil(t, ancestors("."))
	assert.Equal(t, []string{"."}, ancestors("a"))
	assert.Equal(t, []string{".", "a", "a/b"}, ancestors("a/b/c"))
}
