package helperspec

import (
	"fmt"
	"strconv"
	"strings"
)

// ConnectCommand is the hidden subcommand that ssh runs as its
// ProxyCommand inside a filtered sandbox: "__connect HOST PORT" opens an
// HTTP CONNECT tunnel through the proxy named by HTTPS_PROXY and relays
// its standard input and output.
const ConnectCommand = "__connect"

// ListenerKind says what the host serves on a listener the helper
// creates inside the sandbox's network namespace.
type ListenerKind string

// Kinds of listener.
const (
	// ListenHTTP is the HTTP proxy (CONNECT and absolute-form requests).
	ListenHTTP ListenerKind = "http"
	// ListenSOCKS5 is the SOCKS5 proxy.
	ListenSOCKS5 ListenerKind = "socks5"
	// ListenForward is a forwarded port: each connection is joined to the
	// host's 127.0.0.1 at the same port.
	ListenForward ListenerKind = "forward"
	// ListenDNS is the name server of a denied network (dnsstub): the
	// helper hands over UDP sockets it does not bind, since port 53 needs
	// a privilege the sandbox does not hold, and waits for MsgGo; the
	// host, which holds that privilege over the sandbox's network
	// namespace, binds them to port 53 and answers there.
	ListenDNS ListenerKind = "dns"
)

// DNSPort is the port of ListenDNS: where every resolver looks.
const DNSPort = 53

// Listener is one TCP port the helper listens on inside the sandbox, on
// 127.0.0.1 and, best effort, ::1.
type Listener struct {
	// Kind is what the host serves there.
	Kind ListenerKind `json:"kind"`
	// Port is the port inside (a forwarded port's is the host's too).
	Port int `json:"port"`
}

// Net is the network part of the spec: the listeners the helper creates
// in the sandbox's network namespace, before Landlock and seccomp, and
// hands to the host over the status socket (MsgListener), keeping no copy.
// The host serves them: the command reaches the proxy and the forwarded
// ports on its own loopback, and nothing else can.
type Net struct {
	// Listeners are the ports to listen on.
	Listeners []Listener `json:"listeners,omitempty"`
}

// MsgListener carries, with SCM_RIGHTS, the listening descriptors of one
// Listener: "Lkind port families", families being "4" or "46" (127.0.0.1
// first, then ::1 when the helper could listen there). The helper sends one
// for each of Spec.Net's listeners, in order, before MsgReady.
const MsgListener = 'L'

// ListenerMessage is the MsgListener datagram for l, whose descriptors
// are listening on the families given ("4", or "46" with ::1).
func ListenerMessage(l Listener, families string) []byte {
	return []byte(fmt.Sprintf("%c%s %d %s", MsgListener, l.Kind, l.Port, families))
}

// ParseListener returns the listener and the families of a MsgListener
// datagram: one descriptor a family, in that order.
func ParseListener(msg []byte) (Listener, string, error) {
	if len(msg) == 0 || msg[0] != MsgListener {
		return Listener{}, "", fmt.Errorf("not a listener message: %q", msg)
	}
	f := strings.Fields(string(msg[1:]))
	if len(f) != 3 {
		return Listener{}, "", fmt.Errorf("malformed listener message: %q", msg)
	}
	port, err := strconv.Atoi(f[1])
	if err != nil || port < 1 || port > 65535 {
		return Listener{}, "", fmt.Errorf("listener message with a bad port: %q", msg)
	}
	switch ListenerKind(f[0]) {
	case ListenHTTP, ListenSOCKS5, ListenForward, ListenDNS:
	default:
		return Listener{}, "", fmt.Errorf("listener message of an unknown kind: %q", msg)
	}
	if f[2] != "4" && f[2] != "46" {
		return Listener{}, "", fmt.Errorf("listener message with bad families: %q", msg)
	}
	return Listener{Kind: ListenerKind(f[0]), Port: port}, f[2], nil
}
