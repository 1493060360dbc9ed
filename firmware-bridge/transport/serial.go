package transport

import (
	"errors"
	"fmt"

	"go.bug.st/serial"
)

// ErrConfig is an invalid transport configuration.
var ErrConfig = errors.New("invalid transport config")

// SerialConfig is the UART framing. The zero value means 115200 8N1.
type SerialConfig struct {
	Baud     int    // default 115200
	DataBits int    // 5..8, default 8
	Parity   string // "none" (default), "even" or "odd"
	StopBits int    // 1 (default) or 2
}

// WithDefaults fills zero fields with the documented defaults.
func (c SerialConfig) WithDefaults() SerialConfig {
	if c.Baud == 0 {
		c.Baud = 115200
	}
	if c.DataBits == 0 {
		c.DataBits = 8
	}
	if c.Parity == "" {
		c.Parity = "none"
	}
	if c.StopBits == 0 {
		c.StopBits = 1
	}
	return c
}

// Validate checks a config after defaults are applied.
func (c SerialConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Baud < 300 || c.Baud > 4000000:
		return fmt.Errorf("%w: baud %d outside 300..4000000", ErrConfig, c.Baud)
	case c.DataBits < 5 || c.DataBits > 8:
		return fmt.Errorf("%w: data bits %d outside 5..8", ErrConfig, c.DataBits)
	case c.StopBits != 1 && c.StopBits != 2:
		return fmt.Errorf("%w: stop bits %d, want 1 or 2", ErrConfig, c.StopBits)
	}
	if _, ok := parities[c.Parity]; !ok {
		return fmt.Errorf("%w: parity %q, want none, even or odd", ErrConfig, c.Parity)
	}
	return nil
}

var parities = map[string]serial.Parity{"none": serial.NoParity, "even": serial.EvenParity, "odd": serial.OddParity}

// Serial is an open serial port.
type Serial struct {
	serial.Port
	Path string
}

// OpenSerial opens the serial device at path (e.g. /dev/ttyAMA0, or a pty
// slave) in raw mode with cfg's framing.
func OpenSerial(path string, cfg SerialConfig) (*Serial, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open serial %s: %w", path, err)
	}
	cfg = cfg.WithDefaults()
	stop := serial.OneStopBit
	if cfg.StopBits == 2 {
		stop = serial.TwoStopBits
	}
	p, err := serial.Open(path, &serial.Mode{BaudRate: cfg.Baud, DataBits: cfg.DataBits, Parity: parities[cfg.Parity], StopBits: stop})
	if err != nil {
		return nil, fmt.Errorf("open serial %s: %w", path, err)
	}
	return &Serial{Port: p, Path: path}, nil
}
