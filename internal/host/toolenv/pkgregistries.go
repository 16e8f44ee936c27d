package toolenv

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// npmRegistries adds npm's registry (npm_config_registry, else the
// user's npmrc, else npm's global config, else npm's default) and the
// @scope:registry entries of the user's and the global npmrc. The
// project's .npmrc is a repository's own file: what it names is listed
// as Unlisted, never allowed.
func (c *collector) npmRegistries() {
	set := false
	for _, name := range []string{"npm_config_registry", "NPM_CONFIG_REGISTRY"} {
		if v, where, ok := c.variable(name); ok && v != "" && !set {
			c.allowURL(v, "npm: "+where)
			set = true
		}
	}
	user := c.npmUserconfig()
	c.trusting(user, func() { set = c.npmrcRegistries(c.readFile(user), "npm: "+c.short(user), set) })
	if bin := c.lookPath("npm"); bin != "" {
		vals, err := c.npmDefaults(bin)
		if err != nil {
			c.unlisted("", "npm's default registry", "cordon could not ask npm: "+err.Error()+"; set registry in ~/.npmrc, or allow the registry with --allow-net")
		} else {
			global := vals[1]
			// npm's answer comes from its global config when that sets a
			// registry: a global config inside the workspace names none
			// that is allowed.
			c.trusting(global, func() {
				if !c.npmrcRegistries(c.readFile(global), "npm: "+c.short(global)+" (npm's global config)", set) {
					c.allowURL(vals[0], "npm: npm's default registry, from npm config get registry")
				}
			})
		}
	}
	c.projectNpmrc()
}

// npmUserconfig is the user's npmrc: npm_config_userconfig, else ~/.npmrc.
func (c *collector) npmUserconfig() string {
	path := filepath.Join(c.h.Home, ".npmrc")
	for _, name := range []string{"npm_config_userconfig", "NPM_CONFIG_USERCONFIG"} {
		if v, ok := c.h.Getenv(name); ok && filepath.IsAbs(v) {
			path = v
		}
	}
	return path
}

// npmrcRegistries adds the registry of an npmrc (unless one is set
// already) and its @scope:registry entries; it reports whether a
// registry is set now.
func (c *collector) npmrcRegistries(data []byte, source string, set bool) bool {
	for _, kv := range parseNpmrc(data) {
		key, val := kv[0], kv[1]
		scoped := strings.HasPrefix(key, "@") && strings.HasSuffix(key, ":registry")
		if key != "registry" && !scoped || key == "registry" && set {
			continue
		}
		expanded, missing := expandEnv(val, c.h.Getenv)
		if missing != "" {
			c.unlisted("", source+": "+key, "it names ${"+missing+"}, which is not set")
			continue
		}
		c.allowURL(expanded, source+": "+key)
		set = set || key == "registry"
	}
	return set
}

// npmDefaults asks npm, with no user config and none of the user's
// npm_config_* variables but those that move its global config, for its
// registry and the path of its global config: [registry, globalconfig].
// The answer is cached while npm, those variables and the global config
// file stay the same.
func (c *collector) npmDefaults(bin string) ([]string, error) {
	env := c.toolEnv([]string{"PATH", "HOME", "npm_config_globalconfig", "NPM_CONFIG_GLOBALCONFIG", "npm_config_prefix", "NPM_CONFIG_PREFIX"}, true)
	return c.toolDefault("npm", bin, env, func() ([]string, []string, error) {
		out, err := runTool(bin, []string{"config", "get", "registry", "globalconfig", "--userconfig=/dev/null", "--update-notifier=false", "--logs-max=0"}, env)
		if err != nil {
			return nil, nil, err
		}
		vals := map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
				vals[k] = v
			}
		}
		if vals["registry"] == "" || !filepath.IsAbs(vals["globalconfig"]) {
			return nil, nil, errNoAnswer
		}
		return []string{vals["registry"], vals["globalconfig"]}, []string{vals["globalconfig"]}, nil
	})
}

// projectNpmrc lists the registries of the workspace's .npmrc that are
// not allowed otherwise: the repository's own file may only tighten.
func (c *collector) projectNpmrc() {
	if c.h.Workspace == "" {
		return
	}
	data, err := config.ReadFile(filepath.Join(c.h.Workspace, ".npmrc"), config.ReadOptions{Beneath: c.h.Workspace})
	if err != nil {
		return
	}
	for _, kv := range parseNpmrc(data) {
		key := kv[0]
		if key != "registry" && !(strings.HasPrefix(key, "@") && strings.HasSuffix(key, ":registry")) {
			continue
		}
		if entry, ok, _ := urlEntry(kv[1]); ok && !c.regs.seen[entry] {
			c.unlisted(entry, "npm: "+key+" in the project's .npmrc", "a repository's own files may only tighten the policy; allow it with --allow-net "+entry)
		}
	}
}

