package mockserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRenewExpiresAtLikePydantic: the renew body's expiresAt is read as the
// real server (opensandbox-server 1.1.1, pydantic 2.14 / pydantic-core 2.50)
// reads it. Every expectation below was observed by validating the same
// body with the server's own RenewSandboxExpirationRequest model: a number,
// or a string of one, is a Unix timestamp (milliseconds above 2e10), so
// {"expiresAt":12} is a valid 1970 datetime that the handler refuses as not
// in the future (400 DOCKER::INVALID_EXPIRATION), not a 422.
func TestRenewExpiresAtLikePydantic(t *testing.T) {
	e := newEnv(t)
	id := e.create(func(m map[string]any) { m["timeout"] = 3600 })
	const y2100 = "2100-01-01T00:00:00Z"
	for _, tc := range []struct {
		body   string
		status int
		want   string // 200: the new expiresAt; 422: the error type
		msg    string // 422: msg
	}{
		{`12`, http.StatusBadRequest, "", ""},
		{`-1`, http.StatusBadRequest, "", ""},
		{`0`, http.StatusBadRequest, "", ""},
		{`12.5`, http.StatusBadRequest, "", ""},
		{`"12"`, http.StatusBadRequest, "", ""},
		{`20000000001`, http.StatusBadRequest, "", ""}, // milliseconds: 1970-08-20
		{`4102444800`, http.StatusOK, y2100, ""},
		{`4102444800000`, http.StatusOK, y2100, ""}, // milliseconds
		{`4.1024448e9`, http.StatusOK, y2100, ""},
		{`"4102444800"`, http.StatusOK, y2100, ""},
		{`4102444800.5`, http.StatusOK, "2100-01-01T00:00:00.500000Z", ""},
		{`4102444800.0000005`, http.StatusOK, y2100, ""}, // below float64's resolution there
		{`253402300799999`, http.StatusOK, "9999-12-31T23:59:59.999000Z", ""},
		{`"2100-01-01"`, http.StatusOK, y2100, ""}, // a date alone is naive midnight, read as UTC
		{`253402300800000`, http.StatusUnprocessableEntity, "datetime_parsing",
			"Input should be a valid datetime, dates after 9999 are not supported as unix timestamps"},
		{`1e30`, http.StatusUnprocessableEntity, "datetime_parsing",
			"Input should be a valid datetime, dates after 9999 are not supported as unix timestamps"},
		{`1e400`, http.StatusUnprocessableEntity, "datetime_parsing",
			"Input should be a valid datetime, dates after 9999 are not supported as unix timestamps"},
		{`-1e18`, http.StatusUnprocessableEntity, "datetime_parsing",
			"Input should be a valid datetime, dates before 0000 are not supported as unix timestamps"},
		{`-9223372036854775808`, http.StatusUnprocessableEntity, "datetime_parsing",
			"Input should be a valid datetime, dates before 0000 are not supported as unix timestamps"},
		{`-62135596801000`, http.StatusUnprocessableEntity, "datetime_parsing", "Input should be a valid datetime, year 0 is out of range"},
		{`9223372036854775808`, http.StatusUnprocessableEntity, "datetime_type", "Input should be a valid datetime"},
		{`true`, http.StatusUnprocessableEntity, "datetime_type", "Input should be a valid datetime"},
		{`null`, http.StatusUnprocessableEntity, "datetime_type", "Input should be a valid datetime"},
		{`[]`, http.StatusUnprocessableEntity, "datetime_type", "Input should be a valid datetime"},
		{`{}`, http.StatusUnprocessableEntity, "datetime_type", "Input should be a valid datetime"},
		{`"  2100-01-01T00:00:00Z "`, http.StatusUnprocessableEntity, "datetime_from_date_parsing",
			"Input should be a valid datetime or date, invalid character in year"},
		{`"253402300800000"`, http.StatusUnprocessableEntity, "datetime_from_date_parsing",
			"Input should be a valid datetime or date, dates after 9999 are not supported as unix timestamps"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			r := e.call("POST", "/v1/sandboxes/"+id+"/renew-expiration", `{"expiresAt":`+tc.body+`}`, nil)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			body := r.JSON(t)
			switch tc.status {
			case http.StatusOK:
				assert.Equal(t, tc.want, body["expiresAt"])
			case http.StatusBadRequest:
				assert.Equal(t, "DOCKER::INVALID_EXPIRATION", body["code"])
				assert.Equal(t, "New expiration time must be in the future.", body["message"])
			default:
				detail, _ := body["detail"].([]any)
				require.Len(t, detail, 1, "%s", r.Body)
				item := detail[0].(map[string]any)
				assert.Equal(t, tc.want, item["type"])
				assert.Equal(t, tc.msg, item["msg"])
				assert.Equal(t, []any{"body", "expiresAt"}, item["loc"])
				if tc.want == "datetime_type" {
					assert.NotContains(t, item, "ctx")
				} else {
					assert.NotEmpty(t, item["ctx"])
				}
			}
		})
	}
	// A renewed sandbox reports the number's time; a missing field is still "missing".
	g := e.call("GET", "/v1/sandboxes/"+id, nil, nil).JSON(t)
	assert.Equal(t, y2100, g["expiresAt"])
	r := e.call("POST", "/v1/sandboxes/"+id+"/renew-expiration", `{}`, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	assert.Contains(t, string(r.Body), `"type":"missing"`)
	// Validation comes before the sandbox lookup, as in FastAPI.
	r = e.call("POST", "/v1/sandboxes/nope/renew-expiration", `{"expiresAt":true}`, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status)
	r = e.call("POST", "/v1/sandboxes/nope/renew-expiration", `{"expiresAt":4102444800}`, nil)
	assert.Equal(t, http.StatusNotFound, r.Status)
}
