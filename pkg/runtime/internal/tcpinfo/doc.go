// Package tcpinfo reads what the kernel knows about a TCP connection's
// peer, to tell a peer whose process is slow (its kernel still
// acknowledges what it is sent) from one whose host is gone (nothing is
// acknowledged). The request plane's client (tcpplane) and the worker's
// shared response connections (pkg/runtime, respondmux.go) use it.
package tcpinfo
