package process

import (
	"slices"
	"strings"
)

// AllowedEnv are the variables a process troupe starts may see of
// troupe's own environment: where programs are, who and where the user
// is, the locale and the terminal. Everything else, API keys first of
// all, is dropped unless the caller passes it on by name.
var AllowedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL",
	"LANG", "LANGUAGE", "TZ", "TERM", "NO_COLOR",
	"TMPDIR", "TMP", "TEMP",
	// Windows cannot start most programs without these.
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT",
}

// allowedPrefixes are families of variables passed whole: the locale's
// categories.
var allowedPrefixes = []string{"LC_"}

// Allowed reports whether the variable name passes on its own.
func Allowed(name string) bool {
	if slices.Contains(AllowedEnv, strings.ToUpper(name)) {
		return true
	}
	for _, p := range allowedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Env returns the environment of a process troupe starts: the entries
// of environ (as os.Environ gives them) whose names are Allowed, then
// extra ("NAME=value" entries the caller decided to pass), which win
// over environ's entries of the same name.
func Env(environ []string, extra ...string) []string {
	named := map[string]bool{}
	for _, kv := range extra {
		name, _, _ := strings.Cut(kv, "=")
		named[name] = true
	}
	out := make([]string, 0, len(AllowedEnv)+len(extra))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if ok && name != "" && Allowed(name) && !named[name] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
