package helper

import (
	"errors"
	"fmt"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"golang.org/x/sys/unix"
)

// sendListeners creates the spec's listeners in the sandbox's network
// namespace, on 127.0.0.1 and, best effort, ::1, hands their descriptors
// to the host on the status socket (one helperspec.MsgListener each) and
// closes its own copies: the command never holds them, and only processes
// in this namespace can connect to them.
func sendListeners(n *helperspec.Net) error {
	for _, l := range n.Listeners {
		if l.Kind == helperspec.ListenDNS {
			if err := sendDNS(l); err != nil {
				return err
			}
			continue
		}
		fds, families, err := listen(l.Port)
		if err != nil {
			return fmt.Errorf("listening on 127.0.0.1:%d inside the sandbox for the %s listener: %w", l.Port, l.Kind, err)
		}
		err = unix.Sendmsg(helperspec.FdStatus, helperspec.ListenerMessage(l, families), unix.UnixRights(fds...), nil, 0)
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		if err != nil {
			return fmt.Errorf("handing the %s listener of port %d to the host: %w", l.Kind, l.Port, err)
		}
	}
	return nil
}

// listen opens TCP listeners on 127.0.0.1:port and, when the namespace has
// IPv6, [::1]:port, and returns their descriptors and families ("4" or
// "46").
func listen(port int) ([]int, string, error) {
	fd4, err := listenOn(unix.AF_INET, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	if err != nil {
		return nil, "", err
	}
	fd6, err := listenOn(unix.AF_INET6, &unix.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}})
	if err != nil {
		// No IPv6 in the namespace (disabled on the host): 127.0.0.1
		// only; a client asking for ::1 gets "connection refused".
		return []int{fd4}, "4", nil
	}
	return []int{fd4, fd6}, "46", nil
}

// listenOn returns a listening TCP socket of family bound to sa.
func listenOn(family int, sa unix.Sockaddr) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("setsockopt IPV6_V6ONLY: %w", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		_ = unix.Close(fd)
		if errors.Is(err, unix.EACCES) {
			return -1, fmt.Errorf("bind: %w (ports below 1024 need a privilege the sandbox does not have)", err)
		}
		return -1, fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("listen: %w", err)
	}
	return fd, nil
}

// sendDNS hands the host UDP sockets of this network namespace, unbound
// (port 53 needs CAP_NET_BIND_SERVICE over the namespace, which the host
// holds and the sandbox does not), for 127.0.0.1 and, best effort, ::1,
// and waits until the host has bound them (helperspec.MsgGo), so that the
// command's first lookup already finds the name server.
func sendDNS(l helperspec.Listener) error {
	fd4, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the name server's socket inside the sandbox: %w", err)
	}
	fds, families := []int{fd4}, "4"
	if fd6, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		if unix.SetsockoptInt(fd6, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1) == nil {
			fds, families = append(fds, fd6), "46"
		} else {
			_ = unix.Close(fd6)
		}
	}
	err = unix.Sendmsg(helperspec.FdStatus, helperspec.ListenerMessage(l, families), unix.UnixRights(fds...), nil, 0)
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
	if err != nil {
		return fmt.Errorf("handing the name server's sockets to the host: %w", err)
	}
	if err := waitGo(helperspec.FdStatus); err != nil {
		return fmt.Errorf("waiting for the host to bind the name server's sockets: %w", err)
	}
	return nil
}
