package policy

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/config"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// tildePath abbreviates a path under home as ~/...
func tildePath(p, home string) string {
	if subpath.Below(p, home) {
		return "~/" + strings.TrimPrefix(p, strings.TrimSuffix(home, "/")+"/")
	}
	return p
}

// vars are the ${VAR} expansions.
func (b *builder) vars() map[string]string {
	if b.varsCache == nil {
		b.varsCache = map[string]string{
			"PROJECT_DIR":   b.ws,
			"HOME":          b.host.Home,
			"TMPDIR":        SandboxTmpDir,
			"CWD":           b.host.Cwd,
			"SANDBOX_CACHE": SandboxCache(b.host, b.ws),
		}
	}
	return b.varsCache
}

// expand replaces ${PROJECT_DIR}, ${HOME}, ${TMPDIR}, ${CWD},
// ${SANDBOX_CACHE} and a leading
// ~ or ~/ in s.
func (b *builder) expand(s string) (string, error) {
	if s == "~" || strings.HasPrefix(s, "~/") {
		s = "${HOME}" + s[1:]
	} else if strings.HasPrefix(s, "~") {
		return "", fmt.Errorf("only a leading ~ or ~/ is expanded (~user is not supported)")
	}
	vars := b.vars()
	var out strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			out.WriteString(s)
			return out.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ (write ${NAME})")
		}
		name := s[i+2 : i+j]
		v, ok := vars[name]
		if !ok {
			return "", fmt.Errorf("unknown variable ${%s}; the known ones are ${PROJECT_DIR}, ${HOME}, ${TMPDIR}, ${CWD} and ${SANDBOX_CACHE}", name)
		}
		out.WriteString(s[:i])
		out.WriteString(v)
		s = s[i+j+1:]
	}
}

// entryName names list entry raw of key for messages.
func entryName(l layer, key, raw string) string {
	if l.IsFlags() {
		return fmt.Sprintf("%s %q", l.Name(key), raw)
	}
	return fmt.Sprintf("%s entry %q", config.BaseKey(key), raw)
}

// path expands and checks one path (not a glob) of entry key (which may
// carry an index) in layer l.
func (b *builder) path(l layer, key, raw string) (string, error) {
	if l.IsFlags() && strings.TrimSpace(raw) == "" {
		return "", emptyPath(l, key, false)
	}
	s, err := b.expand(raw)
	if err != nil {
		return "", l.Errorf(key, "%s: %v", entryName(l, key, raw), err)
	}
	if IsGlob(s) {
		return "", l.Errorf(key, "%s: wildcards (* ? [ {) are only allowed in %s and %s", entryName(l, key, raw), config.KeyFilesystemDeny, config.KeyFilesystemDenyWrite)
	}
	if !IsAbs(s) {
		if !l.IsFlags() {
			return "", l.Errorf(key, "%s is a relative path; use an absolute path or ${PROJECT_DIR}/...", entryName(l, key, raw))
		}
		s = filepath.Join(b.host.Cwd, s)
	}
	return filepath.Clean(s), nil
}

// pattern expands and checks one deny or deny_write entry: an absolute path
// or glob (cleaned), or a relative pattern matched inside every root.
func (b *builder) pattern(l layer, key, raw string) (string, error) {
	if l.IsFlags() && strings.TrimSpace(raw) == "" {
		return "", emptyPath(l, key, true)
	}
	s, err := b.expand(raw)
	if err != nil {
		return "", l.Errorf(key, "%s: %v", entryName(l, key, raw), err)
	}
	glob := IsGlob(s)
	if err := checkGlob(s); err != nil {
		return "", l.Errorf(key, "%s: %v", entryName(l, key, raw), err)
	}
	if IsAbs(s) {
		c := filepath.Clean(s)
		if err := ValidateDeny(c); err != nil {
			return "", l.Errorf(key, "%s: %v", entryName(l, key, raw), err)
		}
		return c, nil
	}
	if l.IsFlags() && !glob {
		return filepath.Join(b.host.Cwd, s), nil
	}
	c := filepath.Clean(s)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", l.Errorf(key, "%s is not a usable pattern; use an absolute path, ${PROJECT_DIR}/..., or a pattern such as **/.env", entryName(l, key, raw))
	}
	if err := ValidateDeny(c); err != nil {
		return "", l.Errorf(key, "%s: %v", entryName(l, key, raw), err)
	}
	return c, nil
}

// checkGlob rejects unbalanced [ ] and { } in a glob, with a message that
// says which; ValidateDeny then checks the rest as the backends' walk
// parses it.
func checkGlob(s string) error {
	inClass, braces := false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '{':
			braces++
		case c == '}':
			if braces == 0 {
				return fmt.Errorf("unbalanced } in pattern")
			}
			braces--
		}
	}
	if inClass {
		return fmt.Errorf("unbalanced [ in pattern (a [ must be closed by ])")
	}
	if braces > 0 {
		return fmt.Errorf("unbalanced { in pattern (a { must be closed by })")
	}
	return nil
}
