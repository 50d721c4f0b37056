package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// lsMaxEntries caps how many entries ls lists.
const lsMaxEntries = 1000

const lsDescription = `List one directory (not recursive), sorted by name, one entry per line: a directory as "name/", a file as "name<TAB>size in bytes", a symlink as "name -> target". Other entries (pipes, sockets, devices) show their kind after a tab. Nothing is hidden: dot files and .gitignored entries are listed too. Use glob to find files recursively. Paths are relative to the root; default: the root.`

const lsParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory to list, relative to the root. Default: the root."}
  },
  "additionalProperties": false
}`

// Ls returns the ls tool. See the package documentation for its output.
func Ls() agenttypes.Tool {
	return newTool("ls", lsDescription, lsParams, runLs)
}

type lsArgs struct {
	Path string `json:"path"`
}

func runLs(ctx context.Context, root *fsroot.Root, raw json.RawMessage) (string, error) {
	var a lsArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	dir, err := root.Resolve(a.Path)
	if err != nil {
		return "", err
	}
	fi, err := root.Stat(dir)
	if err != nil {
		return "", err
	}
	if fi.Mode().IsRegular() {
		// Not a directory: show the one entry, as its directory would.
		return path.Base(dir) + "\t" + strconv.FormatInt(fi.Size(), 10), nil
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is a %s, not a directory", dir, fsroot.Kind(fi.Mode()))
	}
	d, err := root.OpenDir(dir)
	if err != nil {
		return "", err
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return "", err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if len(ents) == 0 {
		return "(empty directory)", nil
	}
	var sb strings.Builder
	for i, e := range ents {
		if i&255 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		if i == lsMaxEntries {
			fmt.Fprintf(&sb, "... %d more entries not shown; use glob to narrow\n", len(ents)-i)
			break
		}
		name, rel := e.Name(), relJoin(dir, e.Name())
		switch typ := e.Type(); {
		case typ.IsDir():
			sb.WriteString(name + "/")
		case typ&fs.ModeSymlink != 0:
			target, err := root.Readlink(rel)
			if err != nil {
				target = "?"
			}
			sb.WriteString(name + " -> " + target)
		case typ.IsRegular():
			size := "?"
			if fi, err := d.Lstat(name); err == nil {
				size = strconv.FormatInt(fi.Size(), 10)
			}
			sb.WriteString(name + "\t" + size)
		default:
			sb.WriteString(name + "\t(" + fsroot.Kind(typ) + ")")
		}
		sb.WriteByte('\n')
	}
	return strings.TrimSuffix(sb.String(), "\n"), nil
}
