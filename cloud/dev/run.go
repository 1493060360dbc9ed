package dev

import (
	"context"
	"fmt"
	"time"
)

// Run starts the system, prints its Report, then one status line every
// Config.Every until ctx ends (SIGINT or SIGTERM in `bowline dev`); then it
// stops everything, children included, and returns what failed.
func Run(ctx context.Context, cfg Config) error {
	s, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	cfg = s.Config()
	rep := s.Report()
	if cfg.JSON {
		if err := rep.WriteJSON(cfg.Out); err != nil {
			s.Close()
			return err
		}
	} else if cfg.Verbose {
		rep.WriteDetails(cfg.Out)
	} else {
		rep.WriteText(cfg.Out)
	}
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-t.C:
			f := s.Figures(ctx)
			if cfg.JSON {
				fmt.Fprintln(cfg.Out, f.JSON())
			} else {
				fmt.Fprintln(cfg.Out, f.Line())
			}
		}
	}
	if !cfg.JSON {
		fmt.Fprintln(cfg.Out, "bowline dev: stopping")
	}
	return s.Close()
}
