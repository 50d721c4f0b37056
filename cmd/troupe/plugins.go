package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/trust"
	"github.com/troupe-dev/troupe/plugins"
)

// plugins returns the plugin host of the project at root, made on first
// use: plugins from the project's .troupe/plugins, $TROUPE_PLUGIN_PATH and
// the user's data directory, checked against the project's
// .troupe/plugins.lock when there is one. The project's own plugins run
// only once the user trusts the project, and only the binaries trusted.
func (a *app) plugins(root string) *plugins.Host {
	if a.host == nil {
		a.host = plugins.New(plugins.Config{
			Dirs:     plugins.Dirs(root, a.getenv),
			LockFile: plugins.LockPath(root),
			TrustProject: func(name, sum string) bool {
				p := a.proj
				return p != nil && p.root == root && p.allows(trust.KindPlugin, name, sum)
			},
			CacheDir: a.pluginCacheDir(),
			Digests:  a.digests(),
			Logger:   a.logger(),
			// Restarts after a crash are counted where the OTEL_*
			// variables send metrics; a command that ran no agent sends
			// none (see metricExporter).
			MeterProvider: a.telemetry(context.Background()).meterProvider,
		})
	}
	return a.host
}

// pluginCacheDir keeps what each plugin binary offers, so that commands
// start a plugin only when an agent uses it: $XDG_CACHE_HOME/troupe/plugins,
// else ~/.cache/troupe/plugins; none when neither can be found.
func (a *app) pluginCacheDir() string {
	cache := a.getenv("XDG_CACHE_HOME")
	if cache == "" || !filepath.IsAbs(cache) {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "troupe", "plugins")
}

// lockHint is the line that follows a plugin's refusal by the lock file:
// the command that writes the lock file again.
const lockHint = "troupe: run 'troupe plugins lock' to lock the plugins as they are now, if you trust them"

// needsLock reports whether err is a refusal by the lock file.
func needsLock(err error) bool {
	return errors.Is(err, plugins.ErrChecksum) || errors.Is(err, plugins.ErrLockFile)
}

// closePlugins stops the plugin processes a command started.
func (a *app) closePlugins() {
	if a.host != nil {
		_ = a.host.Close()
		a.host = nil
	}
}

func (a *app) pluginsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List the plugins, or lock their checksums",
		Long: "Plugins are executables named troupe-plugin-NAME in the project's .troupe/plugins,\n" +
			"the folders of $TROUPE_PLUGIN_PATH, or ${XDG_DATA_HOME:-~/.local/share}/troupe/plugins.\n" +
			"The project's own run only once you trust the project ('troupe trust').\n" +
			"When the project has a .troupe/plugins.lock, only the plugins it lists, unchanged, run;\n" +
			"the lock file pins versions, it is not consent.",
	}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	addRepoFlag(cmd, "project whose plugins and lock file are read")
	list := &cobra.Command{
		Use:   "list",
		Short: "List each plugin: its path, version, checksum status and what it offers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := projectDir(cmd)
			if err != nil {
				return err
			}
			p := a.project(dir)
			infos, problems := a.plugins(p.root).List(cmd.Context())
			return a.printPlugins(p, infos, problems, asJSON)
		},
	}
	lock := &cobra.Command{
		Use:   "lock",
		Short: "Write .troupe/plugins.lock with the SHA-256 of every plugin found",
		Long: "Write .troupe/plugins.lock at the project's root with the SHA-256 of every plugin found.\n" +
			"From then on a plugin runs only if the lock lists it and its binary still matches;\n" +
			"run this again after installing or updating a plugin you trust.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, _, err := repoDir(cmd)
			if err != nil {
				return err
			}
			root := agenttypes.FindProjectRoot(dir)
			bins, problems := plugins.Discover(plugins.Dirs(root, a.getenv))
			for _, p := range problems {
				fmt.Fprintf(a.stderr, "troupe: %v\n", p)
			}
			path := plugins.LockPath(root)
			rel, err := filepath.Rel(root, path)
			if err != nil {
				rel = path
			}
			if len(bins) == 0 {
				// An empty lock file would refuse every plugin installed
				// later, which is not what locking nothing means.
				kept := "no lock file was written"
				if _, err := os.Lstat(path); err == nil {
					kept = rel + " is left as it is"
				}
				fmt.Fprintf(a.stderr, "no plugins found, so there is nothing to lock: %s (a plugin is an executable named troupe-plugin-NAME in .troupe/plugins/)\n", kept)
				return nil
			}
			l, err := plugins.WriteLock(path, bins)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(l)
			}
			for _, b := range bins {
				fmt.Fprintf(a.stdout, "%s  %s  %s\n", b.Name, l.Plugins[b.Name].SHA256, b.Path)
			}
			fmt.Fprintf(a.stdout, "locked %d plugin(s) in %s\n", len(bins), rel)
			return nil
		},
	}
	cmd.AddCommand(list, lock)
	return cmd
}

func (a *app) printPlugins(p *project, infos []plugins.Info, problems []error, asJSON bool) error {
	if asJSON {
		if infos == nil {
			infos = []plugins.Info{}
		}
		return json.NewEncoder(a.stdout).Encode(infos)
	}
	if len(infos) == 0 {
		fmt.Fprintln(a.stdout, "no plugins; put an executable named troupe-plugin-NAME in .troupe/plugins/")
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if len(infos) > 0 {
		fmt.Fprintln(tw, "NAME\tVERSION\tCHECKSUM\tPATH")
	}
	for _, in := range infos {
		version := in.Version
		if version == "" {
			version = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", in.Name, version, in.Status, in.Path)
		var offers []string
		if len(in.Types) > 0 {
			offers = append(offers, "types: "+strings.Join(in.Types, ", "))
		}
		if len(in.Tools) > 0 {
			offers = append(offers, "tools: "+strings.Join(in.Tools, ", "))
		}
		if len(offers) > 0 {
			fmt.Fprintf(tw, "\t\t\t%s\n", strings.Join(offers, "; "))
		}
		if in.Error != "" {
			fmt.Fprintf(tw, "\t\t\terror: %s\n", in.Error)
		}
	}
	_ = tw.Flush()
	hint, untrusted := false, false
	for _, in := range infos {
		hint = hint || in.Status == plugins.StatusMismatch || in.Status == plugins.StatusUnlisted
		untrusted = untrusted || in.Status == plugins.StatusUntrusted
	}
	shown := map[string]bool{}
	for _, in := range infos {
		shown[in.Error] = true
	}
	for _, err := range problems {
		if !shown[err.Error()] {
			fmt.Fprintf(a.stderr, "troupe: %v\n", err)
		}
		hint = hint || needsLock(err)
	}
	if hint {
		fmt.Fprintln(a.stderr, lockHint)
	}
	if untrusted {
		fmt.Fprintf(a.stderr, "troupe: the project's own plugins run only once you trust it: '%s' shows what it would run and trusts it\n", trustHint(p.root))
	}
	return nil
}
