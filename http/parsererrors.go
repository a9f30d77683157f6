package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opentreasury/treasury/domain"
)

// net/http answers a request it cannot parse by itself, before any handler
// runs, with one Write of a fixed shape (see conn.serve in net/http's
// server.go): a status line, exactly these headers, and a body that
// repeats the status (or, for 501, names the transfer encoding).
const (
	parserErrorPrefix  = "HTTP/1.1 "
	parserErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	unsupportedTEBody  = "Unsupported transfer encoding"
	// net/http answers an Expect header other than 100-continue
	// (response.sendExpectationFailed) with exactly this head: status line
	// (HTTP/1.0 to an HTTP/1.0 request), Connection, a Date in
	// http.TimeFormat, Content-Length: 0. No route of ours answers 417.
	expectationFailedStatus = " 417 Expectation Failed\r\nConnection: close\r\nDate: "
	expectationFailedEnd    = "\r\nContent-Length: 0\r\n\r\n"
)

// jsonParserError recognises one of net/http's own error answers in p and
// returns the API's JSON answer with the same status in its place.
func jsonParserError(p []byte, log *slog.Logger, from net.Addr) ([]byte, bool) {
	status, detail, ok := parseParserError(p)
	if !ok {
		return nil, false
	}
	body := ErrorBody{Code: domain.CodeInvalidRequest, Message: parserErrorMessage(status, detail), RequestID: domain.NewID("req_")}
	if status == http.StatusRequestHeaderFieldsTooLarge {
		body.Code = domain.CodeRequestTooLarge
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, false
	}
	log.Info("request refused before routing", "request_id", body.RequestID, "status", status,
		"error", strings.TrimSpace(http.StatusText(status)+" "+detail), "client", from.String())
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nX-Request-Id: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
		status, http.StatusText(status), body.RequestID, len(b))
	return append([]byte(head), b...), true
}

// parseParserError returns the status and net/http's detail ("invalid
// header value") of one of its error answers, or false for anything else.
func parseParserError(p []byte) (int, string, bool) {
	if isExpectationFailed(p) {
		return http.StatusExpectationFailed, "", true
	}
	rest, ok := bytes.CutPrefix(p, []byte(parserErrorPrefix))
	if !ok {
		return 0, "", false
	}
	statusLine, body, ok := bytes.Cut(rest, []byte(parserErrorHeaders))
	if !ok || bytes.ContainsAny(statusLine, "\r\n") || len(statusLine) < 4 || statusLine[3] != ' ' {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, "", false
	}
	if !bytes.Equal(body, statusLine) && !(status == http.StatusNotImplemented && string(body) == unsupportedTEBody) {
		return 0, "", false
	}
	_, detail, _ := strings.Cut(string(statusLine), ": ")
	return status, detail, true
}

// isExpectationFailed reports whether p is net/http's 417 answer, byte for
// byte but for the date (a loose match once took the last Write of a
// chunked response, which ends in "0\r\n\r\n", for it).
func isExpectationFailed(p []byte) bool {
	dateLen := len(http.TimeFormat)
	if len(p) != len("HTTP/1.1")+len(expectationFailedStatus)+dateLen+len(expectationFailedEnd) {
		return false
	}
	proto, rest := p[:len("HTTP/1.1")], p[len("HTTP/1.1"):]
	if string(proto) != "HTTP/1.1" && string(proto) != "HTTP/1.0" {
		return false
	}
	rest, ok := bytes.CutPrefix(rest, []byte(expectationFailedStatus))
	if !ok || !bytes.HasSuffix(rest, []byte(expectationFailedEnd)) {
		return false
	}
	_, err := time.Parse(http.TimeFormat, string(rest[:dateLen]))
	return err == nil
}

func parserErrorMessage(status int, detail string) string {
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return fmt.Sprintf("request headers are limited to %d KiB", MaxHeaderBytes>>10)
	case http.StatusNotImplemented:
		return "unsupported Transfer-Encoding: send a Content-Length or Transfer-Encoding: chunked"
	case http.StatusHTTPVersionNotSupported:
		return "unsupported HTTP version: use HTTP/1.1"
	case http.StatusExpectationFailed:
		return "unsupported Expect header: only 100-continue is understood"
	}
	if detail != "" {
		return "malformed request: " + detail
	}
	return "malformed request: the request line, the URL or a header could not be parsed"
}
