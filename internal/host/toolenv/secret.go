package toolenv

import (
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// This file is the one place the package returns a credential: to the
// launcher, which hands it to the host-side proxy to put into requests
// to its host (a policy.Credential with npmrc or netrc). Nothing here
// reaches a sandbox's environment or files.

// NpmToken returns the _authToken that the user's npm config (~/.npmrc,
// or the file npm_config_userconfig names) holds for host, with ${VAR}
// expanded from getenv, and whether there is one.
func NpmToken(home, host string, getenv func(string) (string, bool)) (string, bool) {
	path := filepath.Join(home, ".npmrc")
	for _, name := range []string{"npm_config_userconfig", "NPM_CONFIG_USERCONFIG"} {
		if v, ok := getenv(name); ok && filepath.IsAbs(v) {
			path = v
		}
	}
	data, err := config.ReadFile(path, config.ReadOptions{})
	if err != nil {
		return "", false
	}
	for _, kv := range parseNpmrc(data) {
		h, ok := npmTokenHost(kv[0])
		if !ok || !strings.EqualFold(h, host) {
			continue
		}
		v, missing := expandEnv(kv[1], getenv)
		if missing == "" && v != "" {
			return v, true
		}
	}
	return "", false
}

// NetrcPassword returns the password of the machine entry for host in
// the user's netrc ($NETRC, else ~/.netrc), or of its default entry, and
// whether there is one.
func NetrcPassword(home, host string, getenv func(string) (string, bool)) (string, bool) {
	path := filepath.Join(home, ".netrc")
	if v, ok := getenv("NETRC"); ok && filepath.IsAbs(v) {
		path = v
	}
	data, err := config.ReadFile(path, config.ReadOptions{})
	if err != nil {
		return "", false
	}
	return netrcPassword(string(data), host)
}

// netrcPassword parses a netrc file's tokens (machine, default, login,
// password, account, macdef) for host's password.
func netrcPassword(data, host string) (string, bool) {
	fields := strings.Fields(data)
	var machine string
	in, def := false, ""
	found := ""
	for i := 0; i < len(fields); i++ {
		switch fields[i] {
		case "machine":
			if i+1 < len(fields) {
				i++
				machine, in = fields[i], true
			}
		case "default":
			machine, in = "", true
		case "password":
			if i+1 < len(fields) && in {
				i++
				switch {
				case machine == "" && def == "":
					def = fields[i]
				case strings.EqualFold(machine, host) && found == "":
					found = fields[i]
				}
			}
		case "macdef":
			// A macro runs to the next empty line, which Fields loses:
			// nothing after it is read.
			in = false
			i = len(fields)
		}
	}
	if found != "" {
		return found, true
	}
	return def, def != ""
}
