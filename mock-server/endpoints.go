package mockserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

const (
	execdPort  = 44772
	egressPort = 18080
)

type endpointJSON struct {
	Endpoint string            `json:"endpoint"`
	Headers  map[string]string `json:"headers,omitempty"`
}

// parseBoolQuery mirrors pydantic's bool parsing of query strings.
func parseBoolQuery(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "t", "yes", "y", "on":
		return true, true
	case "0", "false", "f", "no", "n", "off":
		return false, true
	}
	return false, false
}

func (s *Server) handleEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	portStr := r.PathValue("port")
	port, err := strconv.Atoi(portStr)
	var errs []validationItem
	if err != nil {
		errs = append(errs, vIntParse([]any{"path", "port"}, portStr))
	}
	q := pyQuery(r.URL.RawQuery)
	useProxy := false
	if v, ok := q["use_server_proxy"]; ok && len(v) > 0 {
		b, ok := parseBoolQuery(v[len(v)-1])
		if !ok {
			errs = append(errs, vType("bool_parsing", []any{"query", "use_server_proxy"}, v[len(v)-1],
				"Input should be a valid boolean, unable to interpret input"))
		}
		useProxy = b
	}
	if len(errs) > 0 {
		writeValidation(w, errs...)
		return
	}
	if _, ok := q["expires"]; ok {
		if useProxy {
			writeError(w, http.StatusBadRequest, "SANDBOX::INVALID_PARAMETER", "expires cannot be combined with use_server_proxy=true.")
			return
		}
		writeError(w, http.StatusBadRequest, "SANDBOX::API_NOT_SUPPORTED", "Signed endpoints (expires) are not supported by the Docker runtime.")
		return
	}
	if port < 1 || port > 65535 {
		writeError(w, http.StatusBadRequest, "DOCKER::INVALID_PORT", fmt.Sprintf("Port %d is out of range (1-65535).", port))
		return
	}
	sb := s.lookupFor(r, id)
	if sb == nil {
		notFound(w, id)
		return
	}
	ep := endpointFor(sb, port)
	if useProxy {
		ep.Endpoint = fmt.Sprintf("%s/sandboxes/%s/proxy/%d", r.Host, id, port)
	}
	writeJSON(w, http.StatusOK, ep)
}

// endpointFor is the direct endpoint in the Docker bridge form (CONTRACT
// §1.10 and the 1.1.1 observation): every port, 44772 included, is
// <host>:<execd host port>/proxy/<port>, through execd's own reverse proxy
// (/proxy/44772 is execd itself). 18080 carries the egress auth header when
// a policy exists. Where the sandbox's execd has an access token
// (Config.ExecdAccessToken), every port's endpoint carries it: every port
// is reached through execd, whose token check comes first.
func endpointFor(sb *sandbox, port int) endpointJSON {
	ep := endpointJSON{Endpoint: fmt.Sprintf("%s/proxy/%d", sb.execd.Addr(), port)}
	if port == egressPort && sb.egress != nil {
		ep.Headers = map[string]string{"OPENSANDBOX-EGRESS-AUTH": sb.egress.Token()}
	}
	if t := sb.execd.token; t != "" {
		if ep.Headers == nil {
			ep.Headers = map[string]string{}
		}
		ep.Headers[headerExecdToken] = t
	}
	return ep
}
