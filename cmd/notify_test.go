package cmd

import (
	"bytes"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// sdNotify sends the state to NOTIFY_SOCKET as one datagram, and nothing (no error said)
// without one.
func TestSdNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var errb bytes.Buffer
	g := &Globals{Err: &errb}
	t.Setenv("NOTIFY_SOCKET", sock)
	sdNotify(g, "READY=1")
	sdNotify(g, "RELOADING=1")
	buf := make([]byte, 256)
	for _, want := range []string{"READY=1", "RELOADING=1"} {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := conn.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Errorf("datagram %q, %v; want %q", buf[:n], err, want)
		}
	}
	t.Setenv("NOTIFY_SOCKET", "")
	sdNotify(g, "READY=1")
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "none"))
	sdNotify(g, "READY=1")
	if !bytes.Contains(errb.Bytes(), []byte("telling systemd READY=1")) || bytes.Count(errb.Bytes(), []byte("telling systemd")) != 1 {
		t.Errorf("notices: %q (want one, for the socket that is not there)", errb.String())
	}
}
