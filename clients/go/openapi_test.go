package treasury

// The client against the OpenAPI document: every operation has a method, and
// every model has exactly the schema's properties.

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const specPath = "../../http/openapi.json"

// operations maps every operation of the document to the client's method
// ("Resource.Sub.Method" from *Client). A route added to the API fails
// TestEveryOperationHasAMethod until it is here and the method exists.
var operations = map[string]string{
	"POST /platforms":                                    "Platforms.Register",
	"GET /operator/platforms":                            "Platforms.List",
	"GET /operator/platforms/{id}":                       "Platforms.Retrieve",
	"PATCH /operator/platforms/{id}":                     "Platforms.Update",
	"POST /operator/platforms/{id}/approve":              "Platforms.Approve",
	"POST /operator/platforms/{id}/enable-live":          "Platforms.EnableLive",
	"POST /operator/platforms/{id}/fund":                 "Platforms.Fund",
	"GET /platform":                                      "Platform.Retrieve",
	"GET /platform/settings":                             "Platform.Settings.Retrieve",
	"PATCH /platform/settings":                           "Platform.Settings.Update",
	"POST /platform/api-keys":                            "Platform.APIKeys.Create",
	"GET /platform/api-keys":                             "Platform.APIKeys.List",
	"DELETE /platform/api-keys/{id}":                     "Platform.APIKeys.Revoke",
	"POST /platform/api-keys/{id}/roll":                  "Platform.APIKeys.Roll",
	"GET /platform/revenue-share":                        "Platform.RevenueShare",
	"POST /virtual-accounts":                             "VirtualAccounts.Create",
	"GET /virtual-accounts":                              "VirtualAccounts.List",
	"GET /virtual-accounts/{id}":                         "VirtualAccounts.Retrieve",
	"GET /virtual-accounts/{id}/balance":                 "VirtualAccounts.Balance",
	"GET /virtual-accounts/{id}/transactions":            "VirtualAccounts.Transactions",
	"GET /virtual-accounts/{id}/statements/{month}":      "VirtualAccounts.Statement VirtualAccounts.StatementCSV",
	"POST /virtual-accounts/{id}/freeze":                 "VirtualAccounts.Freeze",
	"POST /virtual-accounts/{id}/unfreeze":               "VirtualAccounts.Unfreeze",
	"POST /virtual-accounts/{id}/close":                  "VirtualAccounts.Close",
	"GET /ledger/accounts":                               "Ledger.Accounts.List",
	"GET /ledger/entries":                                "Ledger.Entries.List",
	"POST /ledger/entries":                               "Ledger.Entries.Create",
	"GET /ledger/exports":                                "Ledger.Export",
	"GET /ledger/journal-entries":                        "Ledger.JournalEntries.List",
	"GET /ledger/journal-entries/{id}":                   "Ledger.JournalEntries.Retrieve",
	"POST /payments":                                     "Payments.Create",
	"GET /payments":                                      "Payments.List",
	"GET /payments/{id}":                                 "Payments.Retrieve",
	"POST /payments/{id}/cancel":                         "Payments.Cancel",
	"POST /payments/{id}/approve":                        "Payments.Approve",
	"POST /payments/{id}/deny":                           "Payments.Deny",
	"POST /book-transfers":                               "BookTransfers.Create",
	"GET /book-transfers":                                "BookTransfers.List",
	"GET /book-transfers/{id}":                           "BookTransfers.Retrieve",
	"POST /counterparties":                               "Counterparties.Create",
	"GET /counterparties":                                "Counterparties.List",
	"GET /counterparties/{id}":                           "Counterparties.Retrieve",
	"DELETE /counterparties/{id}":                        "Counterparties.Delete",
	"POST /counterparties/{id}/verify":                   "Counterparties.Verify",
	"POST /kyb":                                          "KYB.Create",
	"GET /kyb":                                           "KYB.List",
	"GET /kyb/{id}":                                      "KYB.Retrieve",
	"POST /operator/kyb/{id}/decision":                   "Operator.DecideKYB",
	"POST /simulations/inbound-transfers":                "Simulations.InboundTransfer",
	"POST /simulations/kyb/{id}/decision":                "Simulations.KYBDecision",
	"POST /simulations/payments/{id}/complete":           "Simulations.CompletePayment",
	"POST /simulations/payments/{id}/fail":               "Simulations.FailPayment",
	"POST /simulations/payments/{id}/release":            "Simulations.ReleasePayment",
	"GET /events":                                        "Events.List",
	"GET /events/{id}":                                   "Events.Retrieve",
	"POST /webhooks":                                     "Webhooks.Create",
	"GET /webhooks":                                      "Webhooks.List",
	"GET /webhooks/{id}":                                 "Webhooks.Retrieve",
	"PATCH /webhooks/{id}":                               "Webhooks.Update",
	"DELETE /webhooks/{id}":                              "Webhooks.Delete",
	"POST /webhooks/{id}/rotate-secret":                  "Webhooks.RotateSecret",
	"POST /webhooks/{id}/test":                           "Webhooks.Test",
	"POST /webhooks/{id}/replay":                         "Webhooks.Replay",
	"GET /webhooks/{id}/deliveries":                      "Webhooks.Deliveries.List",
	"POST /webhooks/{id}/deliveries/{delivery_id}/retry": "Webhooks.Deliveries.Retry",
	"GET /operator/rails/ach/files":                      "Operator.ACHFiles.List",
	"POST /operator/rails/ach/files":                     "Operator.ACHFiles.Cut",
}

