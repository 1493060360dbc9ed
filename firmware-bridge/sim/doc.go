// Package sim simulates smart pet-food bowls that speak the firmware
// protocol: an MCU model with a retransmit ring (MCU), link damage and baud
// accounting for tests (Lossy, BaudMeter).
package sim
