package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentreasury/treasury/eventstore"
)

// Tests of the KYB routes (API.md §6) and their events (§8). Helpers of
// this file start with "kt2" so that they never clash with other files.

// The sensitive values of kt2Submission: the EIN's digits before the last
// four, and the owners' SSN last four. No response or event may show them.
const (
	kt2EINPrefix = "58-204" // every EIN below is 58-204XXXX
	kt2SSN0      = "9876"
	kt2SSN1      = "8642"
)

// kt2Secrets are the strings that must never leave the request.
var kt2Secrets = []string{"58204", kt2EINPrefix, kt2SSN0, kt2SSN1}

// kt2EINFor is the EIN 58-204XXXX ending in last4: in the sandbox "0000"
// is rejected, "1111" goes to review, anything else is approved.
func kt2EINFor(last4 string) string { return kt2EINPrefix + last4 }

// kt2Address is a valid US street address.
func kt2Address(line1 string) map[string]any {
	return map[string]any{"line1": line1, "city": "Austin", "state": "TX", "postal_code": "78701", "country": "US"}
}

// kt2Submission is a valid submission for the account: a business with
// every optional field, and two owners (the first a control person).
func kt2Submission(vaID, ein string) map[string]any {
	addr := kt2Address("500 Congress Ave")
	addr["line2"] = "Suite 200"
	return map[string]any{
		"virtual_account_id": vaID,
		"business": map[string]any{
			"legal_name": "Acme Payroll Holdings LLC", "dba": "Acme Payroll", "ein": ein, "entity_type": "llc",
			"formation_date": "2015-06-01", "formation_state": "DE", "address": addr,
			"website": "https://acme.example", "naics_code": "541214", "phone": "+15125550100",
		},
		"beneficial_owners": []any{
			map[string]any{"first_name": "Jane", "last_name": "Doe", "date_of_birth": "1980-04-12", "ssn_last4": kt2SSN0,
				"ownership_percentage": "60", "is_control_person": true, "title": "CEO", "address": kt2Address("12 Elm St")},
			map[string]any{"first_name": "John", "last_name": "Roe", "date_of_birth": "1975-09-30", "ssn_last4": kt2SSN1,
				"ownership_percentage": 25.5, "is_control_person": false, "address": kt2Address("14 Elm St")},
		},
	}
}

// kt2Business and kt2Owner reach into a submission to change it.
func kt2Business(body map[string]any) map[string]any { return body["business"].(map[string]any) }

func kt2Owner(body map[string]any, i int) map[string]any {
	return body["beneficial_owners"].([]any)[i].(map[string]any)
}

// kt2Submit posts a submission.
func kt2Submit(api *testAPI, key string, body any) response {
	return api.do("POST", "/v1/kyb", key, body)
}

// kt2SubmitID posts a valid submission with the EIN and requires 201
// pending; it returns the verification's id.
func kt2SubmitID(t testing.TB, api *testAPI, key, vaID, ein string) string {
	t.Helper()
	v := vaRequire(t, kt2Submit(api, key, kt2Submission(vaID, ein)), http.StatusCreated)
	if v["status"] != "pending" {
		t.Fatalf("a new verification is %v, want pending", v["status"])
	}
	return v["id"].(string)
}

// kt2Decide runs the KYB decider over every event committed so far (it
// is a log subscriber; the tests drive it instead of a background loop).
func kt2Decide(t testing.TB, api *testAPI) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	head, err := eventstore.Head(ctx, api.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.App.KYBDecider(nil).CatchUpTo(ctx, head); err != nil {
		t.Fatalf("KYB decider: %v", err)
	}
}

// kt2Get reads a verification (200).
func kt2Get(t testing.TB, api *testAPI, key, id string) map[string]any {
	t.Helper()
	return vaGet(t, api, key, "/v1/kyb/"+id)
}

// kt2VAStatus reads an account's kyb_status.
func kt2VAStatus(t testing.TB, api *testAPI, key, vaID string) string {
	t.Helper()
	s, _ := vaGet(t, api, key, "/v1/virtual-accounts/"+vaID)["kyb_status"].(string)
	return s
}

// kt2Events syncs the asynchronous projections and lists the events of a
// type (all of them: at most 100), newest first, with the raw body.
func kt2Events(t testing.TB, api *testAPI, key, typ string) ([]map[string]any, []byte) {
	t.Helper()
	api.sync()
	path := "/v1/events?limit=100"
	if typ != "" {
		path += "&type=" + url.QueryEscape(typ)
	}
	r := api.do("GET", path, key, nil)
	list := vaRequire(t, r, http.StatusOK)
	if list["has_more"] != false {
		t.Fatalf("more than 100 events: %s", path)
	}
	return vaData(t, list), r.Body
}

// kt2EventFor returns the event of the type whose data.object has the id.
func kt2EventFor(t testing.TB, events []map[string]any, typ, id string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, e := range events {
		obj, _ := e["data"].(map[string]any)["object"].(map[string]any)
		if e["type"] == typ && obj["id"] == id {
			if found != nil {
				t.Fatalf("two %s events for %s", typ, id)
			}
			found = e
		}
	}
	if found == nil {
		t.Fatalf("no %s event for %s", typ, id)
	}
	return found
}

// kt2IDLike matches ids (and request ids): random characters that may
// spell anything, so the secret scan skips them.
var kt2IDLike = regexp.MustCompile(`^[a-z]+_[0-9a-hjkmnp-tv-z]{26}$`)

// kt2NoSecrets fails if any string or number in the JSON body (other than
// ids and account numbers, which are random digits) contains a secret.
func kt2NoSecrets(t testing.TB, label string, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: not JSON: %s", label, body)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "account_number" {
					continue
				}
				walk(path+"."+k, c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		case string:
			if kt2IDLike.MatchString(x) {
				return
			}
			for _, s := range kt2Secrets {
				if strings.Contains(x, s) {
					t.Errorf("%s: %s = %q shows the secret %q", label, path, x, s)
				}
			}
		case float64:
			for _, s := range kt2Secrets {
				if strings.Contains(fmt.Sprint(x), s) {
					t.Errorf("%s: %s = %v shows the secret %q", label, path, x, s)
				}
			}
		}
	}
	walk("$", v)
}

// kt2Time parses an API timestamp.
func kt2Time(t testing.TB, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(s) {
		t.Fatalf("%v is not an RFC 3339 UTC time with milliseconds", v)
	}
	return at
}

// kt2Obj reads a nested object field.
func kt2Obj(t testing.TB, m map[string]any, path ...string) map[string]any {
	t.Helper()
	cur := m
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			t.Fatalf("%s is not an object in %v", strings.Join(path, "."), m)
		}
		cur = next
	}
	return cur
}

