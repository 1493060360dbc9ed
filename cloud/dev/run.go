package dev

import (
	"context"
	"errors"
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
	began := time.Now()
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
	var died error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case died = <-s.EmulatorDied():
			break loop
		case <-t.C:
			if ctx.Err() != nil {
				break loop // a tick racing the stop would read a closing stack
			}
			f := s.Figures(ctx)
			if cfg.JSON {
				fmt.Fprintln(cfg.Out, f.JSON())
			} else {
				fmt.Fprintln(cfg.Out, f.Line())
			}
		}
	}
	// A dead emulator stops everything: the parts that talk to it would
	// only retry. The error (exit 1) names it.
	if !cfg.JSON {
		fmt.Fprint(cfg.Out, "bowline dev: stopping... ")
	}
	stopAt := time.Now()
	closeErr := s.Close()
	sum := s.summary(stopAt.Sub(began), time.Since(stopAt))
	if cfg.JSON {
		fmt.Fprintln(cfg.Out, sum.JSON())
	} else {
		fmt.Fprintln(cfg.Out, sum.Line())
	}
	if died != nil {
		return errors.Join(fmt.Errorf("%w (restart bowline dev)", died), closeErr)
	}
	return closeErr
}
