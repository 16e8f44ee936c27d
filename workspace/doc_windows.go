// Package workspace is cordon's confined file API. It works on
// descriptors (openat, fstatat, readlinkat, renameat with O_NOFOLLOW) and
// is built only for Linux and macOS: on Windows only its name checks
// (CheckName) are built, so that they are tested everywhere.
package workspace