// pipRegistries adds pip's index (index-url, else pip's default index
// and file host), its extra-index-url entries and the URLs of its
// find-links, as pip resolves them: global, user, site config files,
// then PIP_CONFIG_FILE, then PIP_* variables, each later one winning.
func (c *collector) pipRegistries() {
	type setting struct{ val, from string }
	got := map[string]setting{}
	keys := map[string]bool{"index-url": true, "extra-index-url": true, "find-links": true, "no-index": true}
	// A setting of a file inside the workspace (a venv's pip.conf) is
	// listed, never allowed: its source names the file.
	wsFile := map[string]string{}
	for _, f := range c.pipConfigFiles() {
		for _, kv := range parsePipConf(c.readFile(f)) {
			if k := strings.ReplaceAll(kv[0], "_", "-"); keys[k] {
				got[k] = setting{kv[1], "pip: " + c.short(f) + ": " + k}
				delete(wsFile, k)
				if c.inWorkspace(f) {
					wsFile[k] = f
				}
			}
		}
	}
	for k := range keys {
		name := "PIP_" + strings.ToUpper(strings.ReplaceAll(k, "-", "_"))
		if v, where, ok := c.variable(name); ok {
			got[k] = setting{v, "pip: " + where}
			delete(wsFile, k)
		}
	}
	allowURLs := func(k string) {
		c.trusting(wsFile[k], func() {
			for _, u := range strings.Fields(got[k].val) {
				c.allowURL(u, got[k].from)
			}
		})
	}
	switch strings.ToLower(got["no-index"].val) {
	case "1", "true", "yes", "on":
	default:
		if s, ok := got["index-url"]; ok && s.val != "" {
			allowURLs("index-url")
		} else if py := c.lookPath("python3"); py != "" {
			c.pipDefaults(py)
		}
		allowURLs("extra-index-url")
	}
	allowURLs("find-links")
}

// pipConfigFiles are the pip.conf files pip reads, the one that wins
// last: global ($XDG_CONFIG_DIRS/pip/pip.conf, /etc/pip.conf), user
// (~/.pip/pip.conf, $XDG_CONFIG_HOME/pip/pip.conf), site
// ($VIRTUAL_ENV/pip.conf), then PIP_CONFIG_FILE, which replaces the user
// files when it exists and every file when it is /dev/null.
func (c *collector) pipConfigFiles() []string {
	env, envSet := c.h.Getenv("PIP_CONFIG_FILE")
	if envSet && env == os.DevNull {
		return nil
	}
	var files []string
	dirs := "/etc/xdg"
	if v, ok := c.h.Getenv("XDG_CONFIG_DIRS"); ok && v != "" {
		dirs = v
	}
	for _, d := range filepath.SplitList(dirs) {
		if filepath.IsAbs(d) {
			files = append(files, filepath.Join(d, "pip", "pip.conf"))
		}
	}
	files = append(files, "/etc/pip.conf")
	if _, err := os.Stat(env); !envSet || !filepath.IsAbs(env) || err != nil {
		files = append(files, filepath.Join(c.h.Home, ".pip", "pip.conf"), filepath.Join(c.configHome(), "pip", "pip.conf"))
	}
	if v, ok := c.h.Getenv("VIRTUAL_ENV"); ok && filepath.IsAbs(v) {
		files = append(files, filepath.Join(v, "pip.conf"))
	}
	if envSet && filepath.IsAbs(env) {
		files = append(files, env)
	}
	return files
}

// pipScript prints pip's default index and the host its files come
// from, as pip itself has them, and where pip's module is.
const pipScript = `import json, pip
from pip._internal.models.index import PyPI
print(json.dumps([PyPI.simple_url, PyPI.file_storage_domain, pip.__file__]))
`

// pipDefaults adds pip's default index and file host, asked of python3
// (cached while python3 and pip's module stay the same).
func (c *collector) pipDefaults(py string) {
	env := c.toolEnv([]string{"PATH", "HOME", "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV"}, true)
	vals, err := c.toolDefault("pip", py, env, func() ([]string, []string, error) {
		// -I: no user site-packages (~/.local, inside a workspace that
		// is the home), no PYTHON* variables, no current directory.
		out, err := runTool(py, []string{"-I", "-c", pipScript}, env)
		if err != nil {
			return nil, nil, err
		}
		var v []string
		if json.Unmarshal(out, &v) != nil || len(v) != 3 || v[0] == "" || v[1] == "" {
			return nil, nil, errNoAnswer
		}
		return v[:2], []string{v[2]}, nil
	})
	if errors.Is(err, errSlow) || errors.Is(err, errNoAnswer) {
		c.unlisted("", "pip's default index", "cordon could not ask python3: "+err.Error()+"; set index-url in pip.conf, or allow the index with --allow-net")
	}
	if err != nil {
		// python3 without pip: pip is not used.
		return
	}
	c.allowURL(vals[0], "pip: pip's default index, from python3 (pip's PyPI.simple_url)")
	c.allow(hostPort(vals[1], "443"), "pip: pip's default file host, from python3 (pip's PyPI.file_storage_domain)")
}
