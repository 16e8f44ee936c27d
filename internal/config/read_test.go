package config

import (
	"math/rand"
	"strings"
	"testing"
)

// fakeKey is shaped like an OpenSSH private key; it is not one.
const fakeKey = `-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACDFAKEKEYFAKEKEYFAKEKEYFAKEKEYFAKEKEYFAKEKEYQAAAJgFAKEKEY
-----END OPENSSH PRIVATE KEY-----
`

// TestParseErrorsHideContent feeds files that are not cordon configs (a
// private key, random bytes, a huge line, secrets in values and keys) and
// checks that no error repeats more than 8 characters of them, except the
// names of cordon's own keys.
func TestParseErrorsHideContent(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	random := make([]byte, 4096)
	rnd.Read(random)
	known := strings.Join(append(append(append(append([]string{}, topKeys...), sandboxKeys...), fsKeys...), append(append(netKeys, resKeys...), auditKeys...)...), " ")
	for _, k := range []string{KeyEnabled, KeyFilesystemDenyWrite, KeyNetworkForwardPort, KeyMaxFileSizeMB, KeyAuditLogAllowed, KeyBwrapPath, KeyUnixSockets, KeyOnViolation} {
		known += " " + k
	}
	inputs := map[string]string{
		"private key":        fakeKey,
		"random bytes":       string(random),
		"long line":          strings.Repeat("SECRETLINE", 10000),
		"long line as key":   strings.Repeat("SECRETKEY", 200) + ": 1\n",
		"secret mode":        "sandbox:\n  mode: SECRETVALUE-abcdefgh\n",
		"secret bool":        "sandbox:\n  enabled: SECRETVALUE-abcdefgh\n",
		"secret int":         "sandbox:\n  resources:\n    max_processes: SECRETVALUE-abcdefgh\n",
		"secret duration":    "sandbox:\n  timeout: SECRETVALUE-abcdefgh\n",
		"secret list":        "sandbox:\n  env: SECRETVALUE-abcdefgh\n",
		"secret port":        "sandbox:\n  network:\n    forward_ports: [SECRETVALUE-abcdefgh]\n",
		"secret mapping":     "sandbox:\n  network: SECRETVALUE-abcdefgh\n",
		"secret key":         "sandbox:\n  \"SECRET VALUE abcdefgh ijklmnop\": 1\n",
		"secret top key":     "\"SECRET/VALUE/abcdefgh/ijklmnop\": 1\n",
		"secret top scalar":  "SECRETVALUE-abcdefgh\n",
		"secret anchor":      "sandbox:\n  mode: *SECRETVALUEabcdefgh\n",
		"secret tag":         "sandbox:\n  mode: !SECRETVALUEabcdefgh x\n",
		"secret bad tag":     "sandbox:\n  mode: !!int SECRETVALUEabcdefgh\n",
		"secret flow":        "sandbox: {mode: SECRETVALUEabcdefgh, [x\n",
		"secret second doc":  "sandbox: {}\n---\nSECRETVALUE-abcdefgh\n",
		"secret key in list": "sandbox:\n  filesystem:\n    read: [{SECRETVALUEabcdefgh: 1}]\n",
	}
	for name, in := range inputs {
		_, err := Parse(testFile, []byte(in))
		if err == nil {
			t.Errorf("%s: parsed without error", name)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%s: error is not one line: %q", name, msg)
		}
		msg = strings.TrimPrefix(msg, testFile)
		for i := 0; i+9 <= len(in); i++ {
			w := in[i : i+9]
			if strings.Contains(msg, w) && !strings.Contains(known, w) {
				t.Errorf("%s: error repeats %q from the file: %s", name, w, msg)
				break
			}
		}
	}
}
