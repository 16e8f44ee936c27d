// Package doccheck holds the tests of cordon's documents (README.md,
// docs/, SECURITY.md, CHANGELOG.md): every relative link and anchor
// resolves, every page of docs/ is reachable from the README, and the
// README stays a five-minute read. It has no code of its own.
package doccheck
