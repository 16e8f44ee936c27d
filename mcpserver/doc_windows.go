// Package mcpserver is cordon's MCP server. Its file tools stand on
// package workspace, which is built only for Linux and macOS: on Windows
// the package is empty and cordon-mcp refuses to start.
package mcpserver
