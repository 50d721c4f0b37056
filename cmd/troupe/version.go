package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version: the module's, the commit it was built from and the Go it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, _ := debug.ReadBuildInfo()
			fmt.Fprintln(a.stdout, versionLine(build(info)))
			return nil
		},
	}
}

// buildStamp is what the binary knows of how it was built. go build in a
// git checkout records the commit, its time and whether the tree had
// uncommitted changes; go install module@version records the version.
type buildStamp struct {
	version  string // the module's version, or "" when it has none
	commit   string // the VCS revision, or ""
	time     string // the commit's time, or ""
	modified bool   // the tree had uncommitted changes
	goVer    string
}

func build(info *debug.BuildInfo) buildStamp {
	b := buildStamp{goVer: runtime.Version()}
	if info == nil {
		return b
	}
	if info.GoVersion != "" {
		b.goVer = info.GoVersion
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		b.version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.commit = s.Value
		case "vcs.time":
			b.time = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// shortCommit is as many hex digits of a commit as Go's pseudo-versions
// show.
const shortCommit = 12

// versionLine is what troupe version prints: "troupe VERSION (commit
// COMMIT[+dirty], TIME, GO)"; VERSION is devel when the module has none,
// and the commit is left out when the build recorded none.
func versionLine(b buildStamp) string {
	v := b.version
	if v == "" {
		v = "devel"
	}
	var details []string
	if b.commit != "" {
		c := b.commit[:min(len(b.commit), shortCommit)]
		if b.modified {
			c += "+dirty"
		}
		details = append(details, "commit "+c)
		if b.time != "" {
			details = append(details, b.time)
		}
	}
	details = append(details, b.goVer)
	return fmt.Sprintf("troupe %s (%s)", v, strings.Join(details, ", "))
}

// version is the version MCP clients are told: the module's, or the
// commit's for a build without one, or "dev".
func version() string {
	info, _ := debug.ReadBuildInfo()
	b := build(info)
	switch {
	case b.version != "":
		return b.version
	case len(b.commit) >= shortCommit:
		return "dev-" + b.commit[:shortCommit]
	}
	return "dev"
}
