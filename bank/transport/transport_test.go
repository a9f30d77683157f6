package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// The same contract holds for every kind of folder.
func TestFolders(t *testing.T) {
	kinds := map[string]func(t *testing.T) (Folder, string){
		"file": func(t *testing.T) (Folder, string) {
			dir := t.TempDir()
			f, err := Open("file://"+dir, SFTPConfig{})
			if err != nil {
				t.Fatal(err)
			}
			return f, dir
		},
		"sftp": func(t *testing.T) (Folder, string) {
			srv := startSFTPServer(t)
			dir := t.TempDir()
			f, err := Open("sftp://bank@"+srv.addr+dir, srv.clientConfig)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f, dir
		},
	}
	for kind, open := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			t.Run("put, list, get, move", func(t *testing.T) {
				f, dir := open(t)
				for _, name := range []string{"b.ach", "a.ach"} {
					if err := f.Put(ctx, name, []byte("file "+name)); err != nil {
						t.Fatal(err)
					}
				}
				// Another writer's Put under way, and a subfolder: not listed.
				os.WriteFile(filepath.Join(dir, ".c.ach.1234.tmp"), []byte("half"), 0o644)
				os.Mkdir(filepath.Join(dir, "processed"), 0o755)
				names, err := f.List(ctx)
				if err != nil || !slices.Equal(names, []string{"a.ach", "b.ach"}) {
					t.Fatalf("List = %v, %v", names, err)
				}
				data, err := f.Get(ctx, "b.ach")
				if err != nil || string(data) != "file b.ach" {
					t.Fatalf("Get = %q, %v", data, err)
				}
				if err := f.Put(ctx, "b.ach", []byte("again")); err != nil {
					t.Fatalf("a second Put of one name: %v", err)
				}
				if data, _ := f.Get(ctx, "b.ach"); string(data) != "again" {
					t.Errorf("after a second Put, Get = %q", data)
				}
				if err := f.Move(ctx, "a.ach", "processed"); err != nil {
					t.Fatal(err)
				}
				if err := f.Move(ctx, "b.ach", "rejected"); err != nil {
					t.Fatal(err)
				}
				if names, _ := f.List(ctx); len(names) != 0 {
					t.Errorf("after the moves, List = %v", names)
				}
				for sub, name := range map[string]string{"processed": "a.ach", "rejected": "b.ach"} {
					if _, err := os.Stat(filepath.Join(dir, sub, name)); err != nil {
						t.Errorf("%s/%s: %v", sub, name, err)
					}
				}
				// Put leaves no temporary file behind.
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if strings.HasSuffix(e.Name(), ".tmp") && e.Name() != ".c.ach.1234.tmp" {
						t.Errorf("left behind: %s", e.Name())
					}
				}
			})
			t.Run("names that leave the folder are refused", func(t *testing.T) {
				f, _ := open(t)
				for _, name := range []string{"", "../x.ach", "sub/x.ach", ".hidden", `a\b`} {
					if err := f.Put(ctx, name, []byte("x")); !errors.Is(err, ErrBadName) {
						t.Errorf("Put(%q) = %v", name, err)
					}
					if _, err := f.Get(ctx, name); !errors.Is(err, ErrBadName) {
						t.Errorf("Get(%q) = %v", name, err)
					}
				}
				if err := f.Move(ctx, "x.ach", ".."); !errors.Is(err, ErrBadName) {
					t.Errorf("Move to .. = %v", err)
				}
			})
			t.Run("a missing file", func(t *testing.T) {
				f, _ := open(t)
				if _, err := f.Get(ctx, "none.ach"); err == nil {
					t.Error("Get of a missing file succeeded")
				}
				// The folder still works after an error.
				if err := f.Put(ctx, "x.ach", []byte("x")); err != nil {
					t.Errorf("Put after an error: %v", err)
				}
			})
		})
	}
}

func TestOpenRefusesBadAddresses(t *testing.T) {
	for _, address := range []string{
		"ftp://bank/x", "file://remote/x", "file://relative", "sftp://host/x", "sftp://bank:secret@host/x", "::",
	} {
		if _, err := Open(address, SFTPConfig{KeyFile: "k", KnownHostsFile: "h"}); err == nil {
			t.Errorf("Open(%q) succeeded", address)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) put the password in its error: %v", address, err)
		}
	}
	if _, err := Open("sftp://bank@127.0.0.1:22/x", SFTPConfig{}); err == nil {
		t.Error("an sftp folder opened without a key and known hosts")
	}
}

func TestSFTPRefusesAnUnknownHostKey(t *testing.T) {
	srv := startSFTPServer(t)
	other := startSFTPServer(t) // its own host key
	cfg := srv.clientConfig
	cfg.KnownHostsFile = other.clientConfig.KnownHostsFile // pins the other server's key for another address
	f, err := Open("sftp://bank@"+srv.addr+t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Put(context.Background(), "x.ach", []byte("x")); err == nil || !strings.Contains(err.Error(), "knownhosts") {
		t.Fatalf("Put to a server whose key is not pinned = %v", err)
	}
}

func TestSFTPRefusesAnUnknownClientKey(t *testing.T) {
	srv := startSFTPServer(t)
	cfg := srv.clientConfig
	cfg.KeyFile = startSFTPServer(t).clientConfig.KeyFile // a key the server does not know
	f, err := Open("sftp://bank@"+srv.addr+t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Put(context.Background(), "x.ach", []byte("x")); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("Put with a key the server does not know = %v", err)
	}
}

type sftpServer struct {
	addr         string
	clientConfig SFTPConfig
}

// startSFTPServer serves SFTP on a loopback port for the test, with a
// host key of its own and one client key, both written where SFTPConfig
// finds them.
func startSFTPServer(t *testing.T) *sftpServer {
	t.Helper()
	dir := t.TempDir()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	clientPub, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600)
	authorized, _ := ssh.NewPublicKey(clientPub)

	config := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if string(key.Marshal()) == string(authorized.Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	config.AddHostKey(hostSigner)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveSFTP(conn, config)
			}()
		}
	}()
	knownHosts := filepath.Join(dir, "known_hosts")
	line := knownhosts.Line([]string{l.Addr().String()}, hostSigner.PublicKey())
	os.WriteFile(knownHosts, []byte(line+"\n"), 0o600)
	return &sftpServer{addr: l.Addr().String(), clientConfig: SFTPConfig{KeyFile: keyFile, KnownHostsFile: knownHosts}}
}

func serveSFTP(conn net.Conn, config *ssh.ServerConfig) {
	defer conn.Close()
	sc, chans, reqs, err := ssh.NewServerConn(conn, config)
	if err != nil {
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			for req := range requests {
				req.Reply(req.Type == "subsystem" && len(req.Payload) > 4 && string(req.Payload[4:]) == "sftp", nil)
			}
		}()
		server, err := sftp.NewServer(ch)
		if err != nil {
			ch.Close()
			return
		}
		server.Serve()
		server.Close()
	}
}
