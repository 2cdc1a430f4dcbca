package frontend

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// epollWatcher watches taken-over connections for their client's hang-up
// with one epoll instance and one goroutine for all of them: a client
// that closes or resets its connection makes the kernel report
// EPOLLRDHUP, EPOLLHUP or EPOLLERR. Data the client sends (its next
// request) is left in the kernel for the server to read once the
// connection is given back.
type epollWatcher struct {
	epfd int
	wake [2]int        // a pipe: a byte on wake[1] ends run
	done chan struct{} // closed when run returned

	mu    sync.Mutex
	gen   int32                 // numbers registrations: a file descriptor is reused
	conns map[int32]*epollEntry // by file descriptor
}

type epollEntry struct {
	gen  int32
	gone func()
	left bool
}

// newHangupWatcher returns an epoll watcher, or the goroutine-per-
// connection one when epoll cannot be set up.
func newHangupWatcher() (hangupWatcher, error) {
	w, err := newEpollWatcher()
	if err != nil {
		return readingWatcher{}, err
	}
	return w, nil
}

func newEpollWatcher() (*epollWatcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("frontend: epoll: %w", err)
	}
	w := &epollWatcher{epfd: epfd, done: make(chan struct{}), conns: map[int32]*epollEntry{}}
	if err := unix.Pipe2(w.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("frontend: epoll wake pipe: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(w.wake[0]), Pad: -1}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, w.wake[0], &ev); err != nil {
		w.closeFDs()
		return nil, fmt.Errorf("frontend: epoll: %w", err)
	}
	go w.run()
	return w, nil
}

// run reports hang-ups until close.
func (w *epollWatcher) run() {
	defer close(w.done)
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(w.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			if ev.Pad == -1 {
				return // close
			}
			w.mu.Lock()
			e := w.conns[ev.Fd]
			if e == nil || e.gen != ev.Pad || e.left {
				e = nil
			} else {
				e.left = true
			}
			w.mu.Unlock()
			if e != nil {
				e.gone()
			}
		}
	}
}

func (w *epollWatcher) watch(conn net.Conn, gone func()) (func() (bool, []byte), error) {
	raw, err := rawConn(conn)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.gen++
	if w.gen < 0 {
		w.gen = 0 // -1 is the wake pipe's
	}
	e := &epollEntry{gen: w.gen, gone: gone}
	w.mu.Unlock()
	var fd int32
	var addErr error
	if err := raw.Control(func(f uintptr) {
		fd = int32(f)
		w.mu.Lock()
		w.conns[fd] = e
		w.mu.Unlock()
		// One report (EPOLLONESHOT) of the client's end of the stream
		// (EPOLLRDHUP); EPOLLHUP and EPOLLERR are always reported.
		ev := unix.EpollEvent{Events: unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: fd, Pad: e.gen}
		addErr = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(f), &ev)
	}); err != nil {
		addErr = err
	}
	if addErr != nil {
		w.forget(fd, e)
		return nil, fmt.Errorf("frontend: epoll: %w", addErr)
	}
	return func() (bool, []byte) {
		_ = raw.Control(func(f uintptr) { _ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(f), nil) })
		return w.forget(fd, e), nil
	}, nil
}

// forget drops e, registered for fd, and reports whether its client left.
func (w *epollWatcher) forget(fd int32, e *epollEntry) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conns[fd] == e {
		delete(w.conns, fd)
	}
	return e.left
}

func (w *epollWatcher) close() {
	_, _ = unix.Write(w.wake[1], []byte{0})
	<-w.done
	w.closeFDs()
}

func (w *epollWatcher) closeFDs() {
	_ = unix.Close(w.wake[0])
	_ = unix.Close(w.wake[1])
	_ = unix.Close(w.epfd)
}
