package gitsafe

import (
	"os"
	"strings"
)

// fixedConfig is set on every call, whether or not the repository sets
// these keys.
var fixedConfig = []Setting{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", os.DevNull}, // no hook is found under /dev/null
	{"core.pager", "cat"},          // git treats "cat" as no pager
	{"core.editor", ""},
	{"sequence.editor", ""},
	{"core.askPass", ""},
	{"core.sshCommand", ""},
	{"core.gitProxy", ""},
	{"core.alternateRefsCommand", ""},
	{"core.attributesFile", os.DevNull},
	{"core.excludesFile", ""},
	{"core.quotePath", "false"},
	{"color.ui", "false"},
	{"diff.external", ""},
	{"diff.ignoreSubmodules", "all"},
	{"status.submoduleSummary", "false"},
	{"submodule.recurse", "false"},
	{"credential.helper", ""},
	{"gpg.program", ""},
	{"gpg.openpgp.program", ""},
	{"gpg.x509.program", ""},
	{"gpg.ssh.program", ""},
	{"gpg.ssh.defaultKeyCommand", ""},
	{"gpg.ssh.allowedSignersFile", ""},
	{"log.showSignature", "false"},
	{"protocol.allow", "never"}, // no lazy fetch from a promisor remote
	{"uploadpack.packObjectsHook", ""},
	{"blame.ignoreRevsFile", ""}, // and blame gets --no-ignore-revs-file
	{"mailmap.file", ""},
	{"safe.bareRepository", "explicit"},
	// Writing commands: no signing (which runs gpg), no detached
	// background gc or maintenance that would outlive the call, no index
	// extensions that keep state between calls, and patches in the form
	// git apply reads back.
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"tag.forceSignAnnotated", "false"},
	{"push.gpgSign", "false"},
	{"merge.verifySignatures", "false"},
	{"gc.auto", "0"},
	{"gc.autoDetach", "false"},
	{"maintenance.auto", "false"},
	{"core.untrackedCache", "false"},
	{"core.splitIndex", "false"},
	{"feature.manyFiles", "false"},
	{"index.recordOffsetTable", "false"},
	{"diff.noprefix", "false"},
	{"diff.mnemonicPrefix", "false"},
	{"diff.relative", "false"},
	{"diff.orderFile", os.DevNull},
	{"merge.renormalize", "false"}, // it would run filters on both sides
	{"init.templateDir", ""},
}

// driverKeys are keys under a name the repository chooses ("*"), given
// as section, variable and the neutral value. A listed key in the
// section with any subsection, or none, and the variable is overridden.
var driverKeys = []struct{ section, variable, value string }{
	{"filter", "clean", ""},
	{"filter", "smudge", ""},
	{"filter", "process", ""},
	{"filter", "required", "false"}, // else git refuses the emptied filter
	{"diff", "command", ""},
	{"diff", "textconv", ""},
	{"diff", "external", ""},
	{"merge", "driver", ""},
	{"mergetool", "cmd", ""},
	{"difftool", "cmd", ""},
	{"credential", "helper", ""},
	{"gpg", "program", ""},
	{"protocol", "allow", "never"},
	{"remote", "uploadpack", ""},
	{"remote", "receivepack", ""},
	{"remote", "proxy", ""},
	{"man", "cmd", ""},
	{"man", "path", ""},
	{"browser", "cmd", ""},
	{"browser", "path", ""},
	{"core", "fsmonitor", "false"},
}

// neutralValue says whether a key as `git config --name-only` prints it
// (section and variable in lower case) names a program under a driver's
// name, and the value that neutralises it.
func neutralValue(key string) (string, bool) {
	section, rest, ok := strings.Cut(key, ".")
	if !ok {
		return "", false
	}
	variable := rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		variable = rest[i+1:]
	}
	for _, k := range driverKeys {
		if section == k.section && variable == k.variable {
			return k.value, true
		}
	}
	if section == "pager" {
		return "false", true // pager.<command> may name a program
	}
	return "", false
}
