package plugins_test

import (
	"fmt"
	"os"

	"github.com/troupe-dev/troupe/plugins"
)

// Where plugins are looked for, highest precedence first.
func ExampleDirs() {
	env := map[string]string{"TROUPE_PLUGIN_PATH": "/opt/troupe-plugins", "XDG_DATA_HOME": "/home/ada/.local/share"}
	for _, d := range plugins.Dirs("/src/shop", func(k string) string { return env[k] }) {
		fmt.Println(d.Layer, d.Path)
	}
	// Output:
	// project /src/shop/.troupe/plugins
	// path /opt/troupe-plugins
	// user /home/ada/.local/share/troupe/plugins
}

// A host loads the plugins into a registry, and stops them on Close.
func ExampleHost() {
	h := plugins.New(plugins.Config{Dirs: plugins.Dirs(".", os.Getenv), LockFile: plugins.LockPath(".")})
	defer h.Close()
	// problems := h.Load(ctx, reg): the plugins' types and tools are now in reg.
}