func TestKYBSubmitIsPendingAndMasked(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_mask")
	ein := kt2EINFor("6789")
	if ein != "58-2046789" {
		t.Fatalf("bad test EIN %q", ein)
	}

	r := kt2Submit(api, key, kt2Submission(va, ein))
	v := vaRequire(t, r, http.StatusCreated)
	kt2NoSecrets(t, "POST /kyb", r.Body)
	for field, want := range map[string]any{"object": "kyb_verification", "virtual_account_id": va, "entity_ref": "biz_mask",
		"status": "pending", "decision": nil, "review": nil, "environment": "sandbox"} {
		if v[field] != want {
			t.Errorf("%s = %v, want %v", field, v[field], want)
		}
	}
	id, _ := v["id"].(string)
	if !regexp.MustCompile(`^kyb_[0-9a-hjkmnp-tv-z]{26}$`).MatchString(id) {
		t.Errorf("id %q is not a kyb_ ULID", id)
	}
	if kt2Time(t, v["created_at"]) != kt2Time(t, v["updated_at"]) {
		t.Errorf("a new verification has created_at %v and updated_at %v", v["created_at"], v["updated_at"])
	}
	wantBusiness := map[string]any{"legal_name": "Acme Payroll Holdings LLC", "dba": "Acme Payroll", "ein": "**-***6789",
		"entity_type": "llc", "formation_date": "2015-06-01", "formation_state": "DE",
		"address": map[string]any{"line1": "500 Congress Ave", "line2": "Suite 200", "city": "Austin", "state": "TX",
			"postal_code": "78701", "country": "US"},
		"website": "https://acme.example", "naics_code": "541214", "phone": "+15125550100"}
	if b := kt2Obj(t, v, "business"); !reflect.DeepEqual(b, wantBusiness) {
		t.Errorf("business = %v\nwant %v", b, wantBusiness)
	}
	owners := v["beneficial_owners"].([]any)
	if len(owners) != 2 {
		t.Fatalf("%d owners, want 2", len(owners))
	}
	wantOwner0 := map[string]any{"first_name": "Jane", "last_name": "Doe", "date_of_birth": "1980-04-12", "ssn_last4": "****",
		"ownership_percentage": "60", "is_control_person": true, "title": "CEO", "address": kt2Address("12 Elm St")}
	if o := owners[0].(map[string]any); !reflect.DeepEqual(o, wantOwner0) {
		t.Errorf("owner 0 = %v\nwant %v", o, wantOwner0)
	}
	// The second owner's share was a JSON number; it comes back as a
	// decimal string, and its missing title as null.
	o1 := owners[1].(map[string]any)
	if o1["ownership_percentage"] != "25.5" || o1["ssn_last4"] != "****" || o1["title"] != nil || o1["is_control_person"] != false {
		t.Errorf("owner 1 = %v", o1)
	}

	// GET and the list show the same masked verification.
	r = api.do("GET", "/v1/kyb/"+id, key, nil)
	got := vaRequire(t, r, http.StatusOK)
	kt2NoSecrets(t, "GET /kyb/:id", r.Body)
	if !reflect.DeepEqual(got, v) {
		t.Errorf("GET differs from the POST response:\n%v\n%v", got, v)
	}
	r = api.do("GET", "/v1/kyb", key, nil)
	list := vaRequire(t, r, http.StatusOK)
	kt2NoSecrets(t, "GET /kyb", r.Body)
	if items := vaData(t, list); len(items) != 1 || !reflect.DeepEqual(items[0], v) {
		t.Errorf("list = %v, want just the verification", items)
	}
	if s := kt2VAStatus(t, api, key, va); s != "pending" {
		t.Errorf("the account's kyb_status is %q, want pending", s)
	}

	// Decided and evented: still masked everywhere.
	kt2Decide(t, api)
	r = api.do("GET", "/v1/kyb/"+id, key, nil)
	kt2NoSecrets(t, "GET /kyb/:id after the decision", r.Body)
	events, raw := kt2Events(t, api, key, "")
	kt2NoSecrets(t, "GET /events", raw)
	for _, e := range events {
		r := api.do("GET", "/v1/events/"+e["id"].(string), key, nil)
		vaRequire(t, r, http.StatusOK)
		kt2NoSecrets(t, "GET /events/"+e["id"].(string), r.Body)
	}
	kt2EventFor(t, events, "kyb.approved", id)

	// Nor does the log keep them.
	var kybEvents, leaked int
	if err := api.Pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE data::text LIKE '%58204%'
        OR data::text LIKE '%"' || $1 || '"%' OR data::text LIKE '%"' || $2 || '"%') FROM events WHERE event_type LIKE 'kyb.%'`,
		kt2SSN0, kt2SSN1).Scan(&kybEvents, &leaked); err != nil {
		t.Fatalf("scan the event log: %v", err)
	}
	if kybEvents < 2 || leaked != 0 {
		t.Errorf("%d of the log's %d KYB events keep a full EIN or an SSN last4", leaked, kybEvents)
	}
}

func TestKYBValidation(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_validation")
	today := time.Now().UTC()
	date := func(tm time.Time) string { return tm.Format("2006-01-02") }
	for _, c := range []struct {
		name   string
		mutate func(b map[string]any)
		param  string
	}{
		{"missing virtual_account_id", func(b map[string]any) { delete(b, "virtual_account_id") }, "virtual_account_id"},
		{"ein of 8 digits", func(b map[string]any) { kt2Business(b)["ein"] = "58204678" }, "business.ein"},
		{"ein with a misplaced dash", func(b map[string]any) { kt2Business(b)["ein"] = "582-046789" }, "business.ein"},
		{"ein with letters", func(b map[string]any) { kt2Business(b)["ein"] = "58-20A6789" }, "business.ein"},
		{"ein not a string", func(b map[string]any) { kt2Business(b)["ein"] = 582046789 }, "business.ein"},
		{"entity_type", func(b map[string]any) { kt2Business(b)["entity_type"] = "gmbh" }, "business.entity_type"},
		{"entity_type in capitals", func(b map[string]any) { kt2Business(b)["entity_type"] = "LLC" }, "business.entity_type"},
		{"formation_date format", func(b map[string]any) { kt2Business(b)["formation_date"] = "06/01/2015" }, "business.formation_date"},
		{"formation_date not a date", func(b map[string]any) { kt2Business(b)["formation_date"] = "2015-02-30" }, "business.formation_date"},
		{"formation_date tomorrow", func(b map[string]any) { kt2Business(b)["formation_date"] = date(today.AddDate(0, 0, 1)) }, "business.formation_date"},
		{"formation_state", func(b map[string]any) { kt2Business(b)["formation_state"] = "XX" }, "business.formation_state"},
		{"formation_state lower case", func(b map[string]any) { kt2Business(b)["formation_state"] = "de" }, "business.formation_state"},
		{"legal_name blank", func(b map[string]any) { kt2Business(b)["legal_name"] = "   " }, "business.legal_name"},
		{"legal_name too long", func(b map[string]any) { kt2Business(b)["legal_name"] = strings.Repeat("a", 201) }, "business.legal_name"},
		{"dba empty", func(b map[string]any) { kt2Business(b)["dba"] = "" }, "business.dba"},
		{"website without scheme", func(b map[string]any) { kt2Business(b)["website"] = "acme.example" }, "business.website"},
		{"naics_code", func(b map[string]any) { kt2Business(b)["naics_code"] = "1" }, "business.naics_code"},
		{"phone", func(b map[string]any) { kt2Business(b)["phone"] = "512-555-0100" }, "business.phone"},
		{"postal_code of 4 digits", func(b map[string]any) { kt2Obj(t, b, "business", "address")["postal_code"] = "7870" }, "business.address.postal_code"},
		{"postal_code ZIP+3", func(b map[string]any) { kt2Obj(t, b, "business", "address")["postal_code"] = "78701-123" }, "business.address.postal_code"},
		{"address state", func(b map[string]any) { kt2Obj(t, b, "business", "address")["state"] = "ZZ" }, "business.address.state"},
		{"address country", func(b map[string]any) { kt2Obj(t, b, "business", "address")["country"] = "CA" }, "business.address.country"},
		{"address city missing", func(b map[string]any) { delete(kt2Obj(t, b, "business", "address"), "city") }, "business.address.city"},
		{"PO box in the business's line1", func(b map[string]any) { kt2Obj(t, b, "business", "address")["line1"] = "PO Box 123" }, "business.address.line1"},
		{"P.O. box in the business's line1", func(b map[string]any) { kt2Obj(t, b, "business", "address")["line1"] = "p.o. box 77" }, "business.address.line1"},
		{"PO box in the business's line2", func(b map[string]any) { kt2Obj(t, b, "business", "address")["line2"] = "Post Office Box 9" }, "business.address.line2"},
		{"PO box in an owner's line2", func(b map[string]any) {
			kt2Obj(t, kt2Owner(b, 1), "address")["line2"] = "P.O. Box 9"
		}, "beneficial_owners[1].address.line2"},
		{"ownership adds up to 101", func(b map[string]any) { kt2Owner(b, 1)["ownership_percentage"] = "41" }, "beneficial_owners"},
		{"ownership over 100 for one owner", func(b map[string]any) { kt2Owner(b, 0)["ownership_percentage"] = "100.0001" }, "beneficial_owners[0].ownership_percentage"},
		{"negative ownership", func(b map[string]any) { kt2Owner(b, 1)["ownership_percentage"] = -1 }, "beneficial_owners[1].ownership_percentage"},
		{"ownership with 5 decimals", func(b map[string]any) { kt2Owner(b, 1)["ownership_percentage"] = "10.12345" }, "beneficial_owners[1].ownership_percentage"},
		{"no control person", func(b map[string]any) { kt2Owner(b, 0)["is_control_person"] = false }, "beneficial_owners"},
		{"empty owners", func(b map[string]any) { b["beneficial_owners"] = []any{} }, "beneficial_owners"},
		{"owners missing", func(b map[string]any) { delete(b, "beneficial_owners") }, "beneficial_owners"},
		{"26 owners", func(b map[string]any) {
			var owners []any
			for i := 0; i < 26; i++ {
				o := map[string]any{}
				for k, v := range kt2Owner(b, 0) {
					o[k] = v
				}
				o["ownership_percentage"] = "1"
				owners = append(owners, o)
			}
			b["beneficial_owners"] = owners
		}, "beneficial_owners"},
		{"unknown field in business", func(b map[string]any) { kt2Business(b)["nickname"] = "Acme" }, "business.nickname"},
		{"unknown field in the business's address", func(b map[string]any) { kt2Obj(t, b, "business", "address")["county"] = "Travis" }, "business.address.county"},
		{"unknown field in an owner", func(b map[string]any) { kt2Owner(b, 1)["middle_name"] = "Q" }, "beneficial_owners[1].middle_name"},
		{"unknown top-level field", func(b map[string]any) { b["entity_ref"] = "biz_validation" }, "entity_ref"},
		{"owner under 18", func(b map[string]any) { kt2Owner(b, 0)["date_of_birth"] = date(today.AddDate(-17, 0, 0)) }, "beneficial_owners[0].date_of_birth"},
		{"owner 18 tomorrow", func(b map[string]any) { kt2Owner(b, 1)["date_of_birth"] = date(today.AddDate(-18, 0, 1)) }, "beneficial_owners[1].date_of_birth"},
		{"owner over 120", func(b map[string]any) { kt2Owner(b, 0)["date_of_birth"] = fmt.Sprintf("%d-06-01", today.Year()-121) }, "beneficial_owners[0].date_of_birth"},
		{"owner date_of_birth format", func(b map[string]any) { kt2Owner(b, 0)["date_of_birth"] = "12/04/1980" }, "beneficial_owners[0].date_of_birth"},
		{"ssn_last4 of 3 digits", func(b map[string]any) { kt2Owner(b, 1)["ssn_last4"] = "864" }, "beneficial_owners[1].ssn_last4"},
		{"full SSN", func(b map[string]any) { kt2Owner(b, 0)["ssn_last4"] = "123-45-" + kt2SSN0 }, "beneficial_owners[0].ssn_last4"},
		{"owner first_name blank", func(b map[string]any) { kt2Owner(b, 0)["first_name"] = "" }, "beneficial_owners[0].first_name"},
		{"owner title empty", func(b map[string]any) { kt2Owner(b, 0)["title"] = "" }, "beneficial_owners[0].title"},
		{"PO box in an owner's line1", func(b map[string]any) { kt2Obj(t, kt2Owner(b, 0), "address")["line1"] = "Box 12" }, "beneficial_owners[0].address.line1"},
		{"owner postal_code", func(b map[string]any) { kt2Obj(t, kt2Owner(b, 0), "address")["postal_code"] = "ABCDE" }, "beneficial_owners[0].address.postal_code"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := kt2Submission(va, kt2EINFor("6789"))
			c.mutate(body)
			r := kt2Submit(api, key, body)
			e := requireError(t, r, http.StatusBadRequest, "invalid_request")
			if e["param"] != c.param {
				t.Errorf("param %v, want %s: %s", e["param"], c.param, r.Body)
			}
			kt2NoSecrets(t, c.name, r.Body)
		})
	}
	// Nothing was recorded, and the business is still not started.
	if items := vaData(t, vaGet(t, api, key, "/v1/kyb")); len(items) != 0 {
		t.Errorf("refused submissions were recorded: %v", items)
	}
	if s := kt2VAStatus(t, api, key, va); s != "not_started" {
		t.Errorf("kyb_status %q after refused submissions, want not_started", s)
	}

	// The bounds themselves are accepted: an owner who turned 18 today
	// (not on 29 February, which has no anniversary in most years), a
	// business formed today, shares adding up to exactly 100 with 4
	// decimals, a ZIP+4, the optional fields null or absent.
	body := kt2Submission(va, kt2EINFor("6789"))
	b := kt2Business(body)
	b["formation_date"] = date(today)
	b["dba"], b["website"], b["naics_code"], b["phone"] = nil, nil, nil, nil
	kt2Obj(t, b, "address")["postal_code"] = "78701-1234"
	delete(kt2Obj(t, b, "address"), "line2")
	if today.Month() != time.February || today.Day() != 29 {
		kt2Owner(body, 1)["date_of_birth"] = date(today.AddDate(-18, 0, 0))
	}
	kt2Owner(body, 0)["ownership_percentage"] = "74.4999"
	kt2Owner(body, 1)["ownership_percentage"] = 25.5001
	v := vaRequire(t, kt2Submit(api, key, body), http.StatusCreated)
	owners := v["beneficial_owners"].([]any)
	if p0, p1 := owners[0].(map[string]any)["ownership_percentage"], owners[1].(map[string]any)["ownership_percentage"]; p0 != "74.4999" || p1 != "25.5001" {
		t.Errorf("ownership_percentage %v and %v, want 74.4999 and 25.5001", p0, p1)
	}
	for _, f := range []string{"dba", "website", "naics_code", "phone"} {
		if kt2Obj(t, v, "business")[f] != nil {
			t.Errorf("business.%s = %v, want null", f, kt2Obj(t, v, "business")[f])
		}
	}
}

// TestKYBWrongTypeNamesField: a value of the wrong type is 400 naming the
// field (API.md §1, §2), with the owner's index like every other owner
// field.
func TestKYBWrongTypeNamesField(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_types")
	for _, c := range []struct {
		name   string
		mutate func(b map[string]any)
		param  string
	}{
		{"line2 a number", func(b map[string]any) { kt2Obj(t, b, "business", "address")["line2"] = 5 }, "business.address.line2"},
		{"is_control_person a string", func(b map[string]any) { kt2Owner(b, 1)["is_control_person"] = "yes" }, "beneficial_owners[1].is_control_person"},
		{"ownership_percentage a boolean", func(b map[string]any) { kt2Owner(b, 0)["ownership_percentage"] = true }, "beneficial_owners[0].ownership_percentage"},
		{"ownership_percentage not a number", func(b map[string]any) { kt2Owner(b, 0)["ownership_percentage"] = "sixty" }, "beneficial_owners[0].ownership_percentage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := kt2Submission(va, kt2EINFor("6789"))
			c.mutate(body)
			r := kt2Submit(api, key, body)
			if e := requireError(t, r, http.StatusBadRequest, "invalid_request"); e["param"] != c.param {
				t.Errorf("param %v, want %s: %s", e["param"], c.param, r.Body)
			}
		})
	}
}

func TestKYBAccountMustBeTheCallers(t *testing.T) {
	api, platformID, key := vaAPI(t)
	otherID, otherKey := api.newPlatform("Globex")
	liveKey := api.enableLive(platformID)
	theirs := vaOpenID(t, api, otherKey, otherID, "biz_other")
	live := vaOpenID(t, api, liveKey, platformID, "biz_live")
	for name, va := range map[string]string{
		"another platform's account": theirs,
		"the live environment's":     live,
		"an unknown account":         vaUnknown("va_"),
		"not an account id":          "biz_other",
		"a verification id":          vaUnknown("kyb_"),
	} {
		r := kt2Submit(api, key, kt2Submission(va, kt2EINFor("6789")))
		e := requireError(t, r, http.StatusNotFound, "not_found")
		if e["param"] != "virtual_account_id" {
			t.Errorf("%s: param %v, want virtual_account_id", name, e["param"])
		}
		if strings.Contains(string(r.Body), "biz_other") && va == theirs {
			t.Errorf("%s: the 404 reveals the other platform's entity_ref: %s", name, r.Body)
		}
	}
	if items := vaData(t, vaGet(t, api, otherKey, "/v1/kyb")); len(items) != 0 {
		t.Errorf("the other platform got a verification: %v", items)
	}
	if s := kt2VAStatus(t, api, otherKey, theirs); s != "not_started" {
		t.Errorf("the other platform's account is %q, want not_started", s)
	}
	// The operator key may not submit, nor may no key.
	requireError(t, kt2Submit(api, operatorKey, kt2Submission(theirs, kt2EINFor("6789"))), http.StatusForbidden, "forbidden")
	requireError(t, kt2Submit(api, "", kt2Submission(theirs, kt2EINFor("6789"))), http.StatusUnauthorized, "unauthorized")
}

func TestKYBSandboxDecisionsByEIN(t *testing.T) {
	api, platformID, key := vaAPI(t)
	vaRejected := vaOpenID(t, api, key, platformID, "biz_0000")
	vaReview := vaOpenID(t, api, key, platformID, "biz_1111")
	vaApproved := vaOpenID(t, api, key, platformID, "biz_6789")
	vaNineDigits := vaOpenID(t, api, key, platformID, "biz_9digits")
	rejected := kt2SubmitID(t, api, key, vaRejected, kt2EINFor("0000"))
	review := kt2SubmitID(t, api, key, vaReview, kt2EINFor("1111"))
	approved := kt2SubmitID(t, api, key, vaApproved, kt2EINFor("6789"))
	nine := kt2SubmitID(t, api, key, vaNineDigits, strings.ReplaceAll(kt2EINFor("0000"), "-", ""))
	kt2Decide(t, api)

	// 0000: rejected, ein_mismatch, automatic.
	v := kt2Get(t, api, key, rejected)
	if v["status"] != "rejected" || v["review"] != nil {
		t.Errorf("EIN …0000: status %v review %v, want rejected and no review", v["status"], v["review"])
	}
	d := kt2Obj(t, v, "decision")
	reasons, _ := d["reasons"].([]any)
	if d["outcome"] != "rejected" || d["method"] != "automatic" || len(reasons) != 1 {
		t.Fatalf("EIN …0000: decision %v", d)
	}
	if r0 := reasons[0].(map[string]any); r0["code"] != "ein_mismatch" || r0["field"] != "business.ein" || r0["message"] == "" {
		t.Errorf("EIN …0000: reasons[0] = %v, want code ein_mismatch on business.ein", r0)
	}
	if kt2Time(t, d["decided_at"]).Before(kt2Time(t, v["created_at"])) || v["updated_at"] != d["decided_at"] {
		t.Errorf("EIN …0000: created %v, decided %v, updated %v", v["created_at"], d["decided_at"], v["updated_at"])
	}
	if s := kt2VAStatus(t, api, key, vaRejected); s != "rejected" {
		t.Errorf("EIN …0000: the account's kyb_status is %q", s)
	}
	// Nine digits without a dash decide the same way.
	if v := kt2Get(t, api, key, nine); v["status"] != "rejected" || kt2Obj(t, v, "business")["ein"] != "**-***0000" {
		t.Errorf("EIN 5820430000: status %v, ein %v", v["status"], kt2Obj(t, v, "business")["ein"])
	}

	// 1111: pending_review, review.eta = created_at + 24 h, no decision.
	v = kt2Get(t, api, key, review)
	if v["status"] != "pending_review" || v["decision"] != nil {
		t.Fatalf("EIN …1111: status %v decision %v, want pending_review and no decision", v["status"], v["decision"])
	}
	created := kt2Time(t, v["created_at"])
	eta := kt2Time(t, kt2Obj(t, v, "review")["eta"])
	if eta.Before(created.Add(24*time.Hour)) || eta.After(created.Add(24*time.Hour+time.Minute)) {
		t.Errorf("EIN …1111: review.eta %v, want about created_at %v + 24 h", eta, created)
	}
	if want := kt2Time(t, v["updated_at"]).Add(24 * time.Hour); !eta.Equal(want) {
		t.Errorf("EIN …1111: review.eta %v, want updated_at + 24 h = %v", eta, want)
	}
	if s := kt2VAStatus(t, api, key, vaReview); s != "pending_review" {
		t.Errorf("EIN …1111: the account's kyb_status is %q", s)
	}

	// Anything else: approved, automatic, no reasons.
	v = kt2Get(t, api, key, approved)
	d = kt2Obj(t, v, "decision")
	if v["status"] != "approved" || d["outcome"] != "approved" || d["method"] != "automatic" || v["review"] != nil {
		t.Errorf("EIN …6789: %v", v)
	}
	if reasons, ok := d["reasons"].([]any); !ok || len(reasons) != 0 {
		t.Errorf("EIN …6789: reasons %v, want []", d["reasons"])
	}
	if s := kt2VAStatus(t, api, key, vaApproved); s != "approved" {
		t.Errorf("EIN …6789: the account's kyb_status is %q", s)
	}

	// Running the decider again changes nothing.
	before := kt2Get(t, api, key, approved)
	kt2Decide(t, api)
	if after := kt2Get(t, api, key, approved); !reflect.DeepEqual(before, after) {
		t.Errorf("a second decider pass changed the verification:\n%v\n%v", before, after)
	}
}

func TestKYBOneVerificationAtATime(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_once")
	sibling := vaOpenID(t, api, key, platformID, "biz_once") // the same business

	// While pending.
	first := kt2SubmitID(t, api, key, va, kt2EINFor("1111"))
	for _, through := range []string{va, sibling} {
		r := kt2Submit(api, key, kt2Submission(through, kt2EINFor("6789")))
		if e := requireError(t, r, http.StatusConflict, "kyb_in_progress"); e["resource_id"] != first {
			t.Errorf("pending: resource_id %v, want %s", e["resource_id"], first)
		}
	}
	// While in review.
	kt2Decide(t, api)
	if s := kt2Get(t, api, key, first)["status"]; s != "pending_review" {
		t.Fatalf("status %v, want pending_review", s)
	}
	for _, through := range []string{va, sibling} {
		r := kt2Submit(api, key, kt2Submission(through, kt2EINFor("6789")))
		if e := requireError(t, r, http.StatusConflict, "kyb_in_progress"); e["resource_id"] != first {
			t.Errorf("pending_review: resource_id %v, want %s", e["resource_id"], first)
		}
	}
	// A screening hit does not get past an open verification either.
	body := kt2Submission(sibling, kt2EINFor("6789"))
	kt2Business(body)["legal_name"] = "Acme OFAC TEST Holdings"
	requireError(t, kt2Submit(api, key, body), http.StatusConflict, "kyb_in_progress")

	// Rejected by the operator: the platform may submit again.
	r := api.do("POST", "/v1/operator/kyb/"+first+"/decision", operatorKey, map[string]any{"outcome": "rejected",
		"reasons": []any{map[string]any{"code": "document_mismatch", "message": "articles name another business"}}})
	vaRequire(t, r, http.StatusOK)
	second := kt2SubmitID(t, api, key, sibling, kt2EINFor("6789"))
	if second == first {
		t.Fatal("the resubmission reused the id")
	}
	if s := kt2VAStatus(t, api, key, va); s != "pending" {
		t.Errorf("after the resubmission the first account is %q, want pending", s)
	}
	kt2Decide(t, api)
	if s := kt2Get(t, api, key, second)["status"]; s != "approved" {
		t.Fatalf("the resubmission is %v, want approved", s)
	}
	if s := kt2Get(t, api, key, first)["status"]; s != "rejected" {
		t.Errorf("the first verification became %v, want rejected still", s)
	}

	// Approved: no more submissions, through any account of the business.
	for _, through := range []string{va, sibling} {
		r := kt2Submit(api, key, kt2Submission(through, kt2EINFor("6789")))
		if e := requireError(t, r, http.StatusConflict, "kyb_already_approved"); e["resource_id"] != second {
			t.Errorf("approved: resource_id %v, want %s", e["resource_id"], second)
		}
	}
	body = kt2Submission(va, kt2EINFor("6789"))
	kt2Business(body)["legal_name"] = "Acme OFAC TEST Holdings"
	requireError(t, kt2Submit(api, key, body), http.StatusConflict, "kyb_already_approved")
	if n := len(vaData(t, vaGet(t, api, key, "/v1/kyb"))); n != 2 {
		t.Errorf("%d verifications, want 2", n)
	}
}

func TestKYBAfterAutomaticRejectionResubmit(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_again")
	first := kt2SubmitID(t, api, key, va, kt2EINFor("0000"))
	kt2Decide(t, api)
	if s := kt2VAStatus(t, api, key, va); s != "rejected" {
		t.Fatalf("kyb_status %q, want rejected", s)
	}
	second := kt2SubmitID(t, api, key, va, kt2EINFor("6789"))
	kt2Decide(t, api)
	if s := kt2VAStatus(t, api, key, va); s != "approved" {
		t.Errorf("kyb_status %q after an approved resubmission, want approved", s)
	}
	ids := vaIDs(t, vaGet(t, api, key, "/v1/kyb?virtual_account_id="+va))
	if !reflect.DeepEqual(ids, []string{second, first}) {
		t.Errorf("list = %v, want newest first [%s %s]", ids, second, first)
	}
}

func TestKYBConcurrentSubmissionsOneWins(t *testing.T) {
	api, platformID, key := vaAPI(t)
	accounts := []string{vaOpenID(t, api, key, platformID, "biz_race"), vaOpenID(t, api, key, platformID, "biz_race")}
	const n = 8
	results := make([]response, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = kt2Submit(api, key, kt2Submission(accounts[i%2], kt2EINFor("6789")))
		}(i)
	}
	wg.Wait()
	var winner string
	for _, r := range results {
		switch r.Status {
		case http.StatusCreated:
			if winner != "" {
				t.Errorf("two submissions won: %s and %s", winner, r.Str("id"))
			}
			winner = r.Str("id")
		case http.StatusConflict:
			if r.Str("code") != "kyb_in_progress" {
				t.Errorf("a losing submission: %s", r.Body)
			}
		default:
			t.Errorf("a submission got %d: %s", r.Status, r.Body)
		}
	}
	if winner == "" {
		t.Fatal("no submission won")
	}
	for _, r := range results {
		if r.Status == http.StatusConflict && r.Str("resource_id") != winner {
			t.Errorf("a 409 names %s, want the winner %s", r.Str("resource_id"), winner)
		}
	}
	if ids := vaIDs(t, vaGet(t, api, key, "/v1/kyb")); !reflect.DeepEqual(ids, []string{winner}) {
		t.Errorf("verifications %v, want just %s", ids, winner)
	}
}

func TestKYBScreening(t *testing.T) {
	api, platformID, key := vaAPI(t)
	for _, c := range []struct {
		name, entity, field string
		mutate              func(b map[string]any)
	}{
		{"legal name", "biz_screen_name", "business.legal_name", func(b map[string]any) { kt2Business(b)["legal_name"] = "Acme OFAC TEST Holdings" }},
		{"dba", "biz_screen_dba", "business.dba", func(b map[string]any) { kt2Business(b)["dba"] = "ofac test trading" }},
		{"second owner", "biz_screen_owner", "beneficial_owners[1]", func(b map[string]any) { kt2Owner(b, 1)["last_name"] = "Ofac Test" }},
		{"owner's full name", "biz_screen_split", "beneficial_owners[0]", func(b map[string]any) {
			kt2Owner(b, 0)["first_name"], kt2Owner(b, 0)["last_name"] = "OFAC", "TEST"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			va := vaOpenID(t, api, key, platformID, c.entity)
			body := kt2Submission(va, kt2EINFor("6789"))
			c.mutate(body)
			r := kt2Submit(api, key, body)
			e := requireError(t, r, http.StatusUnprocessableEntity, "compliance_rejected")
			kt2NoSecrets(t, "422", r.Body)
			id, _ := e["resource_id"].(string)
			if !strings.HasPrefix(id, "kyb_") {
				t.Fatalf("resource_id %q, want the verification's id", id)
			}
			v := kt2Get(t, api, key, id)
			d := kt2Obj(t, v, "decision")
			if v["status"] != "rejected" || d["outcome"] != "rejected" || d["method"] != "automatic" || v["virtual_account_id"] != va {
				t.Errorf("the screened verification: %v", v)
			}
			reasons, _ := d["reasons"].([]any)
			if len(reasons) != 1 {
				t.Fatalf("reasons %v, want one", d["reasons"])
			}
			if r0 := reasons[0].(map[string]any); r0["code"] != "screening_match" || r0["field"] != c.field {
				t.Errorf("reasons[0] = %v, want screening_match on %s", r0, c.field)
			}
			if s := kt2VAStatus(t, api, key, va); s != "rejected" {
				t.Errorf("kyb_status %q, want rejected", s)
			}
			// The decider leaves it rejected; a clean resubmission is allowed.
			kt2Decide(t, api)
			if s := kt2Get(t, api, key, id)["status"]; s != "rejected" {
				t.Errorf("after the decider: %v", s)
			}
			next := kt2SubmitID(t, api, key, va, kt2EINFor("6789"))
			kt2Decide(t, api)
			if s := kt2Get(t, api, key, next)["status"]; s != "approved" {
				t.Errorf("the clean resubmission is %v, want approved", s)
			}
		})
	}
	// Every hit is reported, each with its field.
	va := vaOpenID(t, api, key, platformID, "biz_screen_all")
	body := kt2Submission(va, kt2EINFor("0000"))
	kt2Business(body)["legal_name"] = "OFAC TEST Inc"
	kt2Owner(body, 0)["first_name"] = "Ofac test"
	r := kt2Submit(api, key, body)
	e := requireError(t, r, http.StatusUnprocessableEntity, "compliance_rejected")
	var fields []string
	for _, x := range kt2Obj(t, kt2Get(t, api, key, e["resource_id"].(string)), "decision")["reasons"].([]any) {
		fields = append(fields, fmt.Sprint(x.(map[string]any)["field"]))
	}
	if !reflect.DeepEqual(fields, []string{"business.legal_name", "beneficial_owners[0]"}) {
		t.Errorf("reason fields %v", fields)
	}
	// A name that merely resembles the list passes.
	clean := vaOpenID(t, api, key, platformID, "biz_screen_clean")
	body = kt2Submission(clean, kt2EINFor("6789"))
	kt2Business(body)["legal_name"] = "OFAC-TEST Consulting"
	vaRequire(t, kt2Submit(api, key, body), http.StatusCreated)
}

func TestKYBOperatorDecision(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_operator")
	sibling := vaOpenID(t, api, key, platformID, "biz_operator")
	id := kt2SubmitID(t, api, key, va, kt2EINFor("1111"))
	decide := func(k, id string, body any) response {
		return api.do("POST", "/v1/operator/kyb/"+id+"/decision", k, body)
	}

	// Not yet in review (pending): 409.
	requireError(t, decide(operatorKey, id, map[string]any{"outcome": "approved"}), http.StatusConflict, "invalid_state")
	kt2Decide(t, api)
	if s := kt2Get(t, api, key, id)["status"]; s != "pending_review" {
		t.Fatalf("status %v, want pending_review", s)
	}

	for _, c := range []struct {
		name   string
		key    string
		id     string
		body   any
		status int
		code   string
		param  string
	}{
		{"invalid outcome", operatorKey, id, map[string]any{"outcome": "maybe"}, 400, "invalid_request", "outcome"},
		{"pending_review is not an outcome", operatorKey, id, map[string]any{"outcome": "pending_review"}, 400, "invalid_request", "outcome"},
		{"no outcome", operatorKey, id, map[string]any{}, 400, "invalid_request", "outcome"},
		{"outcome in capitals", operatorKey, id, map[string]any{"outcome": "APPROVED"}, 400, "invalid_request", "outcome"},
		{"bad reason code", operatorKey, id, map[string]any{"outcome": "approved", "reasons": []any{map[string]any{"code": "ok"}, map[string]any{"code": "Bad Code"}}}, 400, "invalid_request", "reasons[1].code"},
		{"eleven reasons", operatorKey, id, map[string]any{"outcome": "approved", "reasons": func() []any {
			var rs []any
			for i := 0; i < 11; i++ {
				rs = append(rs, map[string]any{"code": "r"})
			}
			return rs
		}()}, 400, "invalid_request", "reasons"},
		{"long message", operatorKey, id, map[string]any{"outcome": "approved", "reasons": []any{map[string]any{"code": "r", "message": strings.Repeat("m", 501)}}}, 400, "invalid_request", "reasons[0].message"},
		{"unknown field", operatorKey, id, map[string]any{"outcome": "approved", "comment": "fine"}, 400, "invalid_request", "comment"},
		{"unknown field in a reason", operatorKey, id, map[string]any{"outcome": "approved", "reasons": []any{map[string]any{"code": "r", "severity": 1}}}, 400, "invalid_request", "reasons[0].severity"},
		{"platform key", key, id, map[string]any{"outcome": "approved"}, 403, "forbidden", ""},
		{"no key", "", id, map[string]any{"outcome": "approved"}, 401, "unauthorized", ""},
		{"unknown id", operatorKey, vaUnknown("kyb_"), map[string]any{"outcome": "approved"}, 404, "not_found", ""},
		{"malformed id", operatorKey, "va_" + id[4:], map[string]any{"outcome": "approved"}, 404, "not_found", ""},
	} {
		r := decide(c.key, c.id, c.body)
		e := requireError(t, r, c.status, c.code)
		if c.param != "" && e["param"] != c.param {
			t.Errorf("%s: param %v, want %s", c.name, e["param"], c.param)
		}
	}
	if s := kt2Get(t, api, key, id)["status"]; s != "pending_review" {
		t.Fatalf("refused decisions changed the status to %v", s)
	}

	reasons := []any{map[string]any{"code": "documents_verified", "message": "articles of organization match", "field": "business.legal_name"}}
	r := decide(operatorKey, id, map[string]any{"outcome": "approved", "reasons": reasons})
	v := vaRequire(t, r, http.StatusOK)
	kt2NoSecrets(t, "operator decision", r.Body)
	d := kt2Obj(t, v, "decision")
	if v["id"] != id || v["status"] != "approved" || d["outcome"] != "approved" || d["method"] != "manual" {
		t.Errorf("operator approval: %v", v)
	}
	if !reflect.DeepEqual(d["reasons"], reasons) {
		t.Errorf("reasons %v, want %v", d["reasons"], reasons)
	}
	if v["review"] == nil {
		t.Errorf("the review's eta was dropped by the decision: %v", v)
	}
	if got := kt2Get(t, api, key, id); !reflect.DeepEqual(got, v) {
		t.Errorf("GET after the decision differs from its response:\n%v\n%v", got, v)
	}
	for _, account := range []string{va, sibling} {
		if s := kt2VAStatus(t, api, key, account); s != "approved" {
			t.Errorf("account %s: kyb_status %q, want approved", account, s)
		}
	}
	// Decided: no second decision, either way.
	for _, outcome := range []string{"approved", "rejected"} {
		requireError(t, decide(operatorKey, id, map[string]any{"outcome": outcome}), http.StatusConflict, "invalid_state")
	}

	// A rejection without reasons records [].
	other := vaOpenID(t, api, key, platformID, "biz_operator_2")
	id2 := kt2SubmitID(t, api, key, other, kt2EINFor("1111"))
	kt2Decide(t, api)
	v = vaRequire(t, decide(operatorKey, id2, map[string]any{"outcome": "rejected"}), http.StatusOK)
	d = kt2Obj(t, v, "decision")
	if v["status"] != "rejected" || d["method"] != "manual" {
		t.Errorf("operator rejection: %v", v)
	}
	if rs, ok := d["reasons"].([]any); !ok || len(rs) != 0 {
		t.Errorf("reasons %v, want []", d["reasons"])
	}
	if s := kt2VAStatus(t, api, key, other); s != "rejected" {
		t.Errorf("kyb_status %q, want rejected", s)
	}
	// An automatically decided verification is not the operator's either.
	auto := vaOpenID(t, api, key, platformID, "biz_operator_3")
	id3 := kt2SubmitID(t, api, key, auto, kt2EINFor("0000"))
	kt2Decide(t, api)
	requireError(t, decide(operatorKey, id3, map[string]any{"outcome": "approved"}), http.StatusConflict, "invalid_state")
}

// TestKYBDecisionReasonFieldTooLong: a reason's field over 100 characters
// is refused naming that field.
func TestKYBDecisionReasonFieldTooLong(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := kt2SubmitID(t, api, key, vaOpenID(t, api, key, platformID, "biz_field"), kt2EINFor("1111"))
	kt2Decide(t, api)
	r := api.do("POST", "/v1/operator/kyb/"+id+"/decision", operatorKey, map[string]any{"outcome": "approved",
		"reasons": []any{map[string]any{"code": "r", "message": "m", "field": strings.Repeat("f", 101)}}})
	if e := requireError(t, r, http.StatusBadRequest, "invalid_request"); e["param"] != "reasons[0].field" {
		t.Errorf("param %v, want reasons[0].field", e["param"])
	}
}

func TestKYBSimulatedDecision(t *testing.T) {
	api, platformID, key := vaAPI(t)
	liveKey := api.enableLive(platformID)
	_, otherKey := api.newPlatform("Globex")
	va := vaOpenID(t, api, key, platformID, "biz_sim")
	id := kt2SubmitID(t, api, key, va, kt2EINFor("1111"))
	simulate := func(k, id string, body any) response {
		return api.do("POST", "/v1/simulations/kyb/"+id+"/decision", k, body)
	}
	// Pending, not yet in review.
	requireError(t, simulate(key, id, map[string]any{"outcome": "approved"}), http.StatusConflict, "invalid_state")
	kt2Decide(t, api)

	requireError(t, simulate(liveKey, id, map[string]any{"outcome": "approved"}), http.StatusForbidden, "forbidden")
	requireError(t, simulate(operatorKey, id, map[string]any{"outcome": "approved"}), http.StatusForbidden, "forbidden")
	requireError(t, simulate("", id, map[string]any{"outcome": "approved"}), http.StatusUnauthorized, "unauthorized")
	requireError(t, simulate(otherKey, id, map[string]any{"outcome": "approved"}), http.StatusNotFound, "not_found")
	requireError(t, simulate(key, vaUnknown("kyb_"), map[string]any{"outcome": "approved"}), http.StatusNotFound, "not_found")
	if e := requireError(t, simulate(key, id, map[string]any{"outcome": "maybe"}), http.StatusBadRequest, "invalid_request"); e["param"] != "outcome" {
		t.Errorf("param %v, want outcome", e["param"])
	}
	if e := requireError(t, simulate(key, id, map[string]any{"outcome": "approved", "note": "x"}), http.StatusBadRequest, "invalid_request"); e["param"] != "note" {
		t.Errorf("param %v, want note", e["param"])
	}
	if s := kt2Get(t, api, key, id)["status"]; s != "pending_review" {
		t.Fatalf("refused simulations changed the status to %v", s)
	}

	r := simulate(key, id, map[string]any{"outcome": "rejected", "reasons": []any{map[string]any{"code": "sim", "message": "simulated"}}})
	v := vaRequire(t, r, http.StatusOK)
	kt2NoSecrets(t, "simulated decision", r.Body)
	d := kt2Obj(t, v, "decision")
	if v["status"] != "rejected" || d["outcome"] != "rejected" || d["method"] != "manual" {
		t.Errorf("simulated rejection: %v", v)
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Errorf("no X-Request-Id")
	}
	if s := kt2VAStatus(t, api, key, va); s != "rejected" {
		t.Errorf("kyb_status %q, want rejected", s)
	}
	requireError(t, simulate(key, id, map[string]any{"outcome": "approved"}), http.StatusConflict, "invalid_state")

	// Resubmitted, reviewed and approved by simulation.
	id2 := kt2SubmitID(t, api, key, va, kt2EINFor("1111"))
	kt2Decide(t, api)
	v = vaRequire(t, simulate(key, id2, map[string]any{"outcome": "approved"}), http.StatusOK)
	if v["status"] != "approved" || kt2Obj(t, v, "decision")["method"] != "manual" {
		t.Errorf("simulated approval: %v", v)
	}
	if s := kt2VAStatus(t, api, key, va); s != "approved" {
		t.Errorf("kyb_status %q, want approved", s)
	}
}

func TestKYBConcurrentManualDecisionsOneWins(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := kt2SubmitID(t, api, key, vaOpenID(t, api, key, platformID, "biz_manual_race"), kt2EINFor("1111"))
	kt2Decide(t, api)
	const n = 6
	results := make([]response, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outcome := []string{"approved", "rejected"}[i%2]
			if i < n/2 {
				results[i] = api.do("POST", "/v1/operator/kyb/"+id+"/decision", operatorKey, map[string]any{"outcome": outcome})
			} else {
				results[i] = api.do("POST", "/v1/simulations/kyb/"+id+"/decision", key, map[string]any{"outcome": outcome})
			}
		}(i)
	}
	wg.Wait()
	won := ""
	for _, r := range results {
		switch {
		case r.Status == http.StatusOK:
			if won != "" {
				t.Errorf("two decisions won")
			}
			won = r.Str("status")
		case r.Status != http.StatusConflict || r.Str("code") != "invalid_state":
			t.Errorf("a losing decision got %d %s", r.Status, r.Body)
		}
	}
	if won == "" {
		t.Fatal("no decision won")
	}
	if s := kt2Get(t, api, key, id)["status"]; s != won {
		t.Errorf("status %v, the winning decision said %s", s, won)
	}
	events, _ := kt2Events(t, api, key, "")
	n2 := 0
	for _, e := range events {
		if e["type"] == "kyb.approved" || e["type"] == "kyb.rejected" {
			n2++
		}
	}
	if n2 != 1 {
		t.Errorf("%d decision events, want 1", n2)
	}
}

func TestKYBLiveGoesToManualReview(t *testing.T) {
	api, platformID, key := vaAPI(t)
	liveKey := api.enableLive(platformID)
	va := vaOpenID(t, api, liveKey, platformID, "biz_live")
	// The same entity_ref in the sandbox is another business.
	sandboxVA := vaOpenID(t, api, key, platformID, "biz_live")
	ids := map[string]string{}
	for _, last4 := range []string{"6789", "0000"} {
		entity := "biz_live"
		account := va
		if last4 == "0000" {
			entity = "biz_live_0000"
			account = vaOpenID(t, api, liveKey, platformID, entity)
		}
		r := kt2Submit(api, liveKey, kt2Submission(account, kt2EINFor(last4)))
		v := vaRequire(t, r, http.StatusCreated)
		kt2NoSecrets(t, "live POST /kyb", r.Body)
		if v["status"] != "pending" || v["environment"] != "live" || v["entity_ref"] != entity {
			t.Errorf("live submission: %v", v)
		}
		ids[last4] = v["id"].(string)
	}
	kt2Decide(t, api)
	for last4, id := range ids {
		v := kt2Get(t, api, liveKey, id)
		if v["status"] != "pending_review" || v["decision"] != nil {
			t.Errorf("live EIN …%s: status %v decision %v, want pending_review for the operator", last4, v["status"], v["decision"])
			continue
		}
		eta := kt2Time(t, kt2Obj(t, v, "review")["eta"])
		if created := kt2Time(t, v["created_at"]); eta.Before(created.Add(24*time.Hour)) || eta.After(created.Add(24*time.Hour+time.Minute)) {
			t.Errorf("live EIN …%s: review.eta %v, created_at %v", last4, eta, created)
		}
	}
	if s := kt2VAStatus(t, api, liveKey, va); s != "pending_review" {
		t.Errorf("the live account's kyb_status %q, want pending_review", s)
	}
	if s := kt2VAStatus(t, api, key, sandboxVA); s != "not_started" {
		t.Errorf("the sandbox account of the same entity_ref is %q, want not_started", s)
	}
	// Environments do not see each other.
	requireError(t, api.do("GET", "/v1/kyb/"+ids["6789"], key, nil), http.StatusNotFound, "not_found")
	if items := vaData(t, vaGet(t, api, key, "/v1/kyb")); len(items) != 0 {
		t.Errorf("the sandbox key lists live verifications: %v", items)
	}
	if n := len(vaData(t, vaGet(t, api, liveKey, "/v1/kyb"))); n != 2 {
		t.Errorf("the live key lists %d verifications, want 2", n)
	}
	// A sandbox business of the same entity_ref is verified on its own.
	sid := kt2SubmitID(t, api, key, sandboxVA, kt2EINFor("6789"))
	kt2Decide(t, api)
	if s := kt2Get(t, api, key, sid)["status"]; s != "approved" {
		t.Errorf("the sandbox verification is %v, want approved", s)
	}
	if s := kt2VAStatus(t, api, liveKey, va); s != "pending_review" {
		t.Errorf("the sandbox approval leaked into live: %q", s)
	}
	// Only the operator decides live reviews: simulations are sandbox only.
	requireError(t, api.do("POST", "/v1/simulations/kyb/"+ids["6789"]+"/decision", liveKey, map[string]any{"outcome": "approved"}), http.StatusForbidden, "forbidden")
	requireError(t, api.do("POST", "/v1/simulations/kyb/"+ids["6789"]+"/decision", key, map[string]any{"outcome": "approved"}), http.StatusNotFound, "not_found")
	v := vaRequire(t, api.do("POST", "/v1/operator/kyb/"+ids["6789"]+"/decision", operatorKey, map[string]any{"outcome": "approved"}), http.StatusOK)
	if v["status"] != "approved" || v["environment"] != "live" {
		t.Errorf("operator approval of a live verification: %v", v)
	}
	if s := kt2VAStatus(t, api, liveKey, va); s != "approved" {
		t.Errorf("the live account's kyb_status %q, want approved", s)
	}
	events, raw := kt2Events(t, api, liveKey, "")
	kt2NoSecrets(t, "live events", raw)
	kt2EventFor(t, events, "kyb.pending_review", ids["6789"])
	kt2EventFor(t, events, "kyb.approved", ids["6789"])
	kt2EventFor(t, events, "kyb.pending_review", ids["0000"])
	for _, e := range events {
		if e["environment"] != "live" {
			t.Errorf("the live key sees a %v event", e["environment"])
		}
	}
}

func TestKYBStatusIsSharedAndListFilters(t *testing.T) {
	api, platformID, key := vaAPI(t)
	a := vaOpenID(t, api, key, platformID, "biz_shared")
	b := vaOpenID(t, api, key, platformID, "biz_shared")
	c := vaOpenID(t, api, key, platformID, "biz_alone")
	for _, va := range []string{a, b, c} {
		if s := kt2VAStatus(t, api, key, va); s != "not_started" {
			t.Errorf("%s: kyb_status %q before any submission", va, s)
		}
	}
	shared := kt2SubmitID(t, api, key, a, kt2EINFor("6789"))
	for va, want := range map[string]string{a: "pending", b: "pending", c: "not_started"} {
		if s := kt2VAStatus(t, api, key, va); s != want {
			t.Errorf("%s: kyb_status %q, want %s", va, s, want)
		}
	}
	rejected := kt2SubmitID(t, api, key, c, kt2EINFor("0000"))
	kt2Decide(t, api)
	for va, want := range map[string]string{a: "approved", b: "approved", c: "rejected"} {
		if s := kt2VAStatus(t, api, key, va); s != want {
			t.Errorf("%s: kyb_status %q, want %s", va, s, want)
		}
	}
	// The account list shows it too, and so does an account opened later.
	for _, item := range vaData(t, vaGet(t, api, key, "/v1/virtual-accounts?entity_ref=biz_shared")) {
		if item["kyb_status"] != "approved" {
			t.Errorf("list: %v has kyb_status %v", item["id"], item["kyb_status"])
		}
	}
	later := vaOpen(t, api, key, platformID, "biz_shared")
	if later["kyb_status"] != "approved" {
		t.Errorf("an account opened after the approval shows %v", later["kyb_status"])
	}
	events, _ := kt2Events(t, api, key, "virtual_account.created")
	for _, e := range events {
		obj := e["data"].(map[string]any)["object"].(map[string]any)
		if obj["id"] == later["id"] && obj["kyb_status"] != "approved" {
			t.Errorf("virtual_account.created of the later account shows kyb_status %v", obj["kyb_status"])
		}
	}
	// The other environment does not share it.
	liveKey := api.enableLive(platformID)
	if s := vaOpen(t, api, liveKey, platformID, "biz_shared")["kyb_status"]; s != "not_started" {
		t.Errorf("a live account of the entity shows %v", s)
	}

	// A second business, in review, for the status filter.
	d := vaOpenID(t, api, key, platformID, "biz_review")
	review := kt2SubmitID(t, api, key, d, kt2EINFor("1111"))
	kt2Decide(t, api)
	pending := kt2SubmitID(t, api, key, vaOpenID(t, api, key, platformID, "biz_pending"), kt2EINFor("6789"))

	for _, q := range []struct {
		query string
		want  []string
	}{
		{"", []string{pending, review, rejected, shared}},
		{"virtual_account_id=" + a, []string{shared}},
		{"virtual_account_id=" + b, nil}, // shares the status, not the verification
		{"virtual_account_id=" + c, []string{rejected}},
		{"virtual_account_id=" + vaUnknown("va_"), nil},
		{"status=approved", []string{shared}},
		{"status=rejected", []string{rejected}},
		{"status=pending_review", []string{review}},
		{"status=pending", []string{pending}},
		{"status=approved&virtual_account_id=" + c, nil},
		{"status=rejected&virtual_account_id=" + c, []string{rejected}},
	} {
		got := vaIDs(t, vaGet(t, api, key, "/v1/kyb?"+q.query))
		if !reflect.DeepEqual(got, q.want) {
			t.Errorf("GET /kyb?%s = %v, want %v", q.query, got, q.want)
		}
	}
	// Pages of one, newest first.
	if got := vaFlatten(vaWalk(t, api, key, "/v1/kyb", 1)); !reflect.DeepEqual(got, []string{pending, review, rejected, shared}) {
		t.Errorf("walk = %v", got)
	}
	for _, q := range []struct{ query, param string }{
		{"status=done", "status"}, {"status=APPROVED", "status"}, {"status=not_started", "status"},
		{"limit=0", "limit"}, {"limit=101", "limit"}, {"cursor=bogus", "cursor"},
	} {
		if e := requireError(t, api.do("GET", "/v1/kyb?"+q.query, key, nil), http.StatusBadRequest, "invalid_request"); e["param"] != q.param {
			t.Errorf("GET /kyb?%s: param %v, want %s", q.query, e["param"], q.param)
		}
	}
	// Another platform sees none of them.
	_, otherKey := api.newPlatform("Globex")
	if items := vaData(t, vaGet(t, api, otherKey, "/v1/kyb")); len(items) != 0 {
		t.Errorf("another platform lists %v", items)
	}
	requireError(t, api.do("GET", "/v1/kyb/"+shared, otherKey, nil), http.StatusNotFound, "not_found")
	requireError(t, api.do("GET", "/v1/kyb/"+shared, liveKey, nil), http.StatusNotFound, "not_found")
	requireError(t, api.do("GET", "/v1/kyb/"+vaUnknown("kyb_"), key, nil), http.StatusNotFound, "not_found")
	requireError(t, api.do("GET", "/v1/kyb/"+a, key, nil), http.StatusNotFound, "not_found")
	requireError(t, api.do("GET", "/v1/kyb/"+shared, operatorKey, nil), http.StatusForbidden, "forbidden")
}

func TestKYBEvents(t *testing.T) {
	api, platformID, key := vaAPI(t)
	review := kt2SubmitID(t, api, key, vaOpenID(t, api, key, platformID, "biz_ev_review"), kt2EINFor("1111"))
	rejected := kt2SubmitID(t, api, key, vaOpenID(t, api, key, platformID, "biz_ev_rejected"), kt2EINFor("0000"))
	approved := kt2SubmitID(t, api, key, vaOpenID(t, api, key, platformID, "biz_ev_approved"), kt2EINFor("6789"))
	screenedVA := vaOpenID(t, api, key, platformID, "biz_ev_screened")
	body := kt2Submission(screenedVA, kt2EINFor("6789"))
	kt2Business(body)["legal_name"] = "Acme OFAC TEST Holdings"
	screened := requireError(t, kt2Submit(api, key, body), http.StatusUnprocessableEntity, "compliance_rejected")["resource_id"].(string)

	// Submissions alone emit no public event.
	if events, _ := kt2Events(t, api, key, ""); len(events) != 5 { // 4 virtual_account.created + the screening rejection
		var types []any
		for _, e := range events {
			types = append(types, e["type"])
		}
		t.Errorf("before any decision: events %v, want 4 virtual_account.created and 1 kyb.rejected", types)
	}
	kt2Decide(t, api)
	// At review: the event carries review.eta.
	events, raw := kt2Events(t, api, key, "kyb.pending_review")
	kt2NoSecrets(t, "GET /events?type=kyb.pending_review", raw)
	if len(events) != 1 {
		t.Fatalf("%d kyb.pending_review events, want 1", len(events))
	}
	pr := kt2EventFor(t, events, "kyb.pending_review", review)
	obj := pr["data"].(map[string]any)["object"].(map[string]any)
	if got := kt2Get(t, api, key, review); !reflect.DeepEqual(obj, got) {
		t.Errorf("kyb.pending_review data.object differs from GET:\n%v\n%v", obj, got)
	}
	if obj["status"] != "pending_review" || kt2Obj(t, obj, "review")["eta"] == nil {
		t.Errorf("kyb.pending_review object: %v", obj)
	}
	vr := vaRequire(t, api.do("POST", "/v1/operator/kyb/"+review+"/decision", operatorKey, map[string]any{"outcome": "approved"}), http.StatusOK)

	events, raw = kt2Events(t, api, key, "")
	kt2NoSecrets(t, "GET /events", raw)
	for _, e := range events {
		if e["platform_id"] != platformID || e["environment"] != "sandbox" || e["object"] != "event" {
			t.Errorf("event %v: platform %v environment %v", e["id"], e["platform_id"], e["environment"])
		}
		if typ, _ := e["type"].(string); strings.HasPrefix(typ, "kyb.") && typ != "kyb.pending_review" && typ != "kyb.approved" && typ != "kyb.rejected" {
			t.Errorf("unexpected event type %s", typ)
		}
	}
	for _, c := range []struct {
		typ, id string
		want    map[string]any
	}{
		{"kyb.approved", approved, kt2Get(t, api, key, approved)},
		{"kyb.approved", review, vr},
		{"kyb.rejected", rejected, kt2Get(t, api, key, rejected)},
		{"kyb.rejected", screened, kt2Get(t, api, key, screened)},
	} {
		e := kt2EventFor(t, events, c.typ, c.id)
		obj := e["data"].(map[string]any)["object"].(map[string]any)
		if !reflect.DeepEqual(obj, c.want) {
			t.Errorf("%s of %s: data.object differs from GET:\n%v\n%v", c.typ, c.id, obj, c.want)
		}
		if !strings.HasPrefix(e["id"].(string), "evt_") {
			t.Errorf("event id %v", e["id"])
		}
		got := vaGet(t, api, key, "/v1/events/"+e["id"].(string))
		if !reflect.DeepEqual(got, e) {
			t.Errorf("GET /events/%s differs from the list", e["id"])
		}
	}
	// The kyb.pending_review event kept the verification as it was then.
	pr = kt2EventFor(t, events, "kyb.pending_review", review)
	if s := pr["data"].(map[string]any)["object"].(map[string]any)["status"]; s != "pending_review" {
		t.Errorf("the kyb.pending_review event now shows %v", s)
	}
	// The type filter.
	for typ, want := range map[string]int{"kyb.approved": 2, "kyb.rejected": 2, "kyb.pending_review": 1} {
		if got, _ := kt2Events(t, api, key, typ); len(got) != want {
			t.Errorf("GET /events?type=%s: %d events, want %d", typ, len(got), want)
		}
	}
	requireError(t, api.do("GET", "/v1/events?type=kyb.submitted", key, nil), http.StatusBadRequest, "invalid_request")
	// Another platform sees none.
	_, otherKey := api.newPlatform("Globex")
	if got, _ := kt2Events(t, api, otherKey, ""); len(got) != 0 {
		t.Errorf("another platform sees %d events", len(got))
	}
}