// notClientOperations are the document's operations a client does not wrap.
var notClientOperations = map[string]bool{"GET /openapi.json": true}

type schemaDoc struct {
	Ref        string                     `json:"$ref"`
	Properties map[string]json.RawMessage `json:"properties"`
	AllOf      []schemaDoc                `json:"allOf"`
}

type spec struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]schemaDoc `json:"schemas"`
	} `json:"components"`
}

// properties returns a schema's property names, with those of its allOf
// members.
func (s spec) properties(schema schemaDoc) []string {
	set := map[string]bool{}
	var walk func(schemaDoc)
	walk = func(sd schemaDoc) {
		if name, ok := strings.CutPrefix(sd.Ref, "#/components/schemas/"); ok {
			walk(s.Components.Schemas[name])
		}
		for p := range sd.Properties {
			set[p] = true
		}
		for _, member := range sd.AllOf {
			walk(member)
		}
	}
	walk(schema)
	return keys(set)
}

func loadSpec(t *testing.T) spec {
	t.Helper()
	raw, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	var s spec
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEveryOperationHasAMethod(t *testing.T) {
	s := loadSpec(t)
	inSpec := map[string]bool{}
	for path, item := range s.Paths {
		for method := range item {
			switch method {
			case "get", "post", "put", "patch", "delete":
			default:
				continue
			}
			op := strings.ToUpper(method) + " " + path
			inSpec[op] = true
			if notClientOperations[op] {
				continue
			}
			if _, ok := operations[op]; !ok {
				t.Errorf("%s: no client method (add it, and to the operations table)", op)
			}
		}
	}
	c, err := NewClient("sk_sandbox_x")
	if err != nil {
		t.Fatal(err)
	}
	for op, methods := range operations {
		if !inSpec[op] {
			t.Errorf("%s is in the operations table but not in openapi.json", op)
		}
		for _, m := range strings.Fields(methods) {
			if !hasMethod(reflect.ValueOf(c), strings.Split(m, ".")) {
				t.Errorf("%s: the client has no method %s", op, m)
			}
		}
	}
}

// hasMethod follows exported fields of v down path, and the last element
// must be a method.
func hasMethod(v reflect.Value, path []string) bool {
	for i, name := range path {
		if i == len(path)-1 {
			return v.MethodByName(name).IsValid()
		}
		f := reflect.Indirect(v).FieldByName(name)
		if !f.IsValid() || f.IsNil() {
			return false
		}
		v = f
	}
	return false
}

// TestModelsMatchTheSchemas checks every generated model against the schema
// it comes from in the current document: a property the model lacks, or a
// field the schema lacks, fails until `go generate ./...` is run.
func TestModelsMatchTheSchemas(t *testing.T) {
	s := loadSpec(t)
	unused := map[string]bool{}
	for _, name := range unusedSchemas {
		unused[name] = true
	}
	for name, schema := range s.Components.Schemas {
		typ, ok := schemaTypes[name]
		switch {
		case !ok && unused[name]:
			continue
		case !ok:
			t.Errorf("schema %s has no model: run go generate ./...", name)
			continue
		}
		want := s.properties(schema)
		if len(want) == 0 {
			continue // a union (oneOf) or a map
		}
		if typ.Kind() != reflect.Struct {
			t.Errorf("schema %s: model %s is a %s, not a struct", name, typ, typ.Kind())
			continue
		}
		got := jsonFields(typ)
		if strings.Join(want, ",") != strings.Join(got, ",") {
			t.Errorf("schema %s: properties %v, model %s has %v: run go generate ./...", name, want, typ, got)
		}
	}
	for name := range schemaTypes {
		if _, ok := s.Components.Schemas[name]; !ok {
			t.Errorf("model of schema %s, which openapi.json no longer has: run go generate ./...", name)
		}
	}
	// The error body is carried by *APIError.
	errorSchema, ok := s.Components.Schemas["Error"]
	if !ok {
		t.Fatal("openapi.json has no Error schema")
	}
	apiErrorFields := map[string]string{
		"code": "Code", "message": "Message", "request_id": "RequestID", "param": "Param", "resource_id": "ResourceID",
	}
	for prop := range errorSchema.Properties {
		field, ok := apiErrorFields[prop]
		if !ok {
			t.Errorf("the Error schema's property %s is not carried by APIError", prop)
			continue
		}
		if _, ok := reflect.TypeFor[APIError]().FieldByName(field); !ok {
			t.Errorf("APIError has no field %s", field)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
