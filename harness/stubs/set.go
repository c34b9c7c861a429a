package stubs

import (
	"errors"
	"fmt"
)

// Config configures Start.
type Config struct {
	// WheelsDir holds the distributions the package index serves
	// (e.g. <repo>/.cache/wheels). Missing or empty is allowed.
	WheelsDir string
	// DataAPIToken is the real data API credential (CAPSTONE_DATA_API_TOKEN).
	DataAPIToken string
}

// Set is every stub a run needs.
type Set struct {
	Index   *PackageIndex
	DataAPI *DataAPI
	Exfil   *Exfil
	CSV     *CSVServer
}

// Start starts all stubs. On error, those already started are closed.
func Start(cfg Config) (*Set, error) {
	s := &Set{}
	var err error
	if s.Index, err = NewPackageIndex(cfg.WheelsDir); err != nil {
		return nil, err
	}
	if s.DataAPI, err = NewDataAPI(cfg.DataAPIToken); err != nil {
		s.Close()
		return nil, err
	}
	if s.Exfil, err = NewExfil(); err != nil {
		s.Close()
		return nil, err
	}
	if s.CSV, err = NewCSVServer(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Upstreams maps each public hostname (lower case) to its stub's
// "http://127.0.0.1:port", for egress.HubConfig.Upstreams. The exfil host
// is mapped too, so that a run whose policy wrongly allows it leaves
// evidence here instead of failing closed. The CSV server is not a public
// host (subjects get its loopback URL directly).
func (s *Set) Upstreams() map[string]string {
	return map[string]string{
		PyPIHost:    s.Index.URL(),
		FilesHost:   s.Index.URL(),
		DataAPIHost: s.DataAPI.URL(),
		ExfilHost:   s.Exfil.URL(),
	}
}

// ResetLogs empties every request log (between scenarios).
func (s *Set) ResetLogs() {
	if s.Index != nil {
		s.Index.Reset()
	}
	if s.DataAPI != nil {
		s.DataAPI.Reset()
	}
	if s.Exfil != nil {
		s.Exfil.Reset()
	}
	if s.CSV != nil {
		s.CSV.Reset()
	}
}

// Close stops every started stub.
func (s *Set) Close() error {
	var errs []error
	closeOne := func(name string, c interface{ Close() error }) {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if s.Index != nil {
		closeOne("index", s.Index)
	}
	if s.DataAPI != nil {
		closeOne("data api", s.DataAPI)
	}
	if s.Exfil != nil {
		closeOne("exfil", s.Exfil)
	}
	if s.CSV != nil {
		closeOne("csv", s.CSV)
	}
	return errors.Join(errs...)
}

// Watch tells every stub which values (label → value: planted secrets,
// input markers) to look for in the requests it gets, in any encoding
// wire.FindWatched knows; the exfil sink also redacts them from its log
// (Exfil.Watch).
func (s *Set) Watch(canaries map[string]string) {
	if s.Exfil != nil {
		s.Exfil.Watch(canaries)
	}
	if s.Index != nil {
		s.Index.watchValues(canaries)
	}
	if s.DataAPI != nil {
		s.DataAPI.watchValues(canaries)
	}
	if s.CSV != nil {
		s.CSV.watchValues(canaries)
	}
}
