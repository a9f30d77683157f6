package http

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

const cannedDate = "Wed, 25 Nov 2026 17:12:57 GMT"

// canned417 is net/http's 417 answer byte for byte.
const canned417 = "HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nDate: " + cannedDate + "\r\nContent-Length: 0\r\n\r\n"

// canned400 is net/http's answer to a malformed request byte for byte.
const canned400 = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"

// TestExpectationFailedMatchesOnlyNetHTTPsBytes: the 417 answer is
// recognised by its exact layout, not by its first line and a blank line
// at the end (the last Write of a chunked response ends in one).
func TestExpectationFailedMatchesOnlyNetHTTPsBytes(t *testing.T) {
	for _, tc := range []struct {
		name, p string
		want    bool
	}{
		{"net/http's answer", canned417, true},
		{"to an HTTP/1.0 request", "HTTP/1.0" + strings.TrimPrefix(canned417, "HTTP/1.1"), true},
		{"a chunked response's last write", "HTTP/1.1 417 Expectation Failed\r\nid,amount\r\n0\r\n\r\n", false},
		{"other headers", "HTTP/1.1 417 Expectation Failed\r\nContent-Type: text/csv\r\nDate: " + cannedDate + "\r\nContent-Length: 0\r\n\r\n", false},
		{"not a date", strings.Replace(canned417, cannedDate, strings.Repeat("x", len(cannedDate)), 1), false},
		{"trailing bytes", canned417 + "x", false},
	} {
		if _, _, got := parseParserError([]byte(tc.p)); got != tc.want {
			t.Errorf("%s: recognised %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHandlerResponsesAreNeverRewritten: a response whose bytes are, at a
// flush, exactly one of net/http's error answers (a CSV export, a JSON
// body quoting one) goes out as the handler wrote it; on the same
// connection, net/http's own 417 to the next request is still JSON.
func TestHandlerResponsesAreNeverRewritten(t *testing.T) {
	s := newInternalServer(t, Config{})
	s.echo.GET("/v1/test/canned", func(c echo.Context) error {
		body := canned417
		if c.QueryParam("which") == "400" {
			body = canned400
		}
		res := c.Response()
		res.Header().Set("Content-Type", "text/plain")
		res.Header().Set("Content-Length", strconv.Itoa(len(body)))
		res.WriteHeader(http.StatusOK)
		res.Flush() // the head goes out alone: the body is one Write of its own
		_, err := io.WriteString(res, body)
		return err
	})
	addr := serveInternal(t, s)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for _, tc := range []struct{ which, want string }{{"417", canned417}, {"400", canned400}} {
		if _, err := io.WriteString(c, "GET /v1/test/canned?which="+tc.which+" HTTP/1.1\r\nHost: treasury\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, body := readResponse(t, c, r)
		if res.StatusCode != http.StatusOK || string(body) != tc.want {
			t.Fatalf("the handler's %s body came out as %d %q", tc.which, res.StatusCode, body)
		}
	}
	if _, err := io.WriteString(c, "POST /v1/ledger/entries HTTP/1.1\r\nHost: treasury\r\nExpect: tea\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
		t.Fatal(err)
	}
	res, body := readResponse(t, c, r)
	if res.StatusCode != http.StatusExpectationFailed || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("net/http's 417 after a response on the same connection: %d %s %q", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
}

func readResponse(t *testing.T, c net.Conn, r *bufio.Reader) (*http.Response, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}
