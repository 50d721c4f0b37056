package agenttypes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrUntrusted is wrapped by the lookup of a type that a project defines
// but that is withheld until the user trusts the project: its scripts
// would run, or it would hide a builtin or user type.
var ErrUntrusted = errors.New("withheld until the project is trusted")

// Kinds of Grant.
const (
	// GrantScripts: the definition carries scripts, which compiling runs.
	GrantScripts = "scripts"
	// GrantShadow: the definition has the name of a builtin type or of a
	// type in the user's own definitions, and would hide it.
	GrantShadow = "shadow"
	// GrantRun: the definition, or the project's config (ProjectRun),
	// names commands the run tool may start, or lets them reach the
	// network. The commands are the project's code (its tests, its
	// Makefile): they run only in a project the user trusts.
	GrantRun = "run"
)

// A Grant is one thing a project's definitions would do that needs the
// user's trust first. Digest pins what is trusted: a changed script or
// definition has another digest and needs trust again.
type Grant struct {
	// Kind is GrantScripts, GrantShadow or GrantRun.
	Kind string `json:"kind"`
	// Type is the type's name; File the definition that asks. For the
	// project config's run section (RunConfig), Type is "run.allow" and
	// File the config file.
	Type string `json:"type"`
	File string `json:"file"`
	// Digest is the hex SHA-256 of the scripts' sources (GrantScripts),
	// of the definition file (GrantShadow), or of the commands and
	// whether they reach the network (GrantRun).
	Digest string `json:"digest"`
	// Detail says what trusting allows, in a few words.
	Detail string `json:"detail"`
}

// A Withheld type is one a project defines that is not loaded, since the
// project is not trusted; Grants say what trusting it would allow.
type Withheld struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Extends is the withheld type this one extends, whose grants these
	// are; empty when they are its own.
	Extends string  `json:"extends,omitempty"`
	Grants  []Grant `json:"grants"`
}

// Why says in a few words why the type is withheld.
func (w Withheld) Why() string {
	var why []string
	for _, g := range w.Grants {
		why = append(why, g.Detail)
	}
	if w.Extends != "" {
		return fmt.Sprintf("it extends %s, for which %s", w.Extends, strings.Join(why, "; "))
	}
	return strings.Join(why, "; ")
}

// Error is the error a lookup of the withheld type returns.
func (w Withheld) Error() error {
	return fmt.Errorf("type %q (%s) is %w: %s", w.Name, w.Source, ErrUntrusted, w.Why())
}

// TrustAll trusts every grant: for programs whose project directory is
// their own.
func TrustAll(Grant) bool { return true }

// scriptsDigest is the digest of a definition's own scripts: where each
// came from and its source.
func scriptsDigest(d *definition) string {
	h := sha256.New()
	write := func(parts ...string) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s", len(p), p)
		}
	}
	if d.hooks != nil {
		write("hooks", d.hooks.File, d.hooks.Source)
	}
	for _, st := range d.scriptTools {
		write("tool", st.Name, st.Script.File, st.Script.Source)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func scriptsDetail(d *definition) string {
	var parts []string
	switch {
	case d.hooks == nil:
	case d.hooks.File == d.path:
		parts = append(parts, "hooks")
	default:
		parts = append(parts, "hooks from "+filepath.Base(d.hooks.File))
	}
	if n := len(d.scriptTools); n > 0 {
		parts = append(parts, fmt.Sprintf("%d script tool(s)", n))
	}
	return "its scripts run (" + strings.Join(parts, ", ") + ")"
}

// runGrant is the grant for the commands a project definition names (its
// run.allow and Bash patterns, its setup, network: true); false when it
// names none.
func runGrant(d *definition) (Grant, bool) {
	var allow, setup []string
	if d.has("run.allow") || (d.bash != nil && len(d.bash.allow) > 0) {
		allow = ownAllow(d)
	}
	if d.has("setup") {
		setup = d.setup
	}
	network := d.has("run.network") && d.run.Network
	if len(allow) == 0 && len(setup) == 0 && !network {
		return Grant{}, false
	}
	return Grant{Kind: GrantRun, Type: d.name, File: d.path, Digest: commandsDigest(allow, setup, network), Detail: commandsDetail(allow, setup, network)}, true
}

// commandsDigest pins a list of commands, setup commands and the network.
func commandsDigest(allow, setup []string, network bool) string {
	h := sha256.New()
	for _, list := range [][]string{allow, setup} {
		fmt.Fprintf(h, "%d;", len(list))
		for _, c := range list {
			fmt.Fprintf(h, "%d:%s", len(c), c)
		}
	}
	fmt.Fprintf(h, "network=%t", network)
	return hex.EncodeToString(h.Sum(nil))
}

// commandsDetail says what commands would run, for people.
func commandsDetail(allow, setup []string, network bool) string {
	var parts []string
	if allow != nil {
		runs := "runs: " + strings.Join(allow, ", ")
		if len(allow) == 0 {
			runs = "runs nothing (its allow list is empty)"
		}
		parts = append(parts, runs)
	}
	if len(setup) > 0 {
		parts = append(parts, "sets up with: "+strings.Join(setup, ", "))
	}
	if network {
		parts = append(parts, "with the network")
	}
	return strings.Join(parts, "; ")
}
