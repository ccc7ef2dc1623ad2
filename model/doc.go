// Package model runs LLaMA-architecture decoders.
package model
