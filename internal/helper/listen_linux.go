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
